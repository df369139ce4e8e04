"""The DNS server as a Pod runs it: in-cluster credentials (env + projected service-account volume) limited by
kubeadm's system:coredns RBAC, the Corefile in a ConfigMap volume, reloaded when the volume is updated.

The Pod directory is laid out as the built-in kubelet lays it out for a Pod it cannot sandbox, so the server must find
its credentials beside the (mapped) Corefile, as `-conf` points into the Pod's ConfigMap volume.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import dns.message
import dns.query
import dns.rcode
import pytest
from kubernetes import client as k8s
from kubernetes import utils as k8s_utils

from pykubeadm.phases.addons.dns import dns_objects

from .conftest import forward_target, kubeadm_corefile, start_dns

pytestmark = pytest.mark.integration


def _write_volume(volume: Path, files: dict[str, str], stamp: str) -> None:
    """The kubelet's atomic writer: files in `..<stamp>/`, `..data` → it (swapped by rename), names → `..data/name`."""
    volume.mkdir(parents=True, exist_ok=True)
    data_dir = volume / f"..{stamp}"
    data_dir.mkdir()
    for name, text in files.items():
        (data_dir / name).write_text(text)
    tmp_link = volume / "..data_tmp"
    os.symlink(data_dir.name, tmp_link)
    os.replace(tmp_link, volume / "..data")
    for name in files:
        if not (volume / name).is_symlink():
            os.symlink(f"..data/{name}", volume / name)


@pytest.fixture(scope="module")
def coredns_token(api) -> str:
    """kubeadm's CoreDNS RBAC and ServiceAccount, and a token for it (TokenRequest, as the kubelet asks)."""
    api_client = api.python_client()
    _cm, objects = dns_objects(dns_domain="cluster.local", cluster_ip="10.96.0.10", image="coredns:v1.12.0")
    for obj in objects:
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding", "ServiceAccount"):
            k8s_utils.create_from_dict(api_client, obj)
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_service(
        "default",
        k8s.V1Service(
            metadata=k8s.V1ObjectMeta(name="incluster"),
            spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(port=80)]),
        ),
    )
    request = k8s.AuthenticationV1TokenRequest(spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=3607))
    return core.create_namespaced_service_account_token("coredns", "kube-system", request).status.token


def test_in_cluster_credentials_and_reload(api, coredns_token, upstream, tmp_path):
    pod_dir = tmp_path / "pods" / "0f0e0d0c-uid"
    _write_volume(
        pod_dir / "volumes" / "kubernetes.io~projected" / "kube-api-access-x7k2p",
        {"token": coredns_token, "ca.crt": api.pki.ca_cert.read_text(), "namespace": "kube-system"},
        "2026_01_01_00_00_00.1",
    )
    config_volume = pod_dir / "volumes" / "kubernetes.io~configmap" / "config-volume"
    forward = forward_target(upstream, tmp_path)

    def write(text: str) -> Path:
        _write_volume(config_volume, {"Corefile": text}, "2026_01_01_00_00_00.2")
        return config_volume / "Corefile"

    env = {"KUBERNETES_SERVICE_HOST": api.host, "KUBERNETES_SERVICE_PORT": str(api.port)}
    texts: dict[str, str] = {}

    def corefile_for(port: int, http: dict[str, int]) -> str:
        texts["v1"] = kubeadm_corefile(port, http, forward)
        return texts["v1"]

    server = start_dns(tmp_path, corefile_for, env=env, write=write)
    try:
        query = dns.message.make_query("incluster.default.svc.cluster.local.", "A")
        reply = dns.query.udp(query, server.host, port=server.port, timeout=10)
        assert reply.rcode() == dns.rcode.NOERROR and reply.answer, server.output()
        assert reply.answer[0].ttl == 30

        # a ConfigMap update arrives as a new `..data`: the reload plugin loads it (ttl 30 → 7)
        _write_volume(config_volume, {"Corefile": texts["v1"].replace("ttl 30", "ttl 7")}, "2026_01_01_00_00_01.3")
        # the sockets stay open across the reload: every query is answered (a timeout here fails the test)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            reply = dns.query.udp(query, server.host, port=server.port, timeout=10)
            # (SERVFAIL only if the new configuration's watch took longer than startup_timeout to sync)
            assert reply.rcode() in (dns.rcode.NOERROR, dns.rcode.SERVFAIL), server.output()
            if reply.answer and reply.answer[0].ttl == 7:
                break
            time.sleep(0.05)
        assert reply.answer and reply.answer[0].ttl == 7, server.output()
        # logged once the new instance's plugins have started, which may be just after its first answer
        deadline = time.monotonic() + 30
        while "[INFO] Reloading complete" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "[INFO] Reloading complete" in server.output()

        # a broken update is reported and the running configuration stays
        _write_volume(
            config_volume,
            {"Corefile": texts["v1"].replace("    loop\n", "    loop\n    bogus\n")},
            "2026_01_01_00_00_02.4",
        )
        deadline = time.monotonic() + 60
        while "Restart failed" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "[ERROR] Restart failed: " in server.output()
        assert "Unknown directive 'bogus'" in server.output()
        reply = dns.query.udp(query, server.host, port=server.port, timeout=10)
        assert reply.answer and reply.answer[0].ttl == 7
    finally:
        server.stop()


def test_bad_corefile_exits_with_coredns_error(tmp_path):
    import subprocess
    import sys

    conf = tmp_path / "Corefile"
    conf.write_text(".:53 {\n    errors\n    xyz\n}\n")
    res = subprocess.run(
        [sys.executable, "-m", "pykubeadm", "component", "coredns", "-conf", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 1
    assert f"{conf}:3 - Error during parsing: Unknown directive 'xyz'" in res.stdout + res.stderr
