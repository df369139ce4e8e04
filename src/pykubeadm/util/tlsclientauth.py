"""Client certificates the way Go's `tls.RequestClientCert` asks for them: requested in the handshake (with the client
CA names as the hint), never verified there, so the authenticator can judge them and answer 401 over HTTP.

Used by the apiserver (server.py) and the kubelet's :10250 server. The standard `ssl` module cannot express "request
but do not verify": CERT_OPTIONAL with a CA aborts the handshake on an unverifiable certificate, CERT_NONE does not
request one at all. OpenSSL can (a verify callback that accepts), and `ssl` keeps a callback it finds on the context
when verify_mode changes, so we install one on the context's SSL_CTX through libssl (the same library `_ssl` is
linked against). The pointer is read from the SSLContext object and checked against what `ssl` reports before use;
if anything does not match, `request_client_certificates` raises instead of guessing. The asyncio TLS transport stays
the standard one, so serving cost does not change (the callback runs once per certificate in a handshake).
"""

from __future__ import annotations

import _ssl
import ctypes
import ssl
import sys
from typing import Any

__all__ = ["TLSHookError", "peer_certificates", "request_client_certificates"]

_SSL_VERIFY_PEER = 0x01
_VERIFY_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


class TLSHookError(RuntimeError):
    """The running Python/OpenSSL does not look like what the hook expects; nothing was changed."""


def _accept(_preverify_ok: int, _store_ctx: int | None) -> int:
    return 1  # every certificate reaches the authenticator, which verifies it


_ACCEPT_ALL = _VERIFY_CB(_accept)  # kept alive for the life of the process
_lib: Any = None


def _libssl() -> Any:
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_ssl.__file__)  # dlsym on the module's handle also searches its libssl/libcrypto
        lib.SSL_CTX_set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CB]
        lib.SSL_CTX_set_verify.restype = None
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
        lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        lib.SSL_load_client_CA_file.argtypes = [ctypes.c_char_p]
        lib.SSL_load_client_CA_file.restype = ctypes.c_void_p
        lib.SSL_CTX_set_client_CA_list.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.SSL_CTX_set_client_CA_list.restype = None
        _lib = lib
    return _lib


def _ssl_ctx_pointer(ctx: ssl.SSLContext, lib: Any) -> int:
    """The SSL_CTX* of `ctx`: the first field after the object header of CPython's PySSLContext, checked twice."""
    ptr = ctypes.c_void_p.from_address(id(ctx) + sys.getsizeof(object())).value
    if not ptr:
        raise TLSHookError("no SSL_CTX behind the SSLContext")
    if lib.SSL_CTX_get_options(ptr) != int(ctx.options):
        raise TLSHookError("SSL_CTX options differ from SSLContext.options")
    return ptr


def request_client_certificates(ctx: ssl.SSLContext, ca_file: str | None) -> None:
    """Make a server context ask every client for a certificate and accept whatever it sends (or none).

    `ca_file` (PEM) names the acceptable issuers in the CertificateRequest, as Go's `tls.Config.ClientCAs` does;
    verification is the caller's job (peer_certificates + its authenticator)."""
    lib = _libssl()
    ptr = _ssl_ctx_pointer(ctx, lib)
    ctx.verify_mode = ssl.CERT_NONE  # check that the pointer tracks verify_mode before touching it
    if lib.SSL_CTX_get_verify_mode(ptr) != 0:
        raise TLSHookError("SSL_CTX verify mode does not follow SSLContext.verify_mode")
    lib.SSL_CTX_set_verify(ptr, _SSL_VERIFY_PEER, _ACCEPT_ALL)
    ctx.verify_mode = ssl.CERT_OPTIONAL  # `ssl` keeps the callback it finds
    if lib.SSL_CTX_get_verify_mode(ptr) != _SSL_VERIFY_PEER:
        raise TLSHookError("SSL_CTX verify mode does not follow SSLContext.verify_mode")
    if ca_file:
        names = lib.SSL_load_client_CA_file(str(ca_file).encode())
        if names:
            lib.SSL_CTX_set_client_CA_list(ptr, names)  # takes ownership of the list


def peer_certificates(ssl_obj: Any) -> tuple[bytes, ...]:
    """The certificates the client sent (DER, leaf first, then its intermediates), unverified; () without one."""
    if ssl_obj is None:
        return ()
    leaf = ssl_obj.getpeercert(binary_form=True)
    if not leaf:
        return ()
    get_chain = getattr(ssl_obj, "get_unverified_chain", None) or getattr(
        getattr(ssl_obj, "_sslobj", None), "get_unverified_chain", None
    )
    ders: list[bytes] = []
    if get_chain is not None:
        try:
            ders = [c.public_bytes(_ssl.ENCODING_DER) for c in (get_chain() or [])]
        except (ValueError, AttributeError, ssl.SSLError):
            ders = []
    if not ders or ders[0] != leaf:
        return (leaf,)
    return tuple(ders)
