"""Benchmark: the built-in kube-apiserver's start, exec → first 200 from /readyz.

Each run generates fresh PKI, starts `pykubeadm component kube-apiserver` (SQLite store, Node,RBAC, the flags the
test helper `pykubeadm.testing.apiserver.ApiServer` gives it, with and without an audit policy) and polls /readyz every
10 ms. Reported: median and min wall seconds, and the median CPU seconds (user + system) the apiserver process used
until ready, the figure a loaded machine does not distort. The machine is shared, so the load average is recorded at
start and end.

With `--compare REV`, the same starts run interleaved against the source tree of git revision REV (exported to a
temporary directory and put first on the child's PYTHONPATH), so both sets of figures are taken under the same load.

    .venv/bin/python benchmarks/apiserver_start.py [--runs 7] [--compare main]   → JSON on stdout
"""

from __future__ import annotations

import argparse
import compileall
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

from pykubeadm.testing.apiserver import ApiServer  # noqa: E402


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_start(directory: Path, src: Path | None, audit: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) from exec to the first 200 from /readyz of one fresh apiserver."""
    api = ApiServer(directory, audit_log=audit)
    ctx = api._ssl()
    env = dict(os.environ)
    env.pop("PYKUBEADM_ROOT_DIR", None)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    deadline = time.monotonic() + 60
    with open(api.log_path, "ab") as log:
        t0 = time.perf_counter()
        api.proc = subprocess.Popen(api.command(), stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        while time.monotonic() < deadline:
            if api.proc.poll() is not None:
                raise RuntimeError(api.log_path.read_text()[-2000:])
            try:
                with urllib.request.urlopen(f"{api.url}/readyz", context=ctx, timeout=2) as r:  # noqa: S310
                    if r.status == 200:
                        return time.perf_counter() - t0, _proc_cpu(api.proc.pid)
            except OSError:
                time.sleep(0.01)
        raise TimeoutError(f"apiserver not ready in 60 s:\n{api.log_path.read_text()[-2000:]}")
    finally:
        api.stop()


def _summary(name: str, samples: list[tuple[float, float]]) -> dict[str, Any]:
    walls = [w for w, _ in samples]
    cpus = [c for _, c in samples]
    return {
        "name": name,
        "runs": len(samples),
        "wall_median_s": round(statistics.median(walls), 4),
        "wall_min_s": round(min(walls), 4),
        "cpu_to_ready_median_s": round(statistics.median(cpus), 3),
        "cpu_to_ready_min_s": round(min(cpus), 3),
    }


def _export(rev: str, into: Path) -> Path:
    """The `src` tree of git revision `rev`, byte-compiled (as setup.sh compiles the working tree's)."""
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        tf.extractall(into, filter="data")
    compileall.compile_dir(str(into / "src"), quiet=1)
    return into / "src"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--compare", metavar="REV", help="also time git revision REV's source, interleaved")
    args = ap.parse_args()
    out: dict[str, Any] = {"benchmark": "apiserver_start", "cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="apiserver-start-") as tmp:
        base = Path(tmp)
        trees: dict[str, Path | None] = {"this tree": None}
        if args.compare:
            trees[args.compare] = _export(args.compare, base / "compare")
        samples: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        n = 0
        for _ in range(args.runs):
            for label, src in trees.items():
                for audit in (False, True):
                    n += 1
                    samples.setdefault((label, audit), []).append(one_start(base / f"api-{n}", src, audit))
        out["results"] = [
            _summary(f"{label}: exec → /readyz ({'audit policy' if audit else 'no audit'})", s)
            for (label, audit), s in samples.items()
        ]
    out["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
