"""kube-apiserver flags: kubeadm's full flag set parses, unknown flags and bad values are startup errors."""

import pytest
from click.testing import CliRunner

from pykubeadm.apiserver.cli import command
from pykubeadm.apiserver.options import options_from_flags
from pykubeadm.errors import ValidationError

KUBEADM_FLAGS = [  # reference/kubeadm-facts.md §5.3, in kubeadm's order
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


def _parse(args, root):
    captured = {}

    def fake_run(**flags):
        captured.update(flags)

    import click

    cmd = click.Command("x", params=command.params, callback=fake_run)
    res = CliRunner().invoke(cmd, args, catch_exceptions=False)
    return res, captured


def test_kubeadm_flag_set_maps_under_the_node_root(tmp_path):
    for f in ("ca.crt", "front-proxy-ca.crt", "apiserver.crt", "apiserver.key"):
        (tmp_path / "etc/kubernetes/pki").mkdir(parents=True, exist_ok=True)
        (tmp_path / "etc/kubernetes/pki" / f).write_text("x")
    res, flags = _parse(KUBEADM_FLAGS, tmp_path)
    assert res.exit_code == 0, res.output
    o = options_from_flags(flags, tmp_path)
    assert o.secure_port == 6443 and o.advertise_address == "192.168.0.10"
    assert o.client_ca_file == tmp_path / "etc/kubernetes/pki/ca.crt"
    assert o.etcd_servers == "https://127.0.0.1:2379" and o.authorization_mode == ["Node", "RBAC"]
    assert o.enable_bootstrap_token_auth and o.allow_privileged
    assert o.raw_flags["client-ca-file"] == "/etc/kubernetes/pki/ca.crt"  # node paths for the auth builder
    assert o.host_path("/etc/kubernetes/pki/sa.pub") == tmp_path / "etc/kubernetes/pki/sa.pub"
    assert o.audit_log_path == ""  # as kube-apiserver's: kubeadm's flags enable no audit log


def test_audit_log_path_stdout_or_a_file_under_the_node_root(tmp_path):
    assert options_from_flags({"audit_log_path": "-"}, tmp_path).audit_log_path == "-"
    got = options_from_flags({"audit_log_path": "/var/log/kubernetes/audit.log"}, tmp_path).audit_log_path
    assert got == str(tmp_path / "var/log/kubernetes/audit.log")


def test_unknown_flag_is_a_startup_error_naming_it():
    res = CliRunner().invoke(command, ["--secure-port=1", "--no-such-kube-apiserver-flag=true"])
    assert res.exit_code != 0 and "--no-such-kube-apiserver-flag" in res.output


def test_bad_values_name_the_flag(tmp_path):
    with pytest.raises(ValidationError, match="--advertise-address"):
        options_from_flags({"advertise_address": "not-an-ip"}, tmp_path)
    with pytest.raises(ValidationError, match="--authorization-mode"):
        options_from_flags({"authorization_mode": "Node,ABAC"}, tmp_path)
    with pytest.raises(ValidationError, match="--service-cluster-ip-range"):
        options_from_flags({"service_cluster_ip_range": "10.96.0.0/99"}, tmp_path)
    with pytest.raises(ValidationError, match=r"ca\.crt"):
        options_from_flags({"client_ca_file": "/missing/ca.crt"}, tmp_path)


def test_version_from_hidden_flag_or_env(tmp_path, monkeypatch):
    assert options_from_flags({}, tmp_path).version == "v1.33.0"
    monkeypatch.setenv("PYKUBEADM_COMPONENT_VERSION", "v1.32.4")
    assert options_from_flags({}, tmp_path).version == "v1.32.4"
    assert options_from_flags({"kubernetes_version": "1.31.2"}, tmp_path).version == "v1.31.2"
