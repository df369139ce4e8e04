"""Stateful workloads end to end (issue #35): the shared lab (a control plane and two workers) with its local-path
storage addon, the machine's kubectl, real Pod processes. The documentation's StatefulSet (headless Service `nginx`,
StatefulSet `web` with the claim template `www`) comes up in order on provisioned volumes pinned to each Pod's node;
data survives a Pod's deletion; `web-0.nginx` resolves; scale down keeps claims unless whenScaled says Delete;
reclaim Delete removes the directory and Retain keeps the volume Released; a claim in use waits for its Pod; an
ephemeral volume's claim lives and dies with its Pod; a partitioned rolling update and its undo."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.e2e.test_lab import Lab
from tests.e2e.test_pods import wait_for
from tests.e2e.test_workloads import apply

pytestmark = pytest.mark.e2e

NODES = ("lab-control-plane", "lab-worker", "lab-worker2")
#: each replica serves its volume on 8000 + its ordinal (a lab's Pods share their node's address)
SERVE = (
    "i=${HOSTNAME##*-}; echo $HOSTNAME > /usr/share/nginx/html/index.html; "
    "exec python3 -m http.server $((8000 + i)) --bind $POD_IP --directory /usr/share/nginx/html"
)


@pytest.fixture(scope="module")
def lab(shared_lab: Lab) -> Lab:
    """The e2e suites' shared lab (tests/e2e/conftest.py): a control plane and two workers, with its local-path storage
    addon; what this module leaves in `default` (its claims among it) is deleted when it ends."""
    return shared_lab


def get(lab: Lab, *args: str) -> Any:
    res = lab.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else None


def ready(pod: dict[str, Any] | None) -> bool:
    conds = ((pod or {}).get("status") or {}).get("conditions") or []
    return not (pod or {}).get("metadata", {}).get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conds
    )


def web(replicas: int, image: str = "python:3.12") -> list[dict[str, Any]]:
    labels = {"app": "nginx"}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "nginx", "labels": labels},
        "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "web", "port": 80}]},
    }
    container = {
        "name": "nginx",
        "image": image,
        "command": ["sh", "-c", SERVE],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "readinessProbe": {"exec": {"command": ["cat", "/usr/share/nginx/html/index.html"]}, "periodSeconds": 1},
        "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}],
    }
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "serviceName": "nginx",
            "replicas": replicas,
            "minReadySeconds": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [container]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "www"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        },
    }
    return [service, sts]


def exec_in(lab: Lab, pod: str, script: str) -> str:
    return lab.kubectl("exec", pod, "--", "sh", "-c", script).stdout


def volume_dir_of(lab: Lab, claim: str) -> Any:
    pvc = get(lab, "pvc", claim)
    pv = get(lab, "pv", pvc["spec"]["volumeName"])
    node = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0]
    return pv, node, lab.root(node) / pv["spec"]["hostPath"]["path"].lstrip("/")


def test_the_default_storage_class_is_standard(lab: Lab) -> None:
    out = lab.kubectl("get", "sc").stdout
    assert "standard (default)" in out and "rancher.io/local-path" in out and "WaitForFirstConsumer" in out


def test_the_documentation_statefulset_on_provisioned_volumes(lab: Lab) -> None:
    apply(lab, *web(2))
    wait_for(lambda: ready(get(lab, "pod", "web-1")) and ready(get(lab, "pod", "web-0")), 120, "web-0 and web-1 Ready")
    web0, web1 = get(lab, "pod", "web-0"), get(lab, "pod", "web-1")
    ready_at = next(c for c in web0["status"]["conditions"] if c["type"] == "Ready")["lastTransitionTime"]
    assert ready_at <= web1["metadata"]["creationTimestamp"]  # OrderedReady: web-1 only after web-0 was Ready
    for pod in (web0, web1):
        claim = f"www-{pod['metadata']['name']}"
        assert get(lab, "pvc", claim)["status"]["phase"] == "Bound"
        pv, node, directory = volume_dir_of(lab, claim)
        assert node == pod["spec"]["nodeName"]  # the volume is pinned to the Pod's node
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "rancher.io/local-path"
        assert directory.name == f"{pv['metadata']['name']}_default_{claim}" and (directory / "index.html").is_file()

    # data written by web-0 survives the Pod
    exec_in(lab, "web-0", "echo kept > /usr/share/nginx/html/keep")
    node = web0["spec"]["nodeName"]
    lab.kubectl("delete", "pod", "web-0")
    wait_for(lambda: (p := get(lab, "pod", "web-0")) and ready(p) and p["metadata"]["uid"] != web0["metadata"]["uid"],
             120, "web-0 back")  # fmt: skip
    assert get(lab, "pod", "web-0")["spec"]["nodeName"] == node
    assert exec_in(lab, "web-0", "cat /usr/share/nginx/html/keep").strip() == "kept"

    # web-0.nginx resolves from another Pod to web-0's address, and serves web-0's volume
    ip = get(lab, "pod", "web-0")["status"]["podIP"]
    lookup = "import socket; print(socket.gethostbyname('web-0.nginx'))"

    def resolve() -> str:  # "" until the recreated web-0's record is served (the lookup fails until then)
        try:
            return exec_in(lab, "web-1", f'python3 -c "{lookup}"').strip()
        except AssertionError:
            return ""

    resolved = wait_for(resolve, 60, "web-0.nginx resolves")
    assert resolved == ip
    fetch = "import urllib.request as u; print(u.urlopen('http://web-0.nginx:8000/index.html').read().decode())"
    assert exec_in(lab, "web-1", f'python3 -c "{fetch}"').strip() == "web-0"

    # a partitioned rolling update changes only web-1; undo returns it
    patch = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
                      "template": {"metadata": {"annotations": {"rev": "2"}}}}}  # fmt: skip
    lab.kubectl("patch", "sts", "web", "--type=strategic", "-p", json.dumps(patch))
    out = lab.kubectl("rollout", "status", "sts/web", "--timeout=120s").stdout
    assert "partitioned roll out complete: 1 new pods have been updated" in out
    annotations = {n: (get(lab, "pod", n)["metadata"].get("annotations") or {}).get("rev") for n in ("web-0", "web-1")}
    assert annotations == {"web-0": None, "web-1": "2"}
    lab.kubectl("rollout", "undo", "sts/web")
    wait_for(lambda: ready(p := get(lab, "pod", "web-1")) and "rev" not in (p["metadata"].get("annotations") or {}),
             120, "web-1 rolled back")  # fmt: skip

    # scale to 1 keeps web-1's claim; with whenScaled: Delete the next scale down removes it and its directory
    lab.kubectl("scale", "sts", "web", "--replicas=1")
    wait_for(lambda: get(lab, "pod", "web-1") is None, 120, "web-1 gone")
    assert get(lab, "pvc", "www-web-1")["status"]["phase"] == "Bound"
    lab.kubectl("scale", "sts", "web", "--replicas=2")
    wait_for(lambda: ready(get(lab, "pod", "web-1")), 120, "web-1 back")
    _, _, directory = volume_dir_of(lab, "www-web-1")
    policy = {"spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Retain"}}}
    lab.kubectl("patch", "sts", "web", "--type=merge", "-p", json.dumps(policy))
    lab.kubectl("scale", "sts", "web", "--replicas=1")
    wait_for(lambda: get(lab, "pvc", "www-web-1") is None, 120, "www-web-1 removed")
    wait_for(lambda: not directory.exists(), 120, "its directory removed (reclaim Delete)")


def _user(name: str, volume: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["sh", "-c", "touch /data/x; sleep 3600"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", **volume}],
        },
    }


def _claim(name: str, cls: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if cls:
        spec["storageClassName"] = cls
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def test_claims_in_use_retain_and_ephemeral_volumes(lab: Lab) -> None:
    retain = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "keep"},
              "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer",
              "reclaimPolicy": "Retain"}  # fmt: skip
    apply(lab, retain, _claim("held", "keep"), _user("holder", {"persistentVolumeClaim": {"claimName": "held"}}))
    wait_for(lambda: ready(get(lab, "pod", "holder")), 120, "holder Ready")
    assert get(lab, "pvc", "held")["spec"]["storageClassName"] == "keep"
    pv, _, directory = volume_dir_of(lab, "held")
    lab.kubectl("delete", "pvc", "held", "--wait=false")
    assert "Terminating" in lab.kubectl("get", "pvc", "held").stdout  # kept while holder uses it
    lab.kubectl("delete", "pod", "holder")
    wait_for(lambda: get(lab, "pvc", "held") is None, 60, "claim gone after its Pod")
    wait_for(lambda: get(lab, "pv", pv["metadata"]["name"])["status"]["phase"] == "Released", 60, "PV Released")
    assert (directory / "x").is_file()  # Retain keeps the data

    ephemeral = {"ephemeral": {"volumeClaimTemplate": {"spec": _claim("")["spec"]}}}
    apply(lab, _user("scratch", ephemeral))
    wait_for(lambda: ready(get(lab, "pod", "scratch")), 120, "scratch Ready")
    claim = get(lab, "pvc", "scratch-data")
    assert claim["spec"]["storageClassName"] == "standard" and claim["status"]["phase"] == "Bound"
    assert claim["metadata"]["ownerReferences"][0]["name"] == "scratch"
    lab.kubectl("delete", "pod", "scratch")
    wait_for(lambda: get(lab, "pvc", "scratch-data") is None, 60, "ephemeral claim removed with its Pod")
