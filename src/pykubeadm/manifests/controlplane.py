"""The kube-apiserver, kube-controller-manager and kube-scheduler static Pods (kubeadm's phases/controlplane/manifests.go).

`build_control_plane_pod(component, inputs)` returns the Pod as a JSON-shaped dict: the command (kubeadm's default flags
merged with extraArgs by `arguments_to_command`), image, probes, resources, volumes and env. Called by the init/join
control-plane phases through `manifests.staticpod`.
"""

from __future__ import annotations

import logging
from typing import Any

from pykubeadm import constants as c
from pykubeadm.api.images import kubernetes_image_for
from pykubeadm.manifests.args import Arg, arguments_to_command, get_arg_value, set_arg_value
from pykubeadm.manifests.inputs import ClusterInputs
from pykubeadm.manifests.pod import (
    component_pod,
    liveness_probe,
    merge_env,
    probe_address,
    readiness_probe,
    resources,
    startup_probe,
)
from pykubeadm.manifests.volumes import control_plane_mounts
from pykubeadm.util.endpoint import join_host_port, loopback_for

__all__ = [
    "AUTHORIZATION_MODES",
    "api_server_command",
    "build_control_plane_pod",
    "controller_manager_command",
    "scheduler_command",
]

log = logging.getLogger(__name__)

#: kube-apiserver authorization modes kubeadm accepts in extraArgs.
AUTHORIZATION_MODES = ("Node", "RBAC", "Webhook", "ABAC", "AlwaysAllow", "AlwaysDeny")
_DEFAULT_AUTHZ = ("Node", "RBAC")


def _p(cert_dir: str, name: str) -> str:
    return f"{cert_dir.rstrip('/')}/{name}"


def _authz_modes(requested: str | None) -> str:
    if requested:
        modes = []
        for mode in requested.split(","):
            if mode in AUTHORIZATION_MODES:
                modes.append(mode)
            else:
                log.warning("ignoring unknown kube-apiserver authorization-mode %r", mode)
        if modes:
            if tuple(modes) != _DEFAULT_AUTHZ:
                log.warning(
                    "the default kube-apiserver authorization-mode is %r; using %r",
                    ",".join(_DEFAULT_AUTHZ),
                    ",".join(modes),
                )
            return ",".join(modes)
    return ",".join(_DEFAULT_AUTHZ)


def api_server_command(inputs: ClusterInputs) -> list[str]:
    d = inputs.certificates_dir
    args = [
        Arg("advertise-address", inputs.advertise_address),
        Arg("enable-admission-plugins", "NodeRestriction"),
        Arg("service-cluster-ip-range", inputs.service_subnet),
        Arg("service-account-key-file", _p(d, c.SERVICE_ACCOUNT_PUBLIC_KEY_NAME)),
        Arg("service-account-signing-key-file", _p(d, c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME)),
        Arg("service-account-issuer", f"https://kubernetes.default.svc.{inputs.dns_domain}"),
        Arg("client-ca-file", _p(d, "ca.crt")),
        Arg("tls-cert-file", _p(d, "apiserver.crt")),
        Arg("tls-private-key-file", _p(d, "apiserver.key")),
        Arg("kubelet-client-certificate", _p(d, "apiserver-kubelet-client.crt")),
        Arg("kubelet-client-key", _p(d, "apiserver-kubelet-client.key")),
        Arg("enable-bootstrap-token-auth", "true"),
        Arg("secure-port", str(inputs.bind_port)),
        Arg("allow-privileged", "true"),
        Arg("kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname"),
        Arg("requestheader-username-headers", "X-Remote-User"),
        Arg("requestheader-group-headers", "X-Remote-Group"),
        Arg("requestheader-extra-headers-prefix", "X-Remote-Extra-"),
        Arg("requestheader-client-ca-file", _p(d, "front-proxy-ca.crt")),
        Arg("requestheader-allowed-names", c.FRONT_PROXY_CLIENT_CERT_COMMON_NAME),
        Arg("proxy-client-cert-file", _p(d, "front-proxy-client.crt")),
        Arg("proxy-client-key-file", _p(d, "front-proxy-client.key")),
    ]
    ext = inputs.external_etcd
    if ext is not None:
        args = set_arg_value(args, "etcd-servers", ",".join(ext.endpoints))
        if ext.ca_file:
            args = set_arg_value(args, "etcd-cafile", ext.ca_file)
        if ext.cert_file and ext.key_file:
            args = set_arg_value(args, "etcd-certfile", ext.cert_file)
            args = set_arg_value(args, "etcd-keyfile", ext.key_file)
    else:
        loopback = loopback_for(inputs.advertise_address)
        servers = f"https://{join_host_port(loopback, c.ETCD_LISTEN_CLIENT_PORT)}"
        args = set_arg_value(args, "etcd-servers", servers)
        args = set_arg_value(args, "etcd-cafile", _p(d, "etcd/ca.crt"))
        args = set_arg_value(args, "etcd-certfile", _p(d, "apiserver-etcd-client.crt"))
        args = set_arg_value(args, "etcd-keyfile", _p(d, "apiserver-etcd-client.key"))
        if inputs.local_etcd is not None:
            user_urls = get_arg_value(inputs.local_etcd.extra_args, "advertise-client-urls")
            if user_urls is not None:
                args = set_arg_value(args, "etcd-servers", user_urls)
    extra = inputs.api_server.extra_args
    if get_arg_value(extra, "authorization-config") is None:
        args = set_arg_value(args, "authorization-mode", _authz_modes(get_arg_value(extra, "authorization-mode")))
    return [c.KUBE_APISERVER, *arguments_to_command(args, extra)]


