"""Network namespaces a test makes and always removes, and a way to run our CNI code inside one of them.

Every address these tests use exists only inside these namespaces: the host's network namespace is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CNI_BIN = "/usr/lib/cni"
CNITOOL = Path(__file__).with_name("_cnitool.py")

needs_netns = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("ip") is None, reason='no "ip" command (Debian package "iproute2")'),
    pytest.mark.skipif(
        not os.access(f"{CNI_BIN}/bridge", os.X_OK),
        reason="no CNI plugins (Debian package containernetworking-plugins)",
    ),
]


def run(*argv: str, ns: str | None = None, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    return subprocess.run(full, capture_output=True, text=True, check=check, timeout=120, **kw)


@contextmanager
def namespaces() -> Iterator[Callable[[str], str]]:
    """A factory of uniquely named namespaces (`ip netns add`, lo up); all deleted on exit, even on failure."""
    made: list[str] = []

    def make(role: str) -> str:
        name = f"pk-{role}-{uuid.uuid4().hex[:8]}"
        run("ip", "netns", "add", name)
        made.append(name)
        run("ip", "link", "set", "lo", "up", ns=name)
        return name

    try:
        yield make
    finally:
        for name in reversed(made):
            subprocess.run(["ip", "netns", "del", name], check=False, timeout=60)


def netns_path(name: str) -> str:
    return f"/run/netns/{name}"


def cnitool(node_ns: str, command: str, **kw: Any) -> dict[str, Any]:
    """Run pykubeadm.cni's `command` (add/check/del) inside `node_ns` (where the bridge is) in a fresh process."""
    res = run(sys.executable, str(CNITOOL), command, json.dumps(kw), ns=node_ns, check=False)
    if res.returncode != 0:
        raise AssertionError(f"cnitool {command} failed: {res.stdout}{res.stderr}")
    return dict(json.loads(res.stdout))


def addresses(ns: str, dev: str) -> list[str]:
    """The IPv4 addresses (with prefix) of `dev` inside `ns`; [] when the device does not exist."""
    res = run("ip", "-j", "-4", "addr", "show", "dev", dev, ns=ns, check=False)
    if res.returncode != 0:
        return []
    return [f"{a['local']}/{a['prefixlen']}" for link in json.loads(res.stdout) for a in link.get("addr_info", [])]
