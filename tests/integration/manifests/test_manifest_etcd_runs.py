"""The manifests are load-bearing: the etcd static Pod kubeadm's phases write starts a real etcd that serves TLS with
the certificates of the certs phase, once container paths are mapped to host paths through the Pod's hostPath volumes
(what the built-in kubelet does)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from pykubeadm.testing.etcd import etcd_available, free_port

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not etcd_available(), reason="etcd binary not installed")]

BIN = shutil.which("pykubeadm", path=str(Path(sys.executable).parent))
CMD = [BIN] if BIN else [sys.executable, "-m", "pykubeadm"]

CFG = """
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.0.1
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
etcd:
  local:
    extraArgs:
    - {{name: listen-client-urls, value: "https://127.0.0.1:{client}"}}
    - {{name: advertise-client-urls, value: "https://127.0.0.1:{client}"}}
    - {{name: listen-peer-urls, value: "https://127.0.0.1:{peer}"}}
    - {{name: initial-advertise-peer-urls, value: "https://127.0.0.1:{peer}"}}
    - {{name: initial-cluster, value: "node1=https://127.0.0.1:{peer}"}}
    - {{name: listen-metrics-urls, value: "http://127.0.0.1:{metrics}"}}
"""


def host_command(pod: dict, root: Path) -> list[str]:
    """The container command with every path under a mounted directory mapped to its hostPath under `root`."""
    vols = {v["name"]: v["hostPath"]["path"] for v in pod["spec"]["volumes"]}
    ctr = pod["spec"]["containers"][0]
    mounts = sorted(((m["mountPath"], vols[m["name"]]) for m in ctr["volumeMounts"]), key=lambda m: -len(m[0]))
    out = []
    for arg in ctr["command"]:
        name, eq, value = arg.partition("=")
        for mount_path, host_path in mounts:
            if eq and (value == mount_path or value.startswith(mount_path + "/")):
                value = str(root / host_path.lstrip("/")) + value[len(mount_path) :]
                break
        out.append(f"{name}{eq}{value}" if eq else arg)
    return out


def test_etcd_manifest_starts_real_etcd(tmp_path: Path) -> None:
    client, peer, metrics = free_port(), free_port(), free_port()
    cfg = tmp_path / "kubeadm.yaml"
    cfg.write_text(CFG.format(client=client, peer=peer, metrics=metrics))
    root = tmp_path / "root"
    for phase in (["certs", "all"], ["etcd", "local"]):
        r = subprocess.run(
            [*CMD, "--root-dir", str(root), "init", "phase", *phase, "--config", str(cfg)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert r.returncode == 0, r.stderr
    pod = yaml.safe_load((root / "etc/kubernetes/manifests/etcd.yaml").read_text())
    argv = host_command(pod, root)
    assert argv[0] == "etcd"
    assert f"--data-dir={root}/var/lib/etcd" in argv
    assert f"--cert-file={root}/etc/kubernetes/pki/etcd/server.crt" in argv
    probe = pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]
    assert (probe["host"], probe["port"], probe["scheme"]) == ("127.0.0.1", metrics, "HTTP")
    log = (tmp_path / "etcd.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        pki = root / "etc/kubernetes/pki/etcd"
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "healthcheck-client.crt"), str(pki / "healthcheck-client.key"))
        deadline = time.monotonic() + 30
        body = b""
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "etcd.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{client}/health", context=ctx, timeout=2) as resp:
                    body = resp.read()
                    break
            except OSError:
                time.sleep(0.2)
        assert b'"health":"true"' in body, (tmp_path / "etcd.log").read_text()[-2000:]
        # without a client certificate the client port refuses (client-cert-auth=true)
        plain = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        with pytest.raises(OSError):
            urllib.request.urlopen(f"https://127.0.0.1:{client}/v2/keys", context=plain, timeout=2).read()
        # the metrics listener the probes use answers over plain HTTP
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/health", timeout=2) as resp:
            assert resp.status == 200
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
