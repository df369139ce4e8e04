"""PodStatus computation as the kubelet does it: phase (getPhase), conditions and their transition times, qosClass."""

from __future__ import annotations

from typing import Any

import pytest

from pykubeadm.kubelet.podstatus import Conditions, pod_phase, qos_class, update_conditions

RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


def term(code: int) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}


def cs(name: str, state: dict[str, Any], last: dict[str, Any] | None = None, ready: bool = False) -> dict[str, Any]:
    return {"name": name, "state": state, "lastState": last or {}, "ready": ready}


def spec(policy: str = "Always", names: tuple[str, ...] = ("a",)) -> dict[str, Any]:
    return {"restartPolicy": policy, "containers": [{"name": n} for n in names]}


@pytest.mark.parametrize(
    ("policy", "states", "expected"),
    [
        ("Always", [cs("a", {"waiting": {"reason": "ContainerCreating"}})], "Pending"),
        ("Always", [cs("a", RUNNING)], "Running"),
        ("Never", [cs("a", term(0))], "Succeeded"),
        ("Never", [cs("a", term(1))], "Failed"),
        ("OnFailure", [cs("a", term(0))], "Succeeded"),
        ("OnFailure", [cs("a", term(1))], "Running"),  # about to restart
        ("Always", [cs("a", term(0))], "Running"),
        # crash loop: waiting with a last termination counts as stopped, not pending
        ("Always", [cs("a", {"waiting": {"reason": "CrashLoopBackOff"}}, term(1))], "Running"),
        ("Never", [cs("a", RUNNING), cs("b", term(0))], "Running"),
        ("Never", [cs("a", term(0)), cs("b", term(2))], "Failed"),
        ("Always", [], "Pending"),  # no status yet: unknown
    ],
)
def test_phase(policy: str, states: list[dict[str, Any]], expected: str) -> None:
    names = tuple(s["name"] for s in states) or ("a",)
    assert pod_phase(spec(policy, names), states) == expected


def test_phase_pending_until_initialised_and_failed_init_with_never() -> None:
    assert (
        pod_phase(spec("Always"), [cs("a", {"waiting": {"reason": "PodInitializing"}})], init_done=False) == "Pending"
    )
    assert pod_phase(spec("Never"), [cs("a", {"waiting": {}})], init_failed=True, init_done=False) == "Failed"


def test_conditions_order_reasons_and_transition_times_only_move_on_change() -> None:
    conds = Conditions([{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}])
    statuses = [cs("a", RUNNING, ready=False), cs("b", RUNNING, ready=True)]
    update_conditions(conds, phase="Running", sandbox_ready=True, init_statuses=[], statuses=statuses, init_done=True)
    out = {c["type"]: c for c in conds.as_list()}
    assert [c["type"] for c in conds.as_list()] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert out["PodScheduled"]["lastTransitionTime"] == "2020-01-01T00:00:00Z"  # the scheduler's, kept
    assert out["Ready"]["status"] == "False" and out["Ready"]["reason"] == "ContainersNotReady"
    assert out["Ready"]["message"] == "containers with unready status: [a]"
    ready_since = out["Initialized"]["lastTransitionTime"]
    # the same status again keeps every transition time; Ready flipping gets a new one
    out["Initialized"]["lastTransitionTime"] = "2000-01-01T00:00:00Z"
    conds = Conditions(list(out.values()))
    statuses[0]["ready"] = True
    update_conditions(conds, phase="Running", sandbox_ready=True, init_statuses=[], statuses=statuses, init_done=True)
    after = {c["type"]: c for c in conds.as_list()}
    assert after["Initialized"]["lastTransitionTime"] == "2000-01-01T00:00:00Z"
    assert after["Ready"]["status"] == "True" and "reason" not in after["Ready"]
    assert ready_since


def test_conditions_while_initialising_and_after_completion() -> None:
    conds = Conditions()
    inits = [cs("init-a", term(0)), cs("init-b", RUNNING)]
    update_conditions(
        conds, phase="Pending", sandbox_ready=True, init_statuses=inits, statuses=[cs("a", {})], init_done=False
    )
    out = {c["type"]: c for c in conds.as_list()}
    assert out["Initialized"]["status"] == "False" and out["Initialized"]["reason"] == "ContainersNotInitialized"
    assert out["Initialized"]["message"] == "containers with incomplete status: [init-b]"
    update_conditions(
        conds, phase="Succeeded", sandbox_ready=False, init_statuses=inits, statuses=[cs("a", term(0))], init_done=True
    )
    out = {c["type"]: c for c in conds.as_list()}
    assert out["Ready"]["reason"] == out["ContainersReady"]["reason"] == out["Initialized"]["reason"] == "PodCompleted"
    assert out["PodReadyToStartContainers"]["status"] == "False"


def res(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {}
    if requests:
        r["requests"] = requests
    if limits:
        r["limits"] = limits
    return {"name": "c", "resources": r}


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([{"name": "c"}], "BestEffort"),
        ([res(limits={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),  # requests default to limits
        ([res({"cpu": "1000m", "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
        ([res({"cpu": "350m", "memory": "1.5Gi"}, {"cpu": "0.35", "memory": "1536Mi"})], "Guaranteed"),  # exact
        ([res({"cpu": "500m"}, {"cpu": "1", "memory": "1Gi"})], "Burstable"),
        ([res({"memory": "1Gi"})], "Burstable"),
        ([res(limits={"cpu": "1", "memory": "1Gi"}), {"name": "d"}], "Burstable"),
    ],
)
def test_qos_class(containers: list[dict[str, Any]], expected: str) -> None:
    assert qos_class({"containers": containers}) == expected
