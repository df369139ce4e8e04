"""The built-in v1.33 kinds served by the generic registry (generic.py): one KindSpec each, with kube's short names,
categories, subresources, defaults and printer columns (pkg/printers/internalversion/printers.go). Read by
registry/__init__.py into STRATEGIES."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.registry.base import Obj
from pykubeadm.apiserver.registry.generic import Column, GenericStrategy, KindSpec, age_column
from pykubeadm.apiserver.registry.hpaconversion import drop_round_trip_annotations
from pykubeadm.apiserver.registry.workloads import containers_images, selector_string
from pykubeadm.apiserver.status import Cause

__all__ = ["GENERIC_KINDS", "generic_strategies"]


def _validate_policy(obj: Obj) -> list[Cause]:
    from pykubeadm.apiserver.admission.policy.validation import validate_policy

    return validate_policy(obj)


def _validate_webhook_configuration(obj: Obj) -> list[Cause]:
    from pykubeadm.apiserver.admission.policy.validation import validate_webhook_configuration

    return validate_webhook_configuration(obj)


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    cur = obj
    for p in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(p)
    return default if cur is None else cur


def labels_str(labels: Any) -> str:
    """labels.FormatLabels: `k=v,k2=v2` sorted, `<none>` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _join(values: list[Any] | None, empty: str = "<none>") -> str:
    vals = [str(v) for v in values or [] if v not in (None, "")]
    return ",".join(vals) if vals else empty


_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _access_modes(modes: list[str] | None) -> str:
    return ",".join(_MODES.get(m, m) for m in modes or [])


def _quota_pairs(obj: Obj, limits: bool) -> str:
    hard = _get(obj, "status", "hard", default={}) or _get(obj, "spec", "hard", default={})
    used = _get(obj, "status", "used", default={})
    out = []
    for k in sorted(hard):
        if k.startswith("limits.") != limits:
            continue
        out.append(f"{k}: {used.get(k, '0')}/{hard[k]}")
    return ", ".join(out)


def _pv_claim(obj: Obj) -> str:
    ref = _get(obj, "spec", "claimRef")
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, dict) else ""


def _hpa_targets(obj: Obj) -> str:
    metrics = _get(obj, "spec", "metrics", default=[])
    current = _get(obj, "status", "currentMetrics", default=[])
    out = []
    for i, m in enumerate(metrics):
        if m.get("type") == "Resource":
            target = _get(m, "resource", "target", default={})
            name = _get(m, "resource", "name", default="")
            cur = current[i] if i < len(current) and isinstance(current[i], dict) else {}
            if target.get("averageUtilization") is not None:
                now = _get(cur, "resource", "current", "averageUtilization")
                out.append(f"{name}: {'<unknown>' if now is None else f'{now}%'}/{target['averageUtilization']}%")
            else:
                now = _get(cur, "resource", "current", "averageValue")
                out.append(f"{name}: {now or '<unknown>'}/{target.get('averageValue', '')}")
        else:
            out.append("<unknown>/<unknown>")
    return ", ".join(out) if out else "<none>"


def _ingress_hosts(obj: Obj) -> str:
    hosts = [r.get("host") for r in _get(obj, "spec", "rules", default=[]) if r.get("host")]
    return ",".join(hosts) if hosts else "*"


def _ingress_address(obj: Obj) -> str:
    lbs = _get(obj, "status", "loadBalancer", "ingress", default=[])
    return ",".join(i.get("ip") or i.get("hostname") or "" for i in lbs)


def _ingress_ports(obj: Obj) -> str:
    return "80, 443" if _get(obj, "spec", "tls") else "80"


def _sc_name(obj: Obj) -> str:
    name = _get(obj, "metadata", "name", default="")
    ann = _get(obj, "metadata", "annotations", default={})
    default = "true" in (
        ann.get("storageclass.kubernetes.io/is-default-class"),
        ann.get("storageclass.beta.kubernetes.io/is-default-class"),
    )
    return f"{name} (default)" if default else name


def _storage_phase(obj: Obj) -> str:
    """A volume's or claim's phase; `Terminating` once it is being deleted (kube's printers)."""
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    return str(_get(obj, "status", "phase", default=""))


