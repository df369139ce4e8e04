"""The audit Policy's rule matching and validation, and the log backend's formats and rotation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykubeadm.apiserver.audit.logbackend import LogBackend, legacy_line
from pykubeadm.apiserver.audit.policy import AuditPolicyError, RequestAttrs, load_policy, parse_policy


def policy(*rules: dict, **top: object) -> dict:
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top}


def res(
    resource: str,
    verb: str = "get",
    ns: str = "default",
    group: str = "",
    sub: str = "",
    name: str = "x",
    user: str = "alice",
    groups: tuple[str, ...] = ("system:authenticated",),
) -> RequestAttrs:
    return RequestAttrs(user, groups, verb, True, "/p", ns, group, resource, sub, name)


def nonres(path: str, user: str = "alice") -> RequestAttrs:
    return RequestAttrs(user, ("system:authenticated",), "get", False, path)


def test_first_matching_rule_decides_and_no_match_is_none() -> None:
    p = parse_policy(
        policy(
            {"level": "None", "users": ["system:kube-proxy"], "verbs": ["watch"]},
            {
                "level": "Metadata",
                "resources": [{"group": "", "resources": ["secrets", "configmaps"]}],
                "omitStages": ["RequestReceived"],
            },
            {
                "level": "RequestResponse",
                "resources": [{"group": "apps", "resources": ["deployments/scale", "*/status"]}],
            },
            {"level": "Request", "userGroups": ["system:nodes"], "namespaces": ["kube-system"]},
            {"level": "Metadata", "nonResourceURLs": ["/healthz*", "/version"]},
            omitStages=["Panic"],
            omitManagedFields=True,
        )
    )
    d = p.evaluate(res("secrets"))
    assert d.level == "Metadata" and d.omit_stages == {"RequestReceived", "Panic"} and d.omit_managed_fields
    assert p.evaluate(res("secrets", verb="watch", user="system:kube-proxy")).level == "None"
    assert p.evaluate(res("deployments", group="apps", sub="scale")).level == "RequestResponse"
    assert p.evaluate(res("daemonsets", group="apps", sub="status")).level == "RequestResponse"
    assert p.evaluate(res("deployments", group="apps")).level == "None"
    assert p.evaluate(res("pods", ns="kube-system", groups=("system:nodes",))).level == "Request"
    assert p.evaluate(res("pods", ns="default", groups=("system:nodes",))).level == "None"
    assert p.evaluate(nonres("/healthz/etcd")).level == "Metadata"
    assert p.evaluate(nonres("/version")).level == "Metadata"
    assert p.evaluate(nonres("/versions")).level == "None"


def test_resource_names_and_pod_subresource_wildcard() -> None:
    p = parse_policy(
        policy(
            {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"], "resourceNames": ["cfg"]}]},
            {"level": "Metadata", "resources": [{"group": "", "resources": ["pods/*"]}]},
        )
    )
    assert p.evaluate(res("configmaps", name="cfg")).level == "Request"
    assert p.evaluate(res("configmaps", name="other")).level == "None"
    assert p.evaluate(res("pods", sub="log")).level == "Metadata"
    assert p.evaluate(res("pods")).level == "None"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (policy({"level": "Everything"}), 'rules[0].level: Unsupported value: "Everything"'),
        (policy({"verbs": ["get"]}), "rules[0].level: Required value"),
        (policy({"level": "Metadata", "omitStages": ["Done"]}), 'rules[0].omitStages[0]: Unsupported value: "Done"'),
        (policy({"level": "Metadata", "nonResourceURLs": ["/a*b"]}), "rules[0].nonResourceURLs[0]: Invalid value"),
        (
            policy({"level": "Metadata", "nonResourceURLs": ["/a"], "resources": [{"resources": ["pods"]}]}),
            "both regular resources and non-resource URLs",
        ),
        ({"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy", "rules": []}, "apiVersion/kind: Invalid value"),
        (policy(), "rules: Required value"),
    ],
)
def test_invalid_policies_name_the_field(doc: dict, message: str) -> None:
    with pytest.raises(AuditPolicyError) as e:
        parse_policy(doc)
    assert message in str(e.value)


def test_load_policy_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(AuditPolicyError, match=f"failed to read file path {tmp_path}/nope"):
        load_policy(tmp_path / "nope")
    (tmp_path / "p.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Bogus\n")
    with pytest.raises(AuditPolicyError, match=f"invalid audit policy file {tmp_path}/p.yaml: rules\\[0\\].level"):
        load_policy(tmp_path / "p.yaml")


EVENT = {
    "kind": "Event",
    "apiVersion": "audit.k8s.io/v1",
    "level": "Metadata",
    "auditID": "a1",
    "stage": "ResponseComplete",
    "requestURI": "/api/v1/namespaces/default/secrets/s",
    "verb": "get",
    "user": {"username": "alice", "groups": ["g1", "g2"]},
    "sourceIPs": ["127.0.0.1"],
    "userAgent": "kubectl",
    "objectRef": {"resource": "secrets", "namespace": "default", "name": "s", "apiVersion": "v1"},
    "responseStatus": {"metadata": {}, "code": 200},
    "stageTimestamp": "2026-01-01T00:00:00.000000Z",
}


def test_legacy_format_line() -> None:
    assert legacy_line(EVENT) == (
        '2026-01-01T00:00:00.000000Z AUDIT: id="a1" stage="ResponseComplete" ip="127.0.0.1" method="get" '
        'user="alice" groups="g1,g2" as="<self>" asgroups="<lookup>" user-agent="kubectl" namespace="default" '
        'uri="/api/v1/namespaces/default/secrets/s" response="200"\n'
    )


def test_log_rotates_at_maxsize_and_keeps_maxbackup_files(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.log"
    backend = LogBackend(str(path), "json", max_size_mb=1, max_backups=2)
    line = len(json.dumps(EVENT)) + 1
    per_file = (1024 * 1024) // line
    for i in range((per_file + 1) * 4):
        backend({**EVENT, "auditID": str(i)})
    backend.close()
    backups = sorted(p.name for p in path.parent.iterdir() if p != path)
    assert len(backups) == 2 and all(b.startswith("audit-") and b.endswith(".log") for b in backups)
    assert path.stat().st_size <= 1024 * 1024 and oct(path.stat().st_mode)[-3:] == "600"
    last = path.read_text().splitlines()[-1]
    assert json.loads(last)["auditID"] == str((per_file + 1) * 4 - 1)


def test_micro_time_format() -> None:
    from pykubeadm.apiserver.middleware.audit import _micro

    assert _micro(0.5) == "1970-01-01T00:00:00.500000Z"
    assert _micro(1767225600.000123) == "2026-01-01T00:00:00.000123Z"
    assert _micro(1767225601.25) == "2026-01-01T00:00:01.250000Z"


async def test_lines_of_one_loop_turn_are_written_together(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "audit.log"
    backend = LogBackend(str(path))
    backend({**EVENT, "auditID": "1"})
    backend({**EVENT, "auditID": "2"})
    assert path.read_text() == ""  # queued until the loop turns
    await asyncio.sleep(0)
    assert [json.loads(x)["auditID"] for x in path.read_text().splitlines()] == ["1", "2"]
    backend({**EVENT, "auditID": "3"})
    backend.close()
    assert len(path.read_text().splitlines()) == 3
