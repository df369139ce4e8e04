"""What the scheduler counts a Pod as requesting (kube's computePodResourceRequest) and a Node's running totals."""

from __future__ import annotations

from pykubeadm.scheduler.nodeinfo import DEFAULT_MEMORY_REQUEST, NodeInfo, pod_info, pod_requests


def container(name: str, **requests: str) -> dict:
    return {"name": name, "resources": {"requests": requests}} if requests else {"name": name}


def test_requests_sum_containers_take_the_largest_init_container_and_add_overhead() -> None:
    pod = {
        "spec": {
            "containers": [container("a", cpu="250m", memory="64Mi"), container("b", cpu="0.5")],
            "initContainers": [container("init", cpu="1", memory="32Mi")],
            "overhead": {"cpu": "10m"},
        }
    }
    assert pod_requests(pod) == {"cpu": 1010, "memory": 64 * 1024 * 1024}


def test_scoring_counts_defaults_for_containers_without_requests() -> None:
    pod = {"spec": {"containers": [container("pause")]}}
    assert pod_requests(pod) == {}
    assert pod_requests(pod, non_zero=True) == {"cpu": 100, "memory": DEFAULT_MEMORY_REQUEST}


def test_node_totals_follow_pods_added_and_removed() -> None:
    ni = NodeInfo({"metadata": {"name": "w"}, "status": {"allocatable": {"cpu": "2", "pods": "110"}}})
    owner = [{"uid": "rs-1", "controller": True}]
    for i in range(3):
        pod = {
            "metadata": {"name": f"p{i}", "namespace": "default", "ownerReferences": owner},
            "spec": {"containers": [container("c", cpu="100m")]},
        }
        ni.add(pod_info(pod))
    ni.add(pod_info({"metadata": {"name": "p0", "namespace": "default"}, "spec": {"containers": []}}))  # replaced
    assert ni.requested["cpu"] == 200 and ni.owners["rs-1"] == 2 and len(ni.pods) == 3
    ni.remove("default/p1")
    assert ni.requested["cpu"] == 100 and ni.owners["rs-1"] == 1
    assert ni.allocatable == {"cpu": 2000, "pods": 110}
