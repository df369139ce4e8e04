"""Job strategy (batch/v1): kube 1.33's defaults, the generated selector and pod-template labels, an immutable
template, the Job table (NAME STATUS COMPLETIONS DURATION AGE) and the `status.successful` field label."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col, human_duration, parse_time
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable, field_invalid, required
from pykubeadm.apiserver.registry.jobspec import validate_job_spec
from pykubeadm.apiserver.registry.podspec import default_pod_spec
from pykubeadm.apiserver.registry.workloads import containers_images, labels_str, selector_string
from pykubeadm.apiserver.selectors import parse_label_selector
from pykubeadm.apiserver.status import Cause

__all__ = [
    "CONTROLLER_UID_LABEL",
    "JOB_NAME_LABEL",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "JobStrategy",
    "default_job_spec",
    "job_status",
]

#: The labels kube-apiserver puts on a Job's pod template (and the selector's key) when manualSelector is not true.
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
_MAX_INT32 = 2**31 - 1


def default_job_spec(spec: Obj) -> None:
    """SetDefaults_Job (batch/v1, 1.33) on a Job's spec."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = _MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    spec.setdefault("manualSelector", False)
    tmpl = spec.get("template")
    if isinstance(tmpl, dict):
        tmpl.setdefault("metadata", {})
        if isinstance(tmpl.get("spec"), dict):
            default_pod_spec(tmpl["spec"])


def _generate_selector(obj: Obj) -> None:
    """The Job strategy's generateSelector: job-name and controller-uid labels (both spellings) on the template, and
    the selector matching `batch.kubernetes.io/controller-uid`; labels the user set are kept (validation rejects
    wrong ones)."""
    meta, spec = obj["metadata"], obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
        return
    tmeta = spec["template"].setdefault("metadata", {})
    labels = tmeta.get("labels") or {}
    tmeta["labels"] = labels
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, meta.get("name", ""))
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, meta.get("uid", ""))
    selector = spec.get("selector")
    sel: dict[str, Any] = selector if isinstance(selector, dict) else {}
    spec["selector"] = sel
    match = sel.get("matchLabels") or {}
    sel["matchLabels"] = match
    match.setdefault(CONTROLLER_UID_LABEL, meta.get("uid", ""))


def _validate_generated(obj: Obj) -> list[Cause]:
    """validateGeneratedSelector: with a generated selector, the template carries this Job's uid and name labels and
    the selector matches the uid labels."""
    spec, meta = obj.get("spec") or {}, obj["metadata"]
    if spec.get("manualSelector") is True:
        return []
    uid, name = meta.get("uid", ""), meta.get("name", "")
    causes: list[Cause] = []
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    expected = {
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
    }
    for key, want in expected.items():
        if labels.get(key) != want:
            causes.append(
                field_invalid(f"spec.template.metadata.labels[{key}]", labels.get(key, ""), f"must be '{want}'")
            )
    sel = spec.get("selector")
    try:
        matches = parse_label_selector(selector_string(sel).replace("<none>", "")).matches(
            {LEGACY_CONTROLLER_UID_LABEL: uid, CONTROLLER_UID_LABEL: uid}
        )
    except Exception:
        matches = True  # an unparseable selector is reported by the selector rules
    if not matches:
        causes.append(field_invalid("spec.selector", selector_string(sel), "`selector` not auto-generated"))
    return causes


