"""managedFields as kube-apiserver's field manager keeps them: every write records which manager set which fields
(`operation: Update`), server-side apply (`operation: Apply`) merges an applied configuration into the live object,
answers other managers' fields with a 409 listing the conflicts (unless forced), and removes the fields only that
applier owned when its configuration no longer sets them. Called by the registry Store (Update records) and the PATCH
handler (Apply); field sets come from fieldsets.py, shaped by the kind's OpenAPI schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.openapi import definitions as defs
from pykubeadm.apiserver.openapi.fields import schema_of
from pykubeadm.apiserver.patching import fieldsets as fs
from pykubeadm.util.apitime import now_time

__all__ = ["FieldManager", "apply_configuration", "manager_from", "record_update"]

Obj = dict[str, Any]
_META_TRACKED = ("f:labels", "f:annotations", "f:finalizers", "f:ownerReferences")
_MAX_MANAGER = 128
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class FieldManager:
    """Who writes: the manager name, the request's apiVersion and subresource ("" or "status", "scale")."""

    manager: str
    api_version: str
    subresource: str = ""


def manager_from(field_manager: str, user_agent: str) -> str:
    """`?fieldManager=` or, without it, the user agent's first token (kube's prefixFromUserAgent)."""
    if field_manager:
        return field_manager
    return user_agent.split("/", 1)[0][:_MAX_MANAGER]


def _strip(s: fs.FieldSet, has_status: bool, subresource: str) -> fs.FieldSet:
    """Drop what kube never tracks: apiVersion, kind, system metadata; status on the main resource (a kind with a
    status subresource) and everything but status on /status."""
    out = {k: v for k, v in s.items() if k not in ("f:apiVersion", "f:kind", ".")}
    meta = out.pop("f:metadata", None)
    if isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k in _META_TRACKED}
        if kept:
            out["f:metadata"] = kept
    if subresource == "status":
        out = {k: v for k, v in out.items() if k in ("f:status", "f:metadata")}
    elif has_status:
        out.pop("f:status", None)
    return out


def _resolver(strategy: Any) -> fs.Resolver:
    local = getattr(strategy, "openapi_local_definitions", None)
    extra = local() if callable(local) else {}
    if not extra:
        return defs.resolve

    def resolve(schema: fs.Schema) -> fs.Schema:
        for _ in range(8):
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                return defs.resolve(schema)
            name = ref.rsplit("/", 1)[-1]
            schema = extra.get(name) or defs.definition(name) or {}
        return schema

    return resolve


def _entries(obj: Obj | None) -> list[Obj]:
    mf = ((obj or {}).get("metadata") or {}).get("managedFields")
    return [dict(e) for e in mf if isinstance(e, dict)] if isinstance(mf, list) else []


