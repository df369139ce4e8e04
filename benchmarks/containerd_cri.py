"""Benchmark (JSON on stdout): a node's containerd through CRI, offline. Starts a containerd under a tmp root (as the
lab will per node), preloads kubeadm's pause and the busybox test image, then runs N Pods one after another, each a
host-network sandbox with one `sleep` container: RunPodSandbox, CreateContainer + StartContainer (sandbox → running),
ExecSync, StopPodSandbox + RemovePodSandbox. Reports containerd's cold start to a serving CRI, per-call medians and
p99s, and containerd's RSS with all Pods running. Needs root, containerd, runc and busybox-static.

    .venv/bin/python benchmarks/containerd_cri.py [--pods 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pykubeadm.containerd.config import ContainerdConfig
from pykubeadm.containerd.daemon import ContainerdProcess, remove_all_pods
from pykubeadm.containerd.images import import_archive, preload_pause_image
from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.layout import Layout
from pykubeadm.testing.images import write_busybox_image

IMAGE = "pykubeadm.bench/busybox:1.35"


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1), "p99_ms": round(p99 * 1000, 1)}


async def _pod(cri: CRIClient, i: int, log_dir: Path, times: dict[str, list[float]]) -> str:
    sandbox_config = api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(name=f"bench-{i}", namespace="default", uid=f"uid-{i}"),
        log_directory=str(log_dir / f"bench-{i}"),
        linux=api.LinuxPodSandboxConfig(
            security_context=api.LinuxSandboxSecurityContext(
                namespace_options=api.NamespaceOption(network=api.NamespaceMode.NODE)
            )
        ),
    )
    t0 = time.perf_counter()
    sandbox = await cri.run_pod_sandbox(sandbox_config)
    t1 = time.perf_counter()
    config = api.ContainerConfig(
        metadata=api.ContainerMetadata(name="sleep"),
        image=api.ImageSpec(image=IMAGE),
        command=["sleep", "3600"],
        log_path="sleep/0.log",
    )
    cid = await cri.create_container(sandbox, config, sandbox_config)
    await cri.start_container(cid)
    t2 = time.perf_counter()
    await cri.exec_sync(cid, ["true"], exec_timeout=10)
    t3 = time.perf_counter()
    times["run_pod_sandbox"].append(t1 - t0)
    times["create_start_container"].append(t2 - t1)
    times["sandbox_to_running"].append(t2 - t0)
    times["exec_sync"].append(t3 - t2)
    return sandbox


async def main(pods: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="ctdb") as tmp:
        root = Path(tmp)
        cfg = ContainerdConfig(Layout(root))
        daemon = ContainerdProcess(cfg)
        t0 = time.perf_counter()
        await daemon.start()
        cold_start = time.perf_counter() - t0
        times: dict[str, list[float]] = {
            k: []
            for k in ("run_pod_sandbox", "create_start_container", "sandbox_to_running", "exec_sync", "stop_remove")
        }
        try:
            preload_pause_image(cfg, root / "cache")
            import_archive(cfg, write_busybox_image(root / "busybox.tar", IMAGE))
            async with CRIClient(daemon.endpoint) as cri:
                sandboxes = [await _pod(cri, i, root / "logs", times) for i in range(pods)]
                assert daemon.process is not None
                rss = _rss_mb(daemon.process.pid)
                for sandbox in sandboxes:
                    t = time.perf_counter()
                    await cri.stop_pod_sandbox(sandbox)
                    await cri.remove_pod_sandbox(sandbox)
                    times["stop_remove"].append(time.perf_counter() - t)
        finally:
            async with CRIClient(daemon.endpoint) as cri:
                await remove_all_pods(cri)
            daemon.stop()
    return {
        "benchmark": "containerd_cri",
        "pods": pods,
        "containerd_cold_start_ms": round(cold_start * 1000, 1),
        "containerd_rss_mb_with_pods_running": round(rss, 1),
        **{name: _summary(samples) for name, samples in times.items()},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10)
    print(json.dumps(asyncio.run(main(parser.parse_args().pods)), indent=2))
