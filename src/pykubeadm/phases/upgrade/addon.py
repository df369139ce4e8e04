"""upgrade phase `addon` (`coredns`, `kube-proxy`): apply the CoreDNS and kube-proxy objects again with the images of
the target version, keeping the user's kube-proxy configuration and CoreDNS replica count.

Runs on control-plane nodes only, and only once every control-plane instance runs the target kube-apiserver (the last
one to be upgraded applies the addons).
"""

from __future__ import annotations

from typing import Any

import yaml
from lightkube import ApiError
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Pod

from pykubeadm import constants as c
from pykubeadm.api import dns_service_ip
from pykubeadm.api.images import coredns_image, image_tag, kubernetes_image_for
from pykubeadm.client import is_not_found
from pykubeadm.phases.addons.dns import dns_objects
from pykubeadm.phases.addons.proxy import proxy_objects
from pykubeadm.phases.apply import retry_api_call
from pykubeadm.phases.upgrade.cluster import get_configmap
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.workflow import Phase, all_phase

__all__ = ["PHASE", "not_upgraded_control_planes"]

_FLAGS = ("config", "dry-run", "kubeconfig")


def not_upgraded_control_planes(data: UpgradeData) -> list[str]:
    """Nodes whose kube-apiserver mirror Pod does not run the target version yet."""
    want = image_tag(data.cluster.kubernetes_version)

    def read() -> list[str]:
        pods = data.client.list(Pod, namespace=c.NAMESPACE_SYSTEM, labels={"component": c.KUBE_APISERVER})
        return sorted(
            p.spec.nodeName or ""
            for p in pods
            if p.spec is not None and not (p.spec.containers[0].image or "").endswith(":" + want)
        )

    return retry_api_call(read, "list the kube-apiserver Pods")


def _skip(data: UpgradeData, name: str) -> bool:
    if not data.control_plane:
        data.out(f"[upgrade/addon] Skipping the addon/{name} phase. Not a control plane node.")
        return True
    if data.dry_run:
        return False
    pending = data.state.get("pending_control_planes")
    if pending is None:
        pending = data.state["pending_control_planes"] = not_upgraded_control_planes(data)
    if pending:
        data.out(
            "[upgrade/addon] Skipping upgrade of addons because control plane instances "
            f"[{' '.join(pending)}] have not been upgraded"
        )
        return True
    return False


def _live_replicas(data: UpgradeData) -> int | None:
    try:
        dep = data.client.get(Deployment, c.COREDNS, namespace=c.NAMESPACE_SYSTEM)
    except ApiError as err:
        if is_not_found(err):
            return None
        raise
    return dep.spec.replicas if dep.spec else None


def _run_coredns(data: UpgradeData) -> None:
    cluster = data.cluster
    if cluster.dns.disabled or _skip(data, "coredns"):
        return
    cm, rest = dns_objects(
        dns_domain=cluster.networking.dns_domain, cluster_ip=dns_service_ip(cluster), image=coredns_image(cluster)
    )
    replicas = None if data.dry_run else _live_replicas(data)
    if replicas is not None:
        for obj in rest:
            if obj["kind"] == "Deployment":
                obj["spec"]["replicas"] = replicas
    data.apply([cm], retain=True)
    data.apply(rest)
    data.out("[addons] Applied essential addon: CoreDNS")


def _proxy_config(data: UpgradeData) -> tuple[str, str]:
    """The kube-proxy ConfigMap's configuration and the API server URL of its kubeconfig."""
    cm = get_configmap(data.client, c.KUBE_PROXY_CONFIGMAP)
    values = cm.data or {}
    kubeconfig: Any = yaml.safe_load(values.get(c.KUBE_PROXY_KUBECONFIG_KEY, "")) or {}
    server = ((kubeconfig.get("clusters") or [{}])[0].get("cluster") or {}).get("server", "")
    return values.get(c.KUBE_PROXY_CONFIGMAP_KEY, ""), server


def _run_kube_proxy(data: UpgradeData) -> None:
    cluster = data.cluster
    if cluster.proxy.disabled or _skip(data, "kube-proxy"):
        return
    config, server = _proxy_config(data)
    image = kubernetes_image_for(c.KUBE_PROXY, cluster.image_repository, cluster.kubernetes_version)
    data.apply(proxy_objects(kube_proxy_configuration_yaml=config, server=server, image=image))
    data.out("[addons] Applied essential addon: kube-proxy")


PHASE: Phase[UpgradeData] = Phase(
    name="addon",
    short="Upgrade the default kubeadm addons",
    children=(
        all_phase("Upgrade all the addons", _FLAGS),
        Phase("coredns", "Upgrade the CoreDNS addon", run=_run_coredns, inherit_flags=_FLAGS),
        Phase("kube-proxy", "Upgrade the kube-proxy addon", run=_run_kube_proxy, inherit_flags=_FLAGS),
    ),
)
