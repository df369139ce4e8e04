"""The PodSecurity admission plugin (kube-apiserver's in-tree Pod Security admission, v1.33).

Pods are checked against the namespace's `enforce` level (refused: `pods "x" is forbidden: violates PodSecurity
"restricted:latest": …`), `audit` (audit annotation `pod-security.kubernetes.io/audit-violations`) and `warn`
(a `Warning` header); Pod-template workloads against `audit` and `warn` only. A namespace whose `enforce` label
tightens is dry-run against its existing Pods (warnings). Exemptions and defaults come from the
PodSecurityConfiguration of --admission-control-config-file; without one every mode is `privileged:latest`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.admission.podsecurity import checks
from pykubeadm.apiserver.admission.podsecurity.policy import (
    LABEL_PREFIX,
    LevelVersion,
    Policy,
    compare_levels,
    parse_level,
    parse_version,
    policy_to_evaluate,
)
from pykubeadm.apiserver.authz.messages import StatusError, invalid_error
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["PodSecurity", "PodSecurityConfig", "parse_pod_security_config"]

Obj = dict[str, Any]

_CONFIG_VERSIONS = (
    "pod-security.admission.config.k8s.io/v1",
    "pod-security.admission.config.k8s.io/v1beta1",
    "pod-security.admission.config.k8s.io/v1alpha1",
)
#: Pod subresources that cannot change what the checks read.
_IGNORED_POD_SUBRESOURCES = frozenset(
    {"exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"}
)
#: (group, resource) → path from the object to its Pod template.
_TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "podtemplates"): ("template",),
    ("", "replicationcontrollers"): ("spec", "template"),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}
#: The most existing Pods a namespace label change is dry-run against (kube's namespaceMaxPodsToCheck).
MAX_PODS_TO_CHECK = 3000


@dataclass(frozen=True)
class PodSecurityConfig:
    defaults: Policy = field(default_factory=Policy)
    exempt_usernames: frozenset[str] = frozenset()
    exempt_namespaces: frozenset[str] = frozenset()
    exempt_runtime_classes: frozenset[str] = frozenset()


def parse_pod_security_config(doc: Obj) -> PodSecurityConfig:
    """A PodSecurityConfiguration object; raises ValueError naming the bad field."""
    if not doc:
        return PodSecurityConfig()
    if doc.get("kind") != "PodSecurityConfiguration" or doc.get("apiVersion") not in _CONFIG_VERSIONS:
        raise ValueError(
            f'PodSecurity: configuration must be kind "PodSecurityConfiguration", apiVersion "{_CONFIG_VERSIONS[0]}"'
        )
    defaults = doc.get("defaults") or {}
    modes: dict[str, LevelVersion] = {}
    for mode in ("enforce", "audit", "warn"):
        level, err = parse_level(str(defaults.get(mode) or "privileged"))
        if err:
            raise ValueError(f'PodSecurity: defaults.{mode}: Invalid value: "{defaults.get(mode)}": {err}')
        minor, err = parse_version(str(defaults.get(f"{mode}-version") or "latest"))
        if err:
            raise ValueError(
                f'PodSecurity: defaults.{mode}-version: Invalid value: "{defaults.get(f"{mode}-version")}": {err}'
            )
        modes[mode] = LevelVersion(level, minor)
    exemptions = doc.get("exemptions") or {}
    lists: dict[str, frozenset[str]] = {}
    for key in ("usernames", "namespaces", "runtimeClasses"):
        values = exemptions.get(key) or []
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"PodSecurity: exemptions.{key}: must be a list of non-empty strings")
        lists[key] = frozenset(values)
    return PodSecurityConfig(
        Policy(modes["enforce"], modes["audit"], modes["warn"]),
        lists["usernames"],
        lists["namespaces"],
        lists["runtimeClasses"],
    )


def _dig(obj: Obj | None, path: tuple[str, ...]) -> Obj | None:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj if isinstance(obj, dict) else None


def _images_changed(pod: Obj, old: Obj) -> bool:
    """kube's isSignificantPodUpdate: container images, container counts or a new ephemeral container."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        new_c, old_c = spec.get(key) or [], old_spec.get(key) or []
        if len(new_c) != len(old_c) or any(a.get("image") != b.get("image") for a, b in zip(new_c, old_c, strict=True)):
            return True
    old_eph = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    for c in spec.get("ephemeralContainers") or []:
        if c.get("name") not in old_eph or old_eph[c.get("name")].get("image") != c.get("image"):
            return True
    return False


