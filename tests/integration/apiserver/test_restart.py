"""Durability across restarts (sqlite), watch resume from a resourceVersion, and 410 Gone after compaction."""

import json
import ssl
import threading
import time

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from pykubeadm.testing.apiserver import running_apiserver

pytestmark = pytest.mark.integration


def test_restart_keeps_data_and_watch_resumes_without_gaps(tmp_path):
    with running_apiserver(tmp_path) as api:
        c = api.python_client()
        v1 = client.CoreV1Api(c)
        v1.create_namespace({"metadata": {"name": "keep"}})
        v1.create_namespaced_secret("keep", {"metadata": {"name": "s"}, "string_data": {"k": "v"}})
        cm = v1.create_namespaced_config_map("keep", {"metadata": {"name": "c"}, "data": {"n": "0"}})
        uid, rv = cm.metadata.uid, cm.metadata.resource_version
        c.close()
        api.restart()
        c = api.python_client()
        v1 = client.CoreV1Api(c)
        got = v1.read_namespaced_config_map("c", "keep")
        assert (got.metadata.uid, got.metadata.resource_version, got.data) == (uid, rv, {"n": "0"})
        assert v1.read_namespaced_secret("s", "keep").data == {"k": "dg=="}
        for i in range(1, 4):
            v1.patch_namespaced_config_map("c", "keep", {"data": {"n": str(i)}})
        seen = []
        for ev in watch.Watch().stream(v1.list_namespaced_config_map, "keep", resource_version=rv, timeout_seconds=2):
            seen.append((ev["type"], ev["object"].data["n"]))
        assert seen == [("MODIFIED", "1"), ("MODIFIED", "2"), ("MODIFIED", "3")]
        assert api.kubectl("get", "ns", "keep", "-o", "name", check=False).stdout.strip() == "namespace/keep"
        c.close()


def test_watch_from_compacted_revision_gets_410_and_relist_recovers(tmp_path):
    with running_apiserver(
        tmp_path, storage=f"sqlite://{tmp_path}/c.db?compact_interval=0.2&compact_min_retain=1"
    ) as api:
        c = api.python_client()
        v1 = client.CoreV1Api(c)
        v1.create_namespaced_config_map("default", {"metadata": {"name": "x"}, "data": {"n": "0"}})
        old_rv = v1.list_namespaced_config_map("default").metadata.resource_version
        for i in range(5):
            v1.patch_namespaced_config_map("x", "default", {"data": {"n": str(i)}})
        # A running apiserver serves a recent revision from its watch cache's history (75 s, as kube-apiserver's)
        # even after storage compacted it; a restarted one has no history before its start, so storage answers.
        c.close()
        api.restart()
        c = api.python_client()
        v1 = client.CoreV1Api(c)
        ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
        ctx.load_cert_chain(str(api.pki.admin_cert), str(api.pki.admin_key))
        # The store compacts in the background every 0.2 s: until it has, the old revision is still watchable.
        deadline = time.monotonic() + 30
        while True:
            r = httpx.get(
                f"{api.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={old_rv}&timeoutSeconds=1",
                verify=ctx,
                timeout=10,
            )
            ev = json.loads(r.text.splitlines()[0])
            if ev["type"] == "ERROR" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ev["type"] == "ERROR" and ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
        with pytest.raises(ApiException) as e:
            for _ in watch.Watch().stream(
                v1.list_namespaced_config_map, "default", resource_version=old_rv, timeout_seconds=2
            ):
                pass
        assert e.value.status == 410
        # The client's recovery: re-list, then watch from the list's resourceVersion.
        listing = v1.list_namespaced_config_map("default")
        assert [i.data["n"] for i in listing.items] == ["4"]
        done = threading.Event()

        def change():
            time.sleep(0.3)
            v1.patch_namespaced_config_map("x", "default", {"data": {"n": "5"}})
            done.set()

        threading.Thread(target=change).start()
        seen = [
            ev["object"].data["n"]
            for ev in watch.Watch().stream(
                v1.list_namespaced_config_map,
                "default",
                resource_version=listing.metadata.resource_version,
                timeout_seconds=2,
            )
        ]
        assert done.wait(5) and seen == ["5"]
        c.close()
