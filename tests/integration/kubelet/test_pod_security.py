"""A Pod must not be root on the host: real Pods run by the kubelet's pod worker as root, in their own namespaces,
each container on its own writable layer over the host's root, confined by its securityContext and its cgroups.

Every Pod here goes through `PodWorker` (source "api"), the built-in runtime's launcher, the container's shim and
its CRI log, as the kubelet runs it; what the container prints is read back from its log file. Without isolation (the
decision `sandbox.can_isolate` makes for a kubelet that is not root) the same Pods are refused, naming the fields.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pykubeadm.kubelet.builtin import sandbox
from pykubeadm.kubelet.builtin.podworker import ContainerWorker, PodWorker
from pykubeadm.kubelet.crilog import parse_line
from pykubeadm.kubelet.resourcemetrics import container_targets, render_resource_metrics
from pykubeadm.layout import Layout

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and mount/PID namespaces"),
]

HOST_FILE = "/etc/pykubeadm-test-i40-layer"

RunPod = Callable[..., Awaitable[PodWorker]]


def container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sh", "-c", script], **extra}


def finished(cw: ContainerWorker) -> bool:
    waiting = cw.state.get("waiting") or {}
    return "terminated" in cw.state or waiting.get("reason") == "CreateContainerConfigError"


def output(cw: ContainerWorker, restart: int | None = None) -> str:
    path = cw.log_path(restart)
    if not path.exists():
        return ""
    return b"".join(parse_line(raw).content + b"\n" for raw in path.read_bytes().splitlines()).decode()


async def wait_for(pred: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        await asyncio.sleep(0.05)
    return value


@pytest.fixture
async def run_pod(tmp_path: Path) -> AsyncIterator[RunPod]:
    """Start a Pod (containers, optional Pod securityContext / initContainers / restartPolicy) in a pod worker and
    wait until each container has ended or was refused; every worker is terminated afterwards."""
    layout = Layout(tmp_path / "node")
    workers: list[PodWorker] = []

    async def run(name: str, containers: list[dict[str, Any]], wait: bool = True, **spec: Any) -> PodWorker:
        uid = str(uuid.uuid4())
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"restartPolicy": "Never", "containers": containers, **spec},
        }
        worker = PodWorker(pod, uid=uid, node_name="n1", pod_ip="127.0.0.1", layout=layout, source="api")
        workers.append(worker)
        worker.start()
        if wait:
            await wait_for(lambda: all(finished(cw) for cw in worker.all_containers()), 60, f"pod {name}")
        return worker

    try:
        yield run
    finally:
        for worker in workers:
            await worker.terminate(grace=0)


def terminated(cw: ContainerWorker) -> dict[str, Any]:
    assert "terminated" in cw.state, (cw.state, output(cw))
    return dict(cw.state["terminated"])


async def test_run_as_user_group_and_supplemental_groups(run_pod: RunPod) -> None:
    pod = await run_pod(
        "ids",
        [container("c", "id -u; id -g; id -G")],
        securityContext={"runAsUser": 1000, "runAsGroup": 3000, "supplementalGroups": [4000]},
    )
    [cw] = pod.containers
    assert terminated(cw)["exitCode"] == 0, output(cw)
    uid, gid, groups = output(cw).split("\n")[:3]
    assert (uid, gid) == ("1000", "3000")
    assert set(groups.split()) == {"3000", "4000"}


async def test_run_as_non_root_is_refused_with_the_kubelets_message(run_pod: RunPod) -> None:
    pod = await run_pod("nonroot", [container("c", "id")], securityContext={"runAsNonRoot": True})
    [cw] = pod.containers
    waiting = cw.state["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    assert waiting["message"] == (
        f'container has runAsNonRoot and image will run as root (pod: "nonroot_default({pod.uid})", container: c)'
    )
    assert not cw.log_path().exists()  # nothing ran
    pod = await run_pod(
        "zero", [container("c", "id", securityContext={"runAsUser": 0, "runAsNonRoot": True})], wait=True
    )
    [cw] = pod.containers
    assert cw.state["waiting"]["message"] == (
        f'container\'s runAsUser breaks non-root policy (pod: "zero_default({pod.uid})", container: c)'
    )
    pod = await run_pod("nonzero", [container("c", "id -u")], securityContext={"runAsNonRoot": True, "runAsUser": 7})
    assert output(pod.containers[0]).strip() == "7"


async def test_memory_limit_ends_in_oom_killed_137(run_pod: RunPod) -> None:
    hog = container(
        "hog",
        "exec python3 -c 'b = b\"x\" * (200 << 20); print(len(b))'",
        resources={"limits": {"memory": "32Mi"}},
    )
    hog["image"] = "python:3"
    pod = await run_pod("oom", [hog])
    [cw] = pod.containers
    term = terminated(cw)
    assert (term["exitCode"], term["reason"]) == (137, "OOMKilled"), output(cw)


async def test_read_only_root_file_system(run_pod: RunPod) -> None:
    pod = await run_pod(
        "rofs",
        [
            container(
                "c",
                "touch /etc/x; echo rc=$?; echo ok > /data/out && cat /data/out",
                securityContext={"readOnlyRootFilesystem": True},
                volumeMounts=[{"name": "data", "mountPath": "/data"}],
            )
        ],
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    [cw] = pod.containers
    assert terminated(cw)["exitCode"] == 0
    out = output(cw)
    assert "Read-only file system" in out and "rc=1" in out
    assert out.rstrip().endswith("ok")  # volumes stay writable


async def test_writes_stay_in_the_containers_own_layer(run_pod: RunPod) -> None:
    assert not os.path.lexists(HOST_FILE)
    writer = container("writer", f"echo inside > {HOST_FILE} && cat {HOST_FILE}")
    reader = container("reader", f"test -e {HOST_FILE} && echo seen || echo absent")
    pod = await run_pod("layer", [reader], initContainers=[writer])
    init, main = pod.init_containers[0], pod.containers[0]
    assert terminated(init)["exitCode"] == 0 and output(init).strip() == "inside"
    assert output(main).strip() == "absent"  # another container of the Pod has its own layer
    assert not os.path.lexists(HOST_FILE)  # and the host never saw the write
    layer = pod.pod_dir / "containers" / "writer" / "rootfs" / "upper"
    assert (layer / HOST_FILE.lstrip("/")).read_text() == "inside\n"


async def test_the_layer_is_kept_across_restarts(run_pod: RunPod) -> None:
    script = "if [ -e /etc/pykubeadm-test-mark ]; then echo kept; else touch /etc/pykubeadm-test-mark; exit 1; fi"
    pod = await run_pod("restarts", [container("c", script)], wait=False, restartPolicy="OnFailure")
    [cw] = pod.containers
    await wait_for(lambda: (cw.state.get("terminated") or {}).get("exitCode") == 0, 60, "a run that succeeds")
    assert cw.restart_count == 1
    assert output(cw, 1).strip() == "kept"


async def test_capabilities_privileged_no_new_privs_and_seccomp(run_pod: RunPod) -> None:
    status = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"
    pod = await run_pod(
        "caps",
        [
            container(
                "dropall",
                "touch /tmp/f; chown 1 /tmp/f; echo rc=$?",
                securityContext={"capabilities": {"drop": ["ALL"]}},
            ),
            container("plain", "mount -t tmpfs none /mnt; echo rc=$?; chown 1 /etc/hostname && echo chowned"),
            container("priv", "mount -t tmpfs none /mnt && echo mounted", securityContext={"privileged": True}),
            container(
                "confined",
                status,
                securityContext={"allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}},
            ),
            container("default", status),
        ],
    )
    out = {cw.name: output(cw) for cw in pod.containers}
    assert "Operation not permitted" in out["dropall"] and "rc=1" in out["dropall"]
    assert "rc=0" not in out["plain"] and "chowned" in out["plain"]  # no mounts, but the default capabilities
    assert out["priv"].strip() == "mounted"
    assert out["confined"].split() == ["NoNewPrivs:", "1", "Seccomp:", "2"]
    assert out["default"].split() == ["NoNewPrivs:", "0", "Seccomp:", "0"]


async def test_cpu_limit_holds_a_busy_loop_near_its_share(run_pod: RunPod) -> None:
    pod = await run_pod(
        "cpu", [container("spin", "while :; do :; done", resources={"limits": {"cpu": "100m"}})], wait=False
    )
    [cw] = pod.containers
    await wait_for(lambda: "running" in cw.state and pod.containment.usage(cw.container_id), 30, "the loop")
    first, t0 = pod.containment.usage(cw.container_id)[0], time.monotonic()
    await asyncio.sleep(3)  # the window the share is measured over
    used = pod.containment.usage(cw.container_id)[0] - first
    share = used / (time.monotonic() - t0)
    assert 0.02 < share < 0.3, share
    # /metrics/resource reads the same cgroup
    body = render_resource_metrics(container_targets([pod])).decode()
    [sample] = [line for line in body.splitlines() if line.startswith("container_cpu_usage_seconds_total{")]
    assert 'container="spin"' in sample
    reported = float(sample.split()[1])
    assert first + used <= reported <= pod.containment.usage(cw.container_id)[0]


_AS_NOBODY = """
import asyncio, json, sys, uuid
from pathlib import Path
from pykubeadm.kubelet.builtin.podworker import PodWorker
from pykubeadm.layout import Layout

