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
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
print("listening", flush=True)
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
    for kind in ("net", "uts"):
        (ns / kind).touch()
    subprocess.run(
        ["unshare", f"--net={ns / 'net'}", f"--uts={ns / 'uts'}", "ip", "link", "set", "lo", "up"], check=True
    )
    try:
        yield ns
    finally:
        for kind in ("net", "uts"):
            unmount(ns / kind)


def test_relay_forwards_the_hosts_loopback_into_the_namespace(tmp_path: Path, namespace: Path) -> None:
    held = socket.socket()  # the port, bound and not listening on the host's 127.0.0.1: nobody else answers there
    held.bind(("127.0.0.1", 0))
    port = held.getsockname()[1]
    server = subprocess.Popen(
        ["nsenter", f"--net={namespace / 'net'}", sys.executable, "-c", _ECHO, str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    state = tmp_path / "state"
    state.mkdir()
    try:
        assert server.stdout.readline().strip() == "listening"
        with socket.socket() as direct:  # the host's own 127.0.0.1 has no such server
            assert direct.connect_ex(("127.0.0.1", port)) != 0
        listener = relay.listen(0, "the test")
        host_port = listener.getsockname()[1]
        pid = relay.start(state, namespace, [(listener, f"127.0.0.1:{port}")])
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
        assert relay.running(state) == pid
        with pytest.raises(Exception, match=f"cannot listen on 127.0.0.1:{host_port} for --publish"):
            relay.listen(host_port, "--publish")
        assert relay.stop(state)
        assert relay.running(state) is None
        refused = time.monotonic() + 10  # the relay's listener goes with it: nothing answers there any more
        while True:
            with socket.socket() as after:
                if after.connect_ex(("127.0.0.1", host_port)) != 0:
                    break
            assert time.monotonic() < refused, f"127.0.0.1:{host_port} still answers after the relay stopped"
            time.sleep(0.05)
    finally:
        relay.stop(state)
        held.close()
        server.kill()
        server.wait()
