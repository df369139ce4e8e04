"""`--patches <dir>` support (kubeadm's util/patches): load patch files by kubeadm's naming convention and apply them.

File names are `target[suffix][+patchtype].{json,yaml}`: targets `etcd`, `kube-apiserver`, `kube-controller-manager`,
`kube-scheduler`, `kubeletconfiguration`, `corednsdeployment`; patch types `strategic` (default), `merge` (RFC 7386),
`json` (RFC 6902). Files apply in alphabetical order (a file may hold several YAML documents, applied in order); each
applied patch prints `[patches] Applied patch of type "<MIME type>" to target "<target>"`. Files with another extension
or an unknown target are ignored with a note; a `+` without a known type is an error.

Strategic merge patches follow Kubernetes' rules for the fields that occur in these targets: lists with a merge key
(containers/volumes/env by `name`, volumeMounts by `mountPath`, ports by `containerPort`, ...) merge element-wise,
other lists are replaced, `null` deletes a key, and the `$patch: replace|delete`, `$retainKeys`,
`$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` directives are honoured.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import jsonpointer
import yaml

from pykubeadm.errors import KubeadmError

__all__ = [
    "KNOWN_TARGETS",
    "PATCH_TYPES",
    "POD_MERGE_KEYS",
    "PatchError",
    "PatchManager",
    "PatchSet",
    "apply_json_patch",
    "merge_patch",
    "strategic_merge_patch",
]

#: Patch targets kubeadm knows (in kubeadm's order, as printed in errors).
KNOWN_TARGETS: tuple[str, ...] = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubeletconfiguration",
    "corednsdeployment",
)
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
#: File-name patch type → the MIME type kubeadm prints.
PATCH_TYPES: dict[str, str] = {"json": JSON, "merge": MERGE, "strategic": STRATEGIC, "": STRATEGIC}
_TYPE_NAMES = sorted(k for k in PATCH_TYPES if k)
_EXTENSIONS = ("json", "yaml")
_EXT_RE = re.compile(r".+\.(" + "|".join(_EXTENSIONS) + r")$")

#: Merge keys of the list fields of a Pod / PodSpec / Container (strategic merge patch metadata of k8s.io/api).
POD_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "ownerReferences": "uid",
}
#: Merge keys per target (targets not listed replace every list).
TARGET_MERGE_KEYS: dict[str, Mapping[str, str]] = {
    "etcd": POD_MERGE_KEYS,
    "kube-apiserver": POD_MERGE_KEYS,
    "kube-controller-manager": POD_MERGE_KEYS,
    "kube-scheduler": POD_MERGE_KEYS,
    "corednsdeployment": POD_MERGE_KEYS,
}


class PatchError(KubeadmError):
    """A patch directory or patch file is unusable, or a patch does not apply."""


# --- the three patch types ------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def apply_json_patch(target: Any, patch: Any) -> Any:
    """RFC 6902 JSON patch (a list of operations)."""
    if not isinstance(patch, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.JsonPatch(patch).apply(copy.deepcopy(target))
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, TypeError) as e:
        raise PatchError(str(e)) from e


def _strip(value: Any) -> Any:
    """A patch value without `$` directives (what ends up in the object when there is nothing to merge with)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and v.get("$patch") == "delete")]
    return copy.deepcopy(value)


