"""init phase `preflight`: kubeadm's init checks (root check first, then RunInitNodeChecks), then image pulls.

Host mode (root dir "/": a real kubelet and container runtime) runs kubeadm's full list; a node under `--root-dir`
(built-in mode) skips the root check and the container-runtime checks (see `preflight.nodechecks`). Image pulls need a
CRI: in host mode they go through the runtime's ImageService; built-in nodes run programs, not images, so there is nothing to pull.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData
    from pykubeadm.preflight import Host, InitCheckParams
    from pykubeadm.preflight.checks import Result

# The checks (pykubeadm.preflight) are imported when the phase runs: an init that skips preflight does not load them.

__all__ = ["PHASE", "host_runtime", "init_check_params", "pull_images", "warn_if_sandbox_image_differs"]

log = logging.getLogger(__name__)

_FLAGS = (
    "apiserver-advertise-address",
    "apiserver-bind-port",
    "config",
    "cri-socket",
    "dry-run",
    "ignore-preflight-errors",
    "image-repository",
    "kubernetes-version",
    "node-name",
    "pod-network-cidr",
    "service-cidr",
)

#: The host adapter preflight reads (tests replace it with a FakeHost through `data.state["preflight_host"]`).
_HOST_KEY = "preflight_host"


def host_runtime(data: InitData) -> bool:
    """Host mode: the node's root is the machine's "/" (a real kubelet and runtime); else built-in mode."""
    return data.real_layout.root == Path("/")


def _host(data: InitData) -> Host:
    from pykubeadm.preflight import RealHost

    h = data.state.get(_HOST_KEY)
    return cast("Host", h) if h is not None else RealHost()  # tests put a FakeHost there


def init_check_params(data: InitData) -> InitCheckParams:
    from pykubeadm.preflight import InitCheckParams

    cfg = data.cfg
    cluster, init = cfg.cluster, cfg.init
    ext = cluster.etcd.external
    return InitCheckParams(
        layout=data.real_layout,
        advertise_address=init.local_api_endpoint.advertise_address,
        node_name=init.node_registration.name,
        bind_port=init.local_api_endpoint.bind_port,
        kubernetes_version=cluster.kubernetes_version,
        service_subnet=cluster.networking.service_subnet,
        pod_subnet=cluster.networking.pod_subnet,
        cri_socket=init.node_registration.cri_socket,
        etcd_data_dir=cluster.etcd.local.data_dir if ext is None and cluster.etcd.local is not None else None,
        external_etcd_files=(ext.ca_file, ext.cert_file, ext.key_file) if ext is not None else (),
        host_runtime=host_runtime(data),
    )


class _ImagePullCheck:
    """kubeadm's ImagePullCheck through CRI (respecting imagePullPolicy)."""

    def __init__(self, host: Host, cri_socket: str, image: str, policy: str):
        self.host, self.cri_socket, self.image, self.policy = host, cri_socket, image, policy

    def name(self) -> str:
        return "ImagePull"

    def check(self) -> Result:
        if self.policy != "Always" and self.host.cri_image_exists(self.cri_socket, self.image):
            return [], []
        if self.policy == "Never":
            return [], [f"image {self.image} does not exist and the pull policy is Never"]
        err = self.host.cri_pull_image(self.cri_socket, self.image)
        if err:
            return [], [f"failed to pull image {self.image}: {err}"]
        return [], []


def warn_if_sandbox_image_differs(host: Host, cri_socket: str, pause_image: str) -> None:
    """kubeadm's warning when the runtime would start sandboxes from another pause image than kubeadm's."""
    sandbox, err = host.cri_sandbox_image(cri_socket)
    if err is not None:
        log.warning("failed to detect the sandbox image for local container runtime, %s", err)
    elif sandbox != pause_image:
        # kubeadm v1.33's text, without a space after "kubeadm.".
        log.warning(
            'detected that the sandbox image "%s" of the container runtime is inconsistent with that used by '
            'kubeadm.It is recommended to use "%s" as the CRI sandbox image.',
            sandbox,
            pause_image,
        )


def pull_images(data: InitData, host: Host) -> None:
    from pykubeadm.api.images import images_list, pause_image
    from pykubeadm.preflight import run_checks, state_writer

    if data.dry_run:
        data.out("[preflight] Would pull the required images (like 'kubeadm config images pull')")
        return
    reg = data.cfg.init.node_registration
    if not host_runtime(data):  # built-in nodes run programs; a runtime of the node's own still hears the warning
        from pykubeadm.preflight.nodechecks import node_local_runtime

        if node_local_runtime(data.real_layout, reg.cri_socket):
            warn_if_sandbox_image_differs(host, reg.cri_socket, pause_image(data.cfg.cluster))
        return
    data.out("[preflight] Pulling images required for setting up a Kubernetes cluster")
    data.out("[preflight] This might take a minute or two, depending on the speed of your internet connection")
    data.out("[preflight] You can also perform this action beforehand using 'kubeadm config images pull'")
    warn_if_sandbox_image_differs(host, reg.cri_socket, pause_image(data.cfg.cluster))
    checks = [
        _ImagePullCheck(host, reg.cri_socket, img, reg.image_pull_policy) for img in images_list(data.cfg.cluster)
    ]
    run_checks(checks, data.ignore_preflight_errors, state_writer(data.state))


def _run(data: InitData) -> None:
    from pykubeadm.preflight import init_node_checks, root_check, run_checks, state_writer

    host = _host(data)
    data.out("[preflight] Running pre-flight checks")
    write = state_writer(data.state)
    if host_runtime(data):
        run_checks(root_check(host), data.ignore_preflight_errors, write)
    run_checks(init_node_checks(host, init_check_params(data)), data.ignore_preflight_errors, write)
    pull_images(data, host)


PHASE: Phase[InitData] = Phase(
    name="preflight",
    short="Run pre-flight checks",
    long="Run pre-flight checks for kubeadm init.",
    run=_run,
    inherit_flags=_FLAGS,
    example="  # Run pre-flight checks for kubeadm init using a config file.\n"
    "  kubeadm init phase preflight --config kubeadm-config.yaml",
)
