"""init phase `mark-control-plane`: the control-plane labels and taint on this node's Node object (§7.6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.phases.init.cluster import admin_client
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

__all__ = ["PHASE"]


def _taints(data: InitData) -> list[dict[str, str]]:
    taints = data.cfg.init.node_registration.taints or []
    return [t.to_obj() for t in taints]


def run(data: InitData) -> None:
    from lightkube.resources.core_v1 import Node  # the Kubernetes client only for the phases that use it

    from pykubeadm.client import wait_for_sync
    from pykubeadm.phases.apply import retry_api_call
    from pykubeadm.phases.markcontrolplane import CONTROL_PLANE_LABELS, missing_taints

    name = data.cfg.init.node_registration.name
    taints = _taints(data)
    data.out(
        f"[mark-control-plane] Marking the node {name} as control-plane by adding the labels: "
        f"[{' '.join(CONTROL_PLANE_LABELS)}]"
    )
    if taints:
        shown = " ".join(
            f"{t['key']}:{t['effect']}" if not t.get("value") else f"{t['key']}={t['value']}:{t['effect']}"
            for t in taints
        )
        data.out(f"[mark-control-plane] Marking the node {name} as control-plane by adding the taints [{shown}]")
    if data.dry_run:
        return
    client = admin_client(data)
    timeout = data.cfg.init.timeouts.kubernetes_api_call if data.cfg.init.timeouts else None
    node = wait_for_sync(
        client, Node, name, lambda _n: True, timeout=(timeout or c.KUBERNETES_API_CALL_TIMEOUT).total_seconds()
    )
    current = node.to_dict()
    patch: dict = {"metadata": {"labels": dict.fromkeys(CONTROL_PLANE_LABELS, "")}}
    add = missing_taints(current, taints)
    if add:
        patch["spec"] = {"taints": [*((current.get("spec") or {}).get("taints") or []), *add]}
    retry_api_call(lambda: client.patch(Node, name, patch), f"mark node {name} as control-plane")


PHASE: Phase[InitData] = Phase(
    name="mark-control-plane",
    short="Mark a node as a control-plane",
    run=run,
    inherit_flags=("node-name", "config", "dry-run"),
)
