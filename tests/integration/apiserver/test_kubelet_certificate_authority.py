"""--kubelet-certificate-authority: the API server verifies the kubelet it proxies `kubectl logs/exec` to.

A kubelet whose serving certificate the cluster CA signed for the Node's address is reached; one presenting a CA-signed
certificate for another node's address, or a self-signed one, is refused with the TLS error (nothing is sent to it).
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.apiserver.test_pod_log_proxy import Kubelet

from pykubeadm.kubelet.certstore import ensure_self_signed_serving
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


def _server_context(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, dict[str, Kubelet]]]:
    directory = tmp_path_factory.mktemp("kubeletca")
    with contextlib.ExitStack() as stack:
        api = ApiServer(directory)
        api.extra_flags.append(f"--kubelet-certificate-authority={api.pki.ca_cert}")
        stack.callback(api.stop)
        api.start()
        own = api.pki.sign("system:node:good", ["system:nodes"], server=True, ips=["127.0.0.1"], dns=["good"])
        other = api.pki.sign("system:node:b", ["system:nodes"], server=True, ips=["127.0.0.2"], dns=["b"])
        ensure_self_signed_serving(directory / "ss.crt", directory / "ss.key", "selfsigned")
        kubelets = {
            "good": stack.enter_context(Kubelet(_server_context(*own))),
            "impostor": stack.enter_context(Kubelet(_server_context(*other))),
            "selfsigned": stack.enter_context(Kubelet(_server_context(directory / "ss.crt", directory / "ss.key"))),
        }
        from kubernetes import client

        c = stack.enter_context(contextlib.closing(api.python_client()))
        v1 = client.CoreV1Api(c)
        v1.create_namespaced_service_account("default", {"metadata": {"name": "default"}})
        for name, kubelet in kubelets.items():
            v1.create_node(
                {
                    "metadata": {"name": name},
                    "status": {
                        "addresses": [
                            {"type": "InternalIP", "address": "127.0.0.1"},
                            {"type": "Hostname", "address": name},
                        ],
                        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
                    },
                }
            )
            v1.create_namespaced_pod(
                "default",
                {
                    "metadata": {"name": f"p-{name}"},
                    "spec": {"nodeName": name, "containers": [{"name": "app", "image": "x"}]},
                },
            )
        yield api, kubelets


def test_a_kubelet_with_its_nodes_certificate_is_reached(cluster: Any) -> None:
    api, kubelets = cluster
    res = api.kubectl("logs", "p-good")
    assert res.stdout == "line 1\nline 2\n"
    assert kubelets["good"].seen[-1][0] == "/containerLogs/default/p-good/app"


def test_a_kubelet_presenting_another_nodes_certificate_is_refused(cluster: Any) -> None:
    api, kubelets = cluster
    res = api.kubectl("logs", "p-impostor", check=False)
    assert res.returncode != 0
    assert "certificate verify failed" in res.stderr and "127.0.0.1" in res.stderr, res.stderr
    assert kubelets["impostor"].seen == []  # the request was never sent


def test_a_self_signed_kubelet_certificate_is_refused(cluster: Any) -> None:
    api, kubelets = cluster
    res = api.kubectl("logs", "p-selfsigned", check=False)
    assert res.returncode != 0 and "certificate verify failed" in res.stderr, res.stderr
    assert kubelets["selfsigned"].seen == []


def test_exec_to_a_kubelet_presenting_another_nodes_certificate_is_refused(cluster: Any) -> None:
    api, _ = cluster
    res = api.kubectl("exec", "p-impostor", "--", "true", check=False)
    assert res.returncode != 0
    assert "error dialing backend" in res.stderr and "certificate verify failed" in res.stderr, res.stderr
