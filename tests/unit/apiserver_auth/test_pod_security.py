"""Pod Security admission: every check's wording at v1.33, version-dependent checks, label parsing, the plugin's
enforce/audit/warn outcomes, exemptions, templates and the namespace dry-run warnings."""

from __future__ import annotations

import pytest

from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, AdmissionError, Operation
from pykubeadm.apiserver.admission.podsecurity import PodSecurity, parse_pod_security_config
from pykubeadm.apiserver.admission.podsecurity.checks import describe, evaluate
from pykubeadm.apiserver.admission.podsecurity.policy import LevelVersion, Policy, policy_to_evaluate
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.messages import StatusError
from pykubeadm.apiserver.objects import DictObjectSource

USER = UserInfo("alice", groups=("system:authenticated",))
GOOD = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "c",
            "image": "x",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
}


def spec_with(**container_sc) -> dict:
    return {"containers": [{"name": "c", "image": "x", "securityContext": container_sc}]}


@pytest.mark.parametrize(
    ("spec", "meta", "expected"),
    [
        (
            {"hostNetwork": True, "hostPID": True, "containers": []},
            {},
            "host namespaces (hostNetwork=true, hostPID=true)",
        ),
        (spec_with(privileged=True), {}, 'privileged (container "c" must not set securityContext.privileged=true)'),
        (
            spec_with(capabilities={"add": ["NET_ADMIN", "CHOWN", "SYS_ADMIN"]}),
            {},
            'non-default capabilities (container "c" must not include "NET_ADMIN", "SYS_ADMIN" in '
            "securityContext.capabilities.add)",
        ),
        (
            {"containers": [], "volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "hostPath": {}}]},
            {},
            'hostPath volumes (volumes "a", "b")',
        ),
        (
            {
                "containers": [
                    {"name": "a", "ports": [{"hostPort": 80}, {"hostPort": 443}]},
                    {"name": "b", "ports": [{"hostPort": 80}]},
                ]
            },
            {},
            'hostPort (containers "a", "b" use hostPorts 443, 80)',
        ),
        (
            spec_with(appArmorProfile={"type": "Unconfined"}),
            {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
            'forbidden AppArmor profiles (container "c" and annotation must not set AppArmor profile type to '
            '"Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined"")',
        ),
        (
            {"securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "u"}}, "containers": []},
            {},
            'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)',
        ),
        (
            spec_with(procMount="Unmasked"),
            {},
            'procMount (container "c" must not set securityContext.procMount to "Unmasked")',
        ),
        (
            spec_with(seccompProfile={"type": "Unconfined"}),
            {},
            'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
        ),
        (
            {
                "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem"}, {"name": "kernel.msgmax"}]},
                "containers": [],
            },
            {},
            "forbidden sysctls (kernel.msgmax)",
        ),
        (
            {"securityContext": {"windowsOptions": {"hostProcess": True}}, "containers": []},
            {},
            "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
        ),
    ],
)
def test_each_baseline_check_words_its_violation_as_kube(spec, meta, expected):
    assert describe(evaluate("baseline", None, meta, spec)) == expected


def test_restricted_lists_every_violation_in_kubes_order():
    spec = {
        "securityContext": {"runAsUser": 0},
        "volumes": [{"name": "v", "nfs": {"server": "s", "path": "/"}}],
        "containers": [{"name": "c", "image": "x", "securityContext": {"capabilities": {"add": ["NET_RAW"]}}}],
    }
    assert describe(evaluate("restricted", None, {}, spec)) == (
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]; container "c" '
        'must not include "NET_RAW" in securityContext.capabilities.add), '
        'restricted volume types (volume "v" uses restricted volume type "nfs"), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        "runAsUser=0 (pod must not set runAsUser=0), "
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    )
    assert evaluate("restricted", None, {}, GOOD) == []


def test_policy_versions_select_the_checks_of_that_release():
    # v1.21 restricted has no capabilities_restricted or runAsUser check: the baseline capability check stands.
    spec = {**GOOD, "securityContext": {**GOOD["securityContext"], "runAsUser": 0}}
    spec["containers"] = [{**GOOD["containers"][0], "securityContext": {"allowPrivilegeEscalation": False}}]
    assert evaluate("restricted", 21, {}, spec) == []
    assert [r for r, _ in evaluate("restricted", 23, {}, spec)] == ["unrestricted capabilities", "runAsUser=0"]
    sysctl = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_keepalive_time"}]}, "containers": []}
    assert evaluate("baseline", 28, {}, sysctl) == [("forbidden sysctls", "net.ipv4.tcp_keepalive_time")]
    assert evaluate("baseline", 29, {}, sysctl) == []
    # Windows Pods skip the Linux-only restricted checks from v1.25.
    win = {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True}, "containers": [{"name": "c"}]}
    assert evaluate("restricted", None, {}, win) == []
    # Versions newer than this apiserver evaluate as latest; a probe host is only checked from v1.34 on.
    probe = {"containers": [{"name": "c", "livenessProbe": {"httpGet": {"host": "1.2.3.4", "port": 80}}}]}
    assert evaluate("baseline", 40, {}, probe) == []


def test_labels_parse_like_kube():
    p, errs = policy_to_evaluate({"pod-security.kubernetes.io/enforce": "baseline"}, Policy())
    assert (str(p.enforce), str(p.warn), str(p.audit)) == ("baseline:latest", "baseline:latest", "privileged:latest")
    p, errs = policy_to_evaluate(
        {"pod-security.kubernetes.io/warn": "nope", "pod-security.kubernetes.io/enforce-version": "v1.25"}, Policy()
    )
    assert str(p.warn) == "privileged:latest" and str(p.enforce) == "privileged:v1.25"
    assert errs == [("pod-security.kubernetes.io/warn", "nope", "must be one of privileged, baseline, restricted")]
    _, errs = policy_to_evaluate({"pod-security.kubernetes.io/audit-version": "1.25"}, Policy())
    assert errs[0][2] == 'must be "latest" or "v1.x"'