def _has_condition(obj: Obj, type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def job_status(obj: Obj) -> str:
    """The STATUS cell of `kubectl get jobs` (printJob)."""
    if _has_condition(obj, "Complete"):
        return "Complete"
    if _has_condition(obj, "Failed"):
        return "Failed"
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    for cond in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(obj, cond):
            return cond
    return "Running"


def completions_cell(obj: Obj) -> str:
    spec, succeeded = obj.get("spec") or {}, (obj.get("status") or {}).get("succeeded", 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism")
    if parallelism is not None and parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def duration_cell(obj: Obj) -> str:
    import datetime as dt

    status = obj.get("status") or {}
    start = parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = parse_time(status.get("completionTime")) or dt.datetime.now(dt.UTC)
    return human_duration((end - start).total_seconds())


class JobStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "Job"
    plural = "jobs"
    group = "batch"
    categories = ("all",)
    subresources = ("status",)
    track_generation = True
    field_labels: tuple[str, ...] = ("status.successful",)
    #: batch/v1 keeps its old default: a DELETE without a policy orphans the Job's Pods (kubectl sends Background).
    default_gc_policy = "OrphanDependents"

    def default_status(self) -> Obj | None:
        return {}

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_job_spec(spec)
            if spec.get("manualSelector") is not True:
                _generate_selector(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        if isinstance(obj.get("spec"), dict):
            default_job_spec(obj["spec"])

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec")]
        causes = validate_job_spec(spec, "spec")
        sel = spec.get("selector")
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not isinstance(sel, dict):
            causes.append(required("spec.selector"))
        else:
            try:
                matches = parse_label_selector(selector_string(sel).replace("<none>", "")).matches(labels)
            except Exception:
                matches = False
            if not matches:
                causes.append(
                    field_invalid(
                        "spec.template.metadata.labels",
                        labels_str(labels),
                        "`selector` does not match template `labels`",
                    )
                )
        return causes + _validate_generated(obj)

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        spec, ospec = obj.get("spec") or {}, old.get("spec") or {}
        if spec.get("selector") != ospec.get("selector"):
            causes.append(field_immutable("spec.selector", selector_string(spec.get("selector"))))
        if _template_changed(spec.get("template"), ospec.get("template"), _scheduling_mutable(old)):
            causes.append(field_immutable("spec.template", "core.PodTemplateSpec{...}"))
        for key in ("completions", "completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
            if spec.get(key) != ospec.get(key) and not (key == "completions" and _elastic(spec, ospec)):
                causes.append(field_immutable(f"spec.{key}", spec.get(key)))
        return causes

    def warnings_on_delete(self, options: dict[str, Any]) -> list[str]:
        if options.get("propagationPolicy") or options.get("orphanDependents") is not None:
            return []
        return [
            "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove "
            "them or set propagationPolicy=Orphan to suppress this warning"
        ]

    def get_attrs(self, obj: Obj) -> dict[str, str]:
        attrs = super().get_attrs(obj)
        attrs["status.successful"] = str((obj.get("status") or {}).get("succeeded", 0))
        return attrs

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Status", "string", "Status of the job."),
            col("Completions", "string", "The completion status of the job."),
            col("Duration", "string", "Time required to complete the job."),
            AGE_COL,
            col("Containers", "string", "Names of each container in the template.", priority=1),
            col("Images", "string", "Images referenced by each container in the template.", priority=1),
            col("Selector", "string", "A label query over pods that should match the pod count.", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        names, images = containers_images(obj)
        return [
            obj["metadata"].get("name", ""),
            job_status(obj),
            completions_cell(obj),
            duration_cell(obj),
            age(obj),
            names,
            images,
            selector_string((obj.get("spec") or {}).get("selector")),
        ]


#: Pod template fields a suspended Job that never started may still change (mutable scheduling directives).
_SCHEDULING_SPEC = ("nodeSelector", "tolerations", "affinity", "schedulingGates")
_SCHEDULING_META = ("labels", "annotations")


def _scheduling_mutable(old: Obj) -> bool:
    return bool((old.get("spec") or {}).get("suspend")) and not (old.get("status") or {}).get("startTime")


def _template_changed(new: Any, old: Any, scheduling_mutable: bool) -> bool:
    if not scheduling_mutable or not isinstance(new, dict) or not isinstance(old, dict):
        return new != old

    def strip(t: Obj) -> Obj:
        meta = {k: v for k, v in (t.get("metadata") or {}).items() if k not in _SCHEDULING_META}
        spec = {k: v for k, v in (t.get("spec") or {}).items() if k not in _SCHEDULING_SPEC}
        return {**t, "metadata": meta, "spec": spec}

    return strip(new) != strip(old)


def _elastic(spec: Obj, ospec: Obj) -> bool:
    """Elastic Indexed Jobs: completions may change together with parallelism, keeping them equal."""
    return (
        spec.get("completionMode") == "Indexed"
        and spec.get("completions") == spec.get("parallelism")
        and ospec.get("completions") == ospec.get("parallelism")
    )
