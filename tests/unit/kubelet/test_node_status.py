"""Node status from the host: capacity with maxPods, pressure conditions with the kubelet's reasons, and transition
times that only move when a condition changes."""

from __future__ import annotations

from pykubeadm.kubelet.envvars import node_allocatable
from pykubeadm.kubelet.node import (
    Pressure,
    host_pressure,
    initial_node,
    meminfo_kib,
    node_capacity,
    node_conditions,
)


def test_capacity_counts_pods_against_max_pods(tmp_path) -> None:
    cap, alloc = node_capacity(tmp_path, max_pods=42)
    assert cap["pods"] == alloc["pods"] == "42"
    assert int(cap["cpu"]) >= 1 and cap["memory"].endswith("Ki")
    node = initial_node("n1", hostname="n1", node_ip="127.0.10.2", version="v1.33.0", root=tmp_path, max_pods=7)
    assert node["status"]["capacity"]["pods"] == "7"


def test_memory_comes_from_meminfo_total(tmp_path) -> None:
    total = meminfo_kib("MemTotal")
    assert total is not None and total > 0 and meminfo_kib("NoSuchField") is None
    cap, alloc = node_capacity(tmp_path)
    assert cap["memory"] == f"{total}Ki"
    assert alloc["memory"] == f"{total - 100 * 1024}Ki"  # evictionHard memory.available<100Mi
    assert node_allocatable()["memory"] == str(total * 1024)  # the default for limits.memory in resourceFieldRef


def test_pressure_conditions_and_their_transitions() -> None:
    transitions: dict[str, tuple[str, str]] = {}
    first = {c["type"]: c for c in node_conditions(True, since="2020-01-01T00:00:00Z", transitions=transitions)}
    assert first["MemoryPressure"]["status"] == "False"
    assert first["MemoryPressure"]["reason"] == "KubeletHasSufficientMemory"
    assert first["DiskPressure"]["reason"] == "KubeletHasNoDiskPressure"
    assert first["PIDPressure"]["reason"] == "KubeletHasSufficientPID"
    assert first["Ready"]["reason"] == "KubeletReady"
    assert first["DiskPressure"]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    again = {c["type"]: c for c in node_conditions(True, pressure=Pressure(disk=True), transitions=transitions)}
    assert again["DiskPressure"]["status"] == "True" and again["DiskPressure"]["reason"] == "KubeletHasDiskPressure"
    assert again["DiskPressure"]["lastTransitionTime"] != "2020-01-01T00:00:00Z"  # it changed
    assert again["MemoryPressure"]["lastTransitionTime"] == "2020-01-01T00:00:00Z"  # it did not


def test_host_pressure_reads_this_host(tmp_path) -> None:
    p = host_pressure(tmp_path)
    assert isinstance(p.memory, bool) and isinstance(p.disk, bool) and isinstance(p.pid, bool)
