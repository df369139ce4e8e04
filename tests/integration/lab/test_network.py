"""lab.network: the lab's bridge namespace and two nodes on it, each with its own address, hostname and loopback, one
reaching the other across the bridge; nothing of it in the host's namespace; `remove` leaves no mount behind."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pykubeadm.lab import network
from pykubeadm.util.namespaces import entered, nsenter_prefix

pytestmark = pytest.mark.skipif(
    network.unavailable_reason() is not None, reason=f"no network namespaces here: {network.unavailable_reason()}"
)

_SERVE_ONCE = """
import socket
s = socket.socket(); s.bind(("{address}", 8088)); s.listen(1)
print("listening", flush=True)
c, peer = s.accept(); c.sendall(("hello " + peer[0]).encode()); c.close()
"""


def _host_addresses() -> set[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"inet (\S+)", out))


def _mounts_under(path: Path) -> list[str]:
    return [m.split()[4] for m in Path("/proc/self/mountinfo").read_text().splitlines() if str(path) in m.split()[4]]


def test_two_nodes_on_the_bridge_and_nothing_left_after_remove(tmp_path: Path) -> None:
    state = tmp_path / ".lab"
    before = _host_addresses()
    try:
        network.create(state)
        a = network.add_node(state, "lab-a", "172.18.1.1", "veth0")
        b = network.add_node(state, "lab-b", "172.18.1.2", "veth1")
        assert network.add_node(state, "lab-b", "172.18.1.2", "veth1") == b  # joined again: kept as it is
        names = subprocess.run([*nsenter_prefix(a), "hostname"], capture_output=True, text=True, check=True)
        assert names.stdout.strip() == "lab-a"
        addrs = subprocess.run([*nsenter_prefix(b), "ip", "-4", "-o", "addr"], capture_output=True, text=True)
        assert "inet 172.18.1.2/16" in addrs.stdout and "inet 127.0.0.1/8" in addrs.stdout
        server = subprocess.Popen(
            [*nsenter_prefix(b), sys.executable, "-c", _SERVE_ONCE.format(address="172.18.1.2")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "listening"
        assert server.pid in network.processes_inside(state)
        own = os.stat("/proc/thread-self/ns/net").st_ino
        with entered(a), socket.create_connection(("172.18.1.2", 8088), timeout=5) as conn:
            assert conn.recv(100) == b"hello 172.18.1.1"
        server.wait(timeout=10)
        assert os.stat("/proc/thread-self/ns/net").st_ino == own  # this thread is back in its own namespace
        assert not {x for x in _host_addresses() - before if x.startswith("172.18.")}
        assert _mounts_under(state)
    finally:
        network.remove(state)
    assert _mounts_under(state) == []
    assert not network.netns_root(state).exists()
