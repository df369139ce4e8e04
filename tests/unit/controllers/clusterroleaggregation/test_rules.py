"""aggregated_rules: kube's syncClusterRole rule set — per selector, the matching roles in name order (not the role
itself), each rule once (an empty list equals an absent one)."""

from pykubeadm.controllers.clusterroleaggregation import aggregated_rules


def _role(name, labels=None, rules=(), selectors=None):
    role = {"metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}
    if selectors is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return role


A = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
B = {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["list"]}
C = {"nonResourceURLs": ["/healthz"], "verbs": ["get"], "resourceNames": []}


def test_union_in_name_order_without_duplicates_or_itself():
    view = _role("view", {"to-edit": "true"}, [A], [{"matchLabels": {"to-view": "true"}}])
    roles = [
        _role("z-reader", {"to-view": "true"}, [B, A]),
        _role("a-reader", {"to-view": "true"}, [A]),
        _role("other", {}, [C]),
        view,
    ]
    assert aggregated_rules(view, roles) == [A, B]


def test_selectors_in_order_expressions_and_empty_lists():
    edit = _role(
        "edit",
        rules=[],
        selectors=[
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]},
            {"matchLabels": {"to-edit": "true"}},
        ],
    )
    roles = [
        _role("view", {"to-edit": "true"}, [A]),
        _role("x", {"tier": "x"}, [C]),
        _role("y", {"tier": "y"}, [B]),
        edit,
    ]
    assert aggregated_rules(edit, roles) == [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, A]
    assert aggregated_rules(_role("none", selectors=[]), roles) == []
