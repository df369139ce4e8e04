"""Records the cyclic garbage collector's pauses in a process, for the benchmarks that look for latency outliers.

`install(path)` appends one JSON line per collection of generation 2 (and of any generation that took ≥ 20 ms) to
`path`: wall time, generation, pause in seconds (wall and the thread's CPU: on a loaded machine the wall pause includes
waiting for a core), objects collected. `run_module_with_pauses` is the entry point used to
start a component under it: `python benchmarks/gcpauses.py OUT -m pykubeadm component kube-apiserver ...`.
`summary(path)` reads such a file back.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["install", "summary"]


def install(path: str | Path) -> None:
    """Log the pauses of this process's collector to `path` (line-buffered, so a killed process keeps its lines)."""
    out = open(path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    started: list[float] = [0.0, 0.0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0], started[1] = time.perf_counter(), time.thread_time()
            return
        pause = time.perf_counter() - started[0]
        cpu = time.thread_time() - started[1]
        if info["generation"] == 2 or pause >= 0.02:
            out.write(
                json.dumps(
                    {
                        "t": round(time.time(), 3),
                        "gen": info["generation"],
                        "pause_s": round(pause, 4),
                        "cpu_s": round(cpu, 4),
                        "collected": info["collected"],
                    }
                )
                + "\n"
            )

    gc.callbacks.append(callback)


def summary(path: str | Path, since: float = 0.0) -> dict[str, Any]:
    """Count, total and longest pause of the collections logged after `since` (a time.time() value)."""
    p = Path(path)
    rows = [json.loads(line) for line in p.read_text().splitlines() if line.strip()] if p.exists() else []
    rows = [r for r in rows if r["t"] >= since]
    full = [r for r in rows if r["gen"] == 2]
    return {
        "full_collections": len(full),
        "full_pause_total_s": round(sum(r["pause_s"] for r in full), 3),
        "full_pause_max_s": round(max((r["pause_s"] for r in full), default=0.0), 3),
        "pause_cpu_max_s": round(max((r.get("cpu_s", 0.0) for r in rows), default=0.0), 3),
        "young_pauses_ge_20ms": len(rows) - len(full),
        "longest_at_s_pause_s_cpu_s_gen_collected": sorted(
            ([round(r["t"] - since, 2), r["pause_s"], r.get("cpu_s"), r["gen"], r["collected"]] for r in rows),
            key=lambda x: -x[1],
        )[:5],
    }


def run_module_with_pauses() -> None:
    """`gcpauses.py OUT -m MODULE ARGS...`: run MODULE as __main__ with pauses logged to OUT."""
    out, flag, module, *args = sys.argv[1:]
    if flag != "-m":
        raise SystemExit("usage: gcpauses.py OUT -m MODULE [ARGS...]")
    install(out)
    thresholds = os.environ.get("GCPAUSES_SERVICE_THRESHOLDS")  # an experiment: "700,10,10"
    if thresholds:
        from pykubeadm.util import gctuning

        gctuning._SERVICE_THRESHOLDS = tuple(int(x) for x in thresholds.split(","))  # type: ignore[assignment]
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    run_module_with_pauses()
