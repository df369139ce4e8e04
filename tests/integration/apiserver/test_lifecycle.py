"""Process lifecycle: the etcd engine keeps data across restarts, SIGTERM shuts down gracefully, the reported version
follows the image tag, and a bad flag stops the process at startup naming the flag."""

import signal
import subprocess
import sys
import time

import pytest
from kubernetes import client

from pykubeadm.testing.apiserver import ApiServer, running_apiserver
from pykubeadm.testing.etcd import EtcdCluster, etcd_available

pytestmark = pytest.mark.integration


@pytest.mark.skipif(not etcd_available(), reason="etcd is not installed")
def test_etcd_engine_keeps_data_across_restart(tmp_path):
    with EtcdCluster(tmp_path / "etcd") as etcd, running_apiserver(tmp_path / "api", storage=etcd.url) as api:
        c = api.python_client()
        v1 = client.CoreV1Api(c)
        cm = v1.create_namespaced_config_map("default", {"metadata": {"name": "e"}, "data": {"a": "1"}})
        with pytest.raises(client.ApiException) as e:
            cm.data["a"] = "x"
            cm.metadata.resource_version = "1"
            v1.replace_namespaced_config_map("e", "default", cm)
        assert e.value.status == 409
        c.close()
        api.restart()
        c = api.python_client()
        got = client.CoreV1Api(c).read_namespaced_config_map("e", "default")
        assert got.data == {"a": "1"} and got.metadata.uid == cm.metadata.uid
        c.close()


def test_sigterm_is_graceful_and_version_follows_the_tag(tmp_path):
    api = ApiServer(tmp_path, storage="memory", version="v1.32.4")
    api.start()
    try:
        c = api.python_client()
        assert client.VersionApi(c).get_code().git_version == "v1.32.4"
        assert client.VersionApi(c).get_code().minor == "32"
        c.close()
        proc = api.proc
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert time.monotonic() - start < 8
    finally:
        api.stop()


def test_unknown_flag_fails_at_startup(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pykubeadm",
            "component",
            "kube-apiserver",
            "--secure-port=0",
            "--feature-gates=Foo=true",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode != 0 and "--feature-gates" in res.stderr
