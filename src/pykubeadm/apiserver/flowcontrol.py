"""Response headers every kube-apiserver answer carries: `Audit-Id` (all responses, the client's own Audit-ID if it sent
one) and API Priority and Fairness' `X-Kubernetes-Pf-Flowschema-Uid` / `X-Kubernetes-Pf-Prioritylevel-Uid` (requests
that were authenticated and classified; long-running non-watch requests — exec, attach, portforward, log, proxy — are
not, as in kube's WithPriorityAndFairness). Installed by app.py as an `on_response_prepare` hook, so error answers,
watches and streams get them too.

We do not queue or serve the flowcontrol API: a request is classified into kube's mandatory/suggested FlowSchemas by
its user and path only, and each schema and priority level has a UID fixed per name (uuid5).
"""

from __future__ import annotations

import os
import uuid

from aiohttp import web

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.handlers.context import INFO_KEY, USER_KEY

__all__ = ["AUDIT_ID_KEY", "audit_id", "classify", "on_response_prepare"]

AUDIT_ID_KEY = web.RequestKey("audit_id", str)
_NS = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")  # RFC 4122 URL namespace
_PROBES = ("/healthz", "/livez", "/readyz")
_PROBE_PREFIXES = tuple(p + "/" for p in _PROBES)
_LONG_RUNNING_SUBS = frozenset({"exec", "attach", "portforward", "log", "proxy"})


def _uid(kind: str, name: str) -> str:
    return str(uuid.uuid5(_NS, f"flowcontrol.apiserver.k8s.io/{kind}/{name}"))


_UIDS: dict[tuple[str, str], tuple[str, str]] = {}


def _uuid4() -> str:
    """str(uuid.uuid4()) without building a UUID object (a third of a GET's audit-ID cost)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def audit_id(request: web.Request) -> str:
    """The request's audit ID (kube's WithAuditInit): the client's `Audit-ID` header, else a new UUID."""
    aid = request.get(AUDIT_ID_KEY)
    if aid is None:
        aid = request.headers.get("Audit-ID") or _uuid4()
        request[AUDIT_ID_KEY] = aid
    return aid


def classify(user: UserInfo, path: str, resource: str = "") -> tuple[str, str]:
    """(FlowSchema, PriorityLevelConfiguration) names as kube's bootstrap configuration matches them."""
    groups = user.groups
    if "system:masters" in groups:
        return "exempt", "exempt"
    if path.rstrip("/") in _PROBES or path.startswith(_PROBE_PREFIXES):
        return "probes", "exempt"
    if user.name in ("system:kube-controller-manager", "system:kube-scheduler") and resource == "leases":
        return "system-leader-election", "leader-election"
    if "system:nodes" in groups:
        if resource in ("nodes", "leases"):
            return "system-node-high", "node-high"
        return "system-nodes", "system"
    if user.name == "system:kube-controller-manager":
        return "kube-controller-manager", "workload-high"
    if user.name == "system:kube-scheduler":
        return "kube-scheduler", "workload-high"
    if user.name.startswith("system:serviceaccount:kube-system:"):
        return "kube-system-service-accounts", "workload-high"
    if "system:serviceaccounts" in groups:
        return "service-accounts", "workload-low"
    if "system:authenticated" in groups or "system:unauthenticated" in groups:
        return "global-default", "global-default"
    return "catch-all", "catch-all"


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Audit-Id"] = audit_id(request)
    user = request.get(USER_KEY)
    if user is None:
        return
    info = request.get(INFO_KEY)
    if info is not None and info.is_resource and info.subresource in _LONG_RUNNING_SUBS:
        return
    names = classify(user, request.path, info.resource if info is not None else "")
    uids = _UIDS.get(names)
    if uids is None:
        uids = _UIDS[names] = (_uid("flowschemas", names[0]), _uid("prioritylevelconfigurations", names[1]))
    response.headers["X-Kubernetes-Pf-Flowschema-Uid"] = uids[0]
    response.headers["X-Kubernetes-Pf-Prioritylevel-Uid"] = uids[1]
