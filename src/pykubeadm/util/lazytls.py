"""Import aiohttp without paying for the system CA bundle at start-up.

aiohttp's connector module builds two SSLContexts when it is imported, and each parses the system CA bundle: a
verifying one (`ssl.create_default_context()`, ~35 ms of CPU) and one that verifies nothing but still loads the
default verify paths (`set_default_verify_paths()`, ~20 ms). That is paid in every component process (kubelet,
kube-apiserver, ...), on the critical path of a node's join. Our components give their own connections their own
contexts (the cluster CA, client certificates), so those defaults are rarely if ever used. `import_aiohttp()` imports
aiohttp with both made lazily, for the duration of the import only:

- `ssl.create_default_context()` returns a `LazyDefaultContext`: the same settings as the standard default context
  (TLS client, certificate and hostname verification, SSLKEYLOGFILE), with the system CA certificates loaded the first
  time the context wraps a connection instead of at import;
- `SSLContext.set_default_verify_paths()` makes the context a `LazyVerifyPathsContext`, which loads those paths the
  first time it wraps a connection.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["LazyDefaultContext", "LazyVerifyPathsContext", "import_aiohttp"]


class _LoadsOnFirstUse(ssl.SSLContext):
    """An SSLContext that loads its CA certificates (`_load`) the first time it wraps a connection."""

    _loaded = False

    def _load(self) -> None:
        raise NotImplementedError

    def _load_once(self) -> None:
        if not self._loaded:
            self._load()
            self._loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load_once()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load_once()
        return super().wrap_bio(*args, **kwargs)


class LazyDefaultContext(_LoadsOnFirstUse):
    """`ssl.create_default_context()` for server authentication, loading the default CA certificates on first use."""

    def _load(self) -> None:
        self.load_default_certs(ssl.Purpose.SERVER_AUTH)


class LazyVerifyPathsContext(_LoadsOnFirstUse):
    """An SSLContext whose `set_default_verify_paths()` was called during `import_aiohttp()`: the default CA paths are
    loaded the first time it wraps a connection."""

    def _load(self) -> None:
        _real_set_default_verify_paths(self)


def _lazy_set_default_verify_paths(self: ssl.SSLContext) -> None:
    if type(self) is ssl.SSLContext:
        self.__class__ = LazyVerifyPathsContext  # same layout: only the methods above change
    else:
        _real_set_default_verify_paths(self)


def _lazy_create_default_context(
    purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH,
    *,
    cafile: str | None = None,
    capath: str | None = None,
    cadata: str | bytes | None = None,
) -> ssl.SSLContext:
    if purpose is not ssl.Purpose.SERVER_AUTH or cafile or capath or cadata:
        return _real_create_default_context(purpose, cafile=cafile, capath=capath, cadata=cadata)
    ctx = LazyDefaultContext(ssl.PROTOCOL_TLS_CLIENT)  # verify_mode CERT_REQUIRED and check_hostname, as the default
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:
        ctx.keylog_filename = keylog
    return ctx


_real_create_default_context = ssl.create_default_context
_real_set_default_verify_paths = ssl.SSLContext.set_default_verify_paths


@contextlib.contextmanager
def _lazy_default_contexts() -> Iterator[None]:
    ssl.create_default_context = _lazy_create_default_context  # type: ignore[assignment]
    ssl.SSLContext.set_default_verify_paths = _lazy_set_default_verify_paths  # type: ignore[method-assign]
    try:
        yield
    finally:
        ssl.create_default_context = _real_create_default_context
        del ssl.SSLContext.set_default_verify_paths  # the method _ssl._SSLContext defines, inherited again


def import_aiohttp() -> None:
    """Import aiohttp (client and server) with its default contexts' CA certificates loaded lazily; nothing if already
    imported."""
    if "aiohttp.connector" in sys.modules:
        return
    with _lazy_default_contexts():
        import aiohttp.connector  # noqa: F401
