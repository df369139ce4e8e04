"""The value transformers of kube-apiserver's encryption providers, byte for byte as k8s.io/apiserver stores them.

A stored value is `k8s:enc:<provider>:v1:<key name>:` followed by the provider's payload:

    aescbc     16-byte IV, then AES-CBC of the value with PKCS#7 padding
    aesgcm     12-byte random nonce, then AES-GCM of the value (tag appended) with the etcd key as additional data
    secretbox  24-byte nonce, then NaCl secretbox (XSalsa20-Poly1305: tag, then ciphertext)
    identity   the value itself, no prefix

`PrefixTransformers` is kube's read/write rule over a resource's ordered provider keys: the first one writes; a read
uses the first whose prefix the value starts with, and a read by any but the first is *stale* (an update rewrites it
even when the object did not change, which is what the "rewrite all Secrets" step relies on).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "AESCBC",
    "ENCRYPTED_PREFIX",
    "AESGCMTransformer",
    "Identity",
    "PrefixTransformer",
    "PrefixTransformers",
    "Secretbox",
    "TransformError",
    "Transformer",
]

#: Every encrypting provider's values start with this; the identity provider refuses to read them.
ENCRYPTED_PREFIX = b"k8s:enc:"

_BLOCK = 16
_GCM_NONCE = 12


class TransformError(Exception):
    """A stored value that cannot be read (wrong key, corrupt, or no provider for its prefix)."""


class Transformer(Protocol):
    def to_storage(self, data: bytes, key: str) -> bytes: ...

    def from_storage(self, data: bytes, key: str) -> bytes: ...


class Identity:
    """The identity provider: stores values as they are; reading an encrypted value is an error (so a read falls
    through to the providers listed after it)."""

    def to_storage(self, data: bytes, key: str) -> bytes:
        return data

    def from_storage(self, data: bytes, key: str) -> bytes:
        if data.startswith(ENCRYPTED_PREFIX):
            raise TransformError("identity transformer tried to read encrypted data")
        return data


class AESCBC:
    """AES-CBC with PKCS#7 padding: IV (16 bytes) then ciphertext."""

    def __init__(self, secret: bytes):
        self._alg = algorithms.AES(secret)

    def to_storage(self, data: bytes, key: str) -> bytes:
        iv = os.urandom(_BLOCK)
        padder = padding.PKCS7(_BLOCK * 8).padder()
        enc = Cipher(self._alg, modes.CBC(iv)).encryptor()
        return iv + enc.update(padder.update(data) + padder.finalize()) + enc.finalize()

    def from_storage(self, data: bytes, key: str) -> bytes:
        if len(data) < _BLOCK:
            raise TransformError("the stored data was shorter than the required size")
        iv, body = data[:_BLOCK], data[_BLOCK:]
        if len(body) % _BLOCK:
            raise TransformError("the stored data is not a multiple of the block size")
        dec = Cipher(self._alg, modes.CBC(iv)).decryptor()
        plain = dec.update(body) + dec.finalize()
        if not plain:
            raise TransformError("invalid PKCS7 data (empty or not padded)")
        unpadder = padding.PKCS7(_BLOCK * 8).unpadder()
        try:
            return unpadder.update(plain) + unpadder.finalize()
        except ValueError:
            raise TransformError("invalid padding on input") from None


class AESGCMTransformer:
    """AES-GCM: a random 12-byte nonce then the sealed value; the storage key is the additional data, so a value
    copied to another key does not decrypt."""

    def __init__(self, secret: bytes):
        self._aead = AESGCM(secret)

    def to_storage(self, data: bytes, key: str) -> bytes:
        nonce = os.urandom(_GCM_NONCE)
        return nonce + self._aead.encrypt(nonce, data, key.encode())

    def from_storage(self, data: bytes, key: str) -> bytes:
        if len(data) < _GCM_NONCE:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:_GCM_NONCE], data[_GCM_NONCE:], key.encode())
        except Exception:
            raise TransformError("cipher: message authentication failed") from None


class Secretbox:
    """NaCl secretbox (XSalsa20-Poly1305) through libsodium: a 24-byte nonce then the box, as Go's secretbox.Seal."""

    def __init__(self, secret: bytes):
        from nacl.secret import SecretBox

        self._box = SecretBox(secret)

    def to_storage(self, data: bytes, key: str) -> bytes:
        return bytes(self._box.encrypt(data))  # nonce + tag + ciphertext, the nonce random

    def from_storage(self, data: bytes, key: str) -> bytes:
        from nacl.exceptions import CryptoError

        if len(data) < 24:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._box.decrypt(data)
        except CryptoError:
            raise TransformError("unable to decrypt message") from None


@dataclass(frozen=True)
class PrefixTransformer:
    prefix: bytes
    transformer: Transformer


class PrefixTransformers:
    """A resource's providers in order: the first writes; reads pick by prefix (see the module docstring)."""

    def __init__(self, transformers: list[PrefixTransformer]):
        if not transformers:
            raise ValueError("at least one transformer is required")
        self.transformers = transformers
        self._first = transformers[0]
        #: True when the writing provider is identity: values go to storage unchanged.
        self.writes_plain = isinstance(self._first.transformer, Identity)

    def to_storage(self, data: bytes, key: str) -> bytes:
        return self._first.prefix + self._first.transformer.to_storage(data, key)

    def from_storage(self, data: bytes, key: str) -> tuple[bytes, bool]:
        """The plain value and whether it is stale (not written by the first provider)."""
        errors: list[str] = []
        for i, t in enumerate(self.transformers):
            if not data.startswith(t.prefix):
                continue
            try:
                plain = t.transformer.from_storage(data[len(t.prefix) :], key)
            except TransformError as e:
                if not t.prefix:
                    continue  # identity met an encrypted value: a later provider may read it
                errors.append(str(e))
                continue
            return plain, i != 0
        if errors:
            raise TransformError(errors[0])
        raise TransformError("no matching prefix found")
