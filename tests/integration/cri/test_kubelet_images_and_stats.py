"""A real kubelet on a real containerd (and a real apiserver, all on free loopback ports): image garbage collection
by the KubeletConfiguration's thresholds, and the Summary API (`/stats/summary`) for a containerd Pod and a built-in
(static) Pod, read as users read it, through the apiserver's node proxy with `kubectl get --raw`.

The kubelet's image GC fires on any real disk with `imageGCHighThresholdPercent: 1` / `imageGCLowThresholdPercent: 0`
(the lowest legal band: the images themselves put usage at 1% or more) and `imageMinimumGCAge: 10s`, collecting every
second (the hidden `--image-gc-period`; the kubelet's is 5 minutes): images no container uses go (ListImages), the one
a running Pod uses stays, and so does the sandbox (pause) image; wanting to free the whole disk and finding only those
images is the Node's `FreeDiskSpaceFailed` event.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from tests.integration.cri.test_kubelet_cri_pods import NODE, Node, pod, running, wait_for

from pykubeadm.containerd.config import kubeadm_pause_image
from pykubeadm.containerd.daemon import ContainerdProcess
from pykubeadm.containerd.images import import_archive
from pykubeadm.containerd.ociimage import ImageConfig, LayerFile, write_oci_archive
from pykubeadm.cri.kubeadmruntime import run_with_client
from pykubeadm.testing.apiserver import ApiServer
from pykubeadm.testing.images import BUSYBOX

from .conftest import BUSYBOX_IMAGE

pytestmark = [pytest.mark.integration]

UNUSED = ("pykubeadm.test/unused-a:1", "pykubeadm.test/unused-b:1")


def image_tags(containerd: ContainerdProcess) -> set[str]:
    images = run_with_client(containerd.endpoint, lambda cri: cri.list_images(), timeout=30)
    return {tag for image in images for tag in image.repo_tags}


STATIC_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "builtin-sleeper", "namespace": "default"},
    "spec": {
        "hostNetwork": True,
        "containers": [{"name": "sleeper", "image": "busybox:1.36", "command": ["sh", "-c", "exec sleep 3600"]}],
    },
}


@pytest.fixture(scope="module")
def node(api_server: ApiServer, containerd: ContainerdProcess) -> Iterator[Node]:
    root = containerd.cfg.layout.root
    for i, reference in enumerate(UNUSED):  # two images of their own (distinct IDs), no container uses them
        archive = root.parent / f"unused-{i}.oci.tar"
        write_oci_archive(
            archive,
            reference,
            ImageConfig(cmd=["sh"], labels={"n": str(i)}),
            files=[LayerFile("/bin/busybox", BUSYBOX)],
        )
        import_archive(containerd.cfg, archive)
    # the kubelet authorizes by SubjectAccessReview: let the apiserver's kubelet client in, as a cluster does
    api_server.kubectl(
        "create",
        "clusterrolebinding",
        "apiserver-kubelet-api-admin",
        "--clusterrole=system:kubelet-api-admin",
        "--user=kube-apiserver-kubelet-client",
    )
    # the containerd Pod exists before the kubelet starts, so it runs well within imageMinimumGCAge
    api_server.kubectl(
        "create",
        "-f",
        "-",
        input=pod("gc-user", {"name": "user", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}),
    )
    n = Node(root, api_server, containerd)
    config_path = root / "var/lib/kubelet/config.yaml"
    config: dict[str, Any] = yaml.safe_load(config_path.read_text())
    config.update(
        imageGCHighThresholdPercent=1,
        imageGCLowThresholdPercent=0,
        imageMinimumGCAge="10s",
        staticPodPath="/etc/kubernetes/manifests",
        authorization={"mode": "Webhook"},
    )
    config_path.write_text(yaml.safe_dump(config))
    (root / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    (root / "etc/kubernetes/manifests/builtin-sleeper.yaml").write_text(yaml.safe_dump(STATIC_POD))
    n.kubelet.args.append("--image-gc-period=1")
    n.kubelet.start()
    try:
        yield n
    finally:
        n.kubelet.stop()


def node_events(server: ApiServer, reason: str) -> list[dict[str, Any]]:
    res = server.kubectl(
        "get", "events", "-A", "--field-selector", f"involvedObject.kind=Node,reason={reason}", "-o", "json"
    )
    return list(json.loads(res.stdout)["items"])


def test_image_gc_removes_the_unused_images_and_keeps_the_used_and_the_sandbox(
    api_server: ApiServer, node: Node, containerd: ContainerdProcess
) -> None:
    assert set(UNUSED) <= image_tags(containerd)
    st = wait_for(lambda: running(api_server, "gc-user"), 60, "gc-user running")
    assert st["containerID"].startswith("containerd://")
    wait_for(lambda: not set(UNUSED) & image_tags(containerd), 60, "the unused images collected")
    left = image_tags(containerd)
    assert BUSYBOX_IMAGE in left, left  # a running container's image
    assert kubeadm_pause_image() in left, left  # the sandbox image
    assert running(api_server, "gc-user")
    events = wait_for(lambda: node_events(api_server, "FreeDiskSpaceFailed"), 30, "FreeDiskSpaceFailed")
    assert events[0]["type"] == "Warning" and events[0]["involvedObject"]["name"] == NODE
    assert events[0]["message"].startswith("Failed to garbage collect required amount of images. Attempted to free ")
    log = node.kubelet.log_path.read_text()
    assert "Disk usage on image filesystem is over the high threshold" in log
    assert "Removing image to free bytes" in log


def summary(server: ApiServer, query: str = "") -> dict[str, Any]:
    res = server.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/stats/summary{query}")
    return dict(json.loads(res.stdout))


def pod_stats(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in data["pods"] if p["podRef"]["name"] == name), None)


def test_stats_summary_through_the_node_proxy(api_server: ApiServer, node: Node) -> None:
    wait_for(lambda: running(api_server, "gc-user"), 60, "gc-user running")
    mirror = f"builtin-sleeper-{NODE}"
    data = wait_for(
        lambda: (d := summary(api_server)) and pod_stats(d, "gc-user") and pod_stats(d, mirror) and d,
        60,
        "both Pods in /stats/summary",
    )
    n = data["node"]
    assert n["nodeName"] == NODE and n["startTime"].endswith("Z")
    assert n["cpu"]["usageCoreNanoSeconds"] > 0 and n["memory"]["workingSetBytes"] > 0
    assert {c["name"] for c in n["systemContainers"]} == {"kubelet", "pods"}
    assert n["fs"]["capacityBytes"] >= n["fs"]["availableBytes"] > 0
    image_fs = n["runtime"]["imageFs"]
    assert image_fs["capacityBytes"] > 0 and image_fs["usedBytes"] > 0  # containerd's ImageFsInfo + statfs
    assert n["rlimit"]["maxpid"] > 0 and n["rlimit"]["curproc"] > 0

    cri_pod = pod_stats(data, "gc-user")
    assert cri_pod is not None
    ct = get_pod_uid(api_server, "gc-user")
    assert cri_pod["podRef"] == {"name": "gc-user", "namespace": "default", "uid": ct}
    (user,) = cri_pod["containers"]
    assert user["name"] == "user" and user["startTime"].endswith("Z")
    assert user["memory"]["workingSetBytes"] > 0 and "usageCoreNanoSeconds" in user["cpu"]  # the runtime's figures
    assert user["rootfs"]["capacityBytes"] > 0 and "usedBytes" in user["rootfs"]  # the writable layer
    assert user["logs"]["capacityBytes"] > 0
    assert "ephemeral-storage" in cri_pod

    builtin = pod_stats(data, mirror)
    assert builtin is not None
    (sleeper,) = builtin["containers"]
    assert sleeper["name"] == "sleeper" and sleeper["memory"]["workingSetBytes"] > 0  # its processes, from /proc
    assert builtin["memory"]["workingSetBytes"] >= sleeper["memory"]["workingSetBytes"]

    # a second read has a rate for every series still there
    again = summary(api_server)
    assert "usageNanoCores" in again["node"]["cpu"]
    again_builtin = pod_stats(again, mirror)
    assert again_builtin is not None and "usageNanoCores" in again_builtin["containers"][0]["cpu"]

    only = summary(api_server, "?only_cpu_and_memory=true")
    assert set(only["node"]) <= {"nodeName", "systemContainers", "startTime", "cpu", "memory", "swap"}
    only_pod = pod_stats(only, "gc-user")
    assert only_pod is not None and set(only_pod) == {"podRef", "startTime", "containers", "cpu", "memory"}
    assert set(only_pod["containers"][0]) == {"name", "startTime", "cpu", "memory"}


def get_pod_uid(server: ApiServer, name: str) -> str:
    return server.kubectl("get", "pod", name, "-o", "jsonpath={.metadata.uid}").stdout


def test_stats_summary_needs_nodes_stats(api_server: ApiServer, node: Node) -> None:
    """The kubelet asks the apiserver (SubjectAccessReview) whether the caller may get nodes/stats."""
    cert, key = api_server.client_cert("nobody")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the kubelet's self-signed serving certificate
    ctx.load_cert_chain(str(cert), str(key))
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))
    with pytest.raises(urllib.error.HTTPError) as err:
        direct.open(f"https://127.0.0.1:{node.port}/stats/summary", timeout=10)
    assert err.value.code == 403
    assert err.value.read().decode() == "Forbidden (user=nobody, verb=get, resource=nodes, subresource=stats)"
