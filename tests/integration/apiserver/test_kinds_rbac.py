"""The default RBAC policy for the workload kinds on a real apiserver: the controllers' system:controller:* roles and
the aggregated admin/edit/view ClusterRoles, checked with `kubectl auth can-i` and a real `edit` user."""

import json

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

SA = "system:serviceaccount:kube-system:"
CAN = [
    ("replicaset-controller", "update", "replicasets.apps/status"),
    ("replicaset-controller", "create", "pods"),
    ("deployment-controller", "create", "replicasets.apps"),
    ("daemon-set-controller", "create", "controllerrevisions.apps"),
    ("job-controller", "update", "jobs.batch/status"),
    ("job-controller", "update", "jobs.batch/finalizers"),
    ("cronjob-controller", "create", "jobs.batch"),
    ("disruption-controller", "update", "poddisruptionbudgets.policy/status"),
    ("disruption-controller", "get", "replicasets.apps/scale"),
    ("endpointslice-controller", "create", "endpointslices.discovery.k8s.io"),
    ("endpoint-controller", "update", "endpoints"),
    ("generic-garbage-collector", "patch", "replicasets.apps"),
    ("namespace-controller", "update", "namespaces/finalize"),
    ("namespace-controller", "deletecollection", "jobs.batch"),
    ("ttl-after-finished-controller", "delete", "jobs.batch"),
    ("pod-garbage-collector", "delete", "pods"),
    ("node-controller", "delete", "pods"),
    ("taint-eviction-controller", "delete", "pods"),
]
CANNOT = [
    ("job-controller", "delete", "jobs.batch"),
    ("replicaset-controller", "delete", "replicasets.apps"),
    ("ttl-after-finished-controller", "create", "pods"),
]


def can_i(api, user: str, verb: str, resource: str, ns: str = "default") -> bool:
    sub = []
    if "/" in resource:
        resource, sub = resource.split("/", 1)[0], ["--subresource=" + resource.split("/", 1)[1]]
    res = api.kubectl("auth", "can-i", verb, resource, *sub, "-n", ns, "--as", user, check=False)
    return res.stdout.strip() == "yes"


def test_controller_roles(api):
    for name, verb, resource in CAN:
        assert can_i(api, SA + name, verb, resource), (name, verb, resource)
    for name, verb, resource in CANNOT:
        assert not can_i(api, SA + name, verb, resource), (name, verb, resource)


def test_edit_and_view_users(api):
    api.kubectl("create", "ns", "team")
    api.kubectl("create", "rolebinding", "eve-edit", "-n", "team", "--clusterrole=edit", "--user=eve")
    api.kubectl("create", "rolebinding", "vic-view", "-n", "team", "--clusterrole=view", "--user=vic")
    for verb, resource in (
        ("create", "replicasets.apps"),
        ("patch", "replicasets.apps/scale"),
        ("create", "jobs.batch"),
        ("create", "cronjobs.batch"),
        ("create", "poddisruptionbudgets.policy"),
        ("create", "pods/eviction"),
        ("delete", "endpointslices.discovery.k8s.io"),
    ):
        assert can_i(api, "eve", verb, resource, "team"), (verb, resource)
        assert not can_i(api, "vic", verb, resource, "team"), (verb, resource)
    for resource in ("replicasets.apps", "controllerrevisions.apps", "jobs.batch", "cronjobs.batch"):
        assert can_i(api, "vic", "list", resource, "team")
    assert not can_i(api, "eve", "create", "controllerrevisions.apps", "team")
    assert not can_i(api, "eve", "update", "poddisruptionbudgets.policy/status", "team")
    kubeconfig = api.kubeconfig_for("eve")
    api.kubectl("create", "job", "j", "-n", "team", "--image=busybox", kubeconfig=kubeconfig)
    api.kubectl("create", "pdb", "p", "-n", "team", "--selector=a=b", "--min-available=1", kubeconfig=kubeconfig)
    out = api.kubectl("get", "jobs,pdb", "-n", "team", "-o", "json", kubeconfig=kubeconfig).stdout
    assert {i["kind"] for i in json.loads(out)["items"]} == {"Job", "PodDisruptionBudget"}
    denied = api.kubectl("get", "jobs", "-n", "default", kubeconfig=kubeconfig, check=False)
    assert 'User "eve" cannot list resource "jobs" in API group "batch" in the namespace "default"' in denied.stderr
