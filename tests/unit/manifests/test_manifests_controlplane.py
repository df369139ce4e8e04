"""Control-plane static Pods against the fact sheet (§5.1–§5.5): every flag, probe, volume, label, annotation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pykubeadm.manifests import (
    Arg,
    ClusterInputs,
    ComponentExtras,
    EnvSpec,
    ExternalEtcdInputs,
    LocalEtcdInputs,
    Mount,
    build_control_plane_pod,
)
from pykubeadm.manifests.pod import proxy_env

ADV = "192.168.0.10"

#: §5.3, default config (advertise 192.168.0.10, port 6443, certDir /etc/kubernetes/pki, local etcd).
APISERVER_FLAGS = [
    "kube-apiserver",
    "--advertise-address=192.168.0.10",
    "--allow-privileged=true",
    "--authorization-mode=Node,RBAC",
    "--client-ca-file=/etc/kubernetes/pki/ca.crt",
    "--enable-admission-plugins=NodeRestriction",
    "--enable-bootstrap-token-auth=true",
    "--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt",
    "--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
    "--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key",
    "--etcd-servers=https://127.0.0.1:2379",
    "--kubelet-client-certificate=/etc/kubernetes/pki/apiserver-kubelet-client.crt",
    "--kubelet-client-key=/etc/kubernetes/pki/apiserver-kubelet-client.key",
    "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
    "--proxy-client-cert-file=/etc/kubernetes/pki/front-proxy-client.crt",
    "--proxy-client-key-file=/etc/kubernetes/pki/front-proxy-client.key",
    "--requestheader-allowed-names=front-proxy-client",
    "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-username-headers=X-Remote-User",
    "--secure-port=6443",
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    "--service-account-key-file=/etc/kubernetes/pki/sa.pub",
    "--service-account-signing-key-file=/etc/kubernetes/pki/sa.key",
    "--service-cluster-ip-range=10.96.0.0/12",
    "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
    "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
]

#: §5.4 with podSubnet 10.244.0.0/16.
KCM_FLAGS = [
    "kube-controller-manager",
    "--allocate-node-cidrs=true",
    "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--bind-address=127.0.0.1",
    "--client-ca-file=/etc/kubernetes/pki/ca.crt",
    "--cluster-cidr=10.244.0.0/16",
    "--cluster-name=kubernetes",
    "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
    "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
    "--controllers=*,bootstrapsigner,tokencleaner",
    "--kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--leader-elect=true",
    "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
    "--root-ca-file=/etc/kubernetes/pki/ca.crt",
    "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
    "--service-cluster-ip-range=10.96.0.0/12",
    "--use-service-account-credentials=true",
]

#: §5.5.
SCHEDULER_FLAGS = [
    "kube-scheduler",
    "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--bind-address=127.0.0.1",
    "--kubeconfig=/etc/kubernetes/scheduler.conf",
    "--leader-elect=true",
]


def default_inputs(**kw: object) -> ClusterInputs:
    base: dict[str, object] = {"advertise_address": ADV, "node_name": "node1"}
    base.update(kw)
    return ClusterInputs(**base)  # type: ignore[arg-type]


def container(pod: dict) -> dict:
    assert len(pod["spec"]["containers"]) == 1
    return pod["spec"]["containers"][0]


def volumes(pod: dict) -> dict[str, tuple[str, str | None]]:
    return {v["name"]: (v["hostPath"]["path"], v["hostPath"].get("type")) for v in pod["spec"]["volumes"]}


def mounts(pod: dict) -> dict[str, tuple[str, bool]]:
    return {m["name"]: (m["mountPath"], m.get("readOnly", False)) for m in container(pod)["volumeMounts"]}


# --- §5.1 skeleton ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("component", "cpu"), [("kube-apiserver", "250m"), ("kube-controller-manager", "200m"), ("kube-scheduler", "100m")]
)
def test_common_skeleton(component: str, cpu: str) -> None:
    pod = build_control_plane_pod(component, default_inputs())
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    md = pod["metadata"]
    assert md["name"] == component and md["namespace"] == "kube-system"
    assert md["labels"] == {"component": component, "tier": "control-plane"}
    spec = pod["spec"]
    assert spec["hostNetwork"] is True
    assert spec["priority"] == 2000001000
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert "dnsPolicy" not in spec
    ctr = container(pod)
    assert ctr["name"] == component
    assert ctr["image"] == f"registry.k8s.io/{component}:v1.33.0"
    assert ctr["imagePullPolicy"] == "IfNotPresent"
    assert ctr["resources"] == {"requests": {"cpu": cpu}}
    assert "env" not in ctr and "ports" not in ctr
    names = [v["name"] for v in spec["volumes"]]
    assert names == sorted(names)
    assert [m["name"] for m in ctr["volumeMounts"]] == names


def test_default_flags_exactly_as_fact_sheet() -> None:
    inputs = default_inputs()
    assert container(build_control_plane_pod("kube-apiserver", inputs))["command"] == APISERVER_FLAGS
    kcm = container(build_control_plane_pod("kube-controller-manager", default_inputs(pod_subnet="10.244.0.0/16")))
    assert kcm["command"] == KCM_FLAGS
    assert container(build_control_plane_pod("kube-scheduler", inputs))["command"] == SCHEDULER_FLAGS


def test_kcm_without_pod_subnet_has_no_cidr_flags() -> None:
    cmd = container(build_control_plane_pod("kube-controller-manager", default_inputs()))["command"]
    assert not [
        f for f in cmd if f.split("=")[0] in ("--allocate-node-cidrs", "--cluster-cidr", "--service-cluster-ip-range")
    ]
    assert [f for f in KCM_FLAGS if f not in cmd] == [
        "--allocate-node-cidrs=true",
        "--cluster-cidr=10.244.0.0/16",
        "--service-cluster-ip-range=10.96.0.0/12",
    ]
    assert not any(f.startswith("--node-cidr-mask-size") for f in cmd)


def test_external_ca_empties_signing_flags() -> None:
    cmd = container(build_control_plane_pod("kube-controller-manager", default_inputs(external_ca=True)))["command"]
    assert "--cluster-signing-cert-file=" in cmd and "--cluster-signing-key-file=" in cmd


PROBES = [
    # component, probe, host, path, port, scheme, (initialDelay, timeout, failureThreshold, period)
    ("kube-apiserver", "livenessProbe", ADV, "/livez", 6443, "HTTPS", (10, 15, 8, 10)),
    ("kube-apiserver", "readinessProbe", ADV, "/readyz", 6443, "HTTPS", (None, 15, 3, 1)),
    ("kube-apiserver", "startupProbe", ADV, "/livez", 6443, "HTTPS", (10, 15, 24, 10)),
    ("kube-controller-manager", "livenessProbe", "127.0.0.1", "/healthz", 10257, "HTTPS", (10, 15, 8, 10)),
    ("kube-controller-manager", "startupProbe", "127.0.0.1", "/healthz", 10257, "HTTPS", (10, 15, 24, 10)),
    ("kube-scheduler", "livenessProbe", "127.0.0.1", "/livez", 10259, "HTTPS", (10, 15, 8, 10)),
    ("kube-scheduler", "readinessProbe", "127.0.0.1", "/readyz", 10259, "HTTPS", (None, 15, 3, 1)),
    ("kube-scheduler", "startupProbe", "127.0.0.1", "/livez", 10259, "HTTPS", (10, 15, 24, 10)),
]


@pytest.mark.parametrize(("component", "probe", "host", "path", "port", "scheme", "timing"), PROBES)
def test_probes(component: str, probe: str, host: str, path: str, port: int, scheme: str, timing: tuple) -> None:
    p = container(build_control_plane_pod(component, default_inputs()))[probe]
    assert p["httpGet"] == {"host": host, "path": path, "port": port, "scheme": scheme}
    delay, timeout, failure, period = timing
    assert p.get("initialDelaySeconds") == delay
    assert (p["timeoutSeconds"], p["failureThreshold"], p["periodSeconds"]) == (timeout, failure, period)


def test_kcm_has_no_readiness_probe() -> None:
    assert "readinessProbe" not in container(build_control_plane_pod("kube-controller-manager", default_inputs()))


def test_startup_threshold_follows_health_check_timeout() -> None:
    pod = build_control_plane_pod(
        "kube-apiserver", default_inputs(health_check_timeout=timedelta(minutes=2, seconds=5))
    )
    assert container(pod)["startupProbe"]["failureThreshold"] == 13


def test_apiserver_annotation_and_unspecified_address_probe_host() -> None:
    pod = build_control_plane_pod("kube-apiserver", default_inputs())
    assert pod["metadata"]["annotations"] == {
        "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": "192.168.0.10:6443"
    }
    pod = build_control_plane_pod("kube-apiserver", default_inputs(advertise_address="0.0.0.0"))
    assert "host" not in container(pod)["livenessProbe"]["httpGet"]
    assert "annotations" not in build_control_plane_pod("kube-scheduler", default_inputs())["metadata"]


def test_ipv6_advertise_address() -> None:
    pod = build_control_plane_pod("kube-apiserver", default_inputs(advertise_address="fd00::10"))
    cmd = container(pod)["command"]
    assert "--etcd-servers=https://[::1]:2379" in cmd
    assert pod["metadata"]["annotations"]["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] == (
        "[fd00::10]:6443"
    )


DEFAULT_VOLUMES = {
    "kube-apiserver": {
        "ca-certs": ("/etc/ssl/certs", "DirectoryOrCreate", True),
        "k8s-certs": ("/etc/kubernetes/pki", "DirectoryOrCreate", True),
    },
    "kube-controller-manager": {
        "ca-certs": ("/etc/ssl/certs", "DirectoryOrCreate", True),
        "k8s-certs": ("/etc/kubernetes/pki", "DirectoryOrCreate", True),
        "kubeconfig": ("/etc/kubernetes/controller-manager.conf", "FileOrCreate", True),
        "flexvolume-dir": ("/usr/libexec/kubernetes/kubelet-plugins/volume/exec", "DirectoryOrCreate", False),
    },
    "kube-scheduler": {"kubeconfig": ("/etc/kubernetes/scheduler.conf", "FileOrCreate", True)},
}


@pytest.mark.parametrize("component", sorted(DEFAULT_VOLUMES))
def test_default_volumes(component: str) -> None:
    pod = build_control_plane_pod(component, default_inputs())
    want = DEFAULT_VOLUMES[component]
    assert volumes(pod) == {n: (p, t) for n, (p, t, _) in want.items()}
    assert mounts(pod) == {n: (p, ro) for n, (p, _, ro) in want.items()}


def test_optional_ca_trust_dirs_only_when_present() -> None:
    present = frozenset({"/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates"})
    inputs = default_inputs(ca_cert_dirs_present=present)
    for component in ("kube-apiserver", "kube-controller-manager"):
        vols = volumes(build_control_plane_pod(component, inputs))
        assert vols["etc-ca-certificates"] == ("/etc/ca-certificates", "DirectoryOrCreate")
        assert vols["usr-share-ca-certificates"] == ("/usr/share/ca-certificates", "DirectoryOrCreate")
        assert vols["usr-local-share-ca-certificates"] == ("/usr/local/share/ca-certificates", "DirectoryOrCreate")
        assert "etc-pki-ca-trust" not in vols
    assert "etc-ca-certificates" not in volumes(build_control_plane_pod("kube-scheduler", inputs))


# --- the variant config: external etcd, podSubnet, extraArgs, extraVolumes, extraEnvs ---------------------------


def variant_inputs() -> ClusterInputs:
    return default_inputs(
        pod_subnet="10.244.0.0/16",
        local_etcd=None,
        external_etcd=ExternalEtcdInputs(
            ("https://10.0.0.1:2379", "https://10.0.0.2:2379"),
            "/etc/etcd/pki/ca.crt",
            "/etc/etcd/pki/client/apiserver.crt",
            "/etc/kubernetes/pki/etcd-client.key",
        ),
        api_server=ComponentExtras(
            extra_args=(
                Arg("authorization-mode", "Node,RBAC,Bogus"),
                Arg("audit-log-path", "/var/log/a.log"),
                Arg("secure-port", "7443"),
            ),
            extra_volumes=(Mount("audit", "/var/log/kubernetes", "/var/log", False, "DirectoryOrCreate"),),
            extra_envs=(EnvSpec("GODEBUG", "x509sha1=1"),),
        ),
        controller_manager=ComponentExtras(
            extra_args=(
                Arg("bind-address", "0.0.0.0"),
                Arg("flex-volume-plugin-dir", "/opt/flex"),
                Arg("node-cidr-mask-size", "25"),
            ),
        ),
        scheduler=ComponentExtras(
            extra_args=(Arg("v", "4"), Arg("v", "2")),
            extra_volumes=(Mount("kubeconfig", "/srv/sched.conf", "/etc/kubernetes/scheduler.conf", True, ""),),
        ),
        proxy_env=(EnvSpec("HTTPS_PROXY", "http://proxy:3128"), EnvSpec("GODEBUG", "overridden")),
    )


def test_variant_apiserver() -> None:
    pod = build_control_plane_pod("kube-apiserver", variant_inputs())
    cmd = container(pod)["command"]
    assert cmd[0] == "kube-apiserver" and cmd[1:] == sorted(cmd[1:])
    assert "--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379" in cmd
    assert "--etcd-cafile=/etc/etcd/pki/ca.crt" in cmd
    assert "--etcd-certfile=/etc/etcd/pki/client/apiserver.crt" in cmd
    assert "--etcd-keyfile=/etc/kubernetes/pki/etcd-client.key" in cmd
    # user args replace defaults of the same name; the authorization mode is filtered by kubeadm's rules only when
    # kubeadm builds it, the user's raw value wins in ArgumentsToCommand
    assert "--authorization-mode=Node,RBAC,Bogus" in cmd and "--authorization-mode=Node,RBAC" not in cmd
    assert "--secure-port=7443" in cmd and "--secure-port=6443" not in cmd
    assert "--audit-log-path=/var/log/a.log" in cmd
    vols = volumes(pod)
    # /etc/etcd/pki covers /etc/etcd/pki/client; the key is under the certificates dir (already mounted)
    assert vols["etcd-certs-0"] == ("/etc/etcd/pki", "DirectoryOrCreate")
    assert "etcd-certs-1" not in vols
    assert mounts(pod)["etcd-certs-0"] == ("/etc/etcd/pki", True)
    assert vols["audit"] == ("/var/log/kubernetes", "DirectoryOrCreate")
    assert mounts(pod)["audit"] == ("/var/log", False)
    # proxy env from kubeadm's environment, overridden by extraEnvs, sorted by name
    assert container(pod)["env"] == [
        {"name": "GODEBUG", "value": "x509sha1=1"},
        {"name": "HTTPS_PROXY", "value": "http://proxy:3128"},
    ]


def test_variant_kcm_and_scheduler() -> None:
    inputs = variant_inputs()
    kcm = build_control_plane_pod("kube-controller-manager", inputs)
    cmd = container(kcm)["command"]
    assert "--bind-address=0.0.0.0" in cmd and "--bind-address=127.0.0.1" not in cmd
    assert "--cluster-cidr=10.244.0.0/16" in cmd and "--node-cidr-mask-size=25" in cmd
    assert "host" not in container(kcm)["livenessProbe"]["httpGet"]  # 0.0.0.0 → probe the Pod IP
    assert volumes(kcm)["flexvolume-dir"] == ("/opt/flex", "DirectoryOrCreate")
    assert container(kcm)["env"] == [
        {"name": "GODEBUG", "value": "overridden"},
        {"name": "HTTPS_PROXY", "value": "http://proxy:3128"},
    ]
    sched = build_control_plane_pod("kube-scheduler", inputs)
    cmd = container(sched)["command"]
    assert cmd[-2:] == ["--v=2", "--v=4"]  # duplicates kept, sorted by value
    # a user volume with a default's name replaces it; an empty pathType is written as ""
    assert volumes(sched) == {"kubeconfig": ("/srv/sched.conf", "")}


def test_authorization_config_drops_authorization_mode() -> None:
    inputs = default_inputs(api_server=ComponentExtras(extra_args=(Arg("authorization-config", "/etc/authz.yaml"),)))
    cmd = container(build_control_plane_pod("kube-apiserver", inputs))["command"]
    assert not any(f.startswith("--authorization-mode") for f in cmd)


def test_local_etcd_advertise_client_urls_become_etcd_servers() -> None:
    inputs = default_inputs(
        local_etcd=LocalEtcdInputs(extra_args=(Arg("advertise-client-urls", "https://10.1.1.1:2379"),))
    )
    cmd = container(build_control_plane_pod("kube-apiserver", inputs))["command"]
    assert "--etcd-servers=https://10.1.1.1:2379" in cmd


def test_proxy_env_selects_proxy_variables() -> None:
    envs = proxy_env({"HTTP_PROXY": "http://p", "no_proxy": "10.0.0.0/8", "EMPTY_PROXY": "", "PATH": "/bin"})
    assert sorted(e.name for e in envs) == ["HTTP_PROXY", "no_proxy"]
