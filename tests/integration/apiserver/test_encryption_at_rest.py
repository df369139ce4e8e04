"""Encryption at rest with a real apiserver over TLS, the real kubectl, and the datastore read directly: the SQLite
file with sqlite3 and etcd with etcdctl, as a user checks the documented "Encrypting Confidential Data at Rest" recipe.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pykubeadm.testing.apiserver import ApiServer, running_apiserver
from pykubeadm.testing.etcd import EtcdCluster, etcd_available
from pykubeadm.testing.hardening import aescbc_config

pytestmark = pytest.mark.integration

PLAINTEXT = "top-secret-value-1234"


def _config(path: Path, *keys: tuple[str, bytes], resources: tuple[str, ...] = ("secrets",)) -> Path:
    path.write_text(yaml.safe_dump(aescbc_config(*keys, resources=resources)))
    return path


def _sqlite_value(db: Path, key: str) -> bytes:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT value FROM kine WHERE name = ? ORDER BY id DESC LIMIT 1", (key,)).fetchone()
    assert row is not None, f"{key} is not in {db}"
    return bytes(row[0])


def _sqlite_keys(db: Path, prefix: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT name FROM kine k WHERE name LIKE ? AND deleted = 0 "
            "AND id = (SELECT MAX(id) FROM kine WHERE name = k.name)",
            (prefix + "%",),
        ).fetchall()
    return [r[0] for r in rows]


def _wait(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _create_objects(api: ApiServer) -> None:
    api.kubectl("create", "secret", "generic", "s1", f"--from-literal=password={PLAINTEXT}")
    api.kubectl("create", "namespace", "other")
    api.kubectl("create", "secret", "generic", "s2", "-n", "other", f"--from-literal=password={PLAINTEXT}")
    api.kubectl("create", "configmap", "c1", f"--from-literal=v={PLAINTEXT}")


def _get_password(api: ApiServer, name: str, ns: str = "default") -> str:
    out = api.kubectl("get", "secret", name, "-n", ns, "-o", "jsonpath={.data.password}").stdout
    return base64.b64decode(out).decode()


def _rewrite_all_secrets(api: ApiServer) -> None:
    secrets = api.kubectl("get", "secrets", "-A", "-o", "json").stdout
    api.kubectl("replace", "-f", "-", input=secrets)


def test_sqlite_secrets_are_aescbc_ciphertext_and_rotate_on_rewrite(tmp_path: Path) -> None:
    k1, k2 = os.urandom(32), os.urandom(32)
    enc = _config(tmp_path / "enc.yaml", ("key1", k1))
    flags = [f"--encryption-provider-config={enc}", "--encryption-provider-config-automatic-reload=true"]
    with running_apiserver(tmp_path / "api", extra_flags=flags) as api:
        db = tmp_path / "api" / "data" / "state.db"
        _create_objects(api)
        stored = _sqlite_value(db, "/registry/secrets/default/s1")
        assert stored.startswith(b"k8s:enc:aescbc:v1:key1:")
        assert PLAINTEXT.encode() not in stored and base64.b64encode(PLAINTEXT.encode()) not in stored
        assert _get_password(api, "s1") == PLAINTEXT
        cm = _sqlite_value(db, "/registry/configmaps/default/c1")
        assert PLAINTEXT.encode() in cm and not cm.startswith(b"k8s:enc:")

        # Rotation: a new first key (the old one still listed for reads), picked up without a restart.
        _config(tmp_path / "enc.yaml", ("key2", k2), ("key1", k1))

        def new_key_writes() -> bool:
            api.kubectl("delete", "secret", "probe", "--ignore-not-found", "--wait=false")
            api.kubectl("create", "secret", "generic", "probe", "--from-literal=x=y")
            return _sqlite_value(db, "/registry/secrets/default/probe").startswith(b"k8s:enc:aescbc:v1:key2:")

        _wait(new_key_writes, "the reloaded configuration to write with key2")
        assert _sqlite_value(db, "/registry/secrets/default/s1").startswith(b"k8s:enc:aescbc:v1:key1:")
        assert _get_password(api, "s1") == PLAINTEXT  # key1 still reads

        _rewrite_all_secrets(api)
        keys = _sqlite_keys(db, "/registry/secrets/")
        assert "/registry/secrets/other/s2" in keys
        for key in keys:
            assert _sqlite_value(db, key).startswith(b"k8s:enc:aescbc:v1:key2:"), key
        assert _get_password(api, "s2", "other") == PLAINTEXT
        assert not _sqlite_value(db, "/registry/configmaps/default/c1").startswith(b"k8s:enc:")


def test_bad_encryption_config_stops_the_apiserver_naming_the_field(tmp_path: Path) -> None:
    enc = tmp_path / "enc.yaml"
    enc.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "EncryptionConfiguration",
                "resources": [{"resources": ["secrets"], "providers": [{"kms": {"apiVersion": "v2", "name": "v"}}]}],
            }
        )
    )
    api = ApiServer(tmp_path / "api", extra_flags=[f"--encryption-provider-config={enc}"])
    res = subprocess.run(api.command(), capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0
    assert "--encryption-provider-config" in res.stderr and "resources[0].providers[0].kms" in res.stderr
    assert "KMS" in res.stderr


@pytest.mark.skipif(not etcd_available(), reason="etcd is not installed")
def test_etcd_holds_ciphertext_read_with_etcdctl(tmp_path: Path) -> None:
    k1, k2 = os.urandom(32), os.urandom(32)
    enc = _config(tmp_path / "enc.yaml", ("key1", k1), resources=("secrets", "*.apps"))
    with EtcdCluster(tmp_path / "etcd") as etcd:

        def etcdctl_get(key: str) -> bytes:
            res = subprocess.run(
                ["etcdctl", f"--endpoints={etcd.url}", "get", key, "-w", "json"],
                capture_output=True,
                timeout=30,
                check=True,
                env={**os.environ, "ETCDCTL_API": "3"},
            )
            kvs = json.loads(res.stdout).get("kvs") or []
            assert kvs, f"{key} is not in etcd"
            return base64.b64decode(kvs[0]["value"])

        flags = [f"--encryption-provider-config={enc}"]
        with running_apiserver(tmp_path / "api", storage=etcd.url, extra_flags=flags) as api:
            _create_objects(api)
            api.kubectl("create", "deployment", "web", "--image=registry.k8s.io/pause:3.10")
            stored = etcdctl_get("/registry/secrets/default/s1")
            assert stored.startswith(b"k8s:enc:aescbc:v1:key1:") and PLAINTEXT.encode() not in stored
            assert etcdctl_get("/registry/deployments/default/web").startswith(b"k8s:enc:aescbc:v1:key1:")
            assert PLAINTEXT.encode() in etcdctl_get("/registry/configmaps/default/c1")
            assert _get_password(api, "s1") == PLAINTEXT
            assert api.kubectl("get", "deployment", "web", "-o", "jsonpath={.metadata.name}").stdout == "web"

            # Rotation across a restart (no automatic reload): new first key, then the documented rewrite.
            _config(tmp_path / "enc.yaml", ("key2", k2), ("key1", k1), resources=("secrets", "*.apps"))
            api.restart()
            assert _get_password(api, "s2", "other") == PLAINTEXT
            _rewrite_all_secrets(api)
            for key in ("/registry/secrets/default/s1", "/registry/secrets/other/s2"):
                assert etcdctl_get(key).startswith(b"k8s:enc:aescbc:v1:key2:"), key
            assert etcdctl_get("/registry/deployments/default/web").startswith(b"k8s:enc:aescbc:v1:key1:")