def _without_managed(obj: Obj | None) -> Obj | None:
    if obj is None:
        return None
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _entry(fm: FieldManager, operation: str, fields: fs.FieldSet) -> Obj:
    e: Obj = {
        "manager": fm.manager,
        "operation": operation,
        "apiVersion": fm.api_version,
        "time": now_time(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if fm.subresource:
        e["subresource"] = fm.subresource
    return e


def _same(e: Obj, fm: FieldManager, operation: str) -> bool:
    if e.get("manager") != fm.manager or e.get("operation") != operation:
        return False
    if e.get("subresource", "") != fm.subresource:
        return False
    return operation == "Apply" or e.get("apiVersion") == fm.api_version


def _store(obj: Obj, entries: list[Obj]) -> None:
    meta = obj.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def _tracked(obj: Obj | None, has_status: bool, subresource: str) -> Obj | None:
    """The parts of an object managedFields can name: no apiVersion/kind, metadata's labels, annotations,
    finalizers and ownerReferences only; status only on /status (for kinds that have it) and never there else."""
    if obj is None:
        return None
    out: Obj = {}
    for k, v in obj.items():
        if k in ("apiVersion", "kind", "metadata"):
            continue
        if subresource == "status" and k != "status":
            continue
        if has_status and not subresource and k == "status":
            continue
        out[k] = v
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        kept = {k: meta[k] for k in ("labels", "annotations", "finalizers", "ownerReferences") if k in meta}
        if kept:
            out["metadata"] = kept
    return out


def record_update(strategy: Any, new: Obj, old: Obj | None, fm: FieldManager) -> None:
    """An Update operation: the fields this write set or changed become `fm`'s and are taken from every other
    manager; fields it removed are no one's. Writes `new.metadata.managedFields`."""
    given = (new.get("metadata") or {}).get("managedFields")
    entries = _entries(new) if isinstance(given, list) and given else _entries(old)
    base_old = _tracked(old, strategy.has_status, fm.subresource)
    base_new = _tracked(new, strategy.has_status, fm.subresource)
    if base_old == base_new:
        _store(new, entries)
        return
    schema = schema_of(strategy) or {}
    changed, removed = fs.diff_sets(base_old, base_new, schema, _resolver(strategy))
    if not changed and not removed:
        _store(new, entries)
        return
    out: list[Obj] = []
    mine: Obj | None = None
    for e in entries:
        if _same(e, fm, "Update"):
            mine = e
            continue
        fields = fs.difference(fs.difference(e.get("fieldsV1") or {}, changed), removed)
        if fields:
            out.append({**e, "fieldsV1": fields})
    prev = fs.difference((mine or {}).get("fieldsV1") or {}, removed)
    fields = fs.union(prev, changed)
    if fields:
        out.append(_entry(fm, "Update", fields))
    _store(new, out)


def apply_configuration(strategy: Any, live: Obj | None, config: Obj, fm: FieldManager, force: bool) -> Obj:
    """Server-side apply of `config` onto `live` (None = create): the merged object with its managedFields, or a 409
    Conflict naming the other managers' fields this configuration would change."""
    schema = schema_of(strategy) or {}
    resolve = _resolver(strategy)
    cfg = _without_managed(config) or {}
    cfg_set = _strip(fs.field_set(cfg, schema, resolve), strategy.has_status, fm.subresource)
    entries = _entries(live)
    base_live = _without_managed(live) or {}
    merged = fs.merge_apply(base_live, cfg, schema, resolve)
    changed = _strip(fs.changed_set(base_live, merged, schema, resolve), strategy.has_status, fm.subresource)
    mine: Obj | None = None
    others: list[Obj] = []
    conflicts: list[tuple[Obj, tuple[str, ...]]] = []
    for e in entries:
        if _same(e, fm, "Apply"):
            mine = e
            continue
        others.append(e)
        for path in fs.leaf_paths(fs.intersect(changed, e.get("fieldsV1") or {})):
            conflicts.append((e, path))
    if conflicts and not force and fm.manager == "kubectl":
        allowed = _unchanged_since_last_applied(live, schema, resolve)
        if all(path in allowed for _, path in conflicts):
            force = True  # kube's lastAppliedManager: the client-side apply → server-side apply upgrade
    if conflicts and not force:
        raise _conflict_error(conflicts)
    if force:
        others = [{**e, "fieldsV1": fs.difference(e.get("fieldsV1") or {}, changed)} for e in others]
    owned_by_others: fs.FieldSet = {}
    for e in others:
        owned_by_others = fs.union(owned_by_others, e.get("fieldsV1") or {})
    if mine is not None:
        dropped = fs.difference(fs.difference(mine.get("fieldsV1") or {}, cfg_set), owned_by_others)
        # A map or item that the configuration (or another manager) still reaches into stays; only what nobody
        # names any more is removed.
        gone = [
            p for p in fs.leaf_paths(dropped) if not fs.has_node(cfg_set, p) and not fs.has_node(owned_by_others, p)
        ]
        fs.remove_paths(merged, gone)
    out = [e for e in others if e.get("fieldsV1")]
    if cfg_set:
        entry = _entry(fm, "Apply", cfg_set)
        if mine is not None and mine.get("fieldsV1") == cfg_set and mine.get("apiVersion") == fm.api_version:
            entry["time"] = mine.get("time", entry["time"])
        out.insert(0, entry) if not out else out.append(entry)
    _store(merged, out)
    return merged


def _unchanged_since_last_applied(live: Obj | None, schema: fs.Schema, resolve: fs.Resolver) -> set[tuple[str, ...]]:
    """Paths of the live object's last-applied-configuration whose live value is still the applied one: conflicts
    on them are allowed for `kubectl` (the first server-side apply of an object managed by client-side apply)."""
    annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(LAST_APPLIED)
    if not raw:
        return set()
    try:
        last = json.loads(raw)
    except ValueError:
        return set()
    out = set()
    for path in fs.leaf_paths(fs.field_set(last, schema, resolve)):
        found, value = fs.value_at(last, path)
        live_found, live_value = fs.value_at(live, path)
        if found and live_found and value == live_value:
            out.add(path)
    return out


def _describe(e: Obj) -> str:
    name = f'"{e.get("manager", "")}"'
    if e.get("subresource"):
        name += f' with subresource "{e["subresource"]}"'
    if e.get("operation") == "Update":
        return f"{name} using {e.get('apiVersion', '')}"
    return name


def _conflict_error(conflicts: list[tuple[Obj, tuple[str, ...]]]) -> st.ApiError:
    causes = [
        st.Cause("FieldManagerConflict", f"conflict with {_describe(e)}", fs.format_path(p)) for e, p in conflicts
    ]
    if len(conflicts) == 1:
        e, p = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_describe(e)}: {fs.format_path(p)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for e, p in conflicts:
            by_manager.setdefault(_describe(e), []).append(fs.format_path(p))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {p}" for p in by_manager[manager]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return st.ApiError(409, "Conflict", message, details={}, causes=causes)