def controller_manager_command(inputs: ClusterInputs) -> list[str]:
    d = inputs.certificates_dir
    kubeconfig = f"{c.KUBERNETES_DIR}/{c.CONTROLLER_MANAGER_KUBECONFIG_FILE}"
    ca = _p(d, "ca.crt")
    args = [
        Arg("bind-address", "127.0.0.1"),
        Arg("leader-elect", "true"),
        Arg("kubeconfig", kubeconfig),
        Arg("authentication-kubeconfig", kubeconfig),
        Arg("authorization-kubeconfig", kubeconfig),
        Arg("client-ca-file", ca),
        Arg("requestheader-client-ca-file", _p(d, "front-proxy-ca.crt")),
        Arg("root-ca-file", ca),
        Arg("service-account-private-key-file", _p(d, c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME)),
        Arg("cluster-signing-cert-file", ca),
        Arg("cluster-signing-key-file", _p(d, "ca.key")),
        Arg("use-service-account-credentials", "true"),
        Arg("controllers", "*,bootstrapsigner,tokencleaner"),
    ]
    if inputs.external_ca:
        # Empty signing files: the csrsigning controller does not start without the CA key.
        args = set_arg_value(args, "cluster-signing-key-file", "")
        args = set_arg_value(args, "cluster-signing-cert-file", "")
    if inputs.pod_subnet:
        args = set_arg_value(args, "allocate-node-cidrs", "true")
        args = set_arg_value(args, "cluster-cidr", inputs.pod_subnet)
        if inputs.service_subnet:
            args = set_arg_value(args, "service-cluster-ip-range", inputs.service_subnet)
    if inputs.cluster_name:
        args = set_arg_value(args, "cluster-name", inputs.cluster_name)
    return [c.KUBE_CONTROLLER_MANAGER, *arguments_to_command(args, inputs.controller_manager.extra_args)]


def scheduler_command(inputs: ClusterInputs) -> list[str]:
    kubeconfig = f"{c.KUBERNETES_DIR}/{c.SCHEDULER_KUBECONFIG_FILE}"
    args = [
        Arg("bind-address", "127.0.0.1"),
        Arg("leader-elect", "true"),
        Arg("kubeconfig", kubeconfig),
        Arg("authentication-kubeconfig", kubeconfig),
        Arg("authorization-kubeconfig", kubeconfig),
    ]
    return [c.KUBE_SCHEDULER, *arguments_to_command(args, inputs.scheduler.extra_args)]


def _container(name: str, inputs: ClusterInputs, command: list[str], cpu: str) -> dict[str, Any]:
    return {
        "command": command,
        "image": kubernetes_image_for(name, inputs.image_repository, inputs.kubernetes_version),
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": resources(cpu),
    }


def build_control_plane_pod(component: str, inputs: ClusterInputs) -> dict[str, Any]:
    """The static Pod of `component` (kube-apiserver, kube-controller-manager or kube-scheduler)."""
    mounts = control_plane_mounts(inputs)[component]
    timeout = inputs.health_check_timeout
    if component == c.KUBE_APISERVER:
        host = probe_address(inputs.advertise_address)
        port = inputs.bind_port
        ctr = _container(component, inputs, api_server_command(inputs), "250m")
        ctr["livenessProbe"] = liveness_probe(host, "/livez", port, "HTTPS")
        ctr["readinessProbe"] = readiness_probe(host, "/readyz", port, "HTTPS")
        ctr["startupProbe"] = startup_probe(host, "/livez", port, "HTTPS", timeout)
        ctr["env"] = merge_env(inputs.proxy_env, inputs.api_server.extra_envs)
        endpoint = join_host_port(inputs.advertise_address, inputs.bind_port)
        return component_pod(ctr, mounts, {c.ANNOTATION_KUBE_APISERVER_ADVERTISE_ADDRESS_ENDPOINT: endpoint})
    if component == c.KUBE_CONTROLLER_MANAGER:
        host = probe_address(get_arg_value(inputs.controller_manager.extra_args, "bind-address"))
        port = c.KUBE_CONTROLLER_MANAGER_PORT
        ctr = _container(component, inputs, controller_manager_command(inputs), "200m")
        ctr["livenessProbe"] = liveness_probe(host, "/healthz", port, "HTTPS")
        ctr["startupProbe"] = startup_probe(host, "/healthz", port, "HTTPS", timeout)
        ctr["env"] = merge_env(inputs.proxy_env, inputs.controller_manager.extra_envs)
        return component_pod(ctr, mounts)
    if component == c.KUBE_SCHEDULER:
        host = probe_address(get_arg_value(inputs.scheduler.extra_args, "bind-address"))
        port = c.KUBE_SCHEDULER_PORT
        ctr = _container(component, inputs, scheduler_command(inputs), "100m")
        ctr["livenessProbe"] = liveness_probe(host, "/livez", port, "HTTPS")
        ctr["readinessProbe"] = readiness_probe(host, "/readyz", port, "HTTPS")
        ctr["startupProbe"] = startup_probe(host, "/livez", port, "HTTPS", timeout)
        ctr["env"] = merge_env(inputs.proxy_env, inputs.scheduler.extra_envs)
        return component_pod(ctr, mounts)
    raise ValueError(f"couldn't retrieve StaticPodSpec for {component!r}")
