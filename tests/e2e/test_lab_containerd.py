"""A containerd lab end to end (`lab up --runtime containerd --registry`, one control plane and one worker): each
node's own containerd in the node's network namespace answering CRI with kubeadm's pause image preloaded and
kubeadm's criSocket pointing at it, `lab load` of a docker archive built here (Debian's busybox-static packed with
umoci, converted with skopeo) into every node, the lab's registry published on 127.0.0.1:5001 taking a push and
serving `localhost:5001/busybox` to a node's containerd through CRI PullImage, kind's local-registry-hosting
ConfigMap, a Deployment of that image run by the kubelet through CRI (`containerd://` IDs), and `lab down` leaving no
containerd, registry, shim, mount or namespace."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.e2e.test_lab import _processes_under, pykubeadm
from tests.e2e.test_lab_netns import _host_state, netns_lab_up

from pykubeadm import constants as c
from pykubeadm.cri.client import CRIClient
from pykubeadm.layout import Layout
from pykubeadm.testing.images import BUSYBOX

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and containerd need root"),
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in ("containerd", "ctr", "docker-registry", "skopeo", "umoci"))
        or not BUSYBOX.is_file(),
        reason="needs Debian's containerd, docker-registry, skopeo, umoci and busybox-static",
    ),
]

NODES = ["lab-control-plane", "lab-worker"]
LOADED = "pykubeadm.test/loaded:1.0"


@dataclass
class ContainerdLab:
    dir: Path
    before: dict[str, set[str]]
    up_output: str

    def endpoint(self, node: str) -> str:
        return f"unix://{Layout(self.dir / node).containerd_socket}"

    def cri(self, node: str, call: str, *args: object) -> Any:
        async def run() -> object:
            async with CRIClient(self.endpoint(node), timeout=60) as cri:
                return await getattr(cri, call)(*args)

        return asyncio.run(run())

    def kubectl(self, *args: str) -> str:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.dir / "kubeconfig"), *args], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
        return res.stdout


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainerdLab]:
    lab_dir = tmp_path_factory.mktemp("ctrd") / "lab"
    before = _host_state(lab_dir)
    with netns_lab_up(lab_dir, "--workers", "1", "--runtime", "containerd", "--registry") as output:
        yield ContainerdLab(lab_dir, before, output)


def _busybox_layout(tmp: Path) -> str:
    """An OCI layout `tmp/oci` with image `busybox`: Debian's static busybox at /bin/busybox with a symlink per
    applet, `sh` as its command; built with umoci. Returns skopeo's name for it."""
    rootfs = tmp / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    (rootfs / "tmp").mkdir()
    shutil.copy2(BUSYBOX, rootfs / "bin/busybox")
    applets = subprocess.run([str(BUSYBOX), "--list-full"], capture_output=True, text=True, check=True).stdout
    for applet in applets.split():
        link = rootfs / applet
        if applet != "bin/busybox" and not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
    layout = tmp / "oci"
    for cmd in (
        ["umoci", "init", "--layout", str(layout)],
        ["umoci", "new", "--image", f"{layout}:busybox"],
        ["umoci", "insert", "--image", f"{layout}:busybox", str(rootfs), "/"],
        ["umoci", "config", "--image", f"{layout}:busybox", "--config.cmd", "sh"],
    ):
        subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60)
    return f"oci:{layout}:busybox"