async def main() -> None:
    uid = str(uuid.uuid4())
    pod = {"metadata": {"name": "refused", "namespace": "default", "uid": uid}, "spec": json.loads(sys.argv[2])}
    worker = PodWorker(pod, uid=uid, node_name="n1", pod_ip="127.0.0.1", layout=Layout(Path(sys.argv[1])), source="api")
    worker.start()
    def done(cw):
        return "terminated" in cw.state or (cw.state.get("waiting") or {}).get("reason") == "CreateContainerConfigError"
    for _ in range(600):
        if all(done(cw) for cw in worker.containers):
            break
        await asyncio.sleep(0.05)
    out = {cw.name: [cw.state, cw.log_path().read_text() if cw.log_path().exists() else ""] for cw in worker.containers}
    await worker.terminate(grace=0)
    print(json.dumps(out))

asyncio.run(main())
"""


def test_a_kubelet_that_is_not_root_refuses_pods_asking_for_confinement(tmp_path: Path) -> None:
    """The pod worker run as `nobody` (a --root-dir kubelet without namespaces): the same Pods are refused, naming
    the fields; a Pod asking for nothing runs as the kubelet's user."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to run as nobody")
    root = Path(tempfile.mkdtemp(prefix="pykubeadm-nobody-"))
    try:
        os.chown(root, 65534, 65534)
        spec = {
            "restartPolicy": "Never",
            "containers": [
                container("ids", "id", securityContext={"runAsUser": 1000, "readOnlyRootFilesystem": True}),
                container("nonroot", "id", securityContext={"runAsNonRoot": True}),
                container("mem", "true", resources={"limits": {"memory": "32Mi"}}),
                container("free", "id -u"),
            ],
        }
        res = subprocess.run(
            [
                setpriv,
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-c",
                _AS_NOBODY,
                str(root / "node"),
                json.dumps(spec),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        out = json.loads(res.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, fields in (
        (
            "ids",
            ["containers[ids].securityContext.runAsUser", "containers[ids].securityContext.readOnlyRootFilesystem"],
        ),
        ("nonroot", ["containers[nonroot].securityContext.runAsNonRoot"]),
        ("mem", ["containers[mem].resources.limits.memory"]),
    ):
        waiting = out[name][0]["waiting"]
        assert waiting["reason"] == "CreateContainerConfigError"
        assert all(f in waiting["message"] for f in fields), waiting["message"]
        assert "cannot be isolated" in waiting["message"]
    state, log = out["free"]
    assert state["terminated"]["exitCode"] == 0
    assert "65534" in log  # it ran, as the kubelet's user: nothing pretended to confine it


async def test_fs_group_owns_the_volumes_and_is_among_the_groups(run_pod: RunPod) -> None:
    script = "id -G; stat -c %g /data; touch /data/f && stat -c %g /data/f"
    pod = await run_pod(
        "fsgroup",
        [container("c", script, volumeMounts=[{"name": "data", "mountPath": "/data"}])],
        securityContext={"runAsUser": 1000, "fsGroup": 2000, "fsGroupChangePolicy": "OnRootMismatch"},
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    [cw] = pod.containers
    groups, volume_gid, file_gid = output(cw).split("\n")[:3]
    assert "2000" in groups.split()
    assert (volume_gid, file_gid) == ("2000", "2000")  # setgid: what the container makes stays the group's


async def test_exec_runs_confined_as_the_container(run_pod: RunPod) -> None:
    pod = await run_pod(
        "exec",
        [
            container(
                "c",
                "while :; do sleep 1; done",
                securityContext={"runAsUser": 1000, "capabilities": {"drop": ["ALL"]}},
                volumeMounts=[{"name": "data", "mountPath": "/data"}],
            )
        ],
        wait=False,
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    [cw] = pod.containers
    await wait_for(lambda: "running" in cw.state and cw.enter_prefix, 30, "the running container")
    code = await cw.exec_in(["sh", "-c", "id -u > /data/out; grep -E '^CapBnd:' /proc/self/status >> /data/out"])
    assert code == 0
    volume = Layout.pod_volume_dir(pod.pod_dir, "kubernetes.io~empty-dir", "data")
    assert (volume / "out").read_text().split() == ["1000", "CapBnd:", "0000000000000000"]


async def test_reset_removes_the_cgroups_of_pods_whose_kubelet_is_gone(tmp_path: Path) -> None:
    from pykubeadm.kubelet.builtin.containment import node_cgroups

    layout = Layout(tmp_path / "node")
    uid = str(uuid.uuid4())
    pod = {
        "metadata": {"name": "left", "namespace": "default", "uid": uid},
        "spec": {"containers": [container("c", "while :; do sleep 1; done", resources={"limits": {"cpu": "1"}})]},
    }
    worker = PodWorker(pod, uid=uid, node_name="n1", pod_ip="127.0.0.1", layout=layout, source="api")
    worker.start()
    [cw] = worker.containers
    await wait_for(lambda: "running" in cw.state, 30, "the container")
    cgroups = node_cgroups(layout)
    assert cgroups is not None
    pod_dirs = [p / "burstable" / f"pod{uid}" for p in cgroups.kubepods.dirs.values()]
    assert all(p.is_dir() for p in pod_dirs)
    await worker.detach()  # the kubelet is gone; reset stops what it left, then removes the cgroups
    cw.proc.kill_all()
    await asyncio.wait_for(cw.proc.wait(), 10)
    cgroups.remove_all()
    assert not any(p.exists() for p in cgroups.root.dirs.values())
