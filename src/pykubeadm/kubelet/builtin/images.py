"""Image → program for the built-in runtime, in order: the built-in map, the node's image map file, shell images.

Used by the pod worker for every container (static and API Pods). The built-in map runs the control-plane images and
kubeadm's addons (`registry.k8s.io/kube-proxy:*`, `registry.k8s.io/coredns/coredns:*`) and the lab's network addon
(`docker.io/kindest/kindnetd:*`) as `pykubeadm component NAME`
with the container's command (less its binary) and args as flags, etcd as the etcd binary (`runtime.resolve_program`),
and `registry.k8s.io/pause:*` as a native pause program. The node's image map file (`Layout.image_map_file`,
`/etc/pykubeadm/images.yaml` under the node root) maps an image reference or repository to a program argv, which
stands in for the image's entrypoint. Common shell
images (busybox, alpine, debian, ubuntu, python; any registry prefix or tag) run the container's command/args with the
host's `sh`/`python3`. Anything else is an `ImageError` (ErrImagePull) whose message says how to map the image.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykubeadm import constants as c
from pykubeadm.kubelet.builtin import runtime
from pykubeadm.kubelet.builtin.runtime import ImageError, Program
from pykubeadm.kubelet.imageref import parse_image
from pykubeadm.util.yamlload import load_yaml

__all__ = ["ImageError", "ResolvedImage", "container_argv", "load_image_map", "normalize_repo", "resolve_image"]

#: Repositories (last path element) run with the host's shell or python; their default command.
_SHELL_IMAGES: Mapping[str, tuple[str, ...]] = {
    "busybox": ("sh",),
    "alpine": ("sh",),
    "debian": ("bash",),
    "ubuntu": ("bash",),
    "python": ("python3",),
}
_SHELLS = {"sh", "ash", "dash", "bash"}
_PYTHONS = {"python", "python3"}


@dataclass(frozen=True)
class ResolvedImage:
    """How an image runs here: `kind` is builtin, pause, mapped or shell; `program` the entrypoint and version."""

    image: str
    kind: str
    program: Program
    default_command: tuple[str, ...] = ()


def normalize_repo(repo: str) -> str:
    """docker.io/library/busybox → busybox, docker.io/foo/bar → foo/bar (Docker's short forms)."""
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"):
        if repo.startswith(prefix):
            return repo[len(prefix) :]
    if repo.startswith("library/"):
        return repo[len("library/") :]
    return repo


def load_image_map(path: Path) -> dict[str, list[str]]:
    """The node's image map: image ref or repository → argv (a list, or a string split like a shell would)."""
    try:
        data = load_yaml(path.read_text()) or {}
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as e:
        raise ImageError("ErrImagePull", f"image map {path} cannot be read: {e}") from e
    if not isinstance(data, dict):
        raise ImageError("ErrImagePull", f"image map {path} is not a mapping of image to program")
    out: dict[str, list[str]] = {}
    for key, value in data.items():
        argv = shlex.split(value) if isinstance(value, str) else [str(v) for v in value or []]
        if argv:
            out[str(key)] = argv
    return out


def _pause_program(layout: Any = None) -> tuple[str, ...]:
    try:
        from pykubeadm.kubelet.builtin.sandbox import pause_path

        path = str(pause_path(layout))
        if path and os.access(path, os.X_OK):
            return (path,)
    except Exception:  # noqa: S110 - the native pause is optional; coreutils sleep stands in
        pass
    return (shutil.which("sleep") or "/bin/sleep", "infinity")


def _mapped(image: str, image_map: Mapping[str, Sequence[str]]) -> Sequence[str] | None:
    ref = image.split("@", 1)[0]
    repo, _, _ = parse_image(image)
    for key in (image, ref, normalize_repo(ref), repo, normalize_repo(repo)):
        if key in image_map:
            return image_map[key]
    normalized = {normalize_repo(k): v for k, v in image_map.items()}
    for key in (normalize_repo(ref), normalize_repo(repo)):
        if key in normalized:
            return normalized[key]
    return None


def how_to_map(image: str, map_file: str) -> str:
    repo = normalize_repo(parse_image(image)[0])
    return (
        f'the built-in runtime has no program for image "{image}": map it in {map_file} '
        f"(e.g. '{repo}: [/path/to/program, args...]') or with 'pykubeadm lab up --image {repo}=PROGRAM'"
    )


def resolve_image(
    image: str,
    *,
    image_map: Mapping[str, Sequence[str]] | None = None,
    map_file: str = f"{c.PYKUBEADM_ETC_DIR}/images.yaml",
    etcd_binary: str | None = None,
    layout: Any = None,
) -> ResolvedImage:
    """The program for `image`, or ImageError (ErrImagePull) naming the image and how to map it."""
    if not image:
        raise ImageError("InvalidImageName", "container has no image")
    repo, name, tag = parse_image(image)
    if name == "pause" and normalize_repo(repo).split("/")[0] in ("registry.k8s.io", "k8s.gcr.io", "pause"):
        return ResolvedImage(image, "pause", Program(_pause_program(layout), "pause", tag))
    try:
        return ResolvedImage(image, "builtin", runtime.resolve_program(image, etcd_binary=etcd_binary))
    except ImageError:
        if name == c.ETCD:
            raise
    mapped = _mapped(image, image_map or {})
    if mapped is not None:
        return ResolvedImage(image, "mapped", Program(tuple(mapped), name, tag))
    if name in _SHELL_IMAGES:
        return ResolvedImage(image, "shell", Program((), name, tag), _SHELL_IMAGES[name])
    raise ImageError("ErrImagePull", f'Failed to pull image "{image}": {how_to_map(image, map_file)}')


def host_program(word: str) -> str:
    """A command word of a shell image → the host program (sh, bash, python3, or a same-named host tool)."""
    base = word.rsplit("/", 1)[-1]
    if base in _SHELLS:
        return shutil.which(base) or "/bin/sh"
    if base in _PYTHONS or base.startswith("python3"):
        return shutil.which("python3") or sys.executable
    return shutil.which(base) or word


def container_argv(resolved: ResolvedImage, command: Sequence[str], args: Sequence[str]) -> list[str]:
    """The process argv: Docker's entrypoint/cmd rules with the program standing in for the image's entrypoint."""
    if resolved.kind == "pause":
        return list(resolved.program.entrypoint)
    if resolved.kind in ("builtin", "mapped"):
        return runtime.build_argv(resolved.program, command, args)
    argv = [*command, *args] if command else [*(resolved.default_command if not args else ()), *args]
    if not argv:
        argv = list(resolved.default_command)
    return [host_program(argv[0]), *argv[1:]]
