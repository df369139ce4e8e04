"""join phase `preflight`: kubeadm's join checks (and, for a control-plane join, the init checks of a second one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.join.data import JoinData

__all__ = ["PHASE", "host_runtime"]


def host_runtime(data: JoinData) -> bool:
    return data.real_layout.root == Path("/")


def _kubelet_address(data: JoinData) -> str:
    """Where this node's kubelet will listen: its `node-ip` in built-in mode (lab nodes share the machine), else all."""
    if host_runtime(data):
        return ""
    return next((a.value for a in data.cfg.node_registration.kubelet_extra_args if a.name == "node-ip"), "")


def _run(data: JoinData) -> None:
    # The checks are imported when the phase runs, not with the phase tree.
    from pykubeadm.preflight import JoinCheckParams, RealHost, join_node_checks, root_check, run_checks, state_writer

    host = data.state.get("preflight_host") or RealHost()
    write = state_writer(data.state)
    cfg = data.cfg
    bt = cfg.discovery.bootstrap_token
    data.out("[preflight] Running pre-flight checks")
    if host_runtime(data):
        run_checks(root_check(host), data.ignore_preflight_errors, write)
    params = JoinCheckParams(
        layout=data.real_layout,
        node_name=cfg.node_registration.name,
        discovery_host=bt.api_server_endpoint if bt else "",
        ca_cert_path=cfg.ca_cert_path,
        control_plane=data.control_plane,
        cri_socket=cfg.node_registration.cri_socket,
        kubelet_address=_kubelet_address(data),
        host_runtime=host_runtime(data),
    )
    run_checks(join_node_checks(host, params), data.ignore_preflight_errors, write)


PHASE: Phase[JoinData] = Phase(
    name="preflight",
    short="Run join pre-flight checks",
    run=_run,
    inherit_flags=(
        "apiserver-advertise-address",
        "apiserver-bind-port",
        "certificate-key",
        "config",
        "control-plane",
        "cri-socket",
        "discovery-file",
        "discovery-token",
        "discovery-token-ca-cert-hash",
        "discovery-token-unsafe-skip-ca-verification",
        "ignore-preflight-errors",
        "node-name",
        "tls-bootstrap-token",
        "token",
        "dry-run",
    ),
)
