"""Go's TLS setting names as Kubernetes components take them (`--tls-min-version=VersionTLS13`,
`--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,…`, k8s.io/component-base/cli/flag) mapped onto an
`ssl.SSLContext`: Go's cipher-suite names become OpenSSL's. As in Go, the suites apply to TLS 1.0–1.2 only; TLS 1.3's
suites are fixed (their names are accepted and change nothing).
"""

from __future__ import annotations

import ssl

__all__ = ["CIPHER_SUITES", "TLS_VERSIONS", "apply_tls_options", "openssl_ciphers", "tls_version"]

TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

#: Go name → OpenSSL name ("" for TLS 1.3 suites, which OpenSSL does not let us choose per context here).
CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_AES_128_GCM_SHA256": "",
    "TLS_AES_256_GCM_SHA384": "",
    "TLS_CHACHA20_POLY1305_SHA256": "",
}


def tls_version(name: str) -> ssl.TLSVersion:
    """k8s.io/component-base's TLSVersion: raises ValueError with its message for an unknown name."""
    try:
        return TLS_VERSIONS[name]
    except KeyError:
        raise ValueError(f'unknown tls version "{name}"') from None


def openssl_ciphers(names: list[str]) -> str:
    """The OpenSSL cipher string of Go suite names (TLS ≤ 1.2 ones); ValueError naming an unknown suite."""
    out: list[str] = []
    for n in names:
        if n not in CIPHER_SUITES:
            raise ValueError(f"Cipher suite {n} not supported or doesn't exist")
        if CIPHER_SUITES[n] and CIPHER_SUITES[n] not in out:
            out.append(CIPHER_SUITES[n])
    return ":".join(out)


def apply_tls_options(ctx: ssl.SSLContext, min_version: str = "", cipher_suites: list[str] | None = None) -> None:
    """Set the minimum version and the TLS ≤ 1.2 cipher suites on `ctx`. ValueError when OpenSSL offers none of the
    suites (e.g. RC4 or 3DES, which this OpenSSL no longer has)."""
    if min_version:
        ctx.minimum_version = tls_version(min_version)
    if cipher_suites:
        spec = openssl_ciphers(cipher_suites)
        if spec:
            try:
                ctx.set_ciphers(spec)
            except ssl.SSLError:
                raise ValueError(
                    f"none of the cipher suites {', '.join(cipher_suites)} is available in this OpenSSL"
                ) from None
