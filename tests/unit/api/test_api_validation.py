"""Validation: kubeadm's field paths and messages, every problem reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubeadm.api import load_init_config, load_join_config, load_reset_config, v1beta4
from pykubeadm.api.validation import (
    mixed_arguments_error,
    validate_cluster,
    validate_init,
    validate_join,
    validate_reset,
)
from pykubeadm.errors import ValidationError

DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _init(**kw: object) -> v1beta4.InitConfiguration:
    init = v1beta4.InitConfiguration(**kw)  # type: ignore[arg-type]
    init.node_registration.name = init.node_registration.name or "node1"
    init.node_registration.cri_socket = init.node_registration.cri_socket or "unix:///run/containerd/containerd.sock"
    init.local_api_endpoint.advertise_address = init.local_api_endpoint.advertise_address or "10.0.0.1"
    init.bootstrap_tokens[0].token = init.bootstrap_tokens[0].token or "abcdef.0123456789abcdef"
    return init


def _msgs(init: v1beta4.InitConfiguration, cluster: v1beta4.ClusterConfiguration) -> list[str]:
    return [str(e) for e in validate_init(init, cluster)]


def test_valid_default_config_has_no_errors() -> None:
    assert _msgs(_init(), v1beta4.ClusterConfiguration()) == []


@pytest.mark.parametrize(
    ("networking", "expected"),
    [
        ({"pod_subnet": "10.0.0.0/33"}, 'networking.podSubnet: Invalid value: "10.0.0.0/33": couldn\'t parse subnet'),
        (
            {"pod_subnet": "10.0.0.0/29"},
            'networking.podSubnet: Invalid value: "10.0.0.0/29": subnet with 8 address(es) is too small, the minimum is 14',
        ),
        (
            {"pod_subnet": "10.0.0.0/6"},
            'networking.podSubnet: Invalid value: "8.0.0.0/6": pod subnet mask (6) and node-mask (24) difference is greater than 16',
        ),
        (
            {"pod_subnet": "10.0.0.0/26"},
            'networking.podSubnet: Invalid value: "10.0.0.0/26": the size of pod subnet with mask 26 is smaller than the size of node subnet with mask 24',
        ),
        (
            {"service_subnet": "10.96.0.0/8"},
            'networking.serviceSubnet: Invalid value: "10.0.0.0/8": specified service subnet is too large; for 32-bit addresses, the mask must be >= 12',
        ),
        (
            {"service_subnet": "10.96.0.0/29"},
            'networking.serviceSubnet: Invalid value: "10.96.0.0/29": subnet with 8 address(es) is too small, the minimum is 10',
        ),
        (
            {"service_subnet": "fd00::/64"},
            'networking.serviceSubnet: Invalid value: "fd00::/64": specified service subnet is too large; for 128-bit addresses, the mask must be >= 108',
        ),
        (
            {"service_subnet": "10.96.0.0/12,10.97.0.0/16"},
            'networking.serviceSubnet: Invalid value: "10.96.0.0/12,10.97.0.0/16": expected one (IPv4 or IPv6) CIDR or two CIDRs from each family for dual-stack networking',
        ),
        ({"dns_domain": "Cluster_Local"}, f'networking.dnsDomain: Invalid value: "Cluster_Local": {DNS_MSG}'),
    ],
)
def test_networking(networking: dict[str, str], expected: str) -> None:
    cluster = v1beta4.ClusterConfiguration(networking=v1beta4.Networking(**networking))
    assert expected in _msgs(_init(), cluster)


def test_dual_stack_is_accepted() -> None:
    cluster = v1beta4.ClusterConfiguration(
        networking=v1beta4.Networking(service_subnet="10.96.0.0/16,fd00::/112", pod_subnet="10.244.0.0/16,fd01::/48")
    )
    assert _msgs(_init(), cluster) == []


def test_node_mask_from_controller_manager_extra_args() -> None:
    cluster = v1beta4.ClusterConfiguration(
        networking=v1beta4.Networking(pod_subnet="10.0.0.0/26"),
        controller_manager=v1beta4.ControlPlaneComponent(
            extra_args=[v1beta4.Arg(name="node-cidr-mask-size-ipv4", value="28")]
        ),
    )
    assert _msgs(_init(), cluster) == []


def test_all_problems_are_reported_together() -> None:
    init = _init(
        local_api_endpoint=v1beta4.APIEndpoint(advertise_address="not-an-ip", bind_port=70000),
        certificate_key="abc",
    )
    init.bootstrap_tokens[0].token = "abcdef.0123"
    init.bootstrap_tokens[0].usages = ["signing", "bogus"]
    init.node_registration.cri_socket = "tcp://1.2.3.4:5"
    init.node_registration.image_pull_policy = "Sometimes"
    cluster = v1beta4.ClusterConfiguration(
        encryption_algorithm="RSA-1024",
        control_plane_endpoint="lb_bad:99999",
        api_server=v1beta4.APIServer(
            cert_sans=["ok.example.com", "*.wild.example.com", "10.0.0.9", "bad_san"],
            extra_args=[v1beta4.Arg(value="x")],
        ),
        feature_gates={"NoSuchGate": True},
        certificates_dir="relative/pki",
        image_repository="Bad Repo",
    )
    msgs = _msgs(init, cluster)
    expected = [
        'nodeRegistration.criSocket: Invalid value: "tcp://1.2.3.4:5": only URL scheme "unix" is supported, got "tcp"',
        'nodeRegistration.imagePullPolicy: Invalid value: "Sometimes": invalid pull policy',
        'bootstrapTokens[0].token: Invalid value: "abcdef.0123": the bootstrap token is invalid',
        'bootstrapTokens[0].usages: Invalid value: []string{"signing", "bogus"}: invalid bootstrap token usage string: bogus, valid usage options: signing,authentication',
        'apiServer.extraArgs: Invalid value: "index 0": argument has no name',
        'certificatesDir: Invalid value: "relative/pki": path is not absolute',
        'featureGates: Invalid value: map[string]bool{"NoSuchGate":true}: NoSuchGate is not a valid feature name.',
        'controlPlaneEndpoint: Invalid value: "lb_bad:99999": endpoint is not valid',
        'imageRepository: Invalid value: "Bad Repo": invalid image repository format',
        'encryptionAlgorithm: Invalid value: "RSA-1024": Invalid encryption algorithm "RSA-1024". Must be one of [ECDSA-P256 ECDSA-P384 RSA-2048 RSA-3072 RSA-4096]',
        'localAPIEndpoint.advertiseAddress: Invalid value: "not-an-ip": ip address is not valid',
        "localAPIEndpoint.bindPort: Invalid value: 70000: port number is not valid",
        'certificateKey: Invalid value: "abc": certificate key decoding error: encoding/hex: odd length hex string',
    ]
    for e in expected:
        assert e in msgs, e
    san_errors = [m for m in msgs if m.startswith("apiServer.certSANs")]
    assert (
        len(san_errors) == 1
        and '"bad_san": altname is not a valid IP address, DNS label or a DNS label with subdomain wildcards'
        in san_errors[0]
    )
    # the order follows kubeadm's ValidateInitConfiguration
    assert msgs.index(expected[0]) < msgs.index(expected[2]) < msgs.index(expected[4]) < msgs.index(expected[10])


def test_bootstrap_token_groups_and_expiry() -> None:
    init = _init()
    bt = init.bootstrap_tokens[0]
    bt.usages = ["signing"]
    bt.groups = ["system:bootstrappers:ok", "nope"]
    msgs = _msgs(init, v1beta4.ClusterConfiguration())
    assert any('token groups cannot be specified unless --usages includes "authentication"' in m for m in msgs)
    assert any(
        r'bootstrap group "nope" is invalid (must match \Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z)' in m
        for m in msgs
    )
    token = v1beta4.BootstrapToken.from_obj({"token": "abcdef.0123456789abcdef", "expires": "2030-01-01T00:00:00Z"})
    assert token.ttl is None  # no TTL default when expires is set
    token.ttl = token.expires - token.expires  # type: ignore[operator]
    init.bootstrap_tokens = [token]
    assert (
        'bootstrapTokens[0]: Invalid value: "": the BootstrapToken .TTL and .Expires fields are mutually exclusive'
        in _msgs(init, v1beta4.ClusterConfiguration())
    )


def test_certificate_key_size() -> None:
    msgs = _msgs(_init(certificate_key="00" * 16), v1beta4.ClusterConfiguration())
    assert msgs == [
        'certificateKey: Invalid value: "'
        + "00" * 16
        + '": invalid certificate key size 16, the key must be an AES key of size 32'
    ]
    assert _msgs(_init(certificate_key="ab" * 32), v1beta4.ClusterConfiguration()) == []


def test_etcd_rules() -> None:
    both = v1beta4.ClusterConfiguration(
        etcd=v1beta4.Etcd(local=v1beta4.LocalEtcd(), external=v1beta4.ExternalEtcd(endpoints=["https://e:2379"]))
    )
    assert [str(e) for e in validate_cluster(both)] == [
        'etcd: Invalid value: "": .Etcd.Local and .Etcd.External are mutually exclusive'
    ]
    ext = v1beta4.ClusterConfiguration(
        etcd=v1beta4.Etcd(external=v1beta4.ExternalEtcd(endpoints=["http://e:2379", "e2:2379"], cert_file="c.crt"))
    )
    msgs = [str(e) for e in validate_cluster(ext)]
    assert (
        'etcd.external: Invalid value: "": either both or none of .Etcd.External.CertFile and .Etcd.External.KeyFile must be set'
        in msgs
    )
    assert 'etcd.external.endpoints: Invalid value: "http://e:2379": the URL must be using the HTTPS scheme' in msgs
    assert 'etcd.external.certFile: Invalid value: "c.crt": path is not absolute' in msgs
    local = v1beta4.ClusterConfiguration(
        etcd=v1beta4.Etcd(local=v1beta4.LocalEtcd(data_dir="data", server_cert_sans=["bad_one"]))
    )
    msgs = [str(e) for e in validate_cluster(local)]
    assert 'etcd.local.dataDir: Invalid value: "data": path is not absolute' in msgs
    assert any(m.startswith('etcd.local.serverCertSANs: Invalid value: "bad_one"') for m in msgs)


def test_join_validation() -> None:
    join = v1beta4.JoinConfiguration.from_obj(
        {
            "discovery": {"bootstrapToken": {"token": "abcdef.0123456789abcdef", "apiServerEndpoint": "10.0.0.1"}},
            "caCertPath": "ca.pem",
        }
    )
    join.node_registration.name = "n1"
    join.node_registration.cri_socket = "unix:///x.sock"
    msgs = [str(e) for e in validate_join(join)]
    assert msgs == [
        'discovery.bootstrapToken.caCertHashes: Invalid value: "": using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue',
        'discovery.bootstrapToken.apiServerEndpoint: Invalid value: "10.0.0.1": address 10.0.0.1: missing port in address',
        'caCertPath: Invalid value: "ca.pem": the ca certificate path must be an absolute path',
    ]
    empty = v1beta4.JoinConfiguration()
    empty.node_registration.name, empty.node_registration.cri_socket = "n1", "unix:///x.sock"
    assert [str(e) for e in validate_join(empty)] == [
        'discovery: Invalid value: "": bootstrapToken or file must be set'
    ]
    f = v1beta4.JoinConfiguration.from_obj({"discovery": {"file": {"kubeConfigPath": "http://x/y"}}})
    f.node_registration.name, f.node_registration.cri_socket = "n1", "unix:///x.sock"
    assert [str(e) for e in validate_join(f)] == [
        'discovery.file.kubeConfigPath: Invalid value: "http://x/y": if a URL is used, the scheme must be https'
    ]


def test_reset_validation() -> None:
    reset = v1beta4.ResetConfiguration(
        cri_socket="unix:///x.sock", unmount_flags=["MNT_FORCE", "MNT_BOGUS"], certificates_dir="pki"
    )
    assert [str(e) for e in validate_reset(reset)] == [
        'certificatesDir: Invalid value: "pki": path is not absolute',
        'unmountFlags: Invalid value: "index 1": unknown unmount flag MNT_BOGUS',
    ]


def test_mixing_rule() -> None:
    assert (
        mixed_arguments_error(["config", "pod-network-cidr", "token"])
        == "can not mix '--config' with arguments [pod-network-cidr token]"
    )
    assert (
        mixed_arguments_error(
            [
                "config",
                "skip-phases",
                "dry-run",
                "node-name",
                "ignore-preflight-errors",
                "upload-certs",
                "skip-token-print",
            ]
        )
        is None
    )
    assert mixed_arguments_error(["pod-network-cidr"]) is None  # only checked when --config is set
    assert (
        mixed_arguments_error(["config", "certificate-key"])
        == "can not mix '--config' with arguments [certificate-key]"
    )


def test_loaders_raise_validation_error_with_exit_code_3(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.0.0.0/33\n"
    )
    with pytest.raises(ValidationError) as e:
        load_init_config(cfg, dynamic=False)
    assert e.value.exit_code == 3
    assert str(e.value) == 'networking.podSubnet: Invalid value: "10.0.0.0/33": couldn\'t parse subnet'
    with pytest.raises(ValidationError, match="can not mix '--config' with arguments \\[pod-network-cidr\\]"):
        load_init_config(cfg, {"pod-network-cidr": "10.244.0.0/16"})
    with pytest.raises(ValidationError, match="unknown unmount flag"):
        load_reset_config(
            _write(
                tmp_path,
                "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfiguration\ncriSocket: unix:///x.sock\nunmountFlags: [X]\n",
            )
        )
    with pytest.raises(ValidationError, match="bootstrapToken or file must be set"):
        load_join_config(None, {"node-name": "n1", "cri-socket": "unix:///x.sock"})


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.yaml"
    p.write_text(text)
    return p