@pytest.fixture(scope="module")
def busybox(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _busybox_layout(tmp_path_factory.mktemp("busybox"))


def _skopeo(*args: str) -> None:
    res = subprocess.run(["skopeo", "copy", "--quiet", *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_each_node_runs_its_own_containerd_in_its_network_namespace(lab: ContainerdLab) -> None:
    assert "[lab] Runtime: containerd (asked for)" in lab.up_output
    pids = set()
    for node in NODES:
        pid = int((lab.dir / f".lab/{node}-containerd.pid").read_text())
        pids.add(pid)
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert str(lab.dir / node / "etc/containerd/config.toml").encode() in args
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(lab.dir / f".lab/netns/{node}/net").st_ino
        version = lab.cri(node, "version")
        assert version.runtime_name == "containerd", version
        pause = lab.cri(node, "image_status", "registry.k8s.io/pause:3.10")
        assert pause is not None, f"kubeadm's pause image is not preloaded on {node}"
        flags = Layout(lab.dir / node).kubelet_env_file.read_text()
        assert f"--container-runtime-endpoint={lab.endpoint(node)}" in flags
    assert len(pids) == 2


def test_the_containerd_config_fits_this_machine(lab: ContainerdLab) -> None:
    import tomllib

    from pykubeadm.containerd.config import negative_oom_score_adj_refused

    config = tomllib.loads((lab.dir / "lab-worker/etc/containerd/config.toml").read_text())
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert cri["restrict_oom_score_adj"] is negative_oom_score_adj_refused()
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10"
    assert cri["cni"]["conf_dir"] == str(lab.dir / "lab-worker/etc/cni/net.d")
    # the directory kindnet writes the node's conflist into is the one containerd reads
    assert any((lab.dir / "lab-worker/etc/cni/net.d").glob("*.conflist")) or "kindnet" in lab.kubectl(
        "-n", "kube-system", "get", "daemonset"
    )


def test_lab_load_imports_a_docker_archive_into_every_node(lab: ContainerdLab, busybox: str, tmp_path: Path) -> None:
    archive = tmp_path / "loaded.tar"
    _skopeo(busybox, f"docker-archive:{archive}:{LOADED}")
    res = pykubeadm("lab", "load", "--dir", str(lab.dir), str(archive), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    for node in NODES:
        assert f"[lab] {node}: loaded" in res.stdout
        tags = {tag for image in lab.cri(node, "list_images") for tag in image.repo_tags}
        assert LOADED in tags, (node, tags)


def test_lab_load_refuses_what_is_not_an_image_archive(lab: ContainerdLab, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not an image")
    res = pykubeadm("lab", "load", "--dir", str(lab.dir), str(tmp_path / "notes.txt"), str(tmp_path / "x.tar"))
    assert res.returncode != 0
    assert "is not an image archive" in res.stderr + res.stdout


def test_an_image_pushed_to_the_lab_registry_is_pulled_by_a_node(lab: ContainerdLab, busybox: str) -> None:
    _skopeo("--dest-tls-verify=false", busybox, "docker://127.0.0.1:5001/busybox:latest")
    ref = lab.cri("lab-worker", "pull_image", "localhost:5001/busybox")
    assert str(ref).startswith("sha256:")
    image = lab.cri("lab-worker", "image_status", "localhost:5001/busybox:latest")
    assert image is not None and "localhost:5001/busybox:latest" in image.repo_tags


def test_a_deployment_of_the_pushed_image_runs_on_the_nodes_containerd(lab: ContainerdLab, busybox: str) -> None:
    """kubectl create deployment of `localhost:5001/busybox` (pushed to the lab's registry): every replica Ready,
    run by containerd (`containerd://` IDs), on the worker's Pod network."""
    import time

    _skopeo("--dest-tls-verify=false", busybox, "docker://127.0.0.1:5001/busybox:latest")
    lab.kubectl(
        "create", "deployment", "web", "--image=localhost:5001/busybox", "--replicas=2", "--", "httpd", "-f", "-p", "80"
    )
    deadline = time.monotonic() + 120
    while True:
        pods = json.loads(lab.kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
        statuses = [s for p in pods for s in p["status"].get("containerStatuses") or []]
        if len(pods) == 2 and len(statuses) == 2 and all(s["ready"] for s in statuses):
            break
        assert time.monotonic() < deadline, json.dumps([p["status"] for p in pods])[:3000]
        time.sleep(0.5)
    assert all(s["containerID"].startswith("containerd://") for s in statuses), statuses
    ids = {s["containerID"].removeprefix("containerd://") for s in statuses}
    running = {c.id for node in NODES for c in lab.cri(node, "list_containers")}
    assert ids <= running, (ids, running)


def test_the_local_registry_hosting_configmap(lab: ContainerdLab) -> None:
    cm = json.loads(lab.kubectl("-n", "kube-public", "get", "configmap", "local-registry-hosting", "-o", "json"))
    value = yaml.safe_load(cm["data"]["localRegistryHosting.v1"])
    assert value["host"] == "localhost:5001"
    assert value["help"].startswith("https://")


def test_a_pod_sandbox_gets_an_address_from_the_workers_pod_network(lab: ContainerdLab) -> None:
    """The node's containerd makes Pod networks with the CNI config kindnet wrote for the node (its podCIDR). The
    sandbox is left running: lab down must take it, its shim and its network namespace away."""
    import ipaddress
    import uuid

    from pykubeadm.cri.v1 import api_pb2 as api

    uid = str(uuid.uuid4())
    config = api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(name="probe", namespace="default", uid=uid, attempt=0),
        hostname="probe",
        log_directory=str(lab.dir / f"lab-worker/var/log/pods/default_probe_{uid}"),
        linux=api.LinuxPodSandboxConfig(),
    )
    sandbox = lab.cri("lab-worker", "run_pod_sandbox", config)
    status = lab.cri("lab-worker", "pod_sandbox_status", sandbox)
    ip = ipaddress.ip_address(status.status.network.ip)
    cidr = lab.kubectl("get", "node", "lab-worker", "-o", "jsonpath={.spec.podCIDR}")
    assert ip in ipaddress.ip_network(cidr), (ip, cidr)
    assert _containerd_leftovers(lab.dir), "no shim runs for the sandbox"


def _containerd_leftovers(lab_dir: Path) -> list[str]:
    """containerd daemons, shims and registries naming the lab dir, and mounts under it."""
    found = []
    for pid in _processes_under(lab_dir):
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        if any(word in args for word in ("containerd", "docker-registry")):
            found.append(f"{pid}: {args[:200]}")
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    found += [line.split()[4] for line in mounts if line.split()[4].startswith(f"{lab_dir}/")]
    return found


def test_zz_lab_down_leaves_no_containerd_registry_shim_mount_or_namespace(lab: ContainerdLab) -> None:
    assert lab.cri("lab-worker", "list_images")  # the lab is up
    res = pykubeadm("lab", "down", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[lab] stopped the registry" in res.stdout
    assert _containerd_leftovers(lab.dir) == []
    after = _host_state(lab.dir)
    assert not after["processes"], after["processes"]
    assert not {n for n in after["links"] - lab.before["links"] if n == "lab0" or n.startswith("veth")}
    assert {n for n in after["netns"] - lab.before["netns"] if not n.startswith("pk-")} == set()
    assert not (lab.dir / ".lab/netns").exists()
    socket_links = Path(c.CONTAINERD_SOCKET_LINK_DIR)
    into_lab = [p for p in socket_links.iterdir() if str(lab.dir) in os.readlink(p)] if socket_links.is_dir() else []
    assert not into_lab, into_lab
