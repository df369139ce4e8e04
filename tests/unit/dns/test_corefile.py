"""The Corefile kubeadm writes loads as CoreDNS loads it; bad Corefiles fail with CoreDNS's messages."""

from __future__ import annotations

import pytest

from pykubeadm.dns.corefile import CorefileError, parse_corefile, parse_server_key
from pykubeadm.dns.plugin import PluginError
from pykubeadm.dns.plugins.cache import CachePlugin
from pykubeadm.dns.plugins.forward import ForwardPlugin
from pykubeadm.dns.plugins.health import HealthPlugin
from pykubeadm.dns.plugins.kubernetes.plugin import KubernetesPlugin
from pykubeadm.dns.setup import ORDER, load_config
from pykubeadm.phases.addons.dns import corefile


def _load(text: str, tmp_path, env=None):
    (tmp_path / "resolv.conf").write_text("nameserver 127.0.0.53\nsearch example.org\n")
    text = text.replace("/etc/resolv.conf", str(tmp_path / "resolv.conf"))
    return load_config(text, "Corefile", dns_port=53, env=env or {})


def test_kubeadm_corefile_parses_into_one_block_with_every_directive():
    blocks = parse_corefile(corefile("cluster.local"))
    assert len(blocks) == 1
    block = blocks[0]
    assert block.keys == [".:53"]
    names = [d.name for d in block.directives]
    assert names == [
        "errors",
        "health",
        "ready",
        "kubernetes",
        "prometheus",
        "forward",
        "cache",
        "loop",
        "reload",
        "loadbalance",
    ]
    kube = block.directives[3]
    assert kube.args == ["cluster.local", "in-addr.arpa", "ip6.arpa"]
    assert [(p.name, p.args) for p in kube.block] == [
        ("pods", ["insecure"]),
        ("fallthrough", ["in-addr.arpa", "ip6.arpa"]),
        ("ttl", ["30"]),
    ]
    assert kube.line == 7
    cache = block.directives[6]
    assert cache.args == ["30"]
    assert [(p.name, p.args) for p in cache.block] == [
        ("disable", ["success", "cluster.local"]),
        ("disable", ["denial", "cluster.local"]),
    ]


def test_kubeadm_corefile_sets_up_the_plugins_in_coredns_order(tmp_path):
    config = _load(corefile("cluster.local"), tmp_path, env={"PYKUBEADM_POD_IP": "127.0.10.2"})
    (block,) = config.blocks
    assert block.hosts == ["127.0.10.2"]  # `.:53` binds the Pod's address
    assert [k.zone for k in block.keys] == ["."] and block.keys[0].port == 53
    names = [p.name for p in block.plugins]
    assert names == [n for n in ORDER if n in names]
    kube = next(p for p in block.plugins if isinstance(p, KubernetesPlugin))
    assert kube.cluster_zones == ["cluster.local."]
    assert kube.reverse_zones == ["in-addr.arpa.", "ip6.arpa."]
    assert kube.pods == "insecure" and kube.options.ttl == 30
    assert kube.fallthrough == ["in-addr.arpa.", "ip6.arpa."]
    fwd = next(p for p in block.plugins if isinstance(p, ForwardPlugin))
    assert fwd.upstreams == [("127.0.0.53", 53)] and fwd.max_concurrent == 1000
    cache = next(p for p in block.plugins if isinstance(p, CachePlugin))
    assert cache.kinds["success"].max_ttl == 30 and cache.kinds["denial"].max_ttl == 30
    assert cache.kinds["success"].disabled == ("cluster.local.",)
    assert cache.kinds["denial"].disabled == ("cluster.local.",)
    health = next(p for p in block.plugins if isinstance(p, HealthPlugin))
    assert health.lameduck == 5.0
    http = config.shared["http"].routes
    assert set(http) == {("127.0.10.2", 8080), ("127.0.10.2", 8181), ("127.0.10.2", 9153)}


def test_without_pod_ip_the_server_binds_all_addresses(tmp_path):
    config = _load(corefile("cluster.local"), tmp_path)
    assert config.blocks[0].hosts == ["0.0.0.0"]


def test_unknown_directive_names_it_and_its_line(tmp_path):
    text = corefile("cluster.local").replace("    loop\n", "    loop\n    xyz foo\n")
    with pytest.raises(CorefileError) as err:
        _load(text, tmp_path)
    assert str(err.value) == "Corefile:21 - Error during parsing: Unknown directive 'xyz'"


def test_unknown_property_is_a_plugin_error_with_the_line(tmp_path):
    text = corefile("cluster.local").replace("ttl 30", "ttl 30\n       bogus 1")
    with pytest.raises(PluginError) as err:
        _load(text, tmp_path)
    assert str(err.value) == "plugin/kubernetes: Corefile:11 - Error during parsing: unknown property 'bogus'"


def test_wrong_argument_count(tmp_path):
    with pytest.raises(PluginError) as err:
        _load(".:53 {\n    forward .\n}\n", tmp_path)
    assert str(err.value) == (
        "plugin/forward: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '.'"
    )


def test_a_plugin_twice_in_a_block_is_an_error(tmp_path):
    with pytest.raises(PluginError, match=r"plugin/cache: Corefile:3 .*only be used once per Server Block"):
        _load(".:53 {\n    cache\n    cache 10\n}\n", tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (".:53 {\n    errors\n", "Corefile:1 - Error during parsing: Unexpected EOF: missing closing '}'"),
        (".:53 {\n    errors\n}\n}\n", "Corefile:4 - Error during parsing: Unexpected '}' because no matching"),
        ('.:53 {\n    log "x\n}\n', "Corefile:2 - Error during parsing: Unexpected EOF: unterminated quote"),
    ],
)
def test_syntax_errors(text, message):
    with pytest.raises(CorefileError) as err:
        parse_corefile(text)
    assert str(err.value).startswith(message)


def test_comments_quotes_environment_and_several_blocks():
    text = (
        "# cluster DNS\n"
        "cluster.local:5353 example.org {  # two zones\n"
        '    log "quoted arg" {$ZONE}\n'
        "}\n"
        "dns://.:1053 {\n"
        "    errors\n"
        "}\n"
    )
    blocks = parse_corefile(text, env={"ZONE": "from-env"})
    assert [b.keys for b in blocks] == [["cluster.local:5353", "example.org"], ["dns://.:1053"]]
    assert blocks[0].directives[0].args == ["quoted arg", "from-env"]
    assert blocks[1].directives[0].line == 6


def test_server_keys():
    assert (k := parse_server_key(".:53", 53)).zone == "." and k.port == 53
    assert parse_server_key("Cluster.Local", 1053).zone == "cluster.local."
    assert parse_server_key("dns://example.org:5353", 53).port == 5353
    with pytest.raises(ValueError, match="unsupported scheme"):
        parse_server_key("tls://.:853", 53)


def test_the_same_zone_and_port_twice_is_an_error(tmp_path):
    with pytest.raises(CorefileError, match=r"cannot serve dns://\.:53 - it is already defined"):
        _load(".:53 {\n    errors\n}\n.:53 {\n    log\n}\n", tmp_path)


def test_bind_sets_the_listen_addresses(tmp_path):
    config = _load(".:53 {\n    bind 127.0.0.7\n    errors\n}\n", tmp_path, env={"PYKUBEADM_POD_IP": "127.0.10.2"})
    assert config.blocks[0].hosts == ["127.0.0.7"]
