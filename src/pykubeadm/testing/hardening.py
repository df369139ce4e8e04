"""Test data for the hardening flags: an aescbc EncryptionConfiguration and an audit policy that logs Secrets at
Metadata level, as the tests of the apiserver, kubeadm's recipe and the lab write them."""

from __future__ import annotations

import base64
import os
from typing import Any

__all__ = ["SECRETS_METADATA_POLICY", "aescbc_config"]

#: audit.k8s.io/v1 Policy: Secrets at Metadata level, nothing else.
SECRETS_METADATA_POLICY = (
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
    '- level: Metadata\n  resources: [{group: "", resources: ["secrets"]}]\n'
)


def aescbc_config(*keys: tuple[str, bytes], resources: tuple[str, ...] = ("secrets",)) -> dict[str, Any]:
    """An EncryptionConfiguration: `resources` with aescbc `keys` (name, 32 bytes; default one random `key1`), then
    identity, so values written before encryption stay readable."""
    keys = keys or (("key1", os.urandom(32)),)
    aescbc = {"keys": [{"name": n, "secret": base64.b64encode(k).decode()} for n, k in keys]}
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [{"resources": list(resources), "providers": [{"aescbc": aescbc}, {"identity": {}}]}],
    }
