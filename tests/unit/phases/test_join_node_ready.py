"""join's "a Ready Node with this name already exists" check (kubelet-start) on the Node objects the server returns.

The client is a stand-in returning fixed Node objects; the join integration tests run the check against a real server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightkube import ApiError
from lightkube.models.core_v1 import NodeCondition, NodeStatus
from lightkube.models.meta_v1 import ObjectMeta, Status
from lightkube.resources.core_v1 import Node

from pykubeadm.api import JoinConfiguration
from pykubeadm.layout import Layout
from pykubeadm.phases.join.cluster import node_is_ready
from pykubeadm.phases.join.data import JoinData


class _Client:
    def __init__(self, node: Node | None) -> None:
        self.node = node

    def get(self, res: Any, name: str) -> Node:
        if self.node is None:
            raise ApiError(status=Status(code=404, reason="NotFound", message=f'nodes "{name}" not found'))
        return self.node


def _data(tmp_path: Path, node: Node | None) -> JoinData:
    layout = Layout(root=tmp_path)
    return JoinData(
        cfg=JoinConfiguration(), layout=layout, real_layout=layout, state={"bootstrap_client": _Client(node)}
    )


def _node(status: NodeStatus | None) -> Node:
    return Node(metadata=ObjectMeta(name="worker"), status=status)


def test_ready_node_is_ready(tmp_path: Path) -> None:
    status = NodeStatus(conditions=[NodeCondition(type="Ready", status="True")])
    assert node_is_ready(_data(tmp_path, _node(status)), "worker")


def test_not_ready_or_missing_node_is_not_ready(tmp_path: Path) -> None:
    status = NodeStatus(conditions=[NodeCondition(type="Ready", status="False")])
    assert not node_is_ready(_data(tmp_path, _node(status)), "worker")
    assert not node_is_ready(_data(tmp_path, None), "worker")


def test_node_without_status_is_not_ready(tmp_path: Path) -> None:
    # a Node created by hand has no status yet: joining under its name is allowed, not a crash
    assert not node_is_ready(_data(tmp_path, _node(None)), "worker")
