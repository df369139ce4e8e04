"""The fork server's code stamp covers all of pykubeadm wherever the fork server's module lives: an edit to any
module (not only the kubelet's) makes a warm fork server exec new containers instead of forking stale code."""

from __future__ import annotations

import os
import sys
import types

from pykubeadm.kubelet.builtin.forkserver import code_stamp


def test_an_edit_anywhere_in_the_package_moves_the_stamp(tmp_path, monkeypatch):
    package = tmp_path / "pykubeadm"
    for rel in ("__init__.py", "kubelet/__init__.py", "kubelet/builtin/forkserver.py", "apiserver/server.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text("")
        os.utime(package / rel, ns=(10**18, 10**18))
    fake = types.ModuleType("pykubeadm")
    fake.__file__ = str(package / "__init__.py")
    monkeypatch.setitem(sys.modules, "pykubeadm", fake)
    before = code_stamp()
    os.utime(package / "apiserver/server.py", ns=(10**18 + 10**9, 10**18 + 10**9))
    assert code_stamp() == before + 10**9
