"""lab.relay: a port on the host's 127.0.0.1 forwarded to a server inside a network namespace the test made (the
server listens on that namespace's own loopback, which the host cannot reach), both ways with half-close, stopped by
its pid."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubeadm.lab import relay
from pykubeadm.util.namespaces import unmount

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

_ECHO = """
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    data = b""
    while chunk := c.recv(65536):
        data += chunk
    c.sendall(data.upper()); c.close()
"""


@pytest.fixture
def namespace(tmp_path: Path) -> Iterator[Path]:
    ns = tmp_path / "ns"
    ns.mkdir()
    (ns / "net").touch()
    subprocess.run(["unshare", f"--net={ns / 'net'}", "ip", "link", "set", "lo", "up"], check=True)
    try:
        yield ns
    finally:
        unmount(ns / "net")


def test_relay_forwards_the_hosts_loopback_into_the_namespace(tmp_path: Path, namespace: Path) -> None:
    server = subprocess.Popen(
        ["nsenter", f"--net={namespace / 'net'}", sys.executable, "-c", _ECHO], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    state = tmp_path / "state"
    state.mkdir()
    try:
        port = int(server.stdout.readline())
        with socket.socket() as direct:  # the host's own 127.0.0.1 has no such server
            assert direct.connect_ex(("127.0.0.1", port)) != 0
        listener = relay.listen(0, "the test")
        host_port = listener.getsockname()[1]
        pid = relay.start(state, namespace, [(listener, f"127.0.0.1:{port}")])
        assert relay.running(state) == pid
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", host_port), timeout=5) as c:
                    c.sendall(b"hello through the relay")
                    c.shutdown(socket.SHUT_WR)  # the server answers once it has read everything
                    answer = c.recv(65536)
                if answer:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the relay never answered"
            time.sleep(0.05)
        assert answer == b"HELLO THROUGH THE RELAY"
        with pytest.raises(Exception, match=f"cannot listen on 127.0.0.1:{host_port} for --publish"):
            relay.listen(host_port, "--publish")
        assert relay.stop(state)
        assert relay.running(state) is None
        with socket.socket() as after:
            assert after.connect_ex(("127.0.0.1", host_port)) != 0
    finally:
        relay.stop(state)
        server.kill()
        server.wait()
