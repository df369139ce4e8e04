"""Benchmark (JSON on stdout): what a Pod's network costs the built-in runtime with Debian's CNI plugins.

In a network namespace the benchmark makes (standing in for a node; removed at the end), the kubelet's PodNetwork
attaches N Pods one after the other (a namespace pinned under the Pod's directory, CNI ADD of lo and of eth0 through
the kindnet conflist: bridge + host-local + portmap with a hostPort) and then detaches them (DEL, namespace removed).
Reported: attach and detach times per Pod (median, p90, max, in ms) and that host-local's store ends empty. Needs
root; nothing is added to the host's network namespace.

    .venv/bin/python benchmarks/cni_attach.py [--pods 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pykubeadm import constants as c
from pykubeadm.kindnet.conflist import CONFLIST_NAME, NETWORK_NAME, render_conflist, write_conflist
from pykubeadm.kubelet.builtin.podnetwork import PodNetwork
from pykubeadm.layout import Layout


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def inner(pods: int, root: Path) -> dict[str, Any]:
    """Runs inside the node's namespace."""
    layout = Layout(root)
    conf_dir = layout.host(c.DEFAULT_CNI_CONF_DIR)
    write_conflist(conf_dir, render_conflist(["10.244.1.0/24"]))
    network = PodNetwork(conf_dir, c.DEFAULT_CNI_BIN_DIR.split(":"), layout.host(c.DEFAULT_CNI_CACHE_DIR), layout)
    network.sync()
    attach, detach = [], []
    uids = [str(uuid.uuid4()) for _ in range(pods)]
    for i, uid in enumerate(uids):
        pod = {
            "metadata": {"name": f"web-{i}", "namespace": "bench", "uid": uid},
            "spec": {"containers": [{"name": "web", "ports": [{"containerPort": 80, "hostPort": 8000 + i}]}]},
        }
        start = time.perf_counter()
        network.attach(pod, uid, layout.pod_dir(uid))
        attach.append(time.perf_counter() - start)
    for uid in uids:
        start = time.perf_counter()
        network.detach(uid, layout.pod_dir(uid))
        detach.append(time.perf_counter() - start)
    store = layout.host(f"/var/lib/cni/networks/{NETWORK_NAME}")
    left = [p.name for p in store.iterdir() if p.name[0].isdigit()] if store.is_dir() else []
    return {
        "pods": pods,
        "attach": _ms(attach),
        "detach": _ms(detach),
        "addresses_left_in_host_local": len(left),
        "conflist": CONFLIST_NAME,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(inner(args.pods, Path(args.inner))))
        return
    if os.geteuid() != 0:
        sys.exit("cni_attach: needs root (network namespaces)")
    ns = f"pk-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        with tempfile.TemporaryDirectory(prefix="cni-bench-") as root:
            res = subprocess.run(
                ["nsenter", f"--net=/run/netns/{ns}", "--", sys.executable, __file__, "--pods", str(args.pods),
                 "--inner", root],
                capture_output=True, text=True, check=False, timeout=600,
            )  # fmt: skip
            if res.returncode != 0:
                sys.exit(f"cni_attach failed:\n{res.stderr}")
            result = json.loads(res.stdout)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    result["benchmark"] = "cni_attach"
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
