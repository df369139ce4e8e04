"""`pykubeadm lab timeline`: every node's bootstrap on one time axis, from records that say when each step happened.

Records, per node:
- the join's log lines (the lab runs `join --v=1`; timestamped `[discovery]` lines): join started, cluster-info
  fetched, JWS verified and CA pinned, discovery done;
- the kubelet's log: kubelet started (its `flags:` line; later ones are restarts), client certificate fetched and
  kubelet.conf written, then serving certificates received and certificate rotations;
- the CSR objects: created (`creationTimestamp`, requester `spec.username`), approved (the Approved condition's
  `lastUpdateTime`, approver = its reason and message);
- the Node: registered (`creationTimestamp`), Ready (the Ready condition's `lastTransitionTime`);
- Events on the Node (e.g. the kubelet's CertificateRenewed) as later events, with the serving CSRs (created,
  approved and by whom) and the client CSRs after the first.
A step with no record has time None ("unknown"); nothing is estimated. Times are UTC; log lines carry milliseconds,
API objects whole seconds (their own precision).
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pykubeadm.lab.cluster import admin_kubeconfig, lab_nodes
from pykubeadm.lab.nodes import LabNode
from pykubeadm.layout import Layout
from pykubeadm.util.apitime import parse_time

__all__ = ["BOOTSTRAP_STEPS", "NodeTimeline", "Step", "collect", "render_svg", "render_text", "timeline_from"]

#: the bootstrap steps, in the order they happen
BOOTSTRAP_STEPS = (
    "join started",
    "cluster-info fetched",
    "JWS verified, CA pinned",
    "discovery done",
    "kubelet started",
    "client CSR created",
    "client CSR approved",
    "client certificate fetched, kubelet.conf written",
    "Node registered",
    "Node Ready",
)
_JOIN_LINES = {
    "cluster-info fetched": r"\[discovery\] Created cluster-info discovery client",
    "JWS verified, CA pinned": r"\[discovery\] Requesting info from .* again to validate TLS",
    "discovery done": r"\[discovery\] Cluster info signature and contents are valid",
}
_KUBELET_LINES = {
    "kubelet started": r"flags: ",
    # rotateCertificates (kubeadm's default): kubelet.conf, written at once, points at the certificate fetched now;
    # without it the kubelet writes kubelet.conf once it has the certificate
    "client certificate fetched, kubelet.conf written": r"bootstrap: client certificate from CSR|client certificate rotated",
}
#: later kubelet records: (step, pattern, whether the first match belongs to the bootstrap)
_LATER_KUBELET = (
    ("kubelet restarted", r"flags: ", True),
    ("client certificate rotated", r"client certificate rotated", True),
    ("serving certificate received", r"serving certificate rotated", False),
)
#: a Python logging line: level letter, local date and time with milliseconds
_LOG_LINE = re.compile(r"^[IWE](\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (.*)$", re.M)
_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
_SERVING_SIGNER = "kubernetes.io/kubelet-serving"


@dataclass
class Step:
    step: str
    time: dt.datetime | None
    source: str = ""
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["time"] = _iso(self.time)
        return out


@dataclass
class NodeTimeline:
    node: str
    role: str
    steps: list[Step] = field(default_factory=list)
    later: list[Step] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "role": self.role,
            "steps": [s.to_dict() for s in self.steps],
            "later": [s.to_dict() for s in self.later],
        }


def _iso(t: dt.datetime | None) -> str | None:
    if t is None:
        return None
    text = t.astimezone(dt.UTC).isoformat(timespec="milliseconds" if t.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def _log_records(path: Path) -> list[tuple[dt.datetime, str]]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [
        (dt.datetime.fromisoformat(m.group(1).replace(",", ".")).astimezone(dt.UTC), m.group(2))
        for m in _LOG_LINE.finditer(text)
    ]


def _matches(records: list[tuple[dt.datetime, str]], pattern: str) -> list[tuple[dt.datetime, str]]:
    rx = re.compile(pattern)
    return [(t, line) for t, line in records if rx.search(line)]


def _first(records: list[tuple[dt.datetime, str]], pattern: str) -> dt.datetime | None:
    found = _matches(records, pattern)
    return found[0][0] if found else None


def _csr_steps(prefix: str, csr: dict[str, Any] | None) -> list[Step]:
    if csr is None:
        return [Step(f"{prefix} CSR created", None), Step(f"{prefix} CSR approved", None)]
    name = csr["metadata"]["name"]
    created = Step(
        f"{prefix} CSR created",
        parse_time(csr["metadata"].get("creationTimestamp")),
        f"CSR {name}",
        f"requested by {csr['spec'].get('username', '')}",
    )
    approved = next((c for c in (csr.get("status") or {}).get("conditions") or [] if c.get("type") == "Approved"), None)
    if approved is None:
        return [created, Step(f"{prefix} CSR approved", None, f"CSR {name}", "not approved")]
    when = parse_time(approved.get("lastUpdateTime") or approved.get("lastTransitionTime"))
    who = f"{approved.get('reason', '')}: {approved.get('message', '')}"
    return [created, Step(f"{prefix} CSR approved", when, f"CSR {name}", who)]


def _node_csrs(csrs: Iterable[dict[str, Any]], node: str, signer: str) -> list[dict[str, Any]]:
    """The CSRs of `signer` whose subject is this node (the requester may be a bootstrap token), oldest first."""
    from pykubeadm.controllers.certificates.csrutil import CSRParseError, parse_csr

    out = []
    for csr in csrs:
        if (csr.get("spec") or {}).get("signerName") != signer:
            continue
        try:
            cn = parse_csr(csr).subject.rfc4514_string()
        except CSRParseError:
            continue
        if f"CN=system:node:{node}" in cn.split(","):
            out.append(csr)
    return sorted(out, key=lambda c: c["metadata"].get("creationTimestamp") or "")


def timeline_from(
    node: LabNode,
    csrs: list[dict[str, Any]],
    node_obj: dict[str, Any] | None,
    events: list[dict[str, Any]],
) -> NodeTimeline:
    """One node's timeline from its logs (read here) and the API objects given."""
    layout = Layout(node.root)
    join = _log_records(node.log_file) if not node.control_plane else []
    kubelet = _log_records(layout.kubelet_log_file)
    steps: list[Step] = []
    if not node.control_plane:
        steps.append(Step("join started", join[0][0] if join else None, "join log", join[0][1][:120] if join else ""))
        for step, pattern in _JOIN_LINES.items():
            steps.append(Step(step, _first(join, pattern), "join log" if _first(join, pattern) else ""))
    client = _node_csrs(csrs, node.name, _CLIENT_SIGNER)
    serving = _node_csrs(csrs, node.name, _SERVING_SIGNER)
    by_step: dict[str, Step] = {}
    for step, pattern in _KUBELET_LINES.items():
        found = _matches(kubelet, pattern)
        by_step[step] = Step(step, found[0][0], "kubelet log", found[0][1][:160]) if found else Step(step, None)
    meta = (node_obj or {}).get("metadata") or {}
    ready = next(
        (c for c in ((node_obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None
    )
    ready_step = Step("Node Ready", None)
    if ready is not None and ready.get("status") == "True":
        ready_step = Step(
            "Node Ready", parse_time(ready.get("lastTransitionTime")), "Node condition", ready.get("message", "")
        )
    registered = Step("Node registered", parse_time(meta.get("creationTimestamp")), "Node" if meta else "")
    client_steps = _csr_steps("client", client[0] if client else None)
    steps += [by_step["kubelet started"], *client_steps, by_step["client certificate fetched, kubelet.conf written"]]
    steps += [registered, ready_step]
    if node.control_plane:
        # kubeadm init writes kubelet.conf with an embedded certificate: no client CSR, nothing to fetch
        steps = [s for s in steps if not s.step.startswith("client ")]
    later = _later(kubelet, client[1:] + serving, events, worker=not node.control_plane)
    return NodeTimeline(node.name, "control-plane" if node.control_plane else "worker", steps, later)


def _later(
    kubelet: list[tuple[dt.datetime, str]], csrs: list[dict[str, Any]], events: list[dict[str, Any]], worker: bool
) -> list[Step]:
    later: list[Step] = []
    for step, pattern, skip_first in _LATER_KUBELET:
        found = _matches(kubelet, pattern)
        # a worker's first client certificate is its TLS bootstrap; a control plane's rotates away from init's
        skip = skip_first and (worker or step != "client certificate rotated")
        for t, line in found[1:] if skip else found:
            later.append(Step(step, t, "kubelet log", line[:160]))
    for csr in csrs:
        prefix = "serving" if csr["spec"]["signerName"] == _SERVING_SIGNER else "client"
        later += [s for s in _csr_steps(prefix, csr) if s.time is not None]
    for ev in events:
        when = parse_time(ev.get("lastTimestamp") or ev.get("firstTimestamp") or ev.get("eventTime"))
        src = (ev.get("source") or {}).get("component") or ev.get("reportingComponent") or ""
        later.append(Step(f"{ev.get('reason', '')}", when, f"Event from {src}", ev.get("message", "")))
    return sorted(later, key=lambda s: s.time or dt.datetime.max.replace(tzinfo=dt.UTC))


def collect(lab_dir: Path, only: str | None = None) -> list[NodeTimeline]:
    """Every node's timeline (or one's), reading the lab's logs and its API with the admin kubeconfig."""
    from lightkube.resources.certificates_v1 import CertificateSigningRequest
    from lightkube.resources.core_v1 import Event, Node

    from pykubeadm.client import sync_client

    nodes = lab_nodes(lab_dir)
    if only is not None:
        nodes = [n for n in nodes if n.name == only]
        if not nodes:
            raise ValueError(f'no node "{only}" in the lab at {lab_dir} (see `pykubeadm lab status`)')
    client = sync_client(admin_kubeconfig(lab_dir), timeout=10.0)
    csrs = [o.to_dict() for o in client.list(CertificateSigningRequest)]
    node_objs = {d["metadata"]["name"]: d for d in (o.to_dict() for o in client.list(Node))}
    events = [o.to_dict() for o in client.list(Event, namespace="*")]
    out = []
    for node in nodes:
        mine = [
            e
            for e in events
            if (e.get("involvedObject") or {}).get("kind") == "Node" and e["involvedObject"].get("name") == node.name
        ]
        out.append(timeline_from(node, csrs, node_objs.get(node.name), mine))
    return out


def render_text(timelines: list[NodeTimeline]) -> str:
    start = min((s.time for t in timelines for s in t.steps if s.time), default=None)
    lines = []
    for tl in timelines:
        lines.append(f"{tl.node} ({tl.role})")
        for s in tl.steps + tl.later:
            when = f"+{(s.time - start).total_seconds():8.3f}s" if s.time and start else "   unknown"
            extra = f"  [{s.source}] {s.detail}".rstrip() if s.source or s.detail else ""
            lines.append(f"  {when}  {s.step}{extra}")
    return "\n".join(lines) + "\n"


def render_svg(timelines: list[NodeTimeline]) -> str:
    """Nodes as lanes, steps as marks with labels, on one time axis (seconds since the first record)."""
    points = [s.time for t in timelines for s in t.steps + t.later if s.time]
    start = min(points, default=dt.datetime.now(dt.UTC))
    span = max(((p - start).total_seconds() for p in points), default=1.0) or 1.0
    left, width, lane, top = 200, 1000, 160, 40
    height = top + lane * len(timelines) + 40

    def x(t: dt.datetime) -> float:
        return left + width * (t - start).total_seconds() / span

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 260}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="10" y="20" font-size="14">Bootstrap timeline (t=0 at {html.escape(_iso(start) or "")})</text>',
    ]
    for i, tl in enumerate(timelines):
        y = top + lane * i + lane / 2
        out.append(f'<g class="lane" id="lane-{html.escape(tl.node)}">')
        out.append(f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" stroke="#999"/>')
        out.append(f'<text x="10" y="{y + 4}" font-weight="bold">{html.escape(tl.node)}</text>')
        marks = [s for s in tl.steps + tl.later if s.time]
        for j, s in enumerate(marks):
            assert s.time is not None
            sx = x(s.time)
            dy = -14 - 12 * (j % 5) if j % 2 == 0 else 18 + 12 * (j % 5)
            color = "#36c" if s in tl.steps else "#c63"
            out.append(
                f'<circle cx="{sx:.1f}" cy="{y}" r="4" fill="{color}"><title>{html.escape(s.detail)}</title></circle>'
            )
            label = f"{s.step} +{(s.time - start).total_seconds():.2f}s"
            out.append(f'<text class="step" x="{sx + 3:.1f}" y="{y + dy}">{html.escape(label)}</text>')
        unknown = [s.step for s in tl.steps if s.time is None]
        if unknown:
            out.append(
                f'<text x="10" y="{y + lane / 2 - 8}" fill="#888">unknown: {html.escape(", ".join(unknown))}</text>'
            )
        out.append("</g>")
    axis_y = height - 20
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + width}" y2="{axis_y}" stroke="#000"/>')
    for k in range(6):
        tx = left + width * k / 5
        out.append(f'<text x="{tx:.1f}" y="{axis_y + 14}" text-anchor="middle">{span * k / 5:.1f}s</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
