"""/var/lib/kubelet/kubeadm-flags.env (kubeadm's phases/kubelet/flags.go): the kubelet flags that depend on the node.

One line `KUBELET_KUBEADM_ARGS="<flags>"`: `--container-runtime-endpoint` (unless the NodeLocalCRISocket gate moves it
to instance-config.yaml), `--pod-infra-container-image`, `--hostname-override` when the node name differs from the
host name, and `--register-with-taints` for worker joins; `nodeRegistration.kubeletExtraArgs` override same-named
flags; sorted by name (ArgumentsToCommand). Shared by init and join.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from typing import Any

from pykubeadm.manifests.args import Arg, ArgLike, arguments_to_command, get_arg_value
from pykubeadm.util.goquote import go_quote

__all__ = ["build_kubelet_args", "env_file_content", "go_quote", "node_hostname", "taint_string"]


def node_hostname() -> str:
    """kubeadm's GetHostname(""): this machine's host name, trimmed and lower-cased."""
    return socket.gethostname().strip().lower()


def taint_string(taint: Any) -> str:
    """corev1.Taint.ToString(): `key=value:Effect`, or `key:Effect` without a value."""
    key, value, effect = taint.key, getattr(taint, "value", ""), taint.effect
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def build_kubelet_args(
    *,
    cri_socket: str,
    pause_image: str,
    node_name: str,
    hostname: str,
    kubelet_extra_args: Sequence[ArgLike] = (),
    taints: Iterable[Any] | None = None,
    register_taints: bool = False,
    node_local_cri_socket: bool = False,
) -> list[str]:
    """The sorted `--name=value` flags of kubeadm-flags.env."""
    args: list[Arg] = []
    if not node_local_cri_socket:
        args.append(Arg("container-runtime-endpoint", cri_socket))
    if pause_image:
        args.append(Arg("pod-infra-container-image", pause_image))
    taint_list = list(taints or ())
    if register_taints and taint_list:
        args.append(Arg("register-with-taints", ",".join(taint_string(t) for t in taint_list)))
    effective_name = get_arg_value(kubelet_extra_args, "hostname-override") or node_name or hostname
    if effective_name != hostname:
        args.append(Arg("hostname-override", effective_name))
    return arguments_to_command(args, kubelet_extra_args)


def env_file_content(args: Sequence[str], variable: str = "KUBELET_KUBEADM_ARGS") -> str:
    return f"{variable}={go_quote(' '.join(args))}\n"
