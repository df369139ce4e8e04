"""kubeadm's preflight checks (§11.2) against a FakeHost and real files/sockets under tmp_path."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pykubeadm.layout import Layout
from pykubeadm.preflight import FakeHost, InitCheckParams, RealHost, init_node_checks
from pykubeadm.preflight.checks import (
    ContainerRuntimeCheck,
    DirAvailableCheck,
    FileAvailableCheck,
    FileContentCheck,
    FirewalldCheck,
    HostnameCheck,
    HTTPProxyCheck,
    HTTPProxyCIDRCheck,
    InPathCheck,
    IsPrivilegedUserCheck,
    KubeletVersionCheck,
    KubernetesVersionCheck,
    MemCheck,
    NumCPUCheck,
    PortOpenCheck,
    ServiceCheck,
    SwapCheck,
    SystemVerificationCheck,
)


@pytest.mark.parametrize(
    ("check", "name", "result"),
    [
        (IsPrivilegedUserCheck(FakeHost(uid=1000)), "IsPrivilegedUser", ([], ["user is not running as root"])),
        (IsPrivilegedUserCheck(FakeHost(uid=0)), "IsPrivilegedUser", ([], [])),
        (
            NumCPUCheck(FakeHost(cpus=1), 2),
            "NumCPU",
            ([], ["the number of available CPUs 1 is less than the required 2"]),
        ),
        (
            MemCheck(FakeHost(mem_mb=1000), 1700),
            "Mem",
            ([], ["the system RAM (1000 MB) is less than the minimum 1700 MB"]),
        ),
        (
            KubernetesVersionCheck("v1.33.0", "v1.34.0-alpha.1"),
            "KubernetesVersion",
            (
                [
                    "Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. Kubernetes "
                    "version: 1.34.0-alpha.1. Kubeadm version: 1.33.x"
                ],
                [],
            ),
        ),
        (KubernetesVersionCheck("v1.33.0", "v1.33.9"), "KubernetesVersion", ([], [])),
        (
            PortOpenCheck(FakeHost(busy_ports={("127.0.10.1", 6443)}), 6443, "127.0.10.1"),
            "Port-6443",
            ([], ["Port 6443 is in use"]),
        ),
        (PortOpenCheck(FakeHost(busy_ports={("127.0.10.1", 6443)}), 6443, "127.0.10.2"), "Port-6443", ([], [])),
        (
            FileContentCheck(
                FakeHost(files={"/proc/sys/net/ipv4/ip_forward": "0\n"}), "/proc/sys/net/ipv4/ip_forward", "1"
            ),
            "FileContent--proc-sys-net-ipv4-ip_forward",
            ([], ["/proc/sys/net/ipv4/ip_forward contents are not set to 1"]),
        ),
        (
            FileContentCheck(
                FakeHost(files={"/proc/sys/net/ipv4/ip_forward": "1\n"}), "/proc/sys/net/ipv4/ip_forward", "1"
            ),
            "FileContent--proc-sys-net-ipv4-ip_forward",
            ([], []),
        ),
        (
            InPathCheck(FakeHost(executables=set()), "nsenter", True),
            "FileExisting-nsenter",
            ([], ["nsenter not found in system path"]),
        ),
        (
            InPathCheck(FakeHost(executables=set()), "socat", False),
            "FileExisting-socat",
            (["socat not found in system path"], []),
        ),
        (
            SwapCheck(FakeHost(files={"/proc/swaps": "Filename Type\n/swap file 100 0 -2\n"})),
            "Swap",
            (
                [
                    "swap is supported for cgroup v2 only. The kubelet must be properly configured to use swap. Please refer "
                    "to https://kubernetes.io/docs/concepts/architecture/nodes/#swap-memory, or disable swap on the node"
                ],
                [],
            ),
        ),
        (SwapCheck(FakeHost(files={"/proc/swaps": "Filename Type\n"})), "Swap", ([], [])),
        (
            HostnameCheck(FakeHost(), "node1"),
            "Hostname",
            (['hostname "node1" could not be reached', 'hostname "node1": lookup node1: no such host'], []),
        ),
        (HostnameCheck(FakeHost(hosts={"node1": ["127.0.10.1"]}), "node1"), "Hostname", ([], [])),
        (
            ServiceCheck(FakeHost(init="systemd", services={"kubelet": (False, False)}), "kubelet"),
            "Service-Kubelet",
            (["kubelet service is not enabled, please run 'systemctl enable kubelet.service'"], []),
        ),
        (
            ServiceCheck(FakeHost(init="systemd"), "kubelet"),
            "Service-Kubelet",
            (["kubelet service does not exist"], []),
        ),
        (
            FirewalldCheck(FakeHost(init="systemd", services={"firewalld": (True, True)}), (6443, 10250)),
            "Firewalld",
            (
                [
                    "firewalld is active, please ensure ports [6443 10250] are open or your cluster may not function "
                    "correctly"
                ],
                [],
            ),
        ),
        (
            ContainerRuntimeCheck(FakeHost(), "unix:///run/x.sock"),
            "CRI",
            (
                [],
                [
                    "container runtime is not running: rpc error: code = Unavailable desc = failed to connect to all "
                    "addresses; last error: FAILED_PRECONDITION: unix:/run/x.sock: connect failed: addr: "
                    "unix:/run/x.sock error: No such file or directory"
                ],
            ),
        ),
        (ContainerRuntimeCheck(FakeHost(cri_endpoints={"unix:///run/x.sock"}), "unix:///run/x.sock"), "CRI", ([], [])),
        (
            KubeletVersionCheck(FakeHost(commands={"kubelet": (0, "Kubernetes v1.29.0\n")}), "v1.33.0"),
            "KubeletVersion",
            ([], ['Kubelet version "1.29.0" is lower than kubeadm can support. Please upgrade kubelet']),
        ),
        (
            KubeletVersionCheck(FakeHost(commands={"kubelet": (0, "Kubernetes v1.33.1\n")}), "v1.33.0"),
            "KubeletVersion",
            ([], []),
        ),
        (
            SystemVerificationCheck(FakeHost(files={"/sys/fs/cgroup/cgroup.controllers": "cpu memory"})),
            "SystemVerification",
            ([], ["missing required cgroups: cpuset pids"]),
        ),
        (
            SystemVerificationCheck(FakeHost(files={"/proc/cgroups": "#subsys_name"})),
            "SystemVerification",
            (["cgroups v1 support is in maintenance mode, please migrate to cgroups v2"], []),
        ),
    ],
)
def test_catalogue(check: object, name: str, result: tuple) -> None:
    assert check.name() == name  # type: ignore[attr-defined]
    assert check.check() == result  # type: ignore[attr-defined]


def test_hostname_format_is_an_error() -> None:
    warnings, errors = HostnameCheck(FakeHost(hosts={"Node_1": ["1.2.3.4"]}), "Node_1").check()
    assert warnings == [] and errors[0].startswith('invalid node name format "Node_1"')


def test_http_proxy_checks() -> None:
    env = {"HTTPS_PROXY": "proxy.corp:3128", "NO_PROXY": "10.96.0.0/12,.cluster.local"}
    host = FakeHost(env=env)
    assert HTTPProxyCheck(host, "192.168.0.10").check() == (
        [
            'Connection to "https://192.168.0.10" uses proxy "http://proxy.corp:3128". If that is not intended, adjust '
            "your proxy settings"
        ],
        [],
    )
    assert HTTPProxyCheck(host, "127.0.10.1").check() == ([], [])  # loopback never goes through a proxy
    assert HTTPProxyCIDRCheck(host, "10.96.0.0/12").check() == ([], [])
    w, _ = HTTPProxyCIDRCheck(host, "10.244.0.0/16").check()
    assert w == [
        'connection to "10.244.0.0/16" uses proxy "http://proxy.corp:3128". This may lead to malfunctional '
        "cluster setup. Make sure that Pod and Services IP ranges specified correctly as exceptions in proxy "
        "configuration"
    ]
    assert HTTPProxyCheck(FakeHost(), "192.168.0.10").check() == ([], [])


def test_files_and_dirs_under_root(tmp_path: Path) -> None:
    node = "/etc/kubernetes/manifests/kube-apiserver.yaml"
    host_path = tmp_path / node.lstrip("/")
    check = FileAvailableCheck(node, host_path)
    assert check.name() == "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml"
    assert check.check() == ([], [])
    host_path.parent.mkdir(parents=True)
    host_path.write_text("x")
    assert check.check() == ([], [f"{node} already exists"])
    d = DirAvailableCheck("/var/lib/etcd", tmp_path / "var/lib/etcd")
    assert d.name() == "DirAvailable--var-lib-etcd"
    assert d.check() == ([], [])
    (tmp_path / "var/lib/etcd").mkdir(parents=True)
    assert d.check() == ([], [])
    (tmp_path / "var/lib/etcd/member").mkdir()
    assert d.check() == ([], ["/var/lib/etcd is not empty"])


def test_real_port_check_on_loopback() -> None:
    host = RealHost()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert host.port_in_use("127.0.0.1", port)
        assert PortOpenCheck(host, port, "127.0.0.1").check() == ([], [f"Port {port} is in use"])
    assert not host.port_in_use("127.0.0.1", port)


NAMES_HOST_MODE = [
    "NumCPU",
    "Mem",
    "KubernetesVersion",
    "Firewalld",
    "Port-6443",
    "Port-10259",
    "Port-10257",
    "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
    "FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
    "FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml",
    "FileAvailable--etc-kubernetes-manifests-etcd.yaml",
    "HTTPProxy",
    "HTTPProxyCIDR",
    "HTTPProxyCIDR",
    "CRI",
    "Swap",
    "FileExisting-ip",
    "FileExisting-iptables",
    "FileExisting-mount",
    "FileExisting-nsenter",
    "FileExisting-ebtables",
    "FileExisting-ethtool",
    "FileExisting-socat",
    "FileExisting-tc",
    "FileExisting-touch",
    "SystemVerification",
    "Hostname",
    "KubeletVersion",
    "Service-Kubelet",
    "Port-10250",
    "FileContent--proc-sys-net-ipv4-ip_forward",
    "Port-2379",
    "Port-2380",
    "DirAvailable--var-lib-etcd",
]


def test_init_check_list_host_and_builtin_mode(tmp_path: Path) -> None:
    params = InitCheckParams(
        layout=Layout(root=tmp_path), advertise_address="192.168.0.10", node_name="node1", pod_subnet="10.244.0.0/16"
    )
    assert [c.name() for c in init_node_checks(FakeHost(), params)] == NAMES_HOST_MODE
    builtin = InitCheckParams(
        layout=Layout(root=tmp_path), advertise_address="127.0.10.1", node_name="node1", host_runtime=False
    )
    names = [c.name() for c in init_node_checks(FakeHost(), builtin)]
    assert names == [
        "NumCPU",
        "Mem",
        "KubernetesVersion",
        "Port-6443",
        "Port-10259",
        "Port-10257",
        "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
        "FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
        "FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml",
        "FileAvailable--etc-kubernetes-manifests-etcd.yaml",
        "HTTPProxy",
        "HTTPProxyCIDR",
        "Swap",
        "Hostname",
        "KubeletVersion",
        "Port-10250",
        "Port-2379",
        "Port-2380",
        "DirAvailable--var-lib-etcd",
    ]
    ext = InitCheckParams(
        layout=Layout(root=tmp_path),
        advertise_address="fd00::1",
        node_name="node1",
        service_subnet="fd00:10::/108",
        etcd_data_dir=None,
        external_etcd_files=("/etc/e/ca.crt", "/etc/e/c.crt", "/etc/e/c.key"),
    )
    names = [c.name() for c in init_node_checks(FakeHost(), ext)]
    assert "FileContent--proc-sys-net-ipv6-conf-default-forwarding" in names
    assert "FileContent--proc-sys-net-ipv4-ip_forward" not in names
    assert names[-3:] == ["ExternalEtcdClientCertificates"] * 3
    assert "Port-2379" not in names


def test_builtin_mode_asks_a_runtime_of_the_nodes_own_through_cri(tmp_path: Path) -> None:
    """A lab node's containerd (its socket under the node root) gets kubeadm's CRI check and its [ERROR CRI]; a
    built-in node with kubeadm's default socket does not."""
    socket = f"unix://{tmp_path}/run/containerd/containerd.sock"
    params = InitCheckParams(
        layout=Layout(root=tmp_path),
        advertise_address="127.0.10.1",
        node_name="n",
        host_runtime=False,
        cri_socket=socket,
    )
    checks = [ch for ch in init_node_checks(FakeHost(), params) if ch.name() == "CRI"]
    assert len(checks) == 1
    assert checks[0].check()[1][0].startswith("container runtime is not running: rpc error: code = Unavailable")
    running = [ch for ch in init_node_checks(FakeHost(cri_endpoints={socket}), params) if ch.name() == "CRI"]
    assert running[0].check() == ([], [])
    default = InitCheckParams(
        layout=Layout(root=tmp_path), advertise_address="127.0.10.1", node_name="n", host_runtime=False
    )
    assert "CRI" not in [ch.name() for ch in init_node_checks(FakeHost(), default)]
