"""lab.forkcli with real processes: a command the lab forks runs through the CLI with its output in the node's log
file and its exit code; it stops its own warm kubelet when it fails before kubelet-start and leaves the other nodes'
warm kubelets running; with other threads in the lab process it starts a new interpreter instead of forking; a forked
command tells the lab when a given phase is done (or that it ended before); the lab reports each join as it ends and
fails once all have ended.

Each case runs in a fresh interpreter (a test process has threads of its own, and must not fork itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_SCRIPT = """
import json, sys, threading, time
from pathlib import Path
from pykubeadm.lab import forkcli
from pykubeadm.layout import Layout
from pykubeadm.kubelet import service as ks

a, b = Path(sys.argv[1]), Path(sys.argv[2])
if sys.argv[3] == "thread":
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
for root in (a, b):
    ks.prewarm_kubelet(Layout(root=root))
warm = {str(root): ks._prewarmed[str(root)].proc for root in (a, b)}
child = forkcli.start(a, ["join", "--config", str(a / "missing.yaml")], a / "join.log")
code = child.wait()
deadline = time.monotonic() + 20
while warm[str(a)].poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
result = {
    "code": code,
    "forked": child._proc is None,
    "a_stopped": warm[str(a)].poll() is not None,
    "b_running": warm[str(b)].poll() is None,
}
ks.release_prewarmed_kubelets()
for proc in warm.values():  # the test's own processes
    proc.kill()
    proc.wait()
print(json.dumps(result))
"""


def _script(script: str, *args: str) -> dict[str, Any]:
    """Run `script` in a fresh interpreter (no node root from the environment); the JSON of its last line."""
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    res = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def _run(tmp_path: Path, mode: str) -> dict[str, object]:
    a, b = tmp_path / "node-a", tmp_path / "node-b"
    a.mkdir()
    b.mkdir()
    out = _script(_SCRIPT, str(a), str(b), mode)
    out["log"] = (a / "join.log").read_text()
    return out


def test_a_forked_join_that_fails_stops_its_own_warm_kubelet_and_no_other(tmp_path: Path) -> None:
    out = _run(tmp_path, "fork")
    assert out["forked"] is True
    assert out["code"] != 0
    assert "missing.yaml" in str(out["log"])  # the command's own message, in the node's log
    assert out["a_stopped"] is True
    assert out["b_running"] is True  # another node's join (or the lab) owns it


def test_with_other_threads_the_command_is_a_new_interpreter(tmp_path: Path) -> None:
    out = _run(tmp_path, "thread")
    assert out["forked"] is False
    assert out["code"] != 0
    assert "missing.yaml" in str(out["log"])
    assert out["b_running"] is True


_PHASE_SCRIPT = """
import json, sys
from pathlib import Path
from pykubeadm.lab import forkcli

root = Path(sys.argv[1])
args = ["init", "phase", "certs", "ca"]
reached = forkcli.start(root, args, root / "a.log", notify_after="certs/ca")
got_reached = reached.wait_phase()
ca_written = (root / "etc/kubernetes/pki/ca.crt").exists()  # the phase is done when the lab hears of it
not_reached = forkcli.start(root, args, root / "b.log", notify_after="certs/apiserver")
failed = forkcli.start(root, ["init", "phase", "certs", "ca", "--no-such-flag"], root / "c.log", notify_after="certs/ca")
print(json.dumps({
    "reached": [got_reached, ca_written, reached.wait()],
    "not_reached": [not_reached.wait_phase(), not_reached.wait()],
    "failed": [failed.wait_phase(), failed.wait()],
}))
"""


def test_a_forked_command_tells_when_a_phase_is_done_or_that_it_ended_before(tmp_path: Path) -> None:
    out = _script(_PHASE_SCRIPT, str(tmp_path))
    assert out["reached"] == [True, True, 0]
    assert out["not_reached"] == [False, 0]  # the command succeeded without running that phase
    assert out["failed"][0] is False and out["failed"][1] != 0


_REAP_SCRIPT = """
import json, sys, time
from pathlib import Path
from pykubeadm.errors import KubeadmError
from pykubeadm.lab import cluster, forkcli
from pykubeadm.lab.nodes import lab_node

lab = Path(sys.argv[1])
good, bad = lab_node(lab, 1), lab_node(lab, 2)
for node in (good, bad):
    node.root.mkdir(parents=True)
    node.state.mkdir(parents=True, exist_ok=True)
procs = {
    good.name: (good, forkcli.start(good.root, ["version", "-o", "short"], good.log_file)),
    bad.name: (bad, forkcli.start(bad.root, ["join", "--config", str(bad.root / "missing.yaml")], bad.log_file)),
}
lines, failed, error = [], [], ""
deadline = time.monotonic() + 60
try:
    while procs and time.monotonic() < deadline:
        cluster._reap_joins(procs, failed, lines.append, block=False)
        time.sleep(0.02)
except KubeadmError as e:
    error = str(e)
print(json.dumps({"lines": lines, "error": error, "left": list(procs)}))
"""


def test_the_lab_reports_each_join_as_it_ends_and_fails_once_all_have_ended(tmp_path: Path) -> None:
    out = _script(_REAP_SCRIPT, str(tmp_path / "lab"))
    assert out["left"] == []
    assert any(line.startswith("[lab] lab-worker (") and "joined the cluster" in line for line in out["lines"])
    failure = next(line for line in out["lines"] if line.startswith("[lab] join of lab-worker2 failed:"))
    assert "missing.yaml" in failure  # the tail of that node's log
    assert out["error"].startswith("lab: joining lab-worker2 failed; logs are in ")
