"""Mirror Pods: a joined node's static Pods (a real etcd, an unrunnable image) appear in kube-system with true status."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import yaml
from tests.integration.kubelet.controlplane import run_signer
from tests.integration.kubelet.test_static_pods_etcd import etcd_manifest
from tests.integration.kubelet.test_tls_bootstrap import Node, _true, apiserver, cancel, eventually  # noqa: F401

from pykubeadm.kubelet.api import ApiError
from pykubeadm.testing.etcd import etcd_available, free_port

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not etcd_available(), reason="etcd binary not installed")]


async def _pod(admin, name):
    return await admin.get(f"/api/v1/namespaces/kube-system/pods/{name}")


async def test_mirror_pods_follow_static_pods(apiserver, tmp_path):  # noqa: F811
    server, admin = apiserver
    node = Node(tmp_path, server, "node-m", "127.0.10.21")
    manifests = node.root / "etc/kubernetes/manifests"
    client, peer, metrics = free_port(), free_port(), free_port()
    (manifests / "etcd.yaml").write_text(yaml.safe_dump(etcd_manifest(client, peer, metrics)))
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
    signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
    node.kubelet.start()
    try:

        async def running_etcd():
            pod = await _pod(admin, "etcd-node-m")
            st = pod.get("status") or {}
            cs = (st.get("containerStatuses") or [{}])[0]
            return pod if st.get("phase") == "Running" and cs.get("ready") else None

        pod = await eventually(running_etcd, 60, "mirror pod etcd-node-m Running and ready")
        meta = pod["metadata"]
        assert meta["annotations"]["kubernetes.io/config.mirror"] == meta["annotations"]["kubernetes.io/config.hash"]
        assert meta["annotations"]["kubernetes.io/config.source"] == "file"
        assert meta["ownerReferences"][0]["kind"] == "Node" and meta["ownerReferences"][0]["name"] == "node-m"
        assert pod["spec"]["nodeName"] == "node-m"
        assert "running" in pod["status"]["containerStatuses"][0]["state"]
        assert pod["status"]["hostIP"] == "127.0.10.21"
        first_hash = meta["annotations"]["kubernetes.io/config.hash"]
        listed = server.api.kubectl("get", "pods", "-n", "kube-system", "--no-headers").stdout
        assert any(line.split()[:3] == ["etcd-node-m", "1/1", "Running"] for line in listed.splitlines()), listed

        async def waiting_kube_state_metrics():
            p = await _pod(admin, "kube-state-metrics-node-m")
            cs = ((p.get("status") or {}).get("containerStatuses") or [{}])[0]
            return p if "waiting" in cs.get("state", {}) else None

        p = await eventually(waiting_kube_state_metrics, 30, "mirror pod kube-state-metrics-node-m waiting")
        waiting = p["status"]["containerStatuses"][0]["state"]["waiting"]
        assert waiting["reason"] in ("ErrImagePull", "ImagePullBackOff") and "kube-state-metrics" in waiting["message"]
        assert p["status"]["phase"] == "Pending"

        # a changed manifest replaces the mirror pod (new config hash)
        (manifests / "etcd.yaml").write_text(yaml.safe_dump(etcd_manifest(client, peer, metrics, 5000)))

        async def replaced():
            q = await _pod(admin, "etcd-node-m")
            return q if q["metadata"]["annotations"]["kubernetes.io/config.hash"] != first_hash else None

        await eventually(replaced, 30, "mirror pod for the changed manifest")
        # a removed manifest deletes the mirror pod
        (manifests / "kube-state-metrics.yaml").unlink()

        async def gone():
            try:
                await _pod(admin, "kube-state-metrics-node-m")
            except ApiError as e:
                return e.status == 404
            return False

        await eventually(gone, 30, "mirror pod deleted")
    finally:
        await cancel(signer)
        node.kubelet.stop()
