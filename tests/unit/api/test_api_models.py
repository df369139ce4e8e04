"""v1beta4 models: aliases, static defaults, Go durations, omitempty output, strict decoding."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pykubeadm.api import v1beta4
from pykubeadm.api._base import format_duration, parse_duration
from pykubeadm.api.yamlio import decode, dump_yaml, split_documents
from pykubeadm.errors import ValidationError


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("24h0m0s", timedelta(hours=24)),
        ("4m0s", timedelta(minutes=4)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        ("300ms", timedelta(milliseconds=300)),
        ("0", timedelta(0)),
        ("-2m", timedelta(minutes=-2)),
        ("1h30m15s", timedelta(hours=1, minutes=30, seconds=15)),
    ],
)
def test_parse_go_duration(text: str, delta: timedelta) -> None:
    assert parse_duration(text) == delta


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(hours=24), "24h0m0s"),
        (timedelta(hours=8760), "8760h0m0s"),
        (timedelta(minutes=4), "4m0s"),
        (timedelta(seconds=1.5), "1.5s"),
        (timedelta(milliseconds=300), "300ms"),
        (timedelta(0), "0s"),
        (timedelta(minutes=-1), "-1m0s"),
    ],
)
def test_format_go_duration(delta: timedelta, text: str) -> None:
    assert format_duration(delta) == text


@pytest.mark.parametrize("bad", ["", "abc", "10", "1x", "h"])
def test_bad_duration(bad: str) -> None:
    with pytest.raises(ValueError, match="time: "):
        parse_duration(bad)


def test_snake_case_attributes_and_camel_aliases() -> None:
    cc = v1beta4.ClusterConfiguration.from_obj(
        {
            "apiServer": {"certSANs": ["a.example.com"], "extraArgs": [{"name": "v", "value": "2"}]},
            "networking": {"podSubnet": "10.244.0.0/16"},
            "etcd": {"external": {"endpoints": ["https://e:2379"], "caFile": "/ca", "certFile": "/c", "keyFile": "/k"}},
            "certificateValidityPeriod": "48h",
        }
    )
    assert cc.api_server.cert_sans == ["a.example.com"]
    assert cc.api_server.extra_args == [v1beta4.Arg(name="v", value="2")]
    assert cc.networking.pod_subnet == "10.244.0.0/16"
    assert cc.etcd.external is not None and cc.etcd.external.endpoints == ["https://e:2379"]
    assert cc.etcd.local is None  # not defaulted when external is given
    assert cc.certificate_validity_period == timedelta(hours=48)
    init = v1beta4.InitConfiguration.from_obj({"localAPIEndpoint": {"advertiseAddress": "10.0.0.1"}})
    assert init.local_api_endpoint.advertise_address == "10.0.0.1"
    # populate by name works too
    assert v1beta4.Networking(pod_subnet="10.1.0.0/16").pod_subnet == "10.1.0.0/16"


def test_static_defaults() -> None:
    cc = v1beta4.ClusterConfiguration()
    assert cc.etcd.local is not None and cc.etcd.local.data_dir == "/var/lib/etcd"
    assert cc.networking.service_subnet == "10.96.0.0/12"
    assert cc.networking.dns_domain == "cluster.local"
    assert cc.kubernetes_version == "stable-1"
    assert cc.encryption_algorithm == "RSA-2048"
    assert cc.ca_certificate_validity_period == timedelta(hours=87600)
    init = v1beta4.InitConfiguration()
    assert init.local_api_endpoint.bind_port == 6443
    assert init.node_registration.taints is None
    assert init.node_registration.image_pull_serial is True
    [bt] = init.bootstrap_tokens
    assert bt.ttl == timedelta(hours=24) and bt.usages == ["signing", "authentication"]
    assert init.timeouts is not None and init.timeouts.kubernetes_api_call == timedelta(minutes=1)
    join = v1beta4.JoinConfiguration.from_obj(
        {"discovery": {"bootstrapToken": {"token": "abcdef.0123456789abcdef"}, "file": None}}
    )
    assert join.discovery.tls_bootstrap_token == "abcdef.0123456789abcdef"
    assert join.ca_cert_path == "/etc/kubernetes/pki/ca.crt"


def test_output_follows_go_omitempty_rules() -> None:
    obj = v1beta4.InitConfiguration().to_obj()
    assert obj["nodeRegistration"]["taints"] is None  # no omitempty in Go
    assert "name" not in obj["nodeRegistration"]  # omitempty string
    assert obj["nodeRegistration"]["imagePullSerial"] is True
    assert "dryRun" not in obj and "patches" not in obj
    nr = v1beta4.NodeRegistrationOptions(taints=[], image_pull_serial=False).to_obj()
    assert nr["taints"] == [] and nr["imagePullSerial"] is False  # explicit empty list and false pointer kept
    cc = v1beta4.ClusterConfiguration().to_obj()
    assert cc["apiServer"] == {} and cc["dns"] == {} and cc["proxy"] == {}  # structs always written
    assert cc["certificateValidityPeriod"] == "8760h0m0s"
    ext = v1beta4.ExternalEtcd(endpoints=["http://x:2379"]).to_obj()
    assert ext == {"endpoints": ["http://x:2379"], "caFile": "", "certFile": "", "keyFile": ""}


def test_dump_yaml_is_sorted_and_go_quoted() -> None:
    text = dump_yaml({"b": "0", "a": "", "c": ["x"], "d": {}, "e": None, "f": "true"})
    assert text == 'a: ""\nb: "0"\nc:\n- x\nd: {}\ne: null\nf: "true"\n'


def test_unknown_fields_are_rejected_with_paths() -> None:
    [doc] = split_documents(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnt: x\n"
    )
    with pytest.raises(ValidationError) as e:
        decode(v1beta4.ClusterConfiguration, doc)
    assert 'strict decoding error: unknown field "networking.podSubnt"' in str(e.value)
    assert 'Kind:"ClusterConfiguration"' in str(e.value)


def test_bad_types_name_the_field() -> None:
    [doc] = split_documents(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: abc\n"
    )
    with pytest.raises(ValidationError, match=r"localAPIEndpoint\.bindPort: Invalid value"):
        decode(v1beta4.InitConfiguration, doc)


def test_every_unknown_field_is_reported_in_document_order() -> None:
    [doc] = split_documents(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  foo: 1\n"
        "bootstrapTokens:\n- bar: 2\n"
    )
    with pytest.raises(ValidationError) as e:
        decode(v1beta4.InitConfiguration, doc)
    assert 'strict decoding error: unknown field "nodeRegistration.foo", unknown field "bootstrapTokens[0].bar"' in str(
        e.value
    )


def test_numbers_in_strings_are_not_coerced() -> None:
    # Go's decoder rejects a string for an int32 (bindPort: "6443"); so do we, naming the field and the value.
    [doc] = split_documents(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: '6443'\n"
    )
    with pytest.raises(
        ValidationError, match=r'localAPIEndpoint\.bindPort: Invalid value: "6443": Expected int, got str'
    ):
        decode(v1beta4.InitConfiguration, doc)


def test_a_bad_map_value_is_reported_on_the_map() -> None:
    with pytest.raises(Exception, match=r"featureGates: Invalid value: \{'A': 'x'\}: Expected bool, got str"):
        v1beta4.ClusterConfiguration.from_obj({"featureGates": {"A": "x"}})


def test_null_for_a_value_field_is_its_default_and_for_a_pointer_stays_none() -> None:
    init = v1beta4.InitConfiguration.from_obj(
        {"nodeRegistration": {"name": None, "taints": None, "imagePullPolicy": None}, "timeouts": {"discovery": None}}
    )
    assert init.node_registration.name == "" and init.node_registration.taints is None
    assert init.node_registration.image_pull_policy == "IfNotPresent"
    assert init.timeouts is not None and init.timeouts.discovery == timedelta(minutes=5)


def test_copy_is_deep() -> None:
    init = v1beta4.InitConfiguration()
    clone = init.copy()
    clone.node_registration.name = "other"
    assert init.node_registration.name == "" and clone != init


def test_bad_duration_in_yaml() -> None:
    with pytest.raises(Exception, match="invalid duration"):
        v1beta4.ClusterConfiguration.from_obj({"certificateValidityPeriod": "forever"})


def test_invalid_yaml_and_missing_kind() -> None:
    with pytest.raises(ValidationError, match="yaml: line"):
        split_documents("a: [b\n")
    with pytest.raises(ValidationError, match="kind and apiVersion is mandatory"):
        split_documents("apiVersion: kubeadm.k8s.io/v1beta4\n")
