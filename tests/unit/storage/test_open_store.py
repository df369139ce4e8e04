"""open_store: engine selection from the URL and the errors a user sees for bad URLs, dead endpoints, foreign files."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from pykubeadm.storage import StoreUnavailableError, open_store
from pykubeadm.storage.etcd import parse_endpoints
from pykubeadm.storage.keys import prefix_end, prefix_end_bytes
from pykubeadm.storage.sqlite import SqliteStore
from pykubeadm.testing.etcd import free_port


@pytest.mark.parametrize("url", ["mysql://db/kine", "unix:///run/etcd.sock", "/var/lib/state.db", ""])
async def test_unknown_scheme(url: str) -> None:
    with pytest.raises(StoreUnavailableError, match="unsupported storage URL"):
        await open_store(url)


async def test_sqlite_url_forms(tmp_path: Path) -> None:
    store = await open_store(f"sqlite://{tmp_path}/state.db?sync=normal&compact_interval=0")
    try:
        assert isinstance(store, SqliteStore)
        assert (tmp_path / "state.db").exists()
    finally:
        await store.close()
    with pytest.raises(StoreUnavailableError, match="absolute"):
        await open_store("sqlite://relative/state.db")
    with pytest.raises(StoreUnavailableError, match="unknown option 'fsync'"):
        await open_store(f"sqlite://{tmp_path}/state.db?fsync=1")
    with pytest.raises(StoreUnavailableError, match="sync mode"):
        await open_store(f"sqlite://{tmp_path}/state.db?sync=off")
    with pytest.raises(StoreUnavailableError, match="does not exist"):
        await open_store(f"sqlite://{tmp_path}/missing/state.db")


async def test_sqlite_refuses_a_file_that_is_not_ours(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("hello, not a database\n")
    with pytest.raises(StoreUnavailableError, match=r"notes.db is not a pykubeadm datastore \(not an SQLite"):
        await open_store(f"sqlite://{text}")
    assert text.read_text() == "hello, not a database\n"  # untouched

    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreUnavailableError, match="holds tables users and no pykubeadm_meta marker"):
        await open_store(f"sqlite://{other}")

    with pytest.raises(StoreUnavailableError, match="is a directory"):
        await open_store(f"sqlite://{tmp_path}")


async def test_unreachable_etcd_names_the_address() -> None:
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailableError) as err:
        await open_store(f"http://127.0.0.1:{port}", connect_timeout=1)
    assert f"127.0.0.1:{port}" in str(err.value)
    assert time.monotonic() - t0 < 5


def test_parse_endpoints() -> None:
    assert parse_endpoints("https://10.0.0.1:2379,https://10.0.0.2:2379") == (["10.0.0.1:2379", "10.0.0.2:2379"], True)
    assert parse_endpoints("http://127.0.0.1") == (["127.0.0.1:2379"], False)
    for bad in ("https://a:1,http://b:2", "ftp://x:1", "https://x:1/path", ","):
        with pytest.raises(StoreUnavailableError):
            parse_endpoints(bad)


def test_prefix_end() -> None:
    assert prefix_end("/registry/pods/") == "/registry/pods0"
    assert prefix_end("") is None
    assert prefix_end_bytes(b"/registry/a\xff") == b"/registry/b"
    assert prefix_end_bytes(b"") == b"\x00"


async def test_etcd_tls_files_must_be_readable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match=r"cannot read etcd CA file .*ca\.crt"):
        await open_store("https://127.0.0.1:2379", ca_file=tmp_path / "ca.crt")
    with pytest.raises(StoreUnavailableError, match="certificate and key must be given together"):
        await open_store("https://127.0.0.1:2379", cert_file=tmp_path / "c.crt")
