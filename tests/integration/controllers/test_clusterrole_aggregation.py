"""The clusterrole-aggregation controller (kube's `clusterrole-aggregation-controller`) against our apiserver: a
ClusterRole labelled `rbac.authorization.k8s.io/aggregate-to-view: "true"` (as metrics-server's
system:aggregated-metrics-reader is) lands in `view`, and through `view` in `edit` and `admin`; a user bound to
`view` can then read pods.metrics.k8s.io (a SubjectAccessReview: with no metrics API served kubectl's `auth can-i`
cannot resolve the group); the rules leave with the role."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from harness import ControllerManager, wait_until

from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration]

METRICS_RULE = {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}


def _role(api: ApiServer, name: str) -> dict:
    import json

    return json.loads(api.kubectl("get", "clusterrole", name, "-o", "json").stdout)


def _can_i(api: ApiServer, kubeconfig, *args: str) -> str:
    return api.kubectl("auth", "can-i", *args, kubeconfig=kubeconfig, check=False).stdout.strip()


def _may_read_metrics(api: ApiServer, user: str, resource: str) -> bool:
    from kubernetes import client

    review = client.AuthorizationV1Api(api.python_client()).create_subject_access_review(
        {
            "spec": {
                "user": user,
                "resourceAttributes": {"namespace": "default", "verb": "list", "group": "metrics.k8s.io",
                                       "resource": resource},
            }
        }
    )  # fmt: skip
    return bool(review.status.allowed)


def test_labelled_role_aggregates_into_view_edit_admin(api: ApiServer, start_kcm: Callable[..., ControllerManager]):
    if _can_i(api, None, "get", "pods") != "yes":
        pytest.skip("kubectl cannot reach the apiserver")
    start_kcm(extra_flags=["--controllers=clusterrole-aggregation-controller"])
    viewer = api.kubeconfig_for("alice")
    api.kubectl("create", "clusterrolebinding", "alice-view", "--clusterrole=view", "--user=alice")
    assert _can_i(api, viewer, "list", "pods") == "yes"  # view's own rules
    assert not _may_read_metrics(api, "alice", "pods")
    base = _role(api, "view")["rules"]

    api.kubectl(
        "apply",
        "-f",
        "-",
        input=(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n"
            "  name: test:aggregated-metrics-reader\n  labels:\n"
            '    rbac.authorization.k8s.io/aggregate-to-view: "true"\n'
            "rules:\n- apiGroups: [metrics.k8s.io]\n  resources: [pods, nodes]\n  verbs: [get, list, watch]\n"
        ),
    )
    for name in ("view", "edit", "admin"):
        wait_until(lambda n=name: METRICS_RULE in _role(api, n)["rules"], 20, 0.2, what=f"{name} aggregating the role")
    view = _role(api, "view")["rules"]
    assert view[: len(base)] == base and view.count(METRICS_RULE) == 1
    assert wait_until(lambda: _may_read_metrics(api, "alice", "pods"), 10, 0.2, what="alice reading pod metrics")
    assert _may_read_metrics(api, "alice", "nodes")
    assert _can_i(api, viewer, "create", "pods") == "no"

    # Direct edits of an aggregated role's rules are stomped, as the API documents.
    api.kubectl("patch", "clusterrole", "view", "--type=merge", "-p", '{"rules":[]}')
    wait_until(lambda: _role(api, "view")["rules"] == view, 20, 0.2, what="view's rules put back")

    api.kubectl("delete", "clusterrole", "test:aggregated-metrics-reader")
    for name in ("view", "edit", "admin"):
        wait_until(lambda n=name: METRICS_RULE not in _role(api, n)["rules"], 20, 0.2, what=f"{name} dropping it")
    assert _role(api, "view")["rules"] == base
    assert wait_until(lambda: not _may_read_metrics(api, "alice", "pods"), 10, 0.2, what="alice losing it")
