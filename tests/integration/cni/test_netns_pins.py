"""Pod network namespaces pinned under a node's root: made, recognised, and all unpinned when the node goes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pykubeadm.kubelet.builtin import netns
from pykubeadm.kubelet.builtin.podnetwork import netns_path, unpin_all
from pykubeadm.layout import Layout

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def mounted(root: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(root) in line]


def test_pins_are_namespaces_and_all_go_when_the_node_goes(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "node")
    paths = [netns_path(layout.pod_dir(uid)) for uid in ("uid-a", "uid-b")]
    try:
        for path in paths:
            netns.create(path)
        assert all(netns.is_netns(p) for p in paths)
        assert len(mounted(tmp_path)) == 2
        stale = netns_path(layout.pod_dir("uid-c"))
        stale.parent.mkdir(parents=True)
        stale.write_text("")  # a file left behind by a reboot is not a namespace
        assert not netns.is_netns(stale) and not netns.is_netns(tmp_path)
        with pytest.raises(FileExistsError):
            netns.create(paths[0])
        assert sorted(unpin_all(layout)) == sorted([*paths, stale])
        assert mounted(tmp_path) == [] and not any(p.exists() for p in [*paths, stale])
    finally:
        for path in paths:
            netns.remove(path)
