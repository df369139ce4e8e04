"""The Summary's shape and figures from the shared measurement (the real kubelet's in
tests/integration/cri/test_kubelet_images_and_stats.py): a built-in container measured from /proc (this test's own
process), a CRI container from the runtime's ContainerStats (its memory detail, its own usageNanoCores, its writable
layer), rates from the second read on, only_cpu_and_memory's subset, Pods without a running container left out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.resourcemetrics import ContainerTarget
from pykubeadm.kubelet.statssummary import SummaryProvider


def pod(name: str, uid: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "status": {"startTime": "2026-01-02T03:04:05Z"},
    }


def cri_stats(mountpoint: str) -> api.ContainerStats:
    return api.ContainerStats(
        attributes=api.ContainerAttributes(id="abc"),
        cpu=api.CpuUsage(usage_core_nano_seconds=api.UInt64Value(value=5_000_000_000)),
        memory=api.MemoryUsage(
            working_set_bytes=api.UInt64Value(value=4096),
            usage_bytes=api.UInt64Value(value=8192),
            rss_bytes=api.UInt64Value(value=2048),
            page_faults=api.UInt64Value(value=7),
        ),
        writable_layer=api.FilesystemUsage(
            fs_id=api.FilesystemIdentifier(mountpoint=mountpoint),
            used_bytes=api.UInt64Value(value=12288),
            inodes_used=api.UInt64Value(value=3),
        ),
    )


def provider(tmp_path: Path, targets: list[ContainerTarget], pods: list[dict[str, Any]]) -> SummaryProvider:
    async def all_targets() -> list[ContainerTarget]:
        return list(targets)

    async def image_fs() -> dict[str, Any]:
        return {"usedBytes": 1, "capacityBytes": 2, "availableBytes": 1}

    return SummaryProvider("node-a", targets=all_targets, pods=lambda: pods, image_fs=image_fs, root_dir=tmp_path)


async def test_a_summary_of_a_builtin_and_a_cri_container(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "web" / "0.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"x" * 10000)
    targets = [
        ContainerTarget("web", "default", "builtin", os.getpid(), log_path=log),
        ContainerTarget("app", "default", "cri", 0, measured=(5.0, 4096, 1700000000.0), stats=cri_stats(str(tmp_path))),
    ]
    pods = [pod("builtin", "u1"), pod("cri", "u2"), pod("pending", "u3")]
    summaries = provider(tmp_path, targets, pods)
    first = await summaries.summary()
    assert [p["podRef"] for p in first["pods"]] == [
        {"name": "builtin", "namespace": "default", "uid": "u1"},
        {"name": "cri", "namespace": "default", "uid": "u2"},
    ]
    builtin, cri = first["pods"]
    (web,) = builtin["containers"]
    assert web["memory"]["workingSetBytes"] > 0 and web["cpu"]["usageCoreNanoSeconds"] > 0
    assert "usageNanoCores" not in web["cpu"]  # no earlier sample yet
    assert web["logs"]["usedBytes"] >= 10000 and web["logs"]["inodesUsed"] == 2
    assert builtin["startTime"] == "2026-01-02T03:04:05Z"
    (app,) = cri["containers"]
    assert app["startTime"] == "2023-11-14T22:13:20Z"
    assert app["cpu"]["usageCoreNanoSeconds"] == 5_000_000_000
    assert app["memory"] == {
        "time": app["memory"]["time"],
        "workingSetBytes": 4096,
        "usageBytes": 8192,
        "rssBytes": 2048,
        "pageFaults": 7,
    }
    assert app["rootfs"]["usedBytes"] == 12288 and app["rootfs"]["inodesUsed"] == 3
    assert cri["ephemeral-storage"]["usedBytes"] == 12288
    node = first["node"]
    assert node["nodeName"] == "node-a" and node["runtime"]["imageFs"]["usedBytes"] == 1
    assert node["fs"]["capacityBytes"] > 0 and node["rlimit"]["maxpid"] > 0
    pods_container = next(c for c in node["systemContainers"] if c["name"] == "pods")
    assert pods_container["memory"]["workingSetBytes"] == web["memory"]["workingSetBytes"] + 4096

    second = await summaries.summary()
    assert "usageNanoCores" in second["pods"][0]["containers"][0]["cpu"]
    assert "usageNanoCores" in second["node"]["cpu"]


async def test_the_runtimes_own_rate_and_only_cpu_and_memory(tmp_path: Path) -> None:
    stats = cri_stats(str(tmp_path))
    stats.cpu.usage_nano_cores.value = 123
    targets = [ContainerTarget("app", "default", "cri", 0, measured=(5.0, 4096, 1700000000.0), stats=stats)]
    only = await provider(tmp_path, targets, [pod("cri", "u2")]).summary(only_cpu_and_memory=True)
    (cri,) = only["pods"]
    assert set(cri) == {"podRef", "startTime", "containers", "cpu", "memory"}
    assert set(cri["containers"][0]) == {"name", "startTime", "cpu", "memory"}
    assert cri["containers"][0]["cpu"]["usageNanoCores"] == 123
    assert set(only["node"]) <= {"nodeName", "systemContainers", "startTime", "cpu", "memory", "swap"}