def _annotate(key: str, value: str) -> None:
    recorder.annotate(LABEL_PREFIX + key, value)


class PodSecurity:
    name = "PodSecurity"

    def __init__(self, source: ObjectSource, config: PodSecurityConfig | None = None):
        self._source = source
        self.config = config or PodSecurityConfig()

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        key = (attrs.group, attrs.resource)
        if key == ("", "namespaces"):
            if not attrs.subresource:
                await self._validate_namespace(attrs)
        elif key == ("", "pods"):
            if attrs.subresource not in _IGNORED_POD_SUBRESOURCES:
                await self._validate_pod(attrs)
        elif key in _TEMPLATE_PATHS and not attrs.subresource:
            await self._validate_template(attrs, _TEMPLATE_PATHS[key])

    # --- namespaces -------------------------------------------------------------------------------------------------

    def _invalid(self, attrs: AdmissionAttributes, errors: list[tuple[str, str, str]]) -> StatusError:
        name = ((attrs.obj or {}).get("metadata") or {}).get("name", "")
        causes = [("FieldValueInvalid", f"metadata.labels[{k}]", f'Invalid value: "{v}": {m}') for k, v, m in errors]
        return invalid_error("Namespace", "", name, causes)

    async def _validate_namespace(self, attrs: AdmissionAttributes) -> None:
        labels = ((attrs.obj or {}).get("metadata") or {}).get("labels") or {}
        name = ((attrs.obj or {}).get("metadata") or {}).get("name", "") or attrs.name
        new_policy, new_errors = policy_to_evaluate(labels, self.config.defaults)
        if attrs.operation is Operation.CREATE:
            if new_errors:
                raise self._invalid(attrs, new_errors)
            if name in self.config.exempt_namespaces:
                self._warn_exempt(name, new_policy, labels)
            return
        old_labels = ((attrs.old_obj or {}).get("metadata") or {}).get("labels") or {}
        old_policy, old_errors = policy_to_evaluate(old_labels, self.config.defaults)
        if new_errors and (not old_errors or new_errors != old_errors):
            raise self._invalid(attrs, new_errors)
        new, old = new_policy.enforce, old_policy.enforce
        if new == old or new.level == "privileged":
            return
        if new.minor == old.minor and compare_levels(new.level, old.level) < 1:
            return
        if name in self.config.exempt_namespaces:
            self._warn_exempt(name, new_policy, labels)
            return
        for text in await self._dry_run_pods(name, new):
            recorder.warn(text)

    def _warn_exempt(self, namespace: str, policy: Policy, labels: dict[str, str]) -> None:
        if policy.fully_privileged() or policy.equivalent(self.config.defaults):
            return
        parts = []
        for mode in ("enforce", "audit", "warn"):
            lv: LevelVersion = getattr(policy, mode)
            if lv.level != "privileged" and (
                LABEL_PREFIX + mode in labels or LABEL_PREFIX + mode + "-version" in labels
            ):
                parts.append(f"{mode}={lv}")
        recorder.warn(
            f'namespace "{namespace}" is exempt from Pod Security, and the policy ({", ".join(parts)}) will be ignored'
        )

    async def _dry_run_pods(self, namespace: str, enforce: LevelVersion) -> list[str]:
        pods = [p for p in await self._source.list("pods", namespace) if not self._exempt_runtime_class(p.get("spec"))]
        # One Pod per controller first (replicas share their violations), then the other replicas.
        first, rest, seen = [], [], set()
        for pod in pods:
            owner = next(
                (r for r in (pod.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None
            )
            if owner is None or owner.get("uid") not in seen:
                first.append(pod)
                if owner is not None:
                    seen.add(owner.get("uid"))
            else:
                rest.append(pod)
        ordered = first + rest
        total, checked = len(ordered), ordered[:MAX_PODS_TO_CHECK]
        counts: dict[str, tuple[str, int]] = {}
        order: list[str] = []
        for pod in checked:
            found = checks.evaluate(enforce.level, enforce.minor, pod.get("metadata") or {}, pod.get("spec") or {})
            if not found:
                continue
            warning = checks.reasons(found)
            pod_name = (pod.get("metadata") or {}).get("name", "")
            if warning not in counts:
                order.append(warning)
                counts[warning] = (pod_name, 1)
            else:
                first_name, n = counts[warning]
                counts[warning] = (min(first_name, pod_name), n + 1)
        out = []
        if len(checked) < total:
            out.append(
                f"new PodSecurity enforce level only checked against the first {len(checked)} of {total} existing pods"
            )
        if order:
            out.append(
                f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level "{enforce}"'
            )
        decorated = []
        for warning in order:
            pod_name, n = counts[warning]
            if n == 1:
                decorated.append(f"{pod_name}: {warning}")
            elif n == 2:
                decorated.append(f"{pod_name} (and 1 other pod): {warning}")
            else:
                decorated.append(f"{pod_name} (and {n - 1} other pods): {warning}")
        return out + sorted(decorated)

    # --- pods and templates -----------------------------------------------------------------------------------------

    def _exempt_runtime_class(self, spec: Obj | None) -> bool:
        rc = (spec or {}).get("runtimeClassName")
        return bool(rc) and rc in self.config.exempt_runtime_classes

    def _exempt(self, attrs: AdmissionAttributes) -> bool:
        if attrs.namespace and attrs.namespace in self.config.exempt_namespaces:
            _annotate("exempt", "namespace")
            return True
        if attrs.user.name and attrs.user.name in self.config.exempt_usernames:
            _annotate("exempt", "user")
            return True
        return False

    async def _namespace_policy(self, attrs: AdmissionAttributes) -> tuple[Policy, list[tuple[str, str, str]]]:
        ns = await self._source.get("namespaces", "", attrs.namespace)
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
        return policy_to_evaluate(labels, self.config.defaults)

    async def _validate_pod(self, attrs: AdmissionAttributes) -> None:
        if self._exempt(attrs):
            return
        policy, errors = await self._namespace_policy(attrs)
        if not errors and policy.fully_privileged():
            _annotate("enforce-policy", str(LevelVersion("privileged", None)))
            return
        pod = attrs.obj or {}
        if attrs.operation is Operation.UPDATE and not _images_changed(pod, attrs.old_obj or {}):
            return
        self._evaluate(attrs, policy, errors, pod.get("metadata") or {}, pod.get("spec") or {}, enforce=True)

    async def _validate_template(self, attrs: AdmissionAttributes, path: tuple[str, ...]) -> None:
        if self._exempt(attrs):
            return
        policy, errors = await self._namespace_policy(attrs)
        if not errors and policy.warn.level == "privileged" and policy.audit.level == "privileged":
            return
        template = _dig(attrs.obj, path)
        if template is None:
            return
        self._evaluate(attrs, policy, errors, template.get("metadata") or {}, template.get("spec") or {}, enforce=False)

    def _evaluate(
        self,
        attrs: AdmissionAttributes,
        policy: Policy,
        errors: list[tuple[str, str, str]],
        meta: Obj,
        spec: Obj,
        *,
        enforce: bool,
    ) -> None:
        if self._exempt_runtime_class(spec):
            _annotate("exempt", "runtimeClass")
            return
        if errors:
            _annotate(
                "error",
                "Failed to parse policy: "
                + "; ".join(f'metadata.labels[{k}]: Invalid value: "{v}": {m}' for k, v, m in errors),
            )
        results: dict[LevelVersion, list[checks.Violation]] = {}

        def run(lv: LevelVersion) -> list[checks.Violation]:
            if lv not in results:
                results[lv] = checks.evaluate(lv.level, lv.minor, meta, spec)
            return results[lv]

        denial = None
        if enforce:
            _annotate("enforce-policy", str(policy.enforce))
            if found := run(policy.enforce):
                denial = forbidden(attrs, f'violates PodSecurity "{policy.enforce}": {checks.describe(found)}')
        if found := run(policy.audit):
            _annotate("audit-violations", f'would violate PodSecurity "{policy.audit}": {checks.describe(found)}')
        if denial is not None:
            raise denial
        if found := run(policy.warn):
            recorder.warn(f'would violate PodSecurity "{policy.warn}": {checks.describe(found)}')
