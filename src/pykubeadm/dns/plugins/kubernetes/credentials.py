"""How the kubernetes plugin reaches the API server: a `kubeconfig` directive, else the Pod's in-cluster credentials.

In-cluster is what client-go's rest.InClusterConfig reads (util.incluster): $KUBERNETES_SERVICE_HOST /
$KUBERNETES_SERVICE_PORT and the service-account token, ca.crt and namespace in
/var/run/secrets/kubernetes.io/serviceaccount, else the Pod's projected service-account volume found next to the
ConfigMap volume the Corefile (`-conf`, already mapped) was read from.
The token file is re-read on every request (lightkube's token_file), so the kubelet's token rotation is followed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lightkube import KubeConfig
from lightkube.config.kubeconfig import Cluster, User
from lightkube.core.exceptions import ConfigError

from pykubeadm.client import load_kubeconfig
from pykubeadm.errors import KubeconfigError
from pykubeadm.util.incluster import SERVICE_ACCOUNT_DIR, find_service_account_dir, in_cluster_server

__all__ = ["SERVICE_ACCOUNT_DIR", "find_service_account_dir", "kube_config"]


def kube_config(
    *,
    kubeconfig: str | None,
    context: str | None,
    endpoint: str | None,
    corefile_path: str,
    env: Mapping[str, str],
) -> KubeConfig:
    """The API server connection; ValueError with CoreDNS's wording when there is none."""
    if kubeconfig:
        try:
            cfg = load_kubeconfig(kubeconfig)
        except KubeconfigError as err:
            raise ValueError(str(err)) from err
        if context:
            if context not in cfg.contexts:
                raise ValueError(f'context "{context}" does not exist in {kubeconfig}')
            cfg.current_context = context
    else:
        host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
        sa_dir = find_service_account_dir(corefile_path)
        if endpoint and not (host and port and sa_dir):
            return KubeConfig.from_one(cluster=Cluster(server=endpoint), user=User())
        server, found = in_cluster_server(env, sa_dir)
        # as KubeConfig.from_service_account, but with the environment and directory we were given
        try:
            cfg = _from_service_account(found, server)
        except (ConfigError, OSError) as err:
            raise ValueError(str(err)) from err
    if endpoint:  # `endpoint URL` overrides the server of the credentials found
        context_name = cfg.current_context or next(iter(cfg.contexts), None)
        if context_name in cfg.contexts:
            cfg.clusters[cfg.contexts[context_name].cluster].server = endpoint
    return cfg


def _from_service_account(sa_dir: Path, server: str) -> KubeConfig:
    namespace = (sa_dir / "namespace").read_text().strip()
    return KubeConfig.from_one(
        cluster=Cluster(server=server, certificate_auth=str(sa_dir / "ca.crt")),
        user=User(token=(sa_dir / "token").read_text().strip(), token_file=str(sa_dir / "token")),
        namespace=namespace,
    )
