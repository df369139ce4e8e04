"""init phase `addon`: the CoreDNS and kube-proxy objects kubeadm installs (§7.8, §7.9)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.phases.init.cluster import apply
from pykubeadm.workflow import Phase, all_phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

# The addons' objects, images and YAML are imported when the phase runs: an init that skips `addon` (or the phase tree
# built for `--help`) does not load them.

__all__ = ["PHASE"]


def run_coredns(data: InitData) -> None:
    from pykubeadm.api import dns_service_ip
    from pykubeadm.api.images import coredns_image
    from pykubeadm.phases.addons.dns import dns_objects

    cluster = data.cfg.cluster
    if cluster.dns.disabled:
        return
    image = coredns_image(cluster)
    cm, rest = dns_objects(dns_domain=cluster.networking.dns_domain, cluster_ip=dns_service_ip(cluster), image=image)
    apply(data, [cm], retain=True)
    apply(data, rest)
    data.out("[addons] Applied essential addon: CoreDNS")


def run_kube_proxy(data: InitData) -> None:
    from pykubeadm.api import control_plane_endpoint_url
    from pykubeadm.api.images import kubernetes_image
    from pykubeadm.api.yamlio import dump_yaml
    from pykubeadm.phases.addons.proxy import proxy_objects

    cluster = data.cfg.cluster
    if cluster.proxy.disabled:
        return
    image = kubernetes_image(c.KUBE_PROXY, cluster)
    objs = proxy_objects(
        kube_proxy_configuration_yaml=dump_yaml(data.cfg.kube_proxy),
        server=control_plane_endpoint_url(data.cfg.init, cluster),
        image=image,
    )
    apply(data, objs)
    data.out("[addons] Applied essential addon: kube-proxy")


_FLAGS = ("config", "kubeconfig", "dry-run", "kubernetes-version", "image-repository")

PHASE: Phase[InitData] = Phase(
    name="addon",
    short="Install required addons for passing conformance tests",
    children=(
        all_phase("Install all the addons", _FLAGS),
        Phase("coredns", "Install the CoreDNS addon to a Kubernetes cluster", run=run_coredns, inherit_flags=_FLAGS),
        Phase(
            "kube-proxy",
            "Install the kube-proxy addon to a Kubernetes cluster",
            run=run_kube_proxy,
            inherit_flags=_FLAGS,
        ),
    ),
)
