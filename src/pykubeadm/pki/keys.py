"""Private keys: generation per encryptionAlgorithm, PEM encoding as client-go's keyutil writes it, loading, SPKI pins.

Called by pki.certs (certificates), pki.create (sa key pair), kubeconfig (client keys) and join discovery (CA pin hash).
PEM formats: RSA keys are PKCS#1 ("RSA PRIVATE KEY"), ECDSA keys SEC1 ("EC PRIVATE KEY"), public keys PKIX ("PUBLIC KEY").
"""

from __future__ import annotations

import hashlib
from typing import TypeAlias

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes

from pykubeadm import constants as c
from pykubeadm.errors import CertError

__all__ = [
    "KeyPool",
    "PrivateKey",
    "PublicKey",
    "encode_private_key_pem",
    "encode_public_key_pem",
    "generate_private_key",
    "key_algorithm_name",
    "parse_private_key_pem",
    "parse_public_key_pem",
    "public_key_pin",
    "signature_hash",
]

PrivateKey: TypeAlias = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey: TypeAlias = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

_RSA_BITS = {"": 2048, "RSA-2048": 2048, "RSA-3072": 3072, "RSA-4096": 4096}
_EC_CURVES: dict[str, type[ec.EllipticCurve]] = {"ECDSA-P256": ec.SECP256R1, "ECDSA-P384": ec.SECP384R1}


def generate_private_key(algorithm: str = c.DEFAULT_ENCRYPTION_ALGORITHM) -> PrivateKey:
    """A new private key for an encryptionAlgorithm value (`RSA-2048` default, `RSA-3072`, `RSA-4096`, `ECDSA-P256`,
    `ECDSA-P384`); kubeadm's pkiutil.GeneratePrivateKey."""
    if algorithm in _EC_CURVES:
        return ec.generate_private_key(_EC_CURVES[algorithm]())
    if algorithm in _RSA_BITS:
        return rsa.generate_private_key(public_exponent=65537, key_size=_RSA_BITS[algorithm])
    if algorithm.startswith("RSA"):
        raise CertError(f'cannot obtain key size from unknown RSA algorithm: "{algorithm}"')
    raise CertError(f'unsupported encryption algorithm "{algorithm}"; use one of {", ".join(c.ENCRYPTION_ALGORITHMS)}')


def key_algorithm_name(key: PrivateKey | PublicKey) -> str:
    """The encryptionAlgorithm name matching a key (`RSA-2048`, `ECDSA-P256`, ...)."""
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return f"RSA-{key.key_size}"
    return {"secp256r1": "ECDSA-P256", "secp384r1": "ECDSA-P384"}.get(key.curve.name, f"ECDSA-{key.curve.name}")


def signature_hash(key: PrivateKey) -> hashes.SHA256 | hashes.SHA384 | hashes.SHA512:
    """The hash Go's x509 picks for a signing key: SHA-256, except SHA-384 for P-384 (and SHA-512 for P-521)."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        if key.curve.key_size >= 521:
            return hashes.SHA512()
        if key.curve.key_size >= 384:
            return hashes.SHA384()
    return hashes.SHA256()


def encode_private_key_pem(key: PrivateKey) -> bytes:
    """PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE KEY` (keyutil.MarshalPrivateKeyToPEM)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def encode_public_key_pem(key: PublicKey) -> bytes:
    """PKIX `PUBLIC KEY` (pkiutil.EncodePublicKeyPEM; what sa.pub holds)."""
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def parse_private_key_pem(data: bytes, source: str = "data") -> PrivateKey:
    """Parse an RSA or ECDSA private key in PKCS#1, SEC1 or PKCS#8 PEM; errors name `source`."""
    if b"-----BEGIN" not in data:
        raise CertError(f"data does not contain a valid RSA or ECDSA private key: {source}")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as err:
        raise CertError(f"error reading private key file {source}: {err}") from err
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise CertError(f"data does not contain a valid RSA or ECDSA private key: {source}")
    return key


def parse_public_key_pem(data: bytes, source: str = "data") -> PublicKey:
    """Parse a PKIX `PUBLIC KEY` (or PKCS#1 `RSA PUBLIC KEY`) PEM; errors name `source`."""
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as err:
        raise CertError(f"data does not contain a valid RSA or ECDSA public key: {source}: {err}") from err
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        raise CertError(f"data does not contain a valid RSA or ECDSA public key: {source}")
    return key


def public_key_pin(public_key: CertificatePublicKeyTypes) -> str:
    """`sha256:<hex>` over the DER SubjectPublicKeyInfo: the --discovery-token-ca-cert-hash of a CA (pubkeypin.Hash)."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


class KeyPool:
    """Generates `count` keys of one algorithm on background threads (RSA key generation releases the GIL, so two
    cores make ~2 keys at a time); `take()` hands them out in order, then returns None. Used by the certs and
    kubeconfig phases to overlap RSA key generation with signing and writing."""

    def __init__(self, algorithm: str, count: int, workers: int = 2) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.algorithm = algorithm
        self._executor = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="keygen")
        self._futures = [self._executor.submit(generate_private_key, algorithm) for _ in range(max(0, count))]
        self._executor.shutdown(wait=False)

    def take(self, algorithm: str) -> PrivateKey | None:
        """The next pre-generated key if one of `algorithm` is left, else None (the caller generates its own)."""
        if algorithm != self.algorithm or not self._futures:
            return None
        return self._futures.pop(0).result()

    def close(self) -> None:
        """Drop keys not taken (cancels those not started yet)."""
        for f in self._futures:
            f.cancel()
        self._futures.clear()
