"""The CRI pod worker against the fake runtime (held to containerd by the contract tests): the sandbox and container
configs the kubelet sends, status from ContainerStatus, restart back-off, image pull policy and errors with kube's
events, and adoption by a restarted kubelet (same IDs, same restart counts)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from pykubeadm.cri.errors import CRIError
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.cri.fake import FakeRuntime
from pykubeadm.kubelet.cri.podworker import CRIPodWorker
from pykubeadm.layout import Layout


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def record(self, pod: Any, kind: str, reason: str, message: str, field_path: str = "") -> None:
        self.seen.append((kind, reason, message))

    def reasons(self) -> list[str]:
        return [r for _, r, _ in self.seen]


async def eventually(pred: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)
    return value


def _pod(**spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "web", "image": "busybox:1.36", "command": ["httpd", "-f"]}])
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "u-1", "labels": {"app": "web"}},
        "spec": {"containers": containers, **spec},
    }


def _worker(fake: FakeRuntime, tmp_path: Path, pod: dict[str, Any], events: Events, **kw: Any) -> CRIPodWorker:
    return CRIPodWorker(
        pod,
        uid="u-1",
        runtime=fake,
        node_name="n1",
        host_ip="127.0.0.1",
        layout=Layout(tmp_path),
        events=events,
        cluster_dns=["10.96.0.10"],
        cluster_domain="cluster.local",
        backoff_initial=0.05,
        **kw,
    )


def _state(w: CRIPodWorker, i: int = 0) -> dict[str, Any]:
    return w.status()["containerStatuses"][i]


async def test_a_pod_runs_through_the_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pykubeadm.kubelet.cri.podworker.POLL_SECONDS", 0.01)
    fake, events = FakeRuntime(), Events()
    fake.add_image("busybox:1.36", size=4321)
    w = _worker(fake, tmp_path, _pod(), events)
    w.start()
    try:
        st = await eventually(lambda: "running" in _state(w)["state"] and _state(w), "running")
        assert st["containerID"].startswith("fake://") and st["restartCount"] == 0
        [sandbox] = await fake.list_pod_sandbox()
        config = w.sandbox_config
        assert config.hostname == "web" and config.log_directory == str(w.log_dir)
        assert w.log_dir == tmp_path / "var/log/pods/ns_web_u-1"
        assert list(config.dns_config.servers) == ["10.96.0.10"] and "ndots:5" in config.dns_config.options
        assert config.dns_config.searches[:3] == ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local"]
        assert sandbox.labels["io.kubernetes.pod.uid"] == "u-1" and sandbox.labels["app"] == "web"
        [ct] = await fake.list_containers()
        assert ct.labels["io.kubernetes.container.name"] == "web"
        cs = await fake.container_status(ct.id)
        assert cs.log_path.endswith("ns_web_u-1/web/0.log")
        assert ("Normal", "Pulled", 'Container image "busybox:1.36" already present on machine') in events.seen
        assert events.reasons()[-2:] == ["Created", "Started"]

        fake.exit(ct.id, 2)  # restartPolicy Always: restarted, with the exit as lastState
        await eventually(lambda: _state(w)["restartCount"] == 1 and "running" in _state(w)["state"], "restart")
        assert _state(w)["lastState"]["terminated"]["exitCode"] == 2
        assert _state(w)["lastState"]["terminated"]["reason"] == "Error"
        fake.exit(_state(w)["containerID"].removeprefix("fake://"), 1, "OOMKilled")
        await eventually(lambda: _state(w)["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff", "back-off")
        assert _state(w)["lastState"]["terminated"]["reason"] == "OOMKilled"
        assert "BackOff" in events.reasons() and "OOMKilling" in events.reasons()
        await eventually(lambda: _state(w)["restartCount"] == 2 and "running" in _state(w)["state"], "2nd restart")
        assert len(await fake.list_containers()) == 2  # the dead instance before the current one is kept, no more

        # a restarted kubelet adopts the sandbox and its container: same IDs, same restart count
        await w.detach()
        before = _state(w)
        again = _worker(fake, tmp_path, _pod(), Events())
        again.start()
        st = await eventually(lambda: "running" in _state(again)["state"] and _state(again), "adopted")
        assert (st["containerID"], st["restartCount"]) == (before["containerID"], 2)
        assert len(await fake.list_pod_sandbox()) == 1

        await again.terminate(1)
        calls = list(fake.calls)
        assert calls.index("StopContainer") < calls.index("StopPodSandbox") < calls.index("RemovePodSandbox")
        assert await fake.list_pod_sandbox() == [] and await fake.list_containers() == []
    finally:
        await w.detach()


async def test_pull_policy_never_and_missing_images(tmp_path: Path) -> None:
    fake, events = FakeRuntime(), Events()
    pod = _pod(containers=[{"name": "c", "image": "local/app:v1", "imagePullPolicy": "Never"}])
    w = _worker(fake, tmp_path, pod, events)
    w.start()
    try:
        waiting = await eventually(lambda: _state(w)["state"].get("waiting", {}).get("message") and _state(w), "wait")
        assert waiting["state"]["waiting"] == {
            "reason": "ErrImageNeverPull",
            "message": 'Container image "local/app:v1" is not present with pull policy of Never',
        }
        assert "PullImage" not in fake.calls
    finally:
        await w.detach()


class FailingPulls(FakeRuntime):
    async def pull_image(
        self, image: str, *, auth: api.AuthConfig | None = None, sandbox_config: api.PodSandboxConfig | None = None
    ) -> str:
        self.calls.append("PullImage")
        raise CRIError("PullImage", grpc.StatusCode.UNKNOWN, f'failed to pull and unpack image "{image}": 401')


async def test_err_image_pull_then_image_pull_back_off(tmp_path: Path) -> None:
    fake, events = FailingPulls(), Events()
    w = _worker(fake, tmp_path, _pod(containers=[{"name": "c", "image": "reg.example/app"}]), events)
    w.start()
    try:
        first = await eventually(
            lambda: _state(w)["state"].get("waiting", {}).get("reason") == "ErrImagePull" and _state(w), "ErrImagePull"
        )
        assert "401" in first["state"]["waiting"]["message"]
        assert ("Normal", "Pulling", 'Pulling image "reg.example/app"') in events.seen
        assert any(
            r == "Failed" and m.startswith('Failed to pull image "reg.example/app": rpc error')
            for _, r, m in events.seen
        )
        back = await eventually(
            lambda: _state(w)["state"].get("waiting", {}).get("reason") == "ImagePullBackOff" and _state(w), "backoff"
        )
        assert back["state"]["waiting"]["message"].startswith(
            'Back-off pulling image "reg.example/app": ErrImagePull: rpc error'
        )
        assert ("Normal", "BackOff", 'Back-off pulling image "reg.example/app"') in events.seen
    finally:
        await w.detach()


async def test_pulled_event_has_duration_and_size(tmp_path: Path) -> None:
    fake, events = FakeRuntime(), Events()
    w = _worker(fake, tmp_path, _pod(containers=[{"name": "c", "image": "busybox"}]), events)  # no tag: Always
    w.start()
    try:
        await eventually(lambda: "running" in _state(w)["state"], "running")
        [pulled] = [m for _, r, m in events.seen if r == "Pulled"]
        assert pulled.startswith('Successfully pulled image "busybox" in ')
        assert pulled.endswith(" including waiting). Image size: 1024 bytes.")
    finally:
        await w.detach()
