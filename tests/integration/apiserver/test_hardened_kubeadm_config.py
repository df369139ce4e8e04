"""The documented hardening recipe as a new user follows it: a kubeadm ClusterConfiguration whose apiServer.extraArgs
set encryption at rest, an audit policy and log, TLS settings, --profiling=false and feature gates; `pykubeadm init
phase certs/kubeconfig/control-plane` write the PKI, super-admin.conf and kube-apiserver.yaml under a node root, and the
static Pod's own command starts our kube-apiserver (only --etcd-servers swapped for a SQLite file under the root).
The real kubectl then works through super-admin.conf, the datastore holds ciphertext and the audit log has the events."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pykubeadm.testing.etcd import free_port
from pykubeadm.testing.hardening import SECRETS_METADATA_POLICY, aescbc_config

pytestmark = pytest.mark.integration

SECRET = "hardened-s3cret"


def _pykubeadm(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    res = subprocess.run(
        [sys.executable, "-m", "pykubeadm", "--root-dir", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def _kubeadm_config(port: int) -> str:
    args = {
        "encryption-provider-config": "/etc/kubernetes/enc/enc.yaml",
        "audit-policy-file": "/etc/kubernetes/audit/policy.yaml",
        "audit-log-path": "/var/log/kubernetes/audit/audit.log",
        "audit-log-maxage": "30",
        "audit-log-maxbackup": "10",
        "audit-log-maxsize": "100",
        "tls-min-version": "VersionTLS12",
        "tls-cipher-suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "profiling": "false",
        "request-timeout": "60s",
        "service-account-lookup": "true",
        "event-ttl": "1h0m0s",
        "feature-gates": "StructuredAuthenticationConfiguration=true",
    }
    volumes = [
        {"name": n, "hostPath": p, "mountPath": p, "readOnly": ro, "pathType": "DirectoryOrCreate"}
        for n, p, ro in (
            ("enc", "/etc/kubernetes/enc", True),
            ("audit-policy", "/etc/kubernetes/audit", True),
            ("audit-log", "/var/log/kubernetes/audit", False),
        )
    ]
    docs = [
        {
            "apiVersion": "kubeadm.k8s.io/v1beta4",
            "kind": "InitConfiguration",
            "localAPIEndpoint": {"advertiseAddress": "127.0.0.1", "bindPort": port},
            "nodeRegistration": {"name": "cp1"},
        },
        {
            "apiVersion": "kubeadm.k8s.io/v1beta4",
            "kind": "ClusterConfiguration",
            "kubernetesVersion": "v1.33.0",
            "apiServer": {"extraArgs": [{"name": k, "value": v} for k, v in args.items()], "extraVolumes": volumes},
        },
    ]
    return yaml.safe_dump_all(docs)


def test_kubeadm_extra_args_recipe_runs(tmp_path: Path) -> None:
    root = tmp_path / "node"
    (root / "etc/kubernetes/enc").mkdir(parents=True)
    (root / "etc/kubernetes/audit").mkdir(parents=True)
    (root / "etc/kubernetes/enc/enc.yaml").write_text(yaml.safe_dump(aescbc_config()))
    (root / "etc/kubernetes/audit/policy.yaml").write_text(SECRETS_METADATA_POLICY)
    port = free_port()
    config = tmp_path / "kubeadm.yaml"
    config.write_text(_kubeadm_config(port))
    for phase in (("certs", "all"), ("kubeconfig", "super-admin"), ("control-plane", "apiserver")):
        _pykubeadm(root, "init", "phase", *phase, "--config", str(config))

    manifest = yaml.safe_load((root / "etc/kubernetes/manifests/kube-apiserver.yaml").read_text())
    command = manifest["spec"]["containers"][0]["command"]
    assert command[0] == "kube-apiserver" and "--encryption-provider-config=/etc/kubernetes/enc/enc.yaml" in command
    mounts = {m["mountPath"] for m in manifest["spec"]["containers"][0]["volumeMounts"]}
    assert {"/etc/kubernetes/enc", "/etc/kubernetes/audit", "/var/log/kubernetes/audit"} <= mounts
    flags = [f for f in command[1:] if not f.startswith("--etcd-")] + ["--etcd-servers=sqlite:///var/lib/etcd/state.db"]
    (root / "var/lib/etcd").mkdir(parents=True)

    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    log_path = tmp_path / "apiserver.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pykubeadm", "--root-dir", str(root), "component", "kube-apiserver", *flags],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    kube_env = {
        **os.environ,
        "KUBECONFIG": str(root / "etc/kubernetes/super-admin.conf"),  # system:masters: no kubeadm RBAC yet
        "KUBECACHEDIR": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }

    def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(["kubectl", *args], env=kube_env, capture_output=True, text=True, timeout=60, check=False)
        assert not check or res.returncode == 0, res.stderr
        return res

    try:
        deadline = time.monotonic() + 60
        while kubectl("get", "--raw", "/readyz", check=False).returncode != 0:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.2)
        kubectl("create", "secret", "generic", "db", f"--from-literal=password={SECRET}")
        with sqlite3.connect(root / "var/lib/etcd/state.db") as conn:
            (value,) = conn.execute(
                "SELECT value FROM kine WHERE name = '/registry/secrets/default/db' ORDER BY id DESC LIMIT 1"
            ).fetchone()
        assert bytes(value).startswith(b"k8s:enc:aescbc:v1:key1:") and SECRET.encode() not in bytes(value)
        got = kubectl("get", "secret", "db", "-o", "jsonpath={.data.password}").stdout
        assert base64.b64decode(got).decode() == SECRET
        assert "NotFound" in kubectl("get", "--raw", "/debug/pprof/", check=False).stderr
        audit_log = root / "var/log/kubernetes/audit/audit.log"
        deadline = time.monotonic() + 20
        while not (audit_log.exists() and '"resource":"secrets"' in audit_log.read_text()):
            assert time.monotonic() < deadline, "no audit event for the Secret"
            time.sleep(0.1)
        events = [json.loads(line) for line in audit_log.read_text().splitlines()]
        assert {e["objectRef"]["resource"] for e in events} == {"secrets"}
        assert SECRET not in audit_log.read_text()
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
