"""A node's containerd socket is named by an address containerd accepts, however long the node root's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubeadm import constants as c
from pykubeadm.layout import Layout


def test_a_short_node_root_keeps_the_socket_in_the_node(short_tmp_path: Path) -> None:
    layout = Layout(short_tmp_path / "n")
    assert layout.containerd_socket == short_tmp_path / "n/run/containerd/containerd.sock"
    layout.link_containerd_socket_dir()
    assert (short_tmp_path / "n/run/containerd").is_dir()
    assert not layout.containerd_socket_link.is_symlink()


def test_a_long_node_root_names_its_socket_through_a_short_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / ("deep-" * 20) / "lab-control-plane"
    assert len(f"{Layout(root).containerd_socket}.ttrpc") <= c.CONTAINERD_SOCKET_ADDRESS_MAX
    monkeypatch.setattr(c, "CONTAINERD_SOCKET_LINK_DIR", str(tmp_path / "links"))  # not the host's /run
    layout = Layout(root)
    socket = layout.containerd_socket
    assert socket.parent == layout.containerd_socket_link
    layout.link_containerd_socket_dir()
    assert socket.parent.resolve() == (root / "run/containerd").resolve()
    assert layout.owns(socket)  # the kubelet, preflight and reset take it as the node's own runtime
    assert not Layout(tmp_path / "other").owns(socket)
    layout.link_containerd_socket_dir()  # again: the same link stays
    layout.unlink_containerd_socket_dir()
    assert not socket.parent.is_symlink()
    assert (root / "run/containerd").is_dir()


def test_two_long_node_roots_get_two_links(tmp_path: Path) -> None:
    a = Layout(tmp_path / ("x" * 120) / "a")
    b = Layout(tmp_path / ("x" * 120) / "b")
    assert a.containerd_socket != b.containerd_socket
