"""Wall time of all offline `init` phases (certs, kubeconfig, etcd, control-plane, kubelet-start files; preflight and
the cluster phases skipped) for RSA-2048 and ECDSA-P256: median of N runs of the installed `pykubeadm` command (as a
user runs it; `python -m pykubeadm` where it is not installed) in a fresh --root-dir.

Usage: .venv/bin/python benchmarks/offline_init.py [--runs 5]   → JSON on stdout.
Targets (2 cores): ECDSA-P256 ≤ 1.0 s, RSA-2048 ≤ 3.0 s, and (issue #17) the ECDSA-P256 init ≤ 0.5 × the openssl CLI
making the same 16 keys and certificates (benchmarks/peers/openssl_certs.sh, timed in the same run). The CLI time
includes interpreter start-up; `phases_s` is the same work measured in-process (config load + phase runner), without
start-up; `cli_cpu_median_s` is the CPU time of the CLI process, which the machine's load does not inflate as much.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SKIP = (
    "preflight,wait-control-plane,upload-config,upload-certs,mark-control-plane,bootstrap-token,kubelet-finalize,"
    "addon,show-join-command"
)
CONFIG = """apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.10.1
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
encryptionAlgorithm: {algorithm}
"""
TARGETS = {"ECDSA-P256": 1.0, "RSA-2048": 3.0}


def _stop_kubelet(root: Path) -> None:
    """kubelet-start starts the node's built-in kubelet; stop it (not timed) so runs leave nothing behind."""
    from pykubeadm.layout import Layout
    from pykubeadm.phases.kubeletservice import stop_kubelet

    stop_kubelet(Layout(root=root))


OPENSSL_SCRIPT = Path(__file__).resolve().parent / "peers" / "openssl_certs.sh"


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def openssl_run(workdir: Path) -> tuple[float, float]:
    """The openssl CLI making kubeadm's 16 ECDSA keys and certificates: (wall, CPU) seconds."""
    out = Path(tempfile.mkdtemp(dir=workdir))
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(["sh", str(OPENSSL_SCRIPT), str(out), "all", "ecdsa"], check=True, capture_output=True)
    return time.perf_counter() - t0, _children_cpu() - cpu0


def _cli() -> list[str]:
    """The installed `pykubeadm` command, as users run it (`python -m pykubeadm` where it is not installed)."""
    script = Path(sys.executable).parent / "pykubeadm"
    return [str(script)] if script.exists() else [sys.executable, "-m", "pykubeadm"]


def cli_run(algorithm: str, workdir: Path, cpus: list[float] | None = None) -> float:
    cfg = workdir / f"{algorithm}.yaml"
    cfg.write_text(CONFIG.format(algorithm=algorithm))
    root = Path(tempfile.mkdtemp(dir=workdir))
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    cpu0, t0 = _children_cpu(), time.perf_counter()
    try:
        res = subprocess.run(
            [
                *_cli(),
                "--root-dir",
                str(root),
                "init",
                f"--skip-phases={SKIP}",
                "--config",
                str(cfg),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        elapsed = time.perf_counter() - t0
        if cpus is not None:
            cpus.append(_children_cpu() - cpu0)
    finally:
        _stop_kubelet(root)  # also when the run failed: a kubelet left behind holds :10250 for every later init
    if res.returncode != 0:
        raise SystemExit(f"init failed ({algorithm}):\n{res.stdout}\n{res.stderr}")
    for f in (
        "etc/kubernetes/pki/apiserver.crt",
        "etc/kubernetes/admin.conf",
        "etc/kubernetes/manifests/etcd.yaml",
        "var/lib/kubelet/config.yaml",
    ):
        if not (root / f).exists():
            raise SystemExit(f"init ({algorithm}) did not write {f}")
    return elapsed


def in_process_run(algorithm: str, workdir: Path) -> float:
    from pykubeadm.cli.init import build_init_data
    from pykubeadm.cli.main import CliState
    from pykubeadm.phases.init import init_phases
    from pykubeadm.workflow import Runner

    cfg = workdir / f"{algorithm}.yaml"
    cfg.write_text(CONFIG.format(algorithm=algorithm))
    root = Path(tempfile.mkdtemp(dir=workdir))
    t0 = time.perf_counter()
    try:
        runner = Runner(
            init_phases(), lambda: build_init_data(CliState(root, 0), {"config": str(cfg)}, out=lambda _l: None)
        )
        runner.run(SKIP.split(","))
        return time.perf_counter() - t0
    finally:
        _stop_kubelet(root)


def _measure(runs: int, work: Path, results: dict[str, Any]) -> None:
    peer = [openssl_run(work) for _ in range(runs)]
    results["openssl_cli_16_keys_ecdsa"] = {
        "wall_median_s": round(statistics.median(w for w, _ in peer), 3),
        "cpu_median_s": round(statistics.median(c for _, c in peer), 3),
    }
    for algorithm in ("ECDSA-P256", "RSA-2048"):
        cpus: list[float] = []
        cli = [cli_run(algorithm, work, cpus) for _ in range(runs)]
        phases = [in_process_run(algorithm, work) for _ in range(runs)]
        median = statistics.median(cli)
        results[algorithm] = {
            "cli_median_s": round(median, 3),
            "cli_runs_s": [round(x, 3) for x in cli],
            "cli_cpu_median_s": round(statistics.median(cpus), 3),
            "phases_median_s": round(statistics.median(phases), 3),
            "target_s": TARGETS[algorithm],
            "meets_target": median <= TARGETS[algorithm],
        }


def _stop_leftovers(work: Path) -> None:
    """SIGKILL any process still running from under `work` (a kubelet a run failed to stop would hold :10250 for every
    later init on this machine), naming it on stderr. By pid, after checking its command line names `work`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(str(work).encode() in a for a in args):
            print(f"offline_init: stopping a leftover process {entry.name}: {b' '.join(args)[:200]!r}", file=sys.stderr)
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    results: dict[str, Any] = {}
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="offline-init-bench") as tmp:
        work = Path(tmp)
        try:
            _measure(args.runs, work, results)
        finally:
            _stop_leftovers(work)
    ecdsa, ossl = results["ECDSA-P256"], results["openssl_cli_16_keys_ecdsa"]
    results["ecdsa_over_openssl"] = {
        "wall": round(ecdsa["cli_median_s"] / ossl["wall_median_s"], 3),
        "cpu": round(ecdsa["cli_cpu_median_s"] / ossl["cpu_median_s"], 3),
        "target": 0.5,
    }
    print(
        json.dumps(
            {
                "benchmark": "offline_init",
                "loadavg_at_start": load_start,
                "loadavg_at_end": os.getloadavg(),
                "phases": "certs, kubeconfig, etcd, control-plane, kubelet-start (files); preflight skipped",
                "runs": args.runs,
                "command": " ".join(_cli()),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