def _pod_template_cells(tmpl: Obj) -> tuple[str, str]:
    return containers_images({"spec": {"template": tmpl}})


def _params_ref(obj: Obj) -> str:
    p = _get(obj, "spec", "parameters")
    if not isinstance(p, dict):
        return "<none>"
    group = p.get("apiGroup", "")
    return f"{p.get('kind', '')}.{group}/{p.get('name', '')}" if group else f"{p.get('kind', '')}/{p.get('name', '')}"


def _bool(v: Any) -> str:
    return "true" if v else "false"


def _default_limit_range(obj: Obj) -> None:
    """SetDefaults_LimitRangeItem: for Containers, `default` falls back to `max` and `defaultRequest` to `default`."""
    for item in _get(obj, "spec", "limits", default=[]):
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        for name, value in (item.get("max") or {}).items():
            default.setdefault(name, value)
        request = item.setdefault("defaultRequest", {})
        for name, value in default.items():
            request.setdefault(name, value)
        if not default:
            item.pop("default")
        if not request:
            item.pop("defaultRequest")


def _quota_status(obj: Obj) -> None:
    """The quota controller's first step: status.hard mirrors spec.hard (usage is counted at admission)."""
    hard = _get(obj, "spec", "hard")
    if isinstance(hard, dict):
        status = obj.setdefault("status", {})
        status["hard"] = dict(hard)
        used = status.setdefault("used", {})
        for k in hard:
            used.setdefault(k, "0")


_AGE = age_column()
_EXT = ("api-extensions",)
_RC_DESC = "Replicas is the number of desired replicas."

