"""join phase `kubelet-wait-bootstrap`: wait for a healthy kubelet and its TLS bootstrap, then drop the bootstrap file."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError, KubeconfigError
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from lightkube import KubeConfig

    from pykubeadm.phases.join.data import JoinData

# The kubelet's health check, the kubeconfig reader and the Kubernetes client (lightkube, httpx2) are imported by the
# functions that use them, when the phase runs.

__all__ = ["PHASE", "kubelet_conf_usable"]

_FAIL_HEAD = "Unfortunately, an error has occurred:\n\t{err}\n\nThis error is likely caused by:\n"


def kubelet_conf_usable(data: JoinData) -> bool:
    """kubelet.conf exists, parses, and the client certificate and key it references exist."""
    from pykubeadm.kubeconfig.config import current_user, load_kubeconfig

    path = data.layout.kubelet_kubeconfig
    if not path.exists():
        return False
    try:
        _, user = current_user(load_kubeconfig(path), str(path))
    except KubeconfigError:
        return False
    for key in ("client-certificate", "client-key"):
        if key in user and not data.layout.host(user[key]).exists():
            return False
    return bool(user)


def _run(data: JoinData) -> None:
    from pykubeadm.api import format_duration
    from pykubeadm.phases.waitcontrolplane import KUBELET_TROUBLESHOOTING, kubelet_healthz_url, wait_kubelet_healthy

    if data.dry_run:
        data.out("[dryrun] Would wait for the kubelet to perform the TLS Bootstrap")
        return
    t = data.cfg.timeouts
    kubelet_timeout = (t.kubelet_health_check if t else None) or c.KUBELET_HEALTH_CHECK_TIMEOUT
    tls_timeout = (t.tls_bootstrap if t else None) or c.TLS_BOOTSTRAP_TIMEOUT
    log = data.real_layout.kubelet_log_file
    try:
        url = kubelet_healthz_url(data.layout.kubelet_config)
        wait_kubelet_healthy(url, kubelet_timeout, data.out)
        data.out("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap")
        deadline = time.monotonic() + tls_timeout.total_seconds()
        while not kubelet_conf_usable(data):
            if time.monotonic() > deadline:
                raise KubeadmError(
                    f"timed out waiting for the kubelet to perform the TLS Bootstrap "
                    f"({format_duration(tls_timeout)}): {c.KUBERNETES_DIR}/{c.KUBELET_KUBECONFIG_FILE} is not usable"
                )
            time.sleep(min(c.TLS_BOOTSTRAP_RETRY_INTERVAL.total_seconds(), 0.02))  # a file check: cheap
    except KubeadmError as err:
        raise KubeadmError((_FAIL_HEAD + KUBELET_TROUBLESHOOTING).format(err=err, log=log)) from err
    finally:
        with contextlib.suppress(FileNotFoundError):
            data.layout.bootstrap_kubelet_kubeconfig.unlink()
    _annotate_cri_socket(data)


def _annotate_cri_socket(data: JoinData) -> None:
    """With the kubelet's new credentials, as kubeadm does after the TLS bootstrap (before NodeLocalCRISocket)."""
    from pykubeadm.api import features
    from pykubeadm.client import sync_client
    from pykubeadm.phases.patchnode import annotate_cri_socket

    cluster = data.state.get("cluster_configuration")
    if cluster is not None and features.enabled(cluster.feature_gates, "NodeLocalCRISocket"):
        return
    reg = data.cfg.node_registration
    t = data.cfg.timeouts
    timeout = ((t.kubernetes_api_call if t else None) or c.KUBERNETES_API_CALL_TIMEOUT).total_seconds()
    with sync_client(_kubelet_kubeconfig(data)) as client:
        annotate_cri_socket(client, reg.name, reg.cri_socket, timeout)


def _kubelet_kubeconfig(data: JoinData) -> KubeConfig:
    """kubelet.conf with its file references resolved under the node's root."""
    from lightkube import KubeConfig

    from pykubeadm.kubeconfig.config import load_kubeconfig

    cfg = load_kubeconfig(data.layout.kubelet_kubeconfig)
    for user in cfg.get("users") or []:
        body = user.get("user") or {}
        for key in ("client-certificate", "client-key"):
            if key in body:
                body[key] = str(data.layout.host(body[key]))
    return KubeConfig.from_dict(cfg)


PHASE: Phase[JoinData] = Phase(
    name="kubelet-wait-bootstrap",
    short="Wait for the kubelet to bootstrap itself",
    run=_run,
    inherit_flags=("config", "dry-run"),
)
