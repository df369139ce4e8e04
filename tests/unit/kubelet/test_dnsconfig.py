"""A Pod's resolv.conf and /etc/hosts as the kubelet writes them: dnsPolicy, dnsConfig merging, limits, hostname,
subdomain FQDN, hostAliases, host network."""

from __future__ import annotations

from typing import Any

from pykubeadm.kubelet.dnsconfig import hosts_file, parse_resolv_conf, pod_dns, render_resolv_conf

HOST = parse_resolv_conf(
    "# host\nnameserver 10.255.255.53\nnameserver 10.0.0.2\nsearch corp.example. .\noptions edns0\n"
)


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web-0", "namespace": "shop"}, "spec": spec}


def resolv(p: dict[str, Any], cluster_dns: list[str] | None = None) -> str:
    cfg, _ = pod_dns(p, ["10.96.0.10"] if cluster_dns is None else cluster_dns, "cluster.local", HOST)
    return render_resolv_conf(cfg)


def test_cluster_first_uses_the_cluster_dns_and_search_path_plus_the_hosts_search() -> None:
    assert resolv(pod()) == (
        "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "nameserver 10.96.0.10\n"
        "options ndots:5\n"
    )


def test_default_and_host_network_cluster_first_use_the_hosts_resolv_conf() -> None:
    host = "search corp.example\nnameserver 10.255.255.53\nnameserver 10.0.0.2\noptions edns0\n"
    assert resolv(pod(dnsPolicy="Default")) == host
    assert resolv(pod(hostNetwork=True)) == host  # ClusterFirst on the host network falls back to Default
    assert "nameserver 10.96.0.10" in resolv(pod(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"))


def test_cluster_first_without_cluster_dns_falls_back_with_a_warning() -> None:
    cfg, warning = pod_dns(pod(), [], "cluster.local", HOST)
    assert cfg.nameservers == ["10.255.255.53", "10.0.0.2"]
    assert 'cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.' in warning


def test_none_takes_only_dns_config_and_dns_config_merges_into_the_others() -> None:
    config = {
        "nameservers": ["1.1.1.1"],
        "searches": ["a.example"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
    }
    assert resolv(pod(dnsPolicy="None", dnsConfig=config)) == (
        "search a.example\nnameserver 1.1.1.1\noptions ndots:2 edns0\n"
    )
    merged = resolv(pod(dnsConfig=config))
    assert "nameserver 10.96.0.10\nnameserver 1.1.1.1\n" in merged
    assert merged.endswith("cluster.local corp.example a.example\nnameserver 10.96.0.10\nnameserver 1.1.1.1\n"
                           "options ndots:2 edns0\n")  # fmt: skip


def test_more_than_three_nameservers_are_cut_with_the_kubelets_warning() -> None:
    cfg, warning = pod_dns(
        pod(dnsConfig={"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9"]}), ["10.96.0.10"], "cluster.local", HOST
    )
    assert cfg.nameservers == ["10.96.0.10", "1.1.1.1", "8.8.8.8"]
    assert warning.startswith("Nameserver limits were exceeded")


def test_hosts_file_names_the_pod_its_fqdn_and_host_aliases() -> None:
    p = pod(hostname="db", subdomain="dbs", hostAliases=[{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar"]}])
    text = hosts_file(p, ["127.0.15.2"], "cluster.local")
    assert text.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert "127.0.15.2\tdb.dbs.shop.svc.cluster.local\tdb\n" in text
    assert text.endswith("\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar\n")
    assert "127.0.15.2\tweb-0\n" in hosts_file(pod(), ["127.0.15.2"], "cluster.local")


def test_host_network_hosts_file_is_the_nodes_with_the_host_network_header() -> None:
    text = hosts_file(pod(hostNetwork=True), ["127.0.15.2"], "cluster.local", "127.0.0.1 localhost\n")
    assert text == "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"


def test_write_pod_files_writes_both_and_reports_the_missing_cluster_dns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pykubeadm.kubelet.dnsconfig import write_pod_files

    host = tmp_path / "host-resolv.conf"
    host.write_text("nameserver 10.255.255.53\n")
    node_hosts = tmp_path / "hosts"
    node_hosts.write_text("127.0.0.1 localhost node\n")
    resolv, hosts, warnings = write_pod_files(
        pod(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"), tmp_path / "pod", "127.0.15.2", [],
        "cluster.local", host, node_hosts,
    )  # fmt: skip
    assert resolv.read_text() == "nameserver 10.255.255.53\n"  # no clusterDNS: the Default policy's file
    assert [reason for reason, _ in warnings] == ["MissingClusterDNS"]
    assert hosts.read_text() == "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost node\n"
    assert oct(resolv.stat().st_mode & 0o777) == "0o644"
