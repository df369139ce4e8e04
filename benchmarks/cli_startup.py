"""Benchmark: start-up of the `pykubeadm` command line, and offline ECDSA certificates against the openssl CLI.

In one run (so every ratio compares figures taken under the same machine load) it times, N times each, median and
min of wall time plus the children's CPU time:
  * `python -c pass` with the same interpreter (the floor of any Python command);
  * `pykubeadm version`, `pykubeadm --help` (targets: ≤ 0.12 s);
  * `pykubeadm init phase certs all --config` with `encryptionAlgorithm: ECDSA-P256` in a fresh root (11 keys), and
    the same followed by `init phase kubeconfig all` (16 keys);
  * benchmarks/peers/openssl_certs.sh making the same 11 and 16 keys and certificates with the openssl CLI (target:
    ours ≤ 0.5 × openssl's);
  * `pykubeadm component kube-apiserver`: exec → first 200 from /readyz (target ≤ 0.5 s), with --apiserver, and the
    CPU seconds the apiserver used until then (the figure a loaded machine does not distort).

    .venv/bin/python benchmarks/cli_startup.py [--runs 7] [--apiserver]   → JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OPENSSL_SCRIPT = HERE / "peers" / "openssl_certs.sh"
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
encryptionAlgorithm: ECDSA-P256
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(name: str, runs: int, make: Callable[[int], list[list[str]]], **kw: Any) -> dict[str, Any]:
    """Run the command sequence `make(i)` `runs` times; wall seconds and children CPU seconds per run."""
    walls, cpus = [], []
    for i in range(runs):
        cmds = make(i)
        cpu0, t0 = _children_cpu(), time.perf_counter()
        for cmd in cmds:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
        walls.append(time.perf_counter() - t0)
        cpus.append(_children_cpu() - cpu0)
    return {
        "name": name,
        "runs": runs,
        "wall_median_s": round(statistics.median(walls), 4),
        "wall_min_s": round(min(walls), 4),
        "cpu_median_s": round(statistics.median(cpus), 4),
    }


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used: its cost, whatever the machine's load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def apiserver_exec_to_ready(base: Path, runs: int) -> dict[str, Any]:
    """`pykubeadm component kube-apiserver` (generated PKI, SQLite): exec → first 200 from /readyz, polled every 10 ms."""
    import urllib.request

    sys.path.insert(0, str(REPO / "src"))
    from pykubeadm.testing.apiserver import ApiServer

    times: list[float] = []
    cpus: list[float] = []
    for i in range(runs):
        api = ApiServer(base / f"api-{i}", audit_log=False)
        ctx = api._ssl()
        env = dict(os.environ)
        env.pop("PYKUBEADM_ROOT_DIR", None)
        with open(api.log_path, "ab") as log:
            t0 = time.perf_counter()
            api.proc = subprocess.Popen(api.command(), stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            while True:
                if api.proc.poll() is not None:
                    raise RuntimeError(api.log_path.read_text()[-2000:])
                try:
                    with urllib.request.urlopen(f"{api.url}/readyz", context=ctx, timeout=2) as r:  # noqa: S310
                        if r.status == 200:
                            times.append(time.perf_counter() - t0)
                            cpus.append(_proc_cpu(api.proc.pid))
                            break
                except OSError:
                    time.sleep(0.01)
        finally:
            api.stop()
    return {
        "name": "component kube-apiserver exec → ready",
        "runs": runs,
        "wall_median_s": round(statistics.median(times), 4),
        "wall_min_s": round(min(times), 4),
        "cpu_to_ready_median_s": round(statistics.median(cpus), 3),
        "target_s": 0.5,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--apiserver", action="store_true", help="also time the apiserver's exec → ready")
    args = ap.parse_args()
    py = sys.executable
    cli = [py, "-m", "pykubeadm"]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    out: dict[str, Any] = {
        "benchmark": "cli_startup",
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "openssl": subprocess.run(["openssl", "version"], capture_output=True, text=True).stdout.strip(),
    }
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
        base = Path(tmp)
        cfg = base / "ecdsa.yaml"
        cfg.write_text(CONFIG)

        def fresh(kind: str, i: int) -> Path:
            d = base / f"{kind}-{i}"
            shutil.rmtree(d, ignore_errors=True)
            return d

        def certs(i: int, kubeconfig: bool = False) -> list[list[str]]:
            root = str(fresh("init", i))
            cmds = [[*cli, "--root-dir", root, "init", "phase", "certs", "all", "--config", str(cfg)]]
            if kubeconfig:
                cmds.append([*cli, "--root-dir", root, "init", "phase", "kubeconfig", "all", "--config", str(cfg)])
            return cmds

        n = args.runs
        results = [
            measure("python -c pass", n, lambda i: [[py, "-c", "pass"]], env=env),
            measure("pykubeadm version", n, lambda i: [[*cli, "version"]], env=env),
            measure("pykubeadm --help", n, lambda i: [[*cli, "--help"]], env=env),
            measure("init phase certs all (ECDSA-P256, 11 keys)", n, lambda i: certs(i), env=env),
            measure(
                "openssl_certs.sh certs (ECDSA-P256, 11 keys)",
                n,
                lambda i: [["sh", str(OPENSSL_SCRIPT), str(fresh("ossl", i)), "certs", "ecdsa"]],
            ),
            measure("init phase certs all + kubeconfig all (16 keys)", n, lambda i: certs(i, True), env=env),
            measure(
                "openssl_certs.sh all (ECDSA-P256, 16 keys)",
                n,
                lambda i: [["sh", str(OPENSSL_SCRIPT), str(fresh("ossl", i)), "all", "ecdsa"]],
            ),
        ]
        if args.apiserver:
            results.append(apiserver_exec_to_ready(base, min(n, 5)))
    by = {r["name"]: r for r in results}

    def ratio(a: str, b: str) -> float:
        return round(by[a]["wall_median_s"] / by[b]["wall_median_s"], 3)

    out["results"] = results
    out["ratios"] = {
        "certs_11_keys_ours_over_openssl": ratio(
            "init phase certs all (ECDSA-P256, 11 keys)", "openssl_certs.sh certs (ECDSA-P256, 11 keys)"
        ),
        "all_16_keys_ours_over_openssl": ratio(
            "init phase certs all + kubeconfig all (16 keys)", "openssl_certs.sh all (ECDSA-P256, 16 keys)"
        ),
        "version_over_python_pass": ratio("pykubeadm version", "python -c pass"),
        "target_ours_over_openssl": 0.5,
    }
    out["targets_met"] = {
        "version_le_0.12s": by["pykubeadm version"]["wall_median_s"] <= 0.12,
        "help_le_0.12s": by["pykubeadm --help"]["wall_median_s"] <= 0.12,
        "ecdsa_certs_le_half_openssl": out["ratios"]["certs_11_keys_ours_over_openssl"] <= 0.5,
    }
    out["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