GENERIC_KINDS: tuple[KindSpec, ...] = (
    # --- core/v1 -----------------------------------------------------------------------------------------------
    KindSpec(
        "PodTemplate",
        "podtemplates",
        return_deleted_object=True,
        pod_templates=("template",),
        columns=(
            Column("Containers", lambda o: _pod_template_cells(o.get("template") or {})[0]),
            Column("Images", lambda o: _pod_template_cells(o.get("template") or {})[1]),
            Column("Pod Labels", lambda o: labels_str(_get(o, "template", "metadata", "labels", default={}))),
        ),
    ),
    KindSpec(
        "ResourceQuota",
        "resourcequotas",
        return_deleted_object=True,
        short_names=("quota",),
        subresources=("status",),
        mutate=_quota_status,
        columns=(
            _AGE,
            Column("Request", lambda o: _quota_pairs(o, False)),
            Column("Limit", lambda o: _quota_pairs(o, True)),
        ),
    ),
    KindSpec("LimitRange", "limitranges", short_names=("limits",), mutate=_default_limit_range),
    KindSpec(
        "PersistentVolume",
        "persistentvolumes",
        return_deleted_object=True,
        namespaced=False,
        short_names=("pv",),
        subresources=("status",),
        defaults={"spec": {"persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}},
        default_status={"phase": "Pending"},
        columns=(
            Column("Capacity", lambda o: _get(o, "spec", "capacity", "storage", default="")),
            Column("Access Modes", lambda o: _access_modes(_get(o, "spec", "accessModes"))),
            Column("Reclaim Policy", lambda o: _get(o, "spec", "persistentVolumeReclaimPolicy", default="")),
            Column("Status", _storage_phase),
            Column("Claim", _pv_claim),
            Column("StorageClass", lambda o: _get(o, "spec", "storageClassName", default="")),
            Column("VolumeAttributesClass", lambda o: _get(o, "spec", "volumeAttributesClassName", default="<unset>")),
            Column("Reason", lambda o: _get(o, "status", "reason", default="")),
            _AGE,
            Column("VolumeMode", lambda o: _get(o, "spec", "volumeMode", default=""), priority=1),
        ),
    ),
    KindSpec(
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        return_deleted_object=True,
        short_names=("pvc",),
        subresources=("status",),
        defaults={"spec": {"volumeMode": "Filesystem"}},
        default_status={"phase": "Pending"},
        columns=(
            Column("Status", _storage_phase),
            Column("Volume", lambda o: _get(o, "spec", "volumeName", default="")),
            Column("Capacity", lambda o: _get(o, "status", "capacity", "storage", default="")),
            Column("Access Modes", lambda o: _access_modes(_get(o, "status", "accessModes"))),
            Column("StorageClass", lambda o: _get(o, "spec", "storageClassName", default="")),
            Column("VolumeAttributesClass", lambda o: _get(o, "spec", "volumeAttributesClassName", default="<unset>")),
            _AGE,
            Column("VolumeMode", lambda o: _get(o, "spec", "volumeMode", default=""), priority=1),
        ),
    ),
    KindSpec(
        "ReplicationController",
        "replicationcontrollers",
        short_names=("rc",),
        categories=("all",),
        subresources=("scale", "status"),
        track_generation=True,
        defaults={"spec": {"replicas": 1}},
        default_status={"replicas": 0},
        pod_templates=("spec.template",),
        columns=(
            Column("Desired", lambda o: _get(o, "spec", "replicas", default=0), "integer", _RC_DESC),
            Column("Current", lambda o: _get(o, "status", "replicas", default=0), "integer"),
            Column("Ready", lambda o: _get(o, "status", "readyReplicas", default=0), "integer"),
            _AGE,
            Column("Containers", lambda o: containers_images(o)[0], priority=1),
            Column("Images", lambda o: containers_images(o)[1], priority=1),
            Column("Selector", lambda o: labels_str(_get(o, "spec", "selector", default={})), priority=1),
        ),
    ),
    # --- apps/v1 -----------------------------------------------------------------------------------------------
    KindSpec(
        "StatefulSet",
        "statefulsets",
        group="apps",
        short_names=("sts",),
        categories=("all",),
        subresources=("scale", "status"),
        track_generation=True,
        defaults={
            "spec": {
                "replicas": 1,
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            }
        },
        default_status={"replicas": 0, "availableReplicas": 0},
        pod_templates=("spec.template",),
        columns=(
            Column(
                "Ready",
                lambda o: f"{_get(o, 'status', 'readyReplicas', default=0)}/{_get(o, 'spec', 'replicas', default=0)}",
                description="Number of the pod with ready state",
            ),
            _AGE,
            Column("Containers", lambda o: containers_images(o)[0], priority=1),
            Column("Images", lambda o: containers_images(o)[1], priority=1),
        ),
    ),
    # --- autoscaling/v2 ----------------------------------------------------------------------------------------
    KindSpec(
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        group="autoscaling",
        version="v2",
        short_names=("hpa",),
        categories=("all",),
        subresources=("status",),
        defaults={"spec": {"minReplicas": 1}},
        mutate=drop_round_trip_annotations,
        columns=(
            Column(
                "Reference",
                lambda o: (
                    f"{_get(o, 'spec', 'scaleTargetRef', 'kind', default='')}/"
                    f"{_get(o, 'spec', 'scaleTargetRef', 'name', default='')}"
                ),
            ),
            Column("Targets", _hpa_targets),
            Column("MinPods", lambda o: _get(o, "spec", "minReplicas", default="<unset>")),
            Column("MaxPods", lambda o: _get(o, "spec", "maxReplicas", default=0), "integer"),
            Column("Replicas", lambda o: _get(o, "status", "currentReplicas", default=0), "integer"),
            _AGE,
        ),
    ),
    # --- networking.k8s.io/v1 ----------------------------------------------------------------------------------
    KindSpec(
        "NetworkPolicy",
        "networkpolicies",
        group="networking.k8s.io",
        short_names=("netpol",),
        columns=(
            Column("Pod-Selector", lambda o: selector_string(_get(o, "spec", "podSelector")).replace("<none>", "")),
            _AGE,
        ),
    ),
    KindSpec(
        "Ingress",
        "ingresses",
        group="networking.k8s.io",
        short_names=("ing",),
        subresources=("status",),
        columns=(
            Column("Class", lambda o: _get(o, "spec", "ingressClassName", default="<none>")),
            Column("Hosts", _ingress_hosts),
            Column("Address", _ingress_address),
            Column("Ports", _ingress_ports),
            _AGE,
        ),
    ),
    KindSpec(
        "IngressClass",
        "ingressclasses",
        group="networking.k8s.io",
        namespaced=False,
        columns=(
            Column("Controller", lambda o: _get(o, "spec", "controller", default="")),
            Column("Parameters", _params_ref),
            _AGE,
        ),
    ),
    KindSpec(
        "IPAddress",
        "ipaddresses",
        group="networking.k8s.io",
        namespaced=False,
        short_names=("ip",),
        columns=(
            Column(
                "ParentRef",
                lambda o: (
                    f"{_get(o, 'spec', 'parentRef', 'resource', default='')}/"
                    f"{_get(o, 'spec', 'parentRef', 'namespace', default='')}/"
                    f"{_get(o, 'spec', 'parentRef', 'name', default='')}"
                ),
            ),
        ),
    ),
    KindSpec(
        "ServiceCIDR",
        "servicecidrs",
        group="networking.k8s.io",
        namespaced=False,
        subresources=("status",),
        columns=(Column("CIDRs", lambda o: ",".join(_get(o, "spec", "cidrs", default=[]))), _AGE),
    ),
    # --- storage.k8s.io/v1 -------------------------------------------------------------------------------------
    KindSpec(
        "StorageClass",
        "storageclasses",
        return_deleted_object=True,
        group="storage.k8s.io",
        namespaced=False,
        short_names=("sc",),
        name_cell=_sc_name,
        defaults={"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
        columns=(
            Column("Provisioner", lambda o: o.get("provisioner", "")),
            Column("ReclaimPolicy", lambda o: o.get("reclaimPolicy", "Delete")),
            Column("VolumeBindingMode", lambda o: o.get("volumeBindingMode", "Immediate")),
            Column("AllowVolumeExpansion", lambda o: _bool(o.get("allowVolumeExpansion")), "boolean"),
            _AGE,
        ),
    ),
    KindSpec(
        "CSIDriver",
        "csidrivers",
        return_deleted_object=True,
        group="storage.k8s.io",
        namespaced=False,
        defaults={
            "spec": {
                "attachRequired": True,
                "podInfoOnMount": False,
                "storageCapacity": False,
                "fsGroupPolicy": "ReadWriteOnceWithFSType",
                "requiresRepublish": False,
                "volumeLifecycleModes": ["Persistent"],
                "seLinuxMount": False,
            }
        },
        columns=(
            Column("AttachRequired", lambda o: _bool(_get(o, "spec", "attachRequired")), "boolean"),
            Column("PodInfoOnMount", lambda o: _bool(_get(o, "spec", "podInfoOnMount")), "boolean"),
            Column("StorageCapacity", lambda o: _bool(_get(o, "spec", "storageCapacity")), "boolean"),
            Column(
                "TokenRequests",
                lambda o: _join([t.get("audience") for t in _get(o, "spec", "tokenRequests", default=[])]),
            ),
            Column("RequiresRepublish", lambda o: _bool(_get(o, "spec", "requiresRepublish")), "boolean"),
            Column("Modes", lambda o: _join(_get(o, "spec", "volumeLifecycleModes"))),
            _AGE,
        ),
    ),
    KindSpec(
        "CSINode",
        "csinodes",
        return_deleted_object=True,
        group="storage.k8s.io",
        namespaced=False,
        columns=(Column("Drivers", lambda o: len(_get(o, "spec", "drivers", default=[])), "integer"), _AGE),
    ),
    KindSpec(
        "VolumeAttachment",
        "volumeattachments",
        return_deleted_object=True,
        group="storage.k8s.io",
        namespaced=False,
        subresources=("status",),
        columns=(
            Column("Attacher", lambda o: _get(o, "spec", "attacher", default="")),
            Column("PV", lambda o: _get(o, "spec", "source", "persistentVolumeName", default="")),
            Column("Node", lambda o: _get(o, "spec", "nodeName", default="")),
            Column("Attached", lambda o: _bool(_get(o, "status", "attached")), "boolean"),
            _AGE,
        ),
    ),
    KindSpec(
        "CSIStorageCapacity",
        "csistoragecapacities",
        group="storage.k8s.io",
        columns=(
            Column("StorageClassName", lambda o: o.get("storageClassName", "")),
            Column("Capacity", lambda o: o.get("capacity", "")),
        ),
    ),
    # --- node.k8s.io/v1 ----------------------------------------------------------------------------------------
    KindSpec(
        "RuntimeClass",
        "runtimeclasses",
        group="node.k8s.io",
        namespaced=False,
        columns=(Column("Handler", lambda o: o.get("handler", "")), _AGE),
    ),
    # --- flowcontrol.apiserver.k8s.io/v1 ----------------------------------------------------------------------
    KindSpec(
        "FlowSchema",
        "flowschemas",
        group="flowcontrol.apiserver.k8s.io",
        namespaced=False,
        subresources=("status",),
        defaults={"spec": {"matchingPrecedence": 1000}},
        columns=(
            Column("PriorityLevel", lambda o: _get(o, "spec", "priorityLevelConfiguration", "name", default="")),
            Column("MatchingPrecedence", lambda o: _get(o, "spec", "matchingPrecedence", default=0), "integer"),
            Column("DistinguisherMethod", lambda o: _get(o, "spec", "distinguisherMethod", "type", default="<none>")),
            _AGE,
            Column("MissingPL", lambda o: "Unknown"),
        ),
    ),
    KindSpec(
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        group="flowcontrol.apiserver.k8s.io",
        namespaced=False,
        subresources=("status",),
        columns=(
            Column("Type", lambda o: _get(o, "spec", "type", default="")),
            Column(
                "NominalConcurrencyShares",
                lambda o: _get(o, "spec", "limited", "nominalConcurrencyShares", default="<none>"),
            ),
            Column(
                "Queues", lambda o: _get(o, "spec", "limited", "limitResponse", "queuing", "queues", default="<none>")
            ),
            Column(
                "HandSize",
                lambda o: _get(o, "spec", "limited", "limitResponse", "queuing", "handSize", default="<none>"),
            ),
            Column(
                "QueueLengthLimit",
                lambda o: _get(o, "spec", "limited", "limitResponse", "queuing", "queueLengthLimit", default="<none>"),
            ),
            _AGE,
        ),
    ),
    # --- admissionregistration.k8s.io/v1 (called by admission/webhook and admission/policy) ---------------------
    KindSpec(
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        group="admissionregistration.k8s.io",
        namespaced=False,
        categories=_EXT,
        columns=(Column("Webhooks", lambda o: len(o.get("webhooks") or []), "integer"), _AGE),
        validate_extra=_validate_webhook_configuration,
    ),
    KindSpec(
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        group="admissionregistration.k8s.io",
        namespaced=False,
        categories=_EXT,
        columns=(Column("Webhooks", lambda o: len(o.get("webhooks") or []), "integer"), _AGE),
        validate_extra=_validate_webhook_configuration,
    ),
    KindSpec(
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        group="admissionregistration.k8s.io",
        namespaced=False,
        categories=_EXT,
        subresources=("status",),
        track_generation=True,
        defaults={"spec": {"failurePolicy": "Fail"}},
        validate_extra=_validate_policy,
        columns=(
            Column("Validations", lambda o: len(_get(o, "spec", "validations", default=[])), "integer"),
            Column(
                "ParamKind",
                lambda o: (
                    f"{_get(o, 'spec', 'paramKind', 'apiVersion', default='')}/"
                    f"{_get(o, 'spec', 'paramKind', 'kind', default='')}"
                    if _get(o, "spec", "paramKind")
                    else "<unset>"
                ),
            ),
            _AGE,
        ),
    ),
    KindSpec(
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        group="admissionregistration.k8s.io",
        namespaced=False,
        categories=_EXT,
        columns=(
            Column("PolicyName", lambda o: _get(o, "spec", "policyName", default="")),
            Column(
                "ParamRef",
                lambda o: (
                    "*/" + _get(o, "spec", "paramRef", "name", default="") if _get(o, "spec", "paramRef") else "<unset>"
                ),
            ),
            _AGE,
        ),
    ),
)


def generic_strategies() -> tuple[GenericStrategy, ...]:
    return tuple(GenericStrategy(spec) for spec in GENERIC_KINDS)
