"""Helpers of the generic Store: list continue tokens, label/finalizer validation and storage → API error mapping."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.registry.base import Obj
from pykubeadm.storage import interface as si

__all__ = ["decode_continue", "encode_continue", "finalizer_rules", "storage_error", "validate_labels"]


def encode_continue(revision: int, start_key: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start_key}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = json.loads(raw)
        return int(d["rv"]), str(d["start"])
    except (ValueError, KeyError, TypeError) as e:
        raise st.bad_request(f"continue key is not valid: {e}") from None


_LABEL_KEY_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def validate_labels(labels: Any, path: str) -> list[st.Cause]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [st.Cause("FieldValueInvalid", "Invalid value: labels must be a map of strings", path)]
    causes = []
    for k, v in labels.items():
        name = k.rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not _LABEL_KEY_NAME.match(name):
            causes.append(
                st.Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{k}": name part must consist of alphanumeric '
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                    path,
                )
            )
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_KEY_NAME.match(v):
            causes.append(
                st.Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{v}": a valid label must be an empty string or '
                    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character",
                    f"{path}",
                )
            )
    return causes


def finalizer_rules(new: Obj, old: Obj) -> list[st.Cause]:
    if not old["metadata"].get("deletionTimestamp"):
        return []
    added = set(new["metadata"].get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
    if added:
        return [
            st.Cause(
                "FieldValueForbidden",
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {sorted(added)}",
                "metadata.finalizers",
            )
        ]
    return []


def storage_error(e: si.StoreError) -> st.ApiError:
    if isinstance(e, si.StoreUnavailableError):
        return st.ApiError(503, "ServiceUnavailable", f"storage is unavailable: {e}")
    if type(e).__name__ == "FutureRevisionError":
        return st.ApiError(504, "Timeout", "Timeout: Too large resource version")
    if isinstance(e, si.CompactedError):
        return st.expired(f"too old resource version: {e.requested} ({e.compacted})")
    return st.internal(str(e))
