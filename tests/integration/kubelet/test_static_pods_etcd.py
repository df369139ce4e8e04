"""The static Pod runner with a real etcd: start from a manifest, restart on change, stop on removal, crash back-off.

The kubelet runs standalone (no kubeconfig): only healthz and static Pods, as a real kubelet without an API server.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request

import pytest
import yaml
from tests.integration.kubelet.kubelet_procs import KubeletProcess, alive, children_of, cmdline, wait_until

from pykubeadm.testing.etcd import etcd_available, free_port

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not etcd_available(), reason="etcd binary not installed")]


def etcd_manifest(client: int, peer: int, metrics: int, snapshot_count: int = 10000) -> dict:
    url = f"http://127.0.0.1:{client}"
    purl = f"http://127.0.0.1:{peer}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etcd", "namespace": "kube-system", "labels": {"component": "etcd"}},
        "spec": {
            "hostNetwork": True,
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "etcd",
                    "image": "registry.k8s.io/etcd:3.5.21-0",
                    "command": [
                        "etcd",
                        f"--advertise-client-urls={url}",
                        "--data-dir=/var/lib/etcd",
                        f"--initial-advertise-peer-urls={purl}",
                        f"--initial-cluster=n1={purl}",
                        f"--listen-client-urls={url}",
                        f"--listen-metrics-urls=http://127.0.0.1:{metrics}",
                        f"--listen-peer-urls={purl}",
                        "--name=n1",
                        f"--snapshot-count={snapshot_count}",
                    ],
                    "livenessProbe": {
                        "httpGet": {"host": "127.0.0.1", "path": "/health", "port": metrics, "scheme": "HTTP"},
                        "initialDelaySeconds": 2,
                        "periodSeconds": 1,
                        "failureThreshold": 3,
                    },
                    "startupProbe": {
                        "httpGet": {"host": "127.0.0.1", "path": "/health", "port": metrics, "scheme": "HTTP"},
                        "periodSeconds": 1,
                        "failureThreshold": 30,
                    },
                    "volumeMounts": [{"mountPath": "/var/lib/etcd", "name": "etcd-data"}],
                }
            ],
            "volumes": [{"name": "etcd-data", "hostPath": {"path": "/var/lib/etcd", "type": "DirectoryOrCreate"}}],
        },
    }


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200 and (b"true" in r.read() or url.endswith("healthz"))
    except OSError:
        return False


def etcd_pids(kubelet: KubeletProcess) -> list[int]:
    """The kubelet's etcd children, each judged on ONE read of its command line (it may change or vanish between
    two reads: an exec in progress, an exit)."""
    return [p for p in children_of(kubelet.pid) if (argv := cmdline(p)) and argv[0].endswith("etcd")]


def test_static_etcd_lifecycle(tmp_path):
    root = tmp_path / "node"
    manifests = root / "etc/kubernetes/manifests"
    manifests.mkdir(parents=True)
    client, peer, metrics, healthz = free_port(), free_port(), free_port(), free_port()
    (manifests / "etcd.yaml").write_text(yaml.safe_dump(etcd_manifest(client, peer, metrics)))
    (manifests / ".hidden.yaml").write_text("not: a pod")
    (manifests / "kube-state-metrics.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "kube-state-metrics", "namespace": "kube-system"},
                "spec": {
                    "containers": [
                        {
                            "name": "kube-state-metrics",
                            "image": "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0",
                        }
                    ]
                },
            }
        )
    )
    kubelet = KubeletProcess(
        root,
        [
            "--pod-manifest-path=/etc/kubernetes/manifests",
            "--hostname-override=n1",
            f"--healthz-port={healthz}",
            "--static-pod-backoff=2",
        ],
        tmp_path / "kubelet.log",
    ).start()
    try:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{healthz}/healthz"), 15, "kubelet healthz")
        wait_until(lambda: http_ok(f"http://127.0.0.1:{client}/health"), 30, "etcd from the manifest to be healthy")
        # container paths were mapped through the hostPath volume under the node's root dir
        assert (root / "var/lib/etcd/member").is_dir()
        [pid1] = etcd_pids(kubelet)
        assert "--data-dir=" + str(root / "var/lib/etcd") in cmdline(pid1)
        logs = list((root / "var/log/pods").glob("kube-system_etcd-n1_*/etcd/0.log"))
        assert logs and logs[0].stat().st_size > 0
        # an image the runtime cannot run leaves the kubelet running and says why
        wait_until(lambda: "ErrImagePull" in kubelet.log(), 10, "ErrImagePull for kube-state-metrics")
        assert kubelet.proc.poll() is None

        # change a flag: the process is replaced within 5 s and runs with the new flag
        t0 = time.monotonic()
        (manifests / "etcd.yaml").write_text(yaml.safe_dump(etcd_manifest(client, peer, metrics, 5000)))
        pid2 = wait_until(
            lambda: next((p for p in etcd_pids(kubelet) if p != pid1), None), 5, "etcd to restart with the new flag"
        )
        assert time.monotonic() - t0 < 5
        assert "--snapshot-count=5000" in cmdline(pid2)
        assert not alive(pid1)
        wait_until(lambda: http_ok(f"http://127.0.0.1:{client}/health"), 30, "restarted etcd healthy")

        # crash: first restart at once, the next one only after the back-off
        os.kill(pid2, signal.SIGKILL)
        pid3 = wait_until(lambda: next((p for p in etcd_pids(kubelet) if p != pid2), None), 5, "restart after crash")
        wait_until(lambda: http_ok(f"http://127.0.0.1:{client}/health"), 30, "etcd healthy after crash")
        t_kill = time.monotonic()
        os.kill(pid3, signal.SIGKILL)
        pid4 = wait_until(
            lambda: next((p for p in etcd_pids(kubelet) if p != pid3), None), 15, "restart after second crash"
        )
        assert time.monotonic() - t_kill >= 1.5, "second restart must wait for the back-off"
        assert "CrashLoopBackOff" in kubelet.log() or "restarting in 2s" in kubelet.log()
        assert list((root / "var/log/pods").glob("kube-system_etcd-n1_*/etcd/*.log"))

        # remove the manifest: the process stops
        (manifests / "etcd.yaml").unlink()
        wait_until(lambda: not alive(pid4), 10, "etcd to stop after its manifest was removed")
        assert not etcd_pids(kubelet)
    finally:
        rc = kubelet.stop()
    assert rc == 0, kubelet.log()[-3000:]


def test_kubelet_exit_kills_its_processes(tmp_path):
    root = tmp_path / "node"
    manifests = root / "etc/kubernetes/manifests"
    manifests.mkdir(parents=True)
    client, peer, metrics, healthz = free_port(), free_port(), free_port(), free_port()
    (manifests / "etcd.yaml").write_text(yaml.safe_dump(etcd_manifest(client, peer, metrics)))
    kubelet = KubeletProcess(
        root,
        ["--pod-manifest-path=/etc/kubernetes/manifests", "--hostname-override=n2", f"--healthz-port={healthz}"],
        tmp_path / "kubelet.log",
    ).start()
    try:
        pid = wait_until(lambda: next(iter(etcd_pids(kubelet)), None), 20, "etcd started")
        kubelet.proc.send_signal(signal.SIGTERM)
        kubelet.proc.wait(20)
        wait_until(lambda: not alive(pid), 10, "etcd gone after kubelet exit")
    finally:
        kubelet.stop()
    # SIGKILL of the kubelet also takes its children down (PDEATHSIG)
    kubelet2 = KubeletProcess(
        root,
        ["--pod-manifest-path=/etc/kubernetes/manifests", "--hostname-override=n2", f"--healthz-port={healthz}"],
        tmp_path / "kubelet2.log",
    ).start()
    try:
        pid = wait_until(lambda: next(iter(etcd_pids(kubelet2)), None), 20, "etcd started again")
        kubelet2.proc.kill()
        kubelet2.proc.wait(10)
        wait_until(lambda: not alive(pid), 10, "etcd gone after kubelet SIGKILL")
    finally:
        kubelet2.stop()


def test_failing_liveness_probe_restarts_the_process(tmp_path):
    root = tmp_path / "node"
    manifests = root / "etc/kubernetes/manifests"
    manifests.mkdir(parents=True)
    client, peer, metrics, healthz, nothing = free_port(), free_port(), free_port(), free_port(), free_port()
    pod = etcd_manifest(client, peer, metrics)
    ct = pod["spec"]["containers"][0]
    del ct["startupProbe"]
    # nothing listens on `nothing`: the liveness probe fails and the kubelet must restart etcd
    ct["livenessProbe"] = {
        "tcpSocket": {"host": "127.0.0.1", "port": nothing},
        "initialDelaySeconds": 1,
        "periodSeconds": 1,
        "failureThreshold": 2,
        "timeoutSeconds": 1,
    }
    (manifests / "etcd.yaml").write_text(yaml.safe_dump(pod))
    kubelet = KubeletProcess(
        root,
        [
            "--pod-manifest-path=/etc/kubernetes/manifests",
            "--hostname-override=n3",
            f"--healthz-port={healthz}",
            "--static-pod-backoff=1",
        ],
        tmp_path / "kubelet.log",
    ).start()
    try:
        pid1 = wait_until(lambda: next(iter(etcd_pids(kubelet)), None), 20, "etcd started")
        pid2 = wait_until(
            lambda: next((p for p in etcd_pids(kubelet) if p != pid1), None), 15, "restart after failed liveness probe"
        )
        assert pid2 != pid1 and not alive(pid1)
        assert "failed liveness probe" in kubelet.log()
    finally:
        kubelet.stop()
