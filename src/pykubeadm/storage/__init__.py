"""The datastore under the built-in apiserver: `open_store(url)` picks the engine from the --etcd-servers URL.

    sqlite:///abs/path/state.db[?sync=full|normal&compact_interval=300&compact_min_retain=1000]  → SqliteStore
    https://host:port[,https://host2:port…]  (or http://)                                         → EtcdStore
    memory://                                                                                     → MemoryStore

Every engine implements `pykubeadm.storage.interface.Store`; see that module for the records and errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pykubeadm.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    ListResult,
    Store,
    StoreError,
    StoreUnavailableError,
)

__all__ = [
    "CompactedError",
    "ConflictError",
    "Event",
    "FutureRevisionError",
    "KeyExistsError",
    "KeyNotFoundError",
    "KeyValue",
    "ListResult",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "open_store",
]

_SQLITE_OPTIONS = {"sync": str, "compact_interval": float, "compact_min_retain": int, "poll_interval": float}


def _sqlite_options(url: str, query: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, raw in parse_qsl(query, keep_blank_values=True):
        conv = _SQLITE_OPTIONS.get(name.replace("-", "_"))
        if conv is None:
            raise StoreUnavailableError(f"unknown option {name!r} in {url!r} (known: {', '.join(_SQLITE_OPTIONS)})")
        try:
            options[name.replace("-", "_")] = conv(raw)
        except ValueError:
            raise StoreUnavailableError(f"invalid value {raw!r} for {name} in {url!r}") from None
    return options


async def open_store(
    url: str,
    *,
    ca_file: str | Path | None = None,
    cert_file: str | Path | None = None,
    key_file: str | Path | None = None,
    connect_timeout: float = 10.0,
) -> Store:
    """Open the store named by `url` (the apiserver's --etcd-servers value). TLS files are the apiserver's
    --etcd-cafile/--etcd-certfile/--etcd-keyfile and only apply to https etcd URLs.

    Raises StoreUnavailableError for an unknown scheme, an etcd endpoint that does not answer within
    `connect_timeout` (the message names the addresses), or a database file that is not a pykubeadm datastore."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        from pykubeadm.storage.sqlite import SqliteStore

        parts = urlsplit(url)
        path = unquote(parts.path)
        if parts.netloc or not path.startswith("/"):
            raise StoreUnavailableError(f"invalid SQLite URL {url!r}: want sqlite:///absolute/path/state.db")
        return await SqliteStore.open(Path(path), **_sqlite_options(url, parts.query))
    if scheme in ("http", "https"):
        from pykubeadm.storage.etcd import EtcdStore

        return await EtcdStore.open(
            url, ca_file=ca_file, cert_file=cert_file, key_file=key_file, connect_timeout=connect_timeout
        )
    if scheme == "memory":
        from pykubeadm.storage.memory import MemoryStore

        return MemoryStore()
    raise StoreUnavailableError(
        f"unsupported storage URL {url!r}: use sqlite:///abs/path/state.db or http(s)://host:port[,http(s)://…] (etcd)"
    )
