"""A kubelet SIGKILLed in the middle of a client-certificate rotation: at every kill point the node keeps a usable
pair (`kubelet-client-current.pem` points at a certificate and its key, the old one or the new one, never none), and
the restarted kubelet authenticates with it (its renewal CSRs come as system:node:<name>, with the bootstrap token
gone). The timing is held through the CSR approval: the test approves and signs each CSR itself.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import time
from pathlib import Path

import pytest
from cryptography import x509
from tests.integration.faults.node import Node, approve_and_sign, eventually, pending_csr, ready_node
from tests.integration.kubelet.controlplane import ControlPlane, setup_bootstrap

from pykubeadm.kubelet.certstore import load_pair

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

API_HOST = "127.0.19.30"
NODE_IP = "127.0.19.31"
TOKEN_ID, TOKEN_SECRET = "faults", "0123456789faults"
NAME = "rotating"


def assert_usable_pair(node: Node) -> x509.Certificate:
    """kubelet-client-current.pem resolves to a file holding a certificate and the key that matches it."""
    current = node.current_pem
    assert current.is_symlink(), sorted(p.name for p in node.cert_dir.iterdir())
    target = current.resolve(strict=True)
    pair = load_pair(target)
    pub = pair.key.public_key()
    assert pub.public_numbers() == pair.leaf.public_key().public_numbers(), f"{target}: key does not match"
    assert pair.leaf.subject.rfc4514_string() == f"CN=system:node:{NAME},O=system:nodes"
    return pair.leaf


def entries(directory: Path) -> set[tuple[str, int]]:
    """Name and inode of each entry. An atomic write (a new file renamed over a name) changes the inode even where the
    name stays: two certificates written within the same second get the same timestamped name, as in the real kubelet."""
    with os.scandir(directory) as it:
        return {(e.name, e.inode()) for e in it}


def kill(node: Node) -> None:
    assert node.kubelet.proc is not None
    os.kill(node.kubelet.pid, signal.SIGKILL)
    node.kubelet.proc.wait(10)


async def test_kubelet_killed_during_rotation(tmp_path: Path) -> None:
    cp = ControlPlane(tmp_path / "cp", host=API_HOST)
    admin = cp.admin()
    node = Node(tmp_path, cp, NAME, NODE_IP, f"{TOKEN_ID}.{TOKEN_SECRET}")
    now = lambda: dt.datetime.now(dt.UTC)  # noqa: E731
    # already past 90 % of its lifetime (rotation due at once) but valid for 10 more minutes
    due = lambda: (now() - dt.timedelta(minutes=100), now() + dt.timedelta(minutes=10))  # noqa: E731
    fresh = lambda: (now() - dt.timedelta(minutes=5), now() + dt.timedelta(days=1))  # noqa: E731
    seen: set[str] = set()
    try:
        cp.start()
        await setup_bootstrap(admin, TOKEN_ID, TOKEN_SECRET, dt.timedelta(hours=1))
        node.kubelet.start()
        boot = await eventually(lambda: pending_csr(admin, f"system:bootstrap:{TOKEN_ID}", seen), 60, "bootstrap CSR")
        seen.add(boot["metadata"]["name"])
        first = await approve_and_sign(admin, cp, boot, *due())

        # kill point 1: the renewal CSR exists (the rotation is waiting for its approval)
        renewal = await eventually(lambda: pending_csr(admin, f"system:node:{NAME}", seen), 30, "renewal CSR")
        kill(node)
        seen.add(renewal["metadata"]["name"])
        assert assert_usable_pair(node) == first
        # the certificate is issued while the kubelet is dead: nobody picks it up, the old pair stays
        await approve_and_sign(admin, cp, renewal, *fresh())
        assert assert_usable_pair(node) == first
        # without the bootstrap token, only the node's own certificate can get it going again
        await admin.delete(f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{TOKEN_ID}")
        node.kubelet.start()
        second = await eventually(lambda: pending_csr(admin, f"system:node:{NAME}", seen), 30, "renewal after restart")
        seen.add(second["metadata"]["name"])
        assert assert_usable_pair(node) == first

        # kill point 2: the instant anything new appears in the cert dir (the atomic write's temporary file or the new
        # timestamped certificate): the store is caught while it writes the new pair or swaps the symlink
        before = entries(node.cert_dir)
        issued = await approve_and_sign(admin, cp, second, *due())
        deadline = time.monotonic() + 30
        while not {e for e in entries(node.cert_dir) - before if e[0] != "kubelet-client-updated.pem"}:
            assert time.monotonic() < deadline, "the kubelet never wrote the new certificate"
            time.sleep(0.001)
        kill(node)
        after_kill = assert_usable_pair(node)  # the old one or the new one, whichever the kill left
        # (both are due and may be issued within the same second, so compare the certificates, not their NotAfter)
        assert after_kill in (first, issued)

        # restarted, the kubelet works with that pair (both are due): it renews as system:node and uses the result
        node.kubelet.start()
        issued_fresh: list[x509.Certificate] = []

        async def fresh_in_use() -> bool:
            # every renewal CSR of the node is approved, as an approver would: a kubelet whose request went unanswered
            # for a while (the restart's first one, under load) asks again with a new CSR
            csr = await pending_csr(admin, f"system:node:{NAME}", seen)
            if csr is not None:
                seen.add(csr["metadata"]["name"])
                issued_fresh.append(await approve_and_sign(admin, cp, csr, *fresh()))
            return bool(issued_fresh) and assert_usable_pair(node) in issued_fresh

        await eventually(fresh_in_use, 60, "a fresh certificate in use")
        await eventually(lambda: ready_node(admin, NAME), 30, "the Node Ready")
        assert node.kubelet.proc is not None and node.kubelet.proc.poll() is None
        assert "Traceback" not in node.kubelet.log(), node.kubelet.log()[-3000:]
    finally:
        node.kubelet.stop()
        await admin.close()
        cp.stop()
