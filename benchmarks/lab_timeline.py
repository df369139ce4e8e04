"""Where one `pykubeadm lab up --workers N` spends its time: the lab's output lines, the kubelets' logs and the
control-plane components' CRI logs on one clock (seconds since the command started). Prints JSON: the wall time and the
events in order, then takes the lab down.

What it shows: when init starts printing, when each kubelet gets its flags, when the control plane's containers start
and serve, when the control plane's Node registers (the kubelet retries 0.1 s, 0.2 s, 0.4 s... apart, so a late
kube-apiserver costs a whole retry), init's phases, and each worker's CSR, certificate and registration.
With `--join`, the lab then waits until its Pods run and adds one more node (`lab join`), timed on its own clock
(`join_events`, seconds since that command started).
A network-namespace lab's Pod network is on it too: each node's podCIDR allocated, the kindnet Pods bound, each
kindnetd started and writing its node's conflist, each kubelet loading it (the Node turns Ready then).
Run: .venv/bin/python benchmarks/lab_timeline.py [--workers 2] [--join] [--topology netns] [--runtime builtin]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: kubelet log lines worth a place on the timeline (their first occurrence, or every one for started containers).
_KUBELET = {
    "flags": r"flags:",
    "CSR created": r"created certificate signing request",
    "client certificate received": r"client certificate rotated",
    "Node registered": r"Successfully registered node",
    "container started": r"started container (\S+)",
    "CNI configuration loaded": r"CNI network '\S+' from",
}
#: The control plane's components and the line that says they serve.
_SERVING = {
    "kube-apiserver": r"Serving securely",
    "kube-controller-manager": r"serving securely",
    "kube-scheduler": r"serving securely",
}
#: Container log lines on the Pod network's path (a network-namespace lab): a node's podCIDR allocated, a kindnet Pod
#: bound, each kindnetd started and writing its node's conflist (every occurrence).
_NETWORK = {
    "kube-controller-manager": r"set podCIDRs \S+ on node \S+",
    "kube-scheduler": r"bound pod kube-system/kindnet-\S+ to node \S+",
    "kindnet-cni": r"kindnetd for node \S+|wrote \S+ for pod CIDRs",
}


def _pykubeadm(*args: str, **kw: Any) -> Any:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    return subprocess.Popen([sys.executable, "-m", "pykubeadm", *args], env=env, text=True, **kw)


def _epoch(stamp: str) -> float:
    """A kubelet log time (2026-11-29 01:26:39,950, local) or a CRI log time (2026-11-29T01:26:40.709094Z, UTC)."""
    if stamp.endswith("Z"):
        return dt.datetime.fromisoformat(stamp[:-1]).replace(tzinfo=dt.UTC).timestamp()
    return dt.datetime.fromisoformat(stamp.replace(",", ".")).timestamp()


def _kubelet_events(node: Path) -> list[tuple[float, str]]:
    log = node / "var/log/pykubeadm/kubelet.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    out = []
    for name, pattern in _KUBELET.items():
        for m in re.finditer(r"^[IWE](\S+ \S+) \d+ \S+\] .*?" + pattern, text, re.M):
            what = f"{name} {m.group(2)}" if m.lastindex and m.lastindex > 1 else name
            out.append((_epoch(m.group(1)), f"{node.name} kubelet: {what}"))
            if name != "container started":
                break
    return out


def _serving_events(node: Path) -> list[tuple[float, str]]:
    out = []
    for component, pattern in _SERVING.items():
        for log in (node / "var/log/pods").glob(f"kube-system_{component}-*/{component}/*.log"):
            m = re.search(r"^(\S+) std\w+ [FP] .*?" + pattern, log.read_text(errors="replace"), re.M)
            if m:
                out.append((_epoch(m.group(1)), f"{node.name} {component}: serving"))
    return out


def _network_events(node: Path) -> list[tuple[float, str]]:
    out = []
    for container, pattern in _NETWORK.items():
        for log in (node / "var/log/pods").glob(f"kube-system_*/{container}/*.log"):
            for m in re.finditer(r"^(\S+) std\w+ [FP] .*?(" + pattern + ")", log.read_text(errors="replace"), re.M):
                out.append((_epoch(m.group(1)), f"{node.name} {container}: {m.group(2)}"))
    return out


def _lines(proc: Any, prefix: str) -> list[tuple[float, str]]:
    """The time each of a command's output lines that begins with `[` arrived."""
    assert proc.stdout is not None
    return [(time.time(), prefix + line.strip()) for line in proc.stdout if line.strip().startswith("[")]


def _timed_join(lab: Path, before: set[str]) -> dict[str, Any]:
    """Once every Pod of the lab runs: one `lab join`, with the new node's kubelet events, on the join's clock."""
    sys.path.insert(0, str(Path(__file__).parent))
    from lab_up import _settle

    _settle(lab)
    t0 = time.time()
    proc = _pykubeadm("lab", "join", "--dir", str(lab), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    events = _lines(proc, "lab join: ")
    code = proc.wait()
    took = time.time() - t0
    for node in sorted(lab.iterdir()):
        if node.name not in before and (node / "var/log/pykubeadm").is_dir():
            events += _kubelet_events(node)
    return {
        "join_exit_code": code,
        "join_s": round(took, 3),
        "join_events": [{"t": round(t - t0, 3), "event": e} for t, e in sorted(events)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--join", action="store_true", help="then time one `lab join` into the settled lab")
    ap.add_argument("--topology", default=None, help="netns or loopback (default: lab up's choice)")
    ap.add_argument("--runtime", default=None, help="builtin or containerd (default: lab up's choice)")
    args = ap.parse_args()
    join: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lab-timeline") as tmp:
        lab = Path(tmp) / "lab"
        t0 = time.time()
        events: list[tuple[float, str]] = []
        proc = _pykubeadm(
            "lab",
            "up",
            "--workers",
            str(args.workers),
            "--dir",
            str(lab),
            *(["--topology", args.topology] if args.topology else []),
            *(["--runtime", args.runtime] if args.runtime else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.strip().startswith("["):
                    events.append((time.time(), "lab: " + line.strip()))
            code = proc.wait()
            up = time.time() - t0
            nodes = [p for p in sorted(lab.iterdir()) if (p / "var/log/pykubeadm").is_dir()]
            for node in nodes:
                events += _kubelet_events(node) + _serving_events(node) + _network_events(node)
            if args.join and code == 0:
                join = _timed_join(lab, {p.name for p in nodes})
        finally:
            _pykubeadm("lab", "down", "--dir", str(lab), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
    report = {
        "benchmark": "lab_timeline",
        "workers": args.workers,
        "exit_code": code,
        "lab_up_s": round(up, 3),
        "events": [{"t": round(t - t0, 3), "event": e} for t, e in sorted(events)],
        **join,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
