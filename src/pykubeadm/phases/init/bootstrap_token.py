"""init phase `bootstrap-token`: token Secrets, the TLS-bootstrap RBAC and the cluster-info ConfigMap (§7.1–§7.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm.phases.init.cluster import apply
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

__all__ = ["PHASE"]


def run(data: InitData) -> None:
    # Imported here: an init that skips this phase does not load the token Secrets' and kubeconfig helpers.
    from pykubeadm.kubeconfig.config import current_cluster, load_kubeconfig
    from pykubeadm.phases.bootstraptoken import bootstrap_rbac, bootstrap_token_secret, cluster_info_objects

    tokens = data.cfg.init.bootstrap_tokens
    if tokens and not data.skip_token_print:
        data.out(f"[bootstrap-token] Using token: {tokens[0].token}")
    data.out("[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles")
    apply(data, [bootstrap_token_secret(t) for t in tokens])
    rbac = bootstrap_rbac()
    apply(data, rbac[:2])
    data.out("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes")
    apply(data, rbac[2:3])
    data.out(
        "[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get "
        "long term certificate credentials"
    )
    apply(data, rbac[3:4])
    data.out(
        "[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a "
        "Node Bootstrap Token"
    )
    apply(data, rbac[4:])
    data.out(
        "[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster"
    )
    data.out('[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace')
    _, cluster, ca_pem = current_cluster(
        load_kubeconfig(data.layout.admin_kubeconfig), str(data.layout.admin_kubeconfig)
    )
    cm, rbac_ci = cluster_info_objects(cluster["server"], ca_pem)
    apply(data, [cm], retain=True)
    apply(data, rbac_ci)


PHASE: Phase[InitData] = Phase(
    name="bootstrap-token",
    short="Generates bootstrap tokens used to join a node to a cluster",
    long="Bootstrap tokens are used for establishing bidirectional trust between a node joining the cluster and a "
    "control-plane node.\n\nThis command makes all the configurations required to make bootstrap tokens works and "
    "then creates an initial token.",
    run=run,
    inherit_flags=("config", "kubeconfig", "dry-run", "skip-token-print"),
)
