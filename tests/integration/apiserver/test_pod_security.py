"""Pod Security admission through the real kubectl: enforce refuses with kube's message listing every violation, warn
prints kube's warning (also for a Deployment's template), an enforce label tightened over an existing privileged Pod
prints the dry-run warnings, audit lands in the audit log, and an AdmissionConfiguration's exemptions and defaults
apply."""

import json

import pytest

from pykubeadm.testing.apiserver import running_apiserver

pytestmark = pytest.mark.integration

PRIV_POD = """
apiVersion: v1
kind: Pod
metadata: {name: priv}
spec:
  containers:
  - name: c
    image: busybox
    securityContext: {privileged: true}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostNetwork: true
      containers: [{name: web, image: nginx}]
"""


def make_namespace(api, name: str):
    """A namespace with its default ServiceAccount (no controller-manager runs here to make it)."""
    res = api.kubectl("create", "namespace", name)
    api.kubectl("create", "serviceaccount", "default", "-n", name)
    return res


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("psa")
    config = root / "admission.yaml"
    config.write_text(
        """
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {audit: baseline}
    exemptions: {namespaces: [exempt-ns]}
"""
    )
    with running_apiserver(root / "api", extra_flags=[f"--admission-control-config-file={config}"]) as server:
        yield server


def test_enforce_restricted_refuses_a_privileged_pod_with_every_violation(api, kubectl_available):
    make_namespace(api, "psa-enforce")
    api.kubectl("label", "namespace", "psa-enforce", "pod-security.kubernetes.io/enforce=restricted")
    res = api.kubectl("apply", "-n", "psa-enforce", "-f", "-", input=PRIV_POD, check=False)
    assert res.returncode != 0
    assert (
        'Error from server (Forbidden): error when creating "STDIN": pods "priv" is forbidden: violates PodSecurity '
        '"restricted:latest": privileged (container "c" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    ) in res.stderr
    assert api.kubectl("get", "pods", "-n", "psa-enforce", "-o", "name").stdout == ""


def test_label_tightening_enforce_warns_about_existing_pods(api, kubectl_available):
    make_namespace(api, "psa-label")
    api.kubectl("apply", "-n", "psa-label", "-f", "-", input=PRIV_POD)
    # warn alone does not dry-run existing Pods (kube checks only a tightened enforce level).
    res = api.kubectl("label", "namespace", "psa-label", "pod-security.kubernetes.io/warn=restricted")
    assert "Warning" not in res.stderr
    res = api.kubectl("label", "namespace", "psa-label", "pod-security.kubernetes.io/enforce=baseline")
    assert (
        'Warning: existing pods in namespace "psa-label" violate the new PodSecurity enforce level "baseline:latest"'
        in res.stderr
    )
    assert "Warning: priv: privileged" in res.stderr
    assert "namespace/psa-label labeled" in res.stdout


def test_warn_prints_kubes_warning_and_creates(api, kubectl_available):
    make_namespace(api, "psa-warn")
    api.kubectl("label", "namespace", "psa-warn", "pod-security.kubernetes.io/warn=baseline")
    res = api.kubectl("apply", "-n", "psa-warn", "-f", "-", input=PRIV_POD)
    assert (
        'Warning: would violate PodSecurity "baseline:latest": privileged (container "c" must not set '
        "securityContext.privileged=true)"
    ) in res.stderr
    assert "pod/priv created" in res.stdout
    res = api.kubectl("apply", "-n", "psa-warn", "-f", "-", input=DEPLOYMENT)
    assert 'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)' in res.stderr
    assert "deployment.apps/web created" in res.stdout


def test_audit_default_from_the_configuration_lands_in_the_audit_log(api, kubectl_available):
    make_namespace(api, "psa-audit")
    api.kubectl("apply", "-n", "psa-audit", "-f", "-", input=PRIV_POD)
    events = [json.loads(line) for line in api.audit_log.read_text().splitlines() if line.strip()]
    created = [
        e
        for e in events
        if e.get("verb") == "create"
        and (e.get("objectRef") or {}).get("namespace") == "psa-audit"
        and (e.get("objectRef") or {}).get("resource") == "pods"
    ]
    assert created, "no audit event for the Pod create"
    annotations = created[-1]["annotations"]
    assert annotations["pod-security.kubernetes.io/audit-violations"] == (
        'would violate PodSecurity "baseline:latest": privileged (container "c" must not set '
        "securityContext.privileged=true)"
    )
    assert annotations["pod-security.kubernetes.io/enforce-policy"] == "privileged:latest"


def test_exempt_namespace_is_not_enforced_and_says_so(api, kubectl_available):
    res = make_namespace(api, "exempt-ns")
    res = api.kubectl("label", "namespace", "exempt-ns", "pod-security.kubernetes.io/enforce=restricted")
    assert (
        'Warning: namespace "exempt-ns" is exempt from Pod Security, and the policy (enforce=restricted:latest) '
        "will be ignored"
    ) in res.stderr
    res = api.kubectl("apply", "-n", "exempt-ns", "-f", "-", input=PRIV_POD)
    assert "pod/priv created" in res.stdout


def test_invalid_label_value_is_refused(api, kubectl_available):
    make_namespace(api, "psa-bad")
    res = api.kubectl("label", "namespace", "psa-bad", "pod-security.kubernetes.io/enforce=strict", check=False)
    assert res.returncode != 0
    assert (
        'The Namespace "psa-bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: '
        '"strict": must be one of privileged, baseline, restricted'
    ) in res.stderr
