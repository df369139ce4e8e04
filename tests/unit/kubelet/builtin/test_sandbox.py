"""The sandbox launcher's command line, the nsenter prefix, and building the native helpers (real namespaces and
processes are exercised in tests/integration/kubelet/test_pod_env.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pykubeadm.kubelet.builtin import native, sandbox
from pykubeadm.kubelet.volumes import Mount
from pykubeadm.layout import Layout


def test_sandboxed_argv_mounts_parents_first(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    mounts = [
        Mount(Path("/h/token"), "/var/run/secrets/kubernetes.io/serviceaccount", True),
        Mount(Path("/h/data"), "/data", False),
        Mount(Path("/h/sub"), "/data/sub", False),
    ]
    argv = sandbox.sandboxed_argv(["sh", "-c", "echo hi"], mounts, workdir="/data", hostname="web", layout=layout)
    assert Path(argv[0]).name.startswith("pod-sandbox-") and os.access(argv[0], os.X_OK)
    assert argv[1:] == [
        "-h",
        "web",
        "-w",
        "/data",
        "-b",
        "/h/data",
        "/data",
        "-b",
        "/h/sub",
        "/data/sub",
        "-r",
        "/h/token",
        "/var/run/secrets/kubernetes.io/serviceaccount",
        "--",
        "sh",
        "-c",
        "echo hi",
    ]


def test_private_root_flag(tmp_path: Path) -> None:
    argv = sandbox.sandboxed_argv(["true"], [], private_root=True, layout=Layout(tmp_path))
    assert argv[1:] == ["-p", "--", "true"]


def test_long_pod_names_become_valid_hostnames(tmp_path: Path) -> None:
    name = "a" * 62 + "-b" + "c" * 10
    argv = sandbox.sandboxed_argv(["true"], [], hostname=name, layout=Layout(tmp_path))
    assert argv[1:3] == ["-h", "a" * 62]


def test_sandboxed_argv_rejects_relative_mount_paths(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be absolute"):
        sandbox.sandboxed_argv(["true"], [Mount(Path("/h"), "data", False)], layout=Layout(tmp_path))


def test_enter_argv_targets_the_container_namespaces() -> None:
    argv = sandbox.enter_argv(os.getpid())
    assert Path(argv[0]).name == "nsenter"
    assert argv[1:] == [f"--target={os.getpid()}", "--mount", "--uts", "--net", "--pid", "--root", "--wd", "--"]


def test_binary_name_follows_the_source() -> None:
    name = native.binary_name("pause")
    assert name.startswith("pause-") and len(name) == len("pause-") + 12


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_build_into_the_node_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "PACKAGE_BUILD_DIR", tmp_path / "none")
    layout = Layout(tmp_path / "node")
    path = sandbox.pause_path(layout)
    assert path.parent == tmp_path / "node/var/lib/pykubeadm/native"
    assert os.access(path, os.X_OK)
    assert sandbox.pause_path(layout) == path  # built once
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left


def test_missing_compiler_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "PACKAGE_BUILD_DIR", tmp_path / "none")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(native.NativeBuildError, match=r"no C compiler was found.*apt-get install gcc"):
        sandbox.pause_path(Layout(tmp_path / "node"))


def test_only_add_on_components_go_to_the_zygote_of_a_kubelet_it_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from pykubeadm.kubelet.builtin import zygote
    from pykubeadm.kubelet.builtin.podworker import _forking_zygote

    component = [sys.executable, "-m", "pykubeadm", "component"]
    proxy = [*component, "kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]
    assert _forking_zygote({}, proxy) is None  # a kubelet started otherwise has no zygote
    monkeypatch.setattr(zygote, "_serving", [tmp_path / "z.sock"])
    assert _forking_zygote({}, proxy) == tmp_path / "z.sock"
    assert _forking_zygote({}, [*component, "coredns", "-conf", "/etc/coredns/Corefile"]) == tmp_path / "z.sock"
    assert _forking_zygote({"tty": True}, proxy) is None  # a terminal or stdin: exec'd, as the shim expects
    assert _forking_zygote({"stdin": True}, proxy) is None
    assert _forking_zygote({}, [*component, "kube-apiserver"]) is None
    assert _forking_zygote({}, ["/usr/bin/python3", "-m", "pykubeadm", "component", "kube-proxy"]) is None
    assert _forking_zygote({}, ["/bin/sh", "-c", "sleep 1"]) is None
    argv = sandbox.sandboxed_argv(proxy, [], layout=Layout(tmp_path), zygote=tmp_path / "z.sock")
    assert argv[1:3] == ["-z", str(tmp_path / "z.sock")] and argv[3:] == ["--", *proxy]


def test_a_pod_network_namespace_is_joined_with_n(tmp_path: Path) -> None:
    argv = sandbox.sandboxed_argv(["true"], [], netns=tmp_path / "netns", layout=Layout(tmp_path))
    assert argv[1:] == ["-n", str(tmp_path / "netns"), "--", "true"]
