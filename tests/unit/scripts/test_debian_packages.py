"""scripts/debian-packages.sh, the package decision of scripts/setup.sh: a machine without a C compiler gets gcc and
libc6-dev (the kubelet's native helpers are built with it); a machine with one gets neither. The script runs with a PATH
that holds only what each test puts there."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "debian-packages.sh"
BASH = shutil.which("bash") or "/bin/bash"
COMPILER_PACKAGES = {"gcc", "libc6-dev"}


def packages(path: Path, cc: str | None = None) -> list[str]:
    """The packages the script chooses when PATH is only `path` (and $CC is `cc`)."""
    env = {"PATH": str(path), "HOME": os.environ.get("HOME", "/")}
    if cc is not None:
        env["CC"] = cc
    done = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True, check=True, timeout=30)
    assert done.stderr == ""
    return done.stdout.split()


def tool(bindir: Path, name: str) -> Path:
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_no_compiler_on_path_installs_gcc_and_libc_headers(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    for name in ("openssl", "kubectl", "ip", "etcd", "etcdctl", "faketime"):
        tool(bindir, name)
    chosen = packages(bindir)
    assert set(chosen) >= COMPILER_PACKAGES
    assert "openssl" not in chosen and "kubernetes-client" not in chosen


@pytest.mark.parametrize("compiler", ["cc", "gcc", "clang"])
def test_any_compiler_on_path_installs_none(tmp_path: Path, compiler: str) -> None:
    tool(tmp_path / "bin", compiler)
    assert not COMPILER_PACKAGES & set(packages(tmp_path / "bin"))


def test_cc_variable_naming_a_compiler_is_enough(tmp_path: Path) -> None:
    mycc = tool(tmp_path / "opt", "my-cc")
    (tmp_path / "bin").mkdir()
    assert not COMPILER_PACKAGES & set(packages(tmp_path / "bin", cc=str(mycc)))


def test_cc_variable_naming_nothing_still_installs_gcc(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    assert set(packages(tmp_path / "bin", cc=str(tmp_path / "missing-cc"))) >= COMPILER_PACKAGES


def test_nothing_missing_prints_nothing(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    tools = ("openssl", "etcd", "kubectl", "ip", "haproxy", "etcdctl", "nft", "faketime", "rsvg-convert", "cc")
    runtime = ("containerd", "runc", "skopeo", "umoci", "docker-registry", "htpasswd")
    for name in tools + runtime:
        tool(bindir, name)
    # The CNI plugins and the static busybox are files, not commands: setup has installed them on this machine.
    assert packages(bindir) == []