def pod_attrs(op, ns="ns", spec=None, old=None, user=USER, resource="pods", group="", sub=""):
    obj = {"metadata": {"name": "p", "namespace": ns}, "spec": spec or {"containers": [{"name": "c", "image": "x"}]}}
    return AdmissionAttributes(op, resource, user, namespace=ns, name="p", group=group, subresource=sub, obj=obj,
                               old_obj=old)  # fmt: skip


def source_with(labels: dict[str, str], pods=()) -> DictObjectSource:
    src = DictObjectSource()
    src.put("namespaces", {"metadata": {"name": "ns", "labels": labels}})
    for p in pods:
        src.put("pods", p)
    return src


async def test_enforce_refuses_and_audit_and_warn_are_recorded():
    plugin = PodSecurity(source_with({"pod-security.kubernetes.io/enforce": "baseline",
                                      "pod-security.kubernetes.io/audit": "restricted"}))  # fmt: skip
    record = recorder.begin()
    with pytest.raises(AdmissionError) as e:
        await plugin.validate(pod_attrs(Operation.CREATE, spec=spec_with(privileged=True)))
    assert e.value.code == 403 and e.value.message.startswith(
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c"'
    )
    assert record.annotations["pod-security.kubernetes.io/enforce-policy"] == "baseline:latest"
    assert record.annotations["pod-security.kubernetes.io/audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": privileged'
    )
    assert record.warnings == []  # no warnings on a refused request


async def test_warn_only_for_templates_and_unchanged_pod_updates_pass():
    plugin = PodSecurity(source_with({"pod-security.kubernetes.io/enforce": "baseline"}))
    record = recorder.begin()
    deploy = {"metadata": {"name": "d"}, "spec": {"template": {"spec": spec_with(privileged=True)}}}
    await plugin.validate(AdmissionAttributes(Operation.CREATE, "deployments", USER, namespace="ns", name="d",
                                              group="apps", obj=deploy))  # fmt: skip
    assert record.warnings == [
        'would violate PodSecurity "baseline:latest": privileged (container "c" must not set '
        "securityContext.privileged=true)"
    ]
    old = {"metadata": {"name": "p"}, "spec": spec_with(privileged=True)}
    await plugin.validate(pod_attrs(Operation.UPDATE, spec=spec_with(privileged=True), old=old))  # image unchanged
    await plugin.validate(pod_attrs(Operation.UPDATE, spec=spec_with(privileged=True), old=old, sub="status"))
    changed = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "y"}]}}
    with pytest.raises(AdmissionError):
        await plugin.validate(pod_attrs(Operation.UPDATE, spec=spec_with(privileged=True), old=changed))


async def test_exemptions_and_defaults_from_the_configuration():
    config = parse_pod_security_config(
        {
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "baseline", "enforce-version": "v1.30"},
            "exemptions": {"usernames": ["ops"], "runtimeClasses": ["kata"]},
        }
    )
    assert config.defaults.enforce == LevelVersion("baseline", 30)
    plugin = PodSecurity(source_with({}), config)
    recorder.begin()
    with pytest.raises(AdmissionError, match=r'violates PodSecurity "baseline:v1\.30"'):
        await plugin.validate(pod_attrs(Operation.CREATE, spec=spec_with(privileged=True)))
    record = recorder.begin()
    await plugin.validate(pod_attrs(Operation.CREATE, spec=spec_with(privileged=True), user=UserInfo("ops")))
    assert record.annotations == {"pod-security.kubernetes.io/exempt": "user"}
    record = recorder.begin()
    await plugin.validate(pod_attrs(Operation.CREATE, spec={**spec_with(privileged=True), "runtimeClassName": "kata"}))
    assert record.annotations == {"pod-security.kubernetes.io/exempt": "runtimeClass"}
    with pytest.raises(ValueError, match=r"defaults\.warn: Invalid value"):
        parse_pod_security_config({"apiVersion": "pod-security.admission.config.k8s.io/v1",
                                   "kind": "PodSecurityConfiguration", "defaults": {"warn": "strict"}})  # fmt: skip


async def test_tightened_enforce_label_dry_runs_existing_pods():
    pods = [
        {"metadata": {"name": n, "namespace": "ns"}, "spec": spec_with(privileged=True)} for n in ("b", "a", "c")
    ] + [{"metadata": {"name": "h", "namespace": "ns"}, "spec": {"hostPID": True, "containers": []}}]
    plugin = PodSecurity(source_with({}, pods))
    ns_old = {"metadata": {"name": "ns", "labels": {}}}
    ns_new = {"metadata": {"name": "ns", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    record = recorder.begin()
    await plugin.validate(
        AdmissionAttributes(Operation.UPDATE, "namespaces", USER, name="ns", obj=ns_new, old_obj=ns_old)
    )
    assert record.warnings == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"',
        "a (and 2 other pods): privileged",
        "h: host namespaces",
    ]
    bad = {"metadata": {"name": "ns", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}}
    with pytest.raises(StatusError) as e:
        await plugin.validate(
            AdmissionAttributes(Operation.UPDATE, "namespaces", USER, name="ns", obj=bad, old_obj=ns_old)
        )
    assert e.value.code == 422
