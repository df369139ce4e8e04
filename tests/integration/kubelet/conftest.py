"""Fixtures shared by the kubelet integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubeadm.kubelet import service as kubeletservice
from pykubeadm.kubelet.builtin import zygote
from pykubeadm.layout import Layout


@pytest.fixture
def warm_layout(tmp_path: Path) -> Iterator[Layout]:
    """An empty node root for a warm kubelet; afterwards the warm kubelets still waiting are discarded and the node's
    kubelet is stopped."""
    layout = Layout(tmp_path / "node")
    layout.root.mkdir()
    yield layout
    kubeletservice.discard_prewarmed_kubelets()
    kubeletservice.stop_kubelet(layout, timeout=5)


@pytest.fixture
def sock(tmp_path: Path) -> Iterator[Path]:
    """A kubelet zygote listening in `tmp_path`, stopped afterwards."""
    path = tmp_path / zygote.SOCKET_NAME
    assert zygote.start(path) is not None
    yield path
    zygote.stop(path)
