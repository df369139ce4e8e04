"""Disk full under the apiserver's SQLite file: writes fail with a 500 Status, reads keep working, and once space
returns writes succeed again with everything written before intact and `PRAGMA integrity_check` ok.

The database lives on a small tmpfs mounted for the test (root only); the disk is filled with a plain file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

HOST = "127.0.19.2"


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` for the duration (unmounted lazily even if something still holds it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir(parents=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs at {path} (mount exited {res.returncode})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Write zeros to disk/filler until the file system says ENOSPC."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)
    return filler


def configmap(name: str, payload: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": payload}})


def test_disk_full_under_sqlite(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "16m") as disk:
        db = disk / "state.db"
        api = ApiServer(tmp_path / "api", host=HOST, storage=f"sqlite://{db}", audit_log=False)
        try:
            api.start(timeout=60)
            before = {f"before-{i}": f"value-{i}" * 50 for i in range(5)}
            for name, value in before.items():
                api.kubectl("create", "-f", "-", input=configmap(name, value))

            filler = fill(disk)
            # SQLite keeps writing into the pages its WAL already has; past them every write fails with a 500 Status
            big = "x" * 900_000
            acked: dict[str, str] = {}
            failure = None
            for i in range(40):
                res = api.kubectl("create", "-f", "-", "-v=6", input=configmap(f"during-{i}", big), check=False)
                if res.returncode != 0:
                    failure = res.stderr
                    break
                acked[f"during-{i}"] = big
            assert failure is not None, "40 writes of 900 kB fit on a full 16 MiB disk"
            assert 'status="500 Internal Server Error"' in failure, failure[-2000:]
            [line] = [ln for ln in failure.splitlines() if ln.startswith("Error from server")]
            assert line.startswith("Error from server (InternalError)"), line
            assert "database or disk is full" in line, line
            patch = tmp_path / "patch.json"
            patch.write_text(json.dumps({"data": {"v": big}}))
            res = api.kubectl("patch", "configmap", "before-0", "--patch-file", str(patch), check=False)
            assert res.returncode != 0 and "Error from server (InternalError)" in res.stderr, res.stderr
            # reads still work, from the data written before (and acknowledged while the disk filled)
            got = json.loads(api.kubectl("get", "configmaps", "-o", "json").stdout)
            values = {i["metadata"]["name"]: i["data"]["v"] for i in got["items"]}
            assert {n: values.get(n) for n in [*before, *acked]} == {**before, **acked}
            assert len([n for n in values if n.startswith("during-")]) == len(acked)
            assert api.proc is not None and api.proc.poll() is None

            # space returns: writes succeed again, nothing written before is lost or changed
            filler.unlink()
            api.kubectl("create", "-f", "-", input=configmap("after", big))
            api.kubectl("patch", "configmap", "before-1", "-p", json.dumps({"data": {"v": "patched"}}))
            got = json.loads(api.kubectl("get", "configmaps", "-o", "json").stdout)
            values = {i["metadata"]["name"]: i["data"]["v"] for i in got["items"]}
            assert values["after"] == big and values["before-1"] == "patched"
            assert all(values[n] == v for n, v in {**before, **acked}.items() if n != "before-1")
        finally:
            api.stop()
        with contextlib.closing(sqlite3.connect(db)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # and a restarted apiserver serves the same data
        api.start(timeout=60)
        try:
            got = json.loads(api.kubectl("get", "configmap", "after", "-o", "json").stdout)
            assert got["data"]["v"] == big
        finally:
            api.stop()
