"""policy/v1 PodDisruptionBudget, pods/eviction and discovery.k8s.io/v1 EndpointSlice against a real apiserver: kubectl
1.33's protobuf `create pdb` and drain evictions, tables, and the Python client's eviction call (201 / 429)."""

import json

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]},
}


def header(out: str) -> list[str]:
    return out.splitlines()[0].split()


def running_pod(core, name: str, ns: str = "default", labels: dict | None = None, node: str = "") -> None:
    """A Running, Ready Pod (status written as a kubelet would); the namespace's `default` ServiceAccount is made
    here since no controller manager runs."""
    from kubernetes.client.rest import ApiException

    try:
        core.create_namespaced_service_account(ns, {"metadata": {"name": "default"}})
    except ApiException as e:
        assert e.status == 409
    body = {
        "metadata": {"name": name, "labels": labels or {"app": "db"}},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "terminationGracePeriodSeconds": 0,
            **({"nodeName": node} if node else {}),
        },
    }
    core.create_namespaced_pod(ns, body)
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    core.patch_namespaced_pod_status(name, ns, {"status": status})


def set_pdb_status(policy, name: str, allowed: int, healthy: int = 2) -> None:
    status = {
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": 2,
        "expectedPods": healthy,
        "observedGeneration": 1,
    }
    policy.patch_namespaced_pod_disruption_budget_status(name, "default", {"status": status})


def test_pdb_and_eviction_with_python_client(api):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    c = api.python_client()
    core, policy = client.CoreV1Api(c), client.PolicyV1Api(c)
    api.kubectl("create", "poddisruptionbudget", "db", "--selector=app=db", "--min-available=2")
    out = api.kubectl("get", "pdb").stdout
    assert header(out) == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["db", "2", "N/A", "0"]
    running_pod(core, "db-0")
    running_pod(core, "db-1")
    set_pdb_status(policy, "db", allowed=0)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "db-0", "namespace": "default"}}
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_eviction("db-0", "default", eviction)
    assert e.value.status == 429
    body = json.loads(e.value.body)
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert core.read_namespaced_pod("db-0", "default").metadata.name == "db-0"
    set_pdb_status(policy, "db", allowed=1, healthy=3)
    info = core.create_namespaced_pod_eviction_with_http_info("db-0", "default", eviction)
    code = getattr(info, "status_code", None) or info[1]  # 37.x: ApiResponse; 31.x: (data, status, headers)
    assert code == 201
    pdb = policy.read_namespaced_pod_disruption_budget("db", "default")
    assert pdb.status.disruptions_allowed == 0 and "db-0" in pdb.status.disrupted_pods
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("db-0", "default")
    assert e.value.status == 404
    policy.delete_namespaced_pod_disruption_budget("db", "default")
    core.delete_namespaced_pod("db-1", "default", grace_period_seconds=0)


def test_kubectl_drain_evicts_and_respects_budget(api):
    from kubernetes import client

    c = api.python_client()
    core, policy = client.CoreV1Api(c), client.PolicyV1Api(c)
    api.kubectl("create", "-f", "-", input=json.dumps(NODE))
    api.kubectl("create", "ns", "drain")
    running_pod(core, "web-0", "drain", {"app": "web"}, node="n1")
    api.kubectl("create", "pdb", "web", "-n", "drain", "--selector=app=web", "--max-unavailable=0")
    policy.patch_namespaced_pod_disruption_budget_status(
        "web",
        "drain",
        {
            "status": {
                "disruptionsAllowed": 0,
                "currentHealthy": 1,
                "desiredHealthy": 1,
                "expectedPods": 1,
                "observedGeneration": 1,
            }
        },
    )
    blocked = api.kubectl("drain", "n1", "--force", "--timeout=3s", check=False, timeout=60)
    assert blocked.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in blocked.stderr
    api.kubectl("delete", "pdb", "web", "-n", "drain")
    done = api.kubectl("drain", "n1", "--force", "--timeout=30s", timeout=60)
    assert "evicted" in done.stdout and "drained" in done.stdout
    assert core.list_namespaced_pod("drain").items == []


def test_endpointslice_table_and_api_resources(api):
    es = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-x1", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.5"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }
    api.kubectl("create", "-f", "-", input=json.dumps(es))
    out = api.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=web").stdout
    assert header(out) == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["web-x1", "IPv4", "8080", "127.0.0.5"]
    bad = api.kubectl(
        "create", "-f", "-", input=json.dumps({**es, "metadata": {"name": "b"}, "addressType": ""}), check=False
    )
    assert "addressType: Required value" in bad.stderr
    from kubernetes import client

    disc = client.DiscoveryV1Api(api.python_client())
    got = disc.read_namespaced_endpoint_slice("web-x1", "default")
    assert got.address_type == "IPv4" and got.ports[0].port == 8080
    res = api.kubectl("api-resources").stdout
    rows = {line.split()[0]: line.split() for line in res.splitlines()[1:]}
    assert rows["poddisruptionbudgets"][1] == "pdb" and rows["endpointslices"][-1] == "EndpointSlice"


def test_one_get_over_all_new_kinds(api):
    api.kubectl("create", "ns", "mix")
    api.kubectl("create", "job", "j", "-n", "mix", "--image=busybox")
    api.kubectl("create", "cronjob", "c", "-n", "mix", "--image=busybox", "--schedule=@hourly")
    api.kubectl("create", "pdb", "p", "-n", "mix", "--selector=a=b", "--max-unavailable=1")
    out = api.kubectl("get", "rs,jobs,cronjobs,pdb,endpointslices", "-n", "mix").stdout
    blocks = [b for b in out.split("\n\n") if b.strip()]
    heads = [b.splitlines()[0].split() for b in blocks]
    assert heads == [
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"],
        ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"],
    ]
    assert blocks[2].splitlines()[1].split()[:4] == ["poddisruptionbudget.policy/p", "N/A", "1", "0"]
