"""/metrics/resource's arithmetic on a /proc tree written by the test (the integration test measures real processes):
a container is its main process and its descendants, a Pod the sum of its containers, the node /proc/stat's busy
time and meminfo's working set; a missing /proc is a scrape error, not a crash."""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from pykubeadm.kubelet.resourcemetrics import ContainerTarget, read_processes, render_resource_metrics

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat(pid: int, ppid: int, utime: int, stime: int, start: int, rss: int, state: str = "S", cutime: int = 0) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    # priority nice threads itrealvalue starttime vsize rss
    fields = [state, ppid, 0, 0, 0, 0, 0, 0, 0, 0, 0, utime, stime, cutime, 0, 20, 0, 1, 0, start, 1000, rss]
    return f"{pid} (py thon) " + " ".join(str(f) for f in fields) + "\n"


def _proc(tmp: Path) -> Path:
    proc = tmp / "proc"
    procs = {
        100: _stat(100, 1, 10, 5, 5000, 100, cutime=3),  # container main process (3 ticks of reaped children)
        101: _stat(101, 100, 20, 0, 5100, 50),  # its child
        102: _stat(102, 101, 1, 1, 5200, 10),  # its grandchild
        103: _stat(103, 100, 99, 99, 5300, 999, state="Z"),  # a zombie: not counted
        200: _stat(200, 1, 7, 0, 6000, 30),  # a second container of the same Pod
        300: _stat(300, 1, 1000, 1000, 10, 5000),  # not a container
    }
    for pid, text in procs.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(text)
    (proc / "stat").write_text("cpu  100 0 50 1000 20 5 5 0 0 0\ncpu0 100 0 50 1000 20 5 5 0 0 0\nbtime 1700000000\n")
    (proc / "meminfo").write_text(
        "MemTotal:       1000 kB\nMemFree:         200 kB\nInactive(file):  100 kB\nSwapTotal: 50 kB\nSwapFree: 20 kB\n"
    )
    return proc


def _samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
    }


def test_containers_pods_and_node(tmp_path: Path) -> None:
    proc = _proc(tmp_path)
    targets = [ContainerTarget("app", "ns", "web", 100), ContainerTarget("side", "ns", "web", 200),
               ContainerTarget("gone", "ns", "web", 999)]  # fmt: skip
    s = _samples(render_resource_metrics(targets, proc))
    app = (("container", "app"), ("namespace", "ns"), ("pod", "web"))
    assert s[("container_cpu_usage_seconds_total", app)] == (10 + 5 + 3 + 20 + 1 + 1) / TICKS
    assert s[("container_memory_working_set_bytes", app)] == (100 + 50 + 10) * PAGE
    assert s[("container_start_time_seconds", app)] == 1700000000 + 5000 / TICKS
    pod = (("namespace", "ns"), ("pod", "web"))
    assert s[("pod_cpu_usage_seconds_total", pod)] == (10 + 5 + 3 + 20 + 1 + 1 + 7) / TICKS
    assert s[("pod_memory_working_set_bytes", pod)] == (100 + 50 + 10 + 30) * PAGE
    assert not any(labels and dict(labels).get("container") == "gone" for _, labels in s)
    assert s[("node_cpu_usage_seconds_total", ())] == (100 + 50 + 5 + 5) / TICKS
    assert s[("node_memory_working_set_bytes", ())] == (1000 - 200 - 100) * 1024
    assert s[("node_swap_usage_bytes", ())] == 30 * 1024
    assert s[("resource_scrape_error", ())] == 0 and s[("scrape_error", ())] == 0


def test_each_process_is_read_once_and_zombies_skipped(tmp_path: Path) -> None:
    procs = read_processes(_proc(tmp_path))
    assert sorted(procs) == [100, 101, 102, 200, 300]
    assert procs[101].ppid == 100 and procs[100].cpu_ticks == 18


def test_a_missing_proc_is_a_scrape_error(tmp_path: Path) -> None:
    s = _samples(render_resource_metrics([ContainerTarget("app", "ns", "web", 1)], tmp_path / "nowhere"))
    assert s[("resource_scrape_error", ())] == 1
    assert not any(name.startswith("container_") for name, _ in s)


def test_a_program_forked_into_a_sandbox_counts_for_its_container(tmp_path: Path) -> None:
    # The launcher (400) made a PID namespace for its children; the lab's zygote forked the program (402) into it as
    # its PID 1 from outside, with a process of its own (403) as parent, which is nobody's container.
    proc = _proc(tmp_path)
    host, sandbox = "pid:[4026531836]", "pid:[4026532999]"
    processes = {
        400: (_stat(400, 1, 1, 0, 7000, 10), host, sandbox),
        402: (_stat(402, 403, 30, 10, 7002, 400), sandbox, sandbox),
        404: (_stat(404, 402, 5, 0, 7003, 40), sandbox, sandbox),  # the program's child
        403: (_stat(403, 1, 2, 0, 7002, 20), host, host),
    }
    for pid, (text, own, children) in processes.items():
        (proc / str(pid) / "ns").mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(text)
        (proc / str(pid) / "ns" / "pid").symlink_to(own)
        (proc / str(pid) / "ns" / "pid_for_children").symlink_to(children)
    s = _samples(render_resource_metrics([ContainerTarget("proxy", "kube-system", "kube-proxy-x", 400)], proc))
    proxy = (("container", "proxy"), ("namespace", "kube-system"), ("pod", "kube-proxy-x"))
    assert s[("container_cpu_usage_seconds_total", proxy)] == (1 + 30 + 10 + 5) / TICKS
    assert s[("container_memory_working_set_bytes", proxy)] == (10 + 400 + 40) * PAGE
