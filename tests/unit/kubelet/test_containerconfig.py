"""A container's env, mounts and command as both pod workers build them through the one Pod-side helper
(`containerconfig.container_setup`): the same downward API (podIPs included), `$(VAR)` in command and args, and the
same CreateContainerConfigError message, whichever runtime runs the Pod (the integration tests in
tests/integration/kubelet/test_pod_env.py run it against a real apiserver)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.kubelet.fakeapi import FakeApi

from pykubeadm.kubelet.builtin.podworker import PodWorker
from pykubeadm.kubelet.containerconfig import ContainerConfigError, container_setup
from pykubeadm.kubelet.cri.fake import FakeRuntime
from pykubeadm.kubelet.cri.podworker import CRIPodWorker
from pykubeadm.layout import Layout

CONTAINER = {
    "name": "app",
    "image": "busybox:1.36",
    "command": ["sh", "-c", "echo $(IPS) $(COLOR)"],
    "env": [
        {"name": "IPS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIPs"}}},
        {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "color"}}},
    ],
}


def _pod() -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "u-1"}, "spec": {"containers": [CONTAINER]}}


def _worker(kind: str, tmp_path: Path, api: FakeApi) -> Any:
    common: dict[str, Any] = {"uid": "u-1", "node_name": "n1", "layout": Layout(tmp_path), "client": lambda: api}
    if kind == "builtin":
        w: Any = PodWorker(_pod(), pod_ip="127.0.0.1", source="api", **common)
    else:
        w = CRIPodWorker(_pod(), runtime=FakeRuntime(), host_ip="127.0.0.1", **common)
    w.pod_ip, w.pod_ips = "10.244.1.5", ["10.244.1.5", "fd00::5"]  # as the Pod's sandbox got them
    return w


@pytest.mark.parametrize("kind", ["builtin", "cri"])
async def test_both_workers_build_the_same_env_and_command(kind: str, tmp_path: Path) -> None:
    api = FakeApi()
    api.put("ns", "configmaps", "cfg", {"data": {"color": "blue"}})
    setup = await container_setup(_worker(kind, tmp_path, api), CONTAINER, extra_env={"EXTRA": "x"})
    assert setup.env["IPS"] == "10.244.1.5,fd00::5" and setup.env["COLOR"] == "blue" and setup.env["EXTRA"] == "x"
    assert setup.command == ["sh", "-c", "echo 10.244.1.5,fd00::5 blue"] and setup.mounts == []


@pytest.mark.parametrize("kind", ["builtin", "cri"])
async def test_a_missing_configmap_is_a_container_config_error_naming_it(kind: str, tmp_path: Path) -> None:
    with pytest.raises(ContainerConfigError, match='configmap "cfg" not found'):
        await container_setup(_worker(kind, tmp_path, FakeApi()), CONTAINER)
