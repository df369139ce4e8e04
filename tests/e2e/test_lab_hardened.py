"""A lab built from a kind-like Cluster file whose kubeadmConfigPatches set the hardening flags through
ClusterConfiguration extraArgs/extraVolumes, with the encryption config and audit policy placed on the control plane
by extraMounts: the apiserver static Pod runs with them, Secrets are aescbc ciphertext in the lab's datastore, the
audit log records them, and a worker joins with its own patch (a taint)."""

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

from pykubeadm.testing.hardening import SECRETS_METADATA_POLICY, aescbc_config

pytestmark = pytest.mark.e2e

SECRET = "lab-hardened-value"


def _run(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=env, check=False)


def test_lab_up_config_with_encryption_and_audit(tmp_path: Path) -> None:
    (tmp_path / "enc.yaml").write_text(json.dumps(aescbc_config()))
    (tmp_path / "policy.yaml").write_text(SECRETS_METADATA_POLICY)
    (tmp_path / "cluster.yaml").write_text(
        """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  apiServer:
    extraArgs:
    - {name: encryption-provider-config, value: /etc/kubernetes/enc/enc.yaml}
    - {name: audit-policy-file, value: /etc/kubernetes/audit/policy.yaml}
    - {name: audit-log-path, value: /var/log/kubernetes/audit/audit.log}
    - {name: profiling, value: "false"}
    extraVolumes:
    - {name: enc, hostPath: /etc/kubernetes/enc, mountPath: /etc/kubernetes/enc, readOnly: true}
    - {name: audit, hostPath: /etc/kubernetes/audit, mountPath: /etc/kubernetes/audit, readOnly: true}
    - {name: audit-log, hostPath: /var/log/kubernetes/audit, mountPath: /var/log/kubernetes/audit, pathType: DirectoryOrCreate}
nodes:
- role: control-plane
  extraMounts:
  - {hostPath: ./enc.yaml, containerPath: /etc/kubernetes/enc/enc.yaml}
  - {hostPath: ./policy.yaml, containerPath: /etc/kubernetes/audit/policy.yaml}
- role: worker
  kubeadmConfigPatches:
  - |
    kind: JoinConfiguration
    nodeRegistration:
      taints: [{key: dedicated, value: hardened, effect: NoSchedule}]
"""
    )
    lab = tmp_path / "lab"
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    pyk = [sys.executable, "-m", "pykubeadm", "lab"]
    up = _run(
        *pyk, "up", "--topology", "loopback", "--dir", str(lab), "--config", str(tmp_path / "cluster.yaml"), env=env
    )
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        cp = lab / "lab-control-plane"
        kenv = {**env, "KUBECONFIG": str(cp / "etc/kubernetes/admin.conf"), "HOME": str(tmp_path)}

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            res = _run("kubectl", *args, env=kenv, timeout=60)
            assert res.returncode == 0, res.stderr
            return res

        manifest = (cp / "etc/kubernetes/manifests/kube-apiserver.yaml").read_text()
        assert "--encryption-provider-config=/etc/kubernetes/enc/enc.yaml" in manifest
        kubectl("create", "secret", "generic", "db", f"--from-literal=password={SECRET}")
        [db] = list(cp.rglob("state.db"))
        with sqlite3.connect(db) as conn:
            (value,) = conn.execute(
                "SELECT value FROM kine WHERE name = '/registry/secrets/default/db' ORDER BY id DESC LIMIT 1"
            ).fetchone()
        assert bytes(value).startswith(b"k8s:enc:aescbc:v1:key1:") and SECRET.encode() not in bytes(value)
        got = kubectl("get", "secret", "db", "-o", "jsonpath={.data.password}").stdout
        assert base64.b64decode(got).decode() == SECRET
        log = cp / "var/log/kubernetes/audit/audit.log"
        deadline = time.monotonic() + 30
        while not (log.exists() and '"name":"db"' in log.read_text()):
            assert time.monotonic() < deadline, "no audit event for the Secret"
            time.sleep(0.2)
        assert SECRET not in log.read_text()
        taints = kubectl("get", "node", "lab-worker", "-o", "jsonpath={.spec.taints[*].key}").stdout.split()
        assert "dedicated" in taints
    finally:
        down = _run(*pyk, "down", "--dir", str(lab), env=env, timeout=300)
        assert down.returncode == 0, down.stdout[-2000:] + down.stderr[-2000:]
