"""upgrade phase `preflight`: root check, cluster health checks, the version skew policy, the confirmation prompt and
the image pull notice (apply); the node variant only checks and says whether images would be pulled.

The health checks are the ones a Python control plane can answer: the API server's /healthz, every control-plane Node
Ready (`ControlPlaneNodesReady`) and this node's static Pod manifests present (`StaticPodManifest`); kubeadm's
`CreateJob` check needs a Job controller and is not run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from lightkube import Client
from lightkube.resources.core_v1 import Node

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError, PreflightError
from pykubeadm.layout import Layout
from pykubeadm.phases.upgrade.cluster import server_version
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.phases.upgrade.policy import check_version_policies, enforce_version_policies
from pykubeadm.preflight import RealHost, root_check, run_checks
from pykubeadm.workflow import Phase

__all__ = ["APPLY_PHASE", "NODE_PHASE", "confirm", "kubelet_versions", "run_health_checks"]

Reporter = Callable[[str], None]

PROMPT = "[upgrade] Are you sure you want to proceed? [y/N]: "
_PULL_LINES = (
    "[upgrade/preflight] Pulling images required for setting up a Kubernetes cluster",
    "[upgrade/preflight] This might take a minute or two, depending on the speed of your internet connection",
    "[upgrade/preflight] You can also perform this action beforehand using 'kubeadm config images pull'",
)


class _Check:
    def __init__(self, name: str, errors: list[str]):
        self._name, self._errors = name, errors

    def name(self) -> str:
        return self._name

    def check(self) -> tuple[list[str], list[str]]:
        return [], self._errors


def _stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


def _root_check(data: UpgradeData) -> None:
    if data.layout.root == Path("/"):
        run_checks(root_check(RealHost()), data.ignore_preflight_errors, _stderr)


def run_health_checks(
    client: Client, layout: Layout, ignore: frozenset[str], out: Reporter, *, manifests: bool = True
) -> None:
    """kubeadm's cluster health checks (`[upgrade] Running cluster health checks`); PreflightError on failure."""
    out("[upgrade] Running cluster health checks")
    checks = []
    try:
        server_version(client)
        api_errors: list[str] = []
    except KubeadmError as err:
        api_errors = [f"the API Server is unhealthy: {err}"]
    checks.append(_Check("APIServerHealth", api_errors))
    not_ready: list[str] = []
    try:
        for n in client.list(Node, labels={c.LABEL_NODE_ROLE_CONTROL_PLANE: ""}):
            conds = n.status.conditions if n.status and n.status.conditions else []
            if not any(cd.type == "Ready" and cd.status == "True" for cd in conds):
                not_ready.append(n.metadata.name if n.metadata and n.metadata.name else "")
        nodes_errors = (
            [f"there are NotReady control-planes in the cluster: [{' '.join(not_ready)}]"] if not_ready else []
        )
    except Exception as err:
        nodes_errors = [f"couldn't list control-planes in cluster: {err}"]
    checks.append(_Check("ControlPlaneNodesReady", nodes_errors))
    if manifests:
        missing = [
            str(layout.manifest(comp)) for comp in c.CONTROL_PLANE_COMPONENTS if not layout.manifest(comp).is_file()
        ]
        checks.append(_Check("StaticPodManifest", [f"no such file or directory: {m}" for m in missing]))
    try:
        run_checks(checks, ignore, _stderr)
    except KubeadmError as err:
        raise PreflightError(f"[upgrade/health] FATAL: {err}") from err


def kubelet_versions(client: Client) -> list[str]:
    """The kubelet version of every Node (for the kubelet skew check)."""
    return [
        n.status.nodeInfo.kubeletVersion
        for n in client.list(Node)
        if n.status and n.status.nodeInfo and n.status.nodeInfo.kubeletVersion
    ]


def confirm(data: UpgradeData) -> None:
    """Only "y"/"Y" goes on; anything else, including the end of input, aborts."""
    answer = data.ask(PROMPT)
    if answer.strip().lower() != "y":
        raise KubeadmError("won't proceed; the user didn't answer (Y|y) in order to continue")


def _run_apply(data: UpgradeData) -> None:
    data.out("[upgrade/preflight] Running preflight checks")
    _root_check(data)
    run_health_checks(data.client, data.layout, data.ignore_preflight_errors, data.out)
    data.out(f'[upgrade/preflight] You have chosen to upgrade the cluster version to "{data.target}"')
    data.out(f"[upgrade/versions] Cluster version: {data.cluster_version}")
    data.out(f"[upgrade/versions] kubeadm version: {c.KUBEADM_VERSION}")
    kubelets = kubelet_versions(data.client)
    errs = enforce_version_policies(
        data.target,
        data.cluster_version,
        c.KUBEADM_VERSION,
        kubelets,
        allow_experimental=data.allow_experimental,
        allow_rc=data.allow_rc,
    )
    notice = check_version_policies(errs, data.force)
    if notice:
        data.out(notice.rstrip("\n"))
    if not data.dry_run and not (data.force or data.yes):
        confirm(data)
    for line in _PULL_LINES:
        data.out(line)


def _run_node(data: UpgradeData) -> None:
    data.out("[upgrade/preflight] Running pre-flight checks")
    _root_check(data)
    if not data.control_plane:
        data.out("[upgrade/preflight] Skipping prepull. Not a control plane node.")
        return
    for line in _PULL_LINES:
        data.out(line)


_APPLY_FLAGS = (
    "allow-experimental-upgrades",
    "allow-release-candidate-upgrades",
    "config",
    "dry-run",
    "force",
    "ignore-preflight-errors",
    "kubeconfig",
    "yes",
)

APPLY_PHASE: Phase[UpgradeData] = Phase(
    name="preflight",
    short="Run preflight checks before upgrade",
    run=_run_apply,
    inherit_flags=_APPLY_FLAGS,
)

NODE_PHASE: Phase[UpgradeData] = Phase(
    name="preflight",
    short="Run upgrade node pre-flight checks",
    long="Run pre-flight checks for kubeadm upgrade node.",
    run=_run_node,
    inherit_flags=("config", "dry-run", "ignore-preflight-errors", "kubeconfig"),
)
