"""The four PATCH types: RFC 6902 JSON patch, RFC 7386 merge patch, strategic merge patch, server-side apply."""

from pykubeadm.apiserver.patching.jsonpatch import PatchError, apply_json_patch
from pykubeadm.apiserver.patching.merge import apply_merge_patch
from pykubeadm.apiserver.patching.strategic import apply_strategic_merge_patch

__all__ = ["PatchError", "apply_json_patch", "apply_merge_patch", "apply_strategic_merge_patch"]
