"""CertificateSigningRequest strategy: requester fields from the user, immutable spec, /approval and /status rules."""

from __future__ import annotations

import base64
import re
from typing import Any

from cryptography import x509

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col, human_duration, now_rfc3339
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_invalid, required
from pykubeadm.apiserver.status import Cause

__all__ = ["USAGES", "CSRStrategy", "csr_condition"]

USAGES = {
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
}
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_FINAL = ("Approved", "Denied", "Failed")


def _validate_signer(name: str) -> str | None:
    if name == "kubernetes.io/legacy-unknown":
        return "the legacy signerName is not allowed via this API version"
    if len(name) > 571 or name.count("/") != 1:
        return "must be a fully qualified domain and path of the form 'example.com/signer-name'"
    domain, path = name.split("/")
    labels = domain.split(".")
    if len(domain) > 253 or len(labels) < 2 or not all(_LABEL.match(x) for x in labels):
        return "must be a fully qualified domain and path of the form 'example.com/signer-name'"
    if not path or not all(_LABEL.match(x) for x in path.split(".")):
        return "must be a fully qualified domain and path of the form 'example.com/signer-name'"
    return None


def _validate_request(b64: Any) -> str | None:
    try:
        pem = base64.b64decode(b64, validate=True)
        csr = x509.load_pem_x509_csr(pem)
        if not csr.is_signature_valid:
            return "invalid signature on CSR"
    except Exception:
        return "PEM block type must be CERTIFICATE REQUEST"
    return None


def _validate_conditions(conds: Any) -> list[Cause]:
    causes: list[Cause] = []
    if conds is None:
        return causes
    if not isinstance(conds, list):
        return [field_invalid("status.conditions", "", "must be a list")]
    seen = set()
    for i, c in enumerate(conds):
        t = c.get("type") if isinstance(c, dict) else None
        if not t:
            causes.append(required(f"status.conditions[{i}].type"))
            continue
        if t in seen and t in _FINAL:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{t}"', f"status.conditions[{i}].type"))
        seen.add(t)
        status = c.get("status")
        if not status:
            causes.append(required(f"status.conditions[{i}].status"))
        elif t in _FINAL and status != "True":
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{status}": supported values: "True"',
                    f"status.conditions[{i}].status",
                )
            )
    if "Approved" in seen and "Denied" in seen:
        causes.append(
            Cause(
                "FieldValueInvalid",
                'Invalid value: "Approved": Approved and Denied conditions are mutually exclusive',
                "status.conditions",
            )
        )
    return causes


def _fill_timestamps(conds: list[Obj], old_conds: list[Obj]) -> None:
    now = now_rfc3339()
    for c in conds:
        if not isinstance(c, dict):
            continue
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            prev = next(
                (o for o in old_conds if o.get("type") == c.get("type") and o.get("status") == c.get("status")), None
            )
            c["lastTransitionTime"] = (prev or {}).get("lastTransitionTime") or now


def csr_condition(obj: Obj) -> str:
    types = {c.get("type") for c in (obj.get("status") or {}).get("conditions") or []}
    s = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        s += ",Failed"
    if (obj.get("status") or {}).get("certificate"):
        s += ",Issued"
    return s


class CSRStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "CertificateSigningRequest"
    plural = "certificatesigningrequests"
    group = "certificates.k8s.io"
    namespaced = False
    short_names = ("csr",)
    subresources = ("approval", "status")
    name_rule = "path"
    field_labels: tuple[str, ...] = ("spec.signerName",)

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        for k in ("username", "uid", "groups", "extra"):
            spec.pop(k, None)
        user = ctx.user
        spec["username"] = user.name
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        obj["status"] = {}

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        obj["spec"] = old.get("spec", {})
        obj["status"] = old.get("status", {})

    def prepare_for_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        status_in = obj.get("status")
        new_status: dict[str, Any] = status_in if isinstance(status_in, dict) else {}
        old_status = old.get("status") or {}
        old_conds = old_status.get("conditions") or []
        super().prepare_for_subresource("status", obj, old, ctx)
        status = dict(old_status)
        conds = [dict(c) if isinstance(c, dict) else c for c in (new_status.get("conditions") or [])]
        if sub == "status":
            kept = [c for c in conds if isinstance(c, dict) and c.get("type") not in ("Approved", "Denied")]
            conds = [c for c in old_conds if c.get("type") in ("Approved", "Denied")] + kept
            if "certificate" in new_status:
                status["certificate"] = new_status["certificate"]
        _fill_timestamps(conds, old_conds)
        if conds:
            status["conditions"] = conds
        else:
            status.pop("conditions", None)
        obj["status"] = status

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec.request")]
        causes: list[Cause] = []
        if not spec.get("request"):
            causes.append(required("spec.request"))
        else:
            err = _validate_request(spec["request"])
            if err:
                causes.append(Cause("FieldValueInvalid", f"Invalid value: []byte{{...}}: {err}", "spec.request"))
        signer = spec.get("signerName")
        if not signer:
            causes.append(required("spec.signerName"))
        else:
            err = _validate_signer(str(signer))
            if err:
                causes.append(field_invalid("spec.signerName", signer, err))
        usages = spec.get("usages")
        if not usages:
            causes.append(required("spec.usages"))
        else:
            seen = set()
            for i, u in enumerate(usages):
                if u not in USAGES:
                    causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{u}"', f"spec.usages[{i}]"))
                elif u in seen:
                    causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{u}"', f"spec.usages[{i}]"))
                seen.add(u)
        exp = spec.get("expirationSeconds")
        if exp is not None and (not isinstance(exp, int) or exp < 600):
            causes.append(
                field_invalid(
                    "spec.expirationSeconds", exp, "may not specify a duration less than 600 seconds (10 minutes)"
                )
            )
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        return []

    def validate_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        status = obj.get("status") or {}
        causes = _validate_conditions(status.get("conditions"))
        new_types = {c.get("type") for c in status.get("conditions") or []}
        for c in (old.get("status") or {}).get("conditions") or []:
            if c.get("type") in _FINAL and c.get("type") not in new_types:
                causes.append(
                    Cause(
                        "FieldValueForbidden",
                        f"Forbidden: updates may not remove a condition of type {c.get('type')!r}",
                        "status.conditions",
                    )
                )
        old_cert = (old.get("status") or {}).get("certificate")
        if sub == "status" and old_cert and status.get("certificate") != old_cert:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: updates may not modify existing certificate content",
                    "status.certificate",
                )
            )
        if sub == "status" and status.get("certificate"):
            try:
                x509.load_pem_x509_certificates(base64.b64decode(status["certificate"]))
            except Exception:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        'Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block',
                        "status.certificate",
                    )
                )
        return causes

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            AGE_COL,
            col("SignerName", "string", "Name of the signer."),
            col("Requestor", "string", "Name of the user who created the CertificateSigningRequest."),
            col("RequestedDuration", "string", "The requested duration of the issued certificate."),
            col("Condition", "string", "The condition of the CertificateSigningRequest."),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        exp = spec.get("expirationSeconds")
        return [
            obj["metadata"].get("name", ""),
            age(obj),
            spec.get("signerName") or "<none>",
            spec.get("username", ""),
            human_duration(exp) if exp else "<none>",
            csr_condition(obj),
        ]