def _merge_list(orig: list[Any], patch: list[Any], key: str, keys: Mapping[str, str]) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [_strip(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    out = copy.deepcopy(orig)
    for item in patch:
        if not isinstance(item, dict):
            if item not in out:
                out.append(copy.deepcopy(item))
            continue
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            out = [o for o in out if not (isinstance(o, dict) and o.get(key) == item[key])]
        elif idx is None:
            out.append(_strip(item))
        else:
            out[idx] = _smp(out[idx], item, keys)
    return out


def _smp(orig: Any, patch: Any, keys: Mapping[str, str]) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip(patch)
    if directive == "delete":
        return None
    out = copy.deepcopy(orig) if isinstance(orig, dict) else {}
    for field, value in patch.items():
        if field in ("$patch", "$retainKeys") or field.startswith("$setElementOrder/"):
            continue
        if field.startswith("$deleteFromPrimitiveList/"):
            name = field.split("/", 1)[1]
            if isinstance(out.get(name), list):
                out[name] = [v for v in out[name] if v not in (value or [])]
            continue
        if value is None:
            out.pop(field, None)
        elif isinstance(value, dict):
            merged = _smp(out.get(field), value, keys)
            if merged is None:
                out.pop(field, None)
            else:
                out[field] = merged
        elif isinstance(value, list) and field in keys and isinstance(out.get(field), list):
            out[field] = _merge_list(out[field], value, keys[field], keys)
        else:
            out[field] = _strip(value)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def strategic_merge_patch(target: Any, patch: Any, merge_keys: Mapping[str, str] | None = None) -> Any:
    """A strategic merge patch with the given list merge keys (field name → key); no keys means lists are replaced."""
    if not isinstance(patch, dict):
        raise PatchError("json: cannot unmarshal array into Go value of type map[string]interface {}")
    result = _smp(target, patch, merge_keys or {})
    return {} if result is None else result


# --- patch files ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchSet:
    """The patches of one file: target, MIME patch type, the documents (parsed JSON values) in order."""

    target: str
    patch_type: str
    patches: tuple[Any, ...]
    path: Path


def parse_file_name(name: str, known_targets: tuple[str, ...] = KNOWN_TARGETS) -> tuple[str, str]:
    """(target, MIME patch type) of a patch file name. Raises `LookupError` (file to ignore) or PatchError."""
    if not _EXT_RE.match(name):
        raise LookupError(f"the file extension must be one of [{' '.join(_EXTENSIONS)}]")
    rx = re.compile(rf"^({'|'.join(map(re.escape, known_targets))})([^.+\n]*)?(\+)?({'|'.join(_TYPE_NAMES)})?")
    m = rx.match(name)
    if m is None:
        raise LookupError(f"unknown target, must be one of [{' '.join(known_targets)}]")
    if m.group(3) and not m.group(4):
        raise PatchError(f"unknown or missing patch type after '+', must be one of [{' '.join(_TYPE_NAMES)}]")
    return m.group(1), PATCH_TYPES[m.group(4) or ""]


class PatchManager:
    """The patch sets of one directory, applied to targets on request."""

    def __init__(self, sets: list[PatchSet], out: Callable[[str], None] = print):
        self.sets = sets
        self.out = out

    @classmethod
    def load(
        cls, directory: Path | str, out: Callable[[str], None] = print, known_targets: tuple[str, ...] = KNOWN_TARGETS
    ) -> PatchManager:
        """Read every patch file directly in `directory` (sub-directories are skipped), in alphabetical order."""
        d = Path(directory)
        if not d.is_dir():
            raise PatchError(f'could not list patch files for path "{directory}": not a readable directory')
        sets: list[PatchSet] = []
        for path in sorted(d.iterdir(), key=lambda p: p.name):
            if path.is_dir():
                continue
            try:
                target, patch_type = parse_file_name(path.name, known_targets)
            except LookupError as e:
                out(f'[patches] Ignoring file "{path.name}": {e}')
                continue
            text = path.read_text()
            if not text.strip():
                raise PatchError(f'the file "{path}" is empty')
            try:
                docs = tuple(doc for doc in yaml.safe_load_all(text) if doc is not None)
            except yaml.YAMLError as e:
                raise PatchError(f'could not parse the patch file "{path}": {e}') from e
            sets.append(PatchSet(target, patch_type, docs, path))
        return cls(sets, out)

    def patches_for(self, target: str) -> list[PatchSet]:
        return [s for s in self.sets if s.target == target]

    def apply(self, target: str, obj: Any, merge_keys: Mapping[str, str] | None = None) -> Any:
        """Apply every patch for `target` to (a copy of) `obj`, printing one line per applied patch."""
        data = copy.deepcopy(obj)
        for patch_set in self.patches_for(target):
            for patch in patch_set.patches:
                data = self.apply_one(target, data, patch, patch_set.patch_type, merge_keys)
        return data

    def apply_one(
        self,
        target: str,
        obj: Any,
        patch: Any,
        patch_type: str = STRATEGIC,
        merge_keys: Mapping[str, str] | None = None,
    ) -> Any:
        """Apply one in-memory patch (kubeadm's own patches, e.g. the kubelet instance config) and report it."""
        if target not in KNOWN_TARGETS:
            raise PatchError(f'unknown patch target name "{target}", must be one of [{" ".join(KNOWN_TARGETS)}]')
        keys = TARGET_MERGE_KEYS.get(target, {}) if merge_keys is None else merge_keys
        try:
            if patch_type == JSON:
                data = apply_json_patch(obj, patch)
            elif patch_type == MERGE:
                data = merge_patch(obj, patch)
            else:
                data = strategic_merge_patch(obj, patch, keys)
        except PatchError as e:
            raise PatchError(
                f'could not apply the following patch of type "{patch_type}" to target "{target}":\n{patch}\n: {e}'
            ) from e
        self.out(f'[patches] Applied patch of type "{patch_type}" to target "{target}"')
        return data
