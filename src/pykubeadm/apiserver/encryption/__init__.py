"""Encryption at rest (--encryption-provider-config): the EncryptionConfiguration file, its providers, and the value
transformer the apiserver's datastore wrapper applies to each resource's stored values."""

from pykubeadm.apiserver.encryption.config import EncryptionConfig, EncryptionConfigError, load_encryption_config
from pykubeadm.apiserver.encryption.providers import TransformError

__all__ = ["EncryptionConfig", "EncryptionConfigError", "TransformError", "load_encryption_config"]
