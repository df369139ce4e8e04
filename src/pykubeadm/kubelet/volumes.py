"""A Pod's volumes, materialised in its directory as the kubelet does, and the mounts each container gets.

Used by the pod worker: `PodVolumes(pod, pod_dir, client, layout, node_name)`, `await setup()` before the first
container starts, `mounts_for(container)` for each container (given to `sandbox.sandboxed_argv`), `await refresh()`
on every periodic sync (ConfigMap/Secret/downward-API contents; the service-account token renewed at 80 % of its
life), `await teardown()` when the Pod is gone. Volumes live under `<pod dir>/volumes/<plugin>/<name>`
(`kubernetes.io~configmap`, `~secret`, `~projected`, `~empty-dir`, `~downward-api`); hostPath volumes are paths under
the node root (`Layout.host`) checked as `hostpath.prepare_host_paths` does. `persistentVolumeClaim` and generic
`ephemeral` volumes (claim `<pod>-<volume>`, owned by the Pod) resolve through the bound PersistentVolume to a
hostPath or `local` directory of this node (a `local` one gets `securityContext.fsGroup` ownership); an unbound claim
fails the mount ("error processing PVC ns/name: PVC is not bound") and the pod worker retries. ConfigMaps and Secrets are read through
`objects` (a node-wide `envvars.ObjectCache` with a TTL) when given, else afresh on each setup/refresh. API-data
volumes are written with the kubelet's atomic writer layout (files in a timestamped `..<time>` directory, `..data` a
symlink to it swapped by a rename, each top-level name a symlink through `..data`), so a container never sees half an
update. Contents are never logged. Failures are `VolumeError` with the kubelet's reason and message (FailedMount,
`MountVolume.SetUp failed for volume "cfg" : configmap "x" not found`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pykubeadm.kubelet.api import ApiError
from pykubeadm.kubelet.envvars import EnvError, ObjectCache, expand, field_value, node_allocatable, resource_value
from pykubeadm.kubelet.hostpath import MountError, prepare_host_paths
from pykubeadm.kubelet.volumeownership import set_volume_ownership
from pykubeadm.layout import Layout

__all__ = ["PLUGIN_DIRS", "Mount", "PodVolumes", "VolumeError", "mount_pod_volumes", "write_atomic"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]

#: Volume source → the kubelet's plugin directory name.
PLUGIN_DIRS = {
    "emptyDir": "kubernetes.io~empty-dir",
    "configMap": "kubernetes.io~configmap",
    "secret": "kubernetes.io~secret",
    "projected": "kubernetes.io~projected",
    "downwardAPI": "kubernetes.io~downward-api",
}
#: Sources backed by a PersistentVolumeClaim (a generic ephemeral volume's claim is `<pod>-<volume>`).
_CLAIMS = ("persistentVolumeClaim", "ephemeral")
#: Sources the kubelet always mounts read-only.
_API_DATA = ("configMap", "secret", "projected", "downwardAPI")
_DEFAULT_MODE = 0o644  # kube's defaultMode 420
#: kubeadm's kube-api-access volume asks for 3607 s; used when a serviceAccountToken source has none.
DEFAULT_TOKEN_SECONDS = 3607
_TOKEN_MAX_AGE = 24 * 3600  # the kubelet renews a token older than 24 h even if it lives longer
_DATA_DIR = "..data"


class VolumeError(Exception):
    """A volume cannot be set up or mounted: `reason` (FailedMount, CreateContainerConfigError) and `message`."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Mount:
    """One bind mount of a container: a host path (file or directory) at a container path."""

    host_path: Path
    container_path: str
    read_only: bool = False


# --- atomic writer ------------------------------------------------------------------------------------------------


def _check_payload_path(path: str) -> None:
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or path.startswith(".."):
        raise ValueError(f"invalid path {path!r}: must be relative and may not contain '..'")


def _current(target: Path) -> dict[str, tuple[bytes, int]] | None:
    data = target / _DATA_DIR
    if not data.is_symlink():
        return None
    out: dict[str, tuple[bytes, int]] = {}
    root = target / os.readlink(data)
    for dirpath, _, files in os.walk(root):
        for f in files:
            full = Path(dirpath) / f
            st = full.lstat()
            out[str(full.relative_to(root))] = (full.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def write_atomic(target: Path, payload: dict[str, tuple[bytes, int]]) -> bool:
    """Make `target` hold exactly `payload` (relative path → (content, mode)); False if it already did.

    The kubelet's AtomicWriter: the files go to a new `..<UTC time>.<random>` directory, `..data_tmp` → it is renamed
    over `..data`, top-level names are symlinks through `..data`, and the previous directory is removed.
    """
    for path in payload:
        _check_payload_path(path)
    target.mkdir(parents=True, exist_ok=True, mode=0o755)
    if _current(target) == payload:
        return False
    stamp = dt.datetime.now(dt.UTC).strftime("..%Y_%m_%d_%H_%M_%S.")
    new_dir = Path(tempfile.mkdtemp(prefix=stamp, dir=target))
    new_dir.chmod(0o755)
    for rel, (content, mode) in payload.items():
        dest = new_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        with open(dest, "wb") as f:
            f.write(content)
        os.chmod(dest, mode)
    data = target / _DATA_DIR
    old = os.readlink(data) if data.is_symlink() else None
    tmp_link = target / "..data_tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    os.symlink(new_dir.name, tmp_link)
    os.replace(tmp_link, data)
    wanted = {PurePosixPath(p).parts[0] for p in payload}
    for name in wanted:
        link = target / name
        if not link.is_symlink():
            os.symlink(f"{_DATA_DIR}/{name}", link)
    for entry in target.iterdir():
        if not entry.name.startswith("..") and entry.name not in wanted and entry.is_symlink():
            entry.unlink()
    if old and old != new_dir.name:
        shutil.rmtree(target / old, ignore_errors=True)
    return True


# --- the Pod's volumes --------------------------------------------------------------------------------------------


@dataclass
class _Token:
    token: str
    issued: float
    expires: float

    def needs_renewal(self, now: float) -> bool:
        """The kubelet's token manager: renew past 80 % of the token's life or when older than 24 h."""
        return now >= self.issued + 0.8 * (self.expires - self.issued) or now - self.issued > _TOKEN_MAX_AGE


@dataclass
class _State:
    tokens: dict[tuple[str, int], _Token] = field(default_factory=dict)
    tmpfs: set[Path] = field(default_factory=set)
    #: claim volumes (persistentVolumeClaim, ephemeral) → the bound PersistentVolume's directory on this node
    claims: dict[str, Path] = field(default_factory=dict)


def _parse_time(value: str) -> float:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _source_kind(volume: Obj) -> str:
    for key in volume:
        if key != "name":
            return str(key)
    return ""


class PodVolumes:
    """The volumes of one Pod: set up, refreshed, mounted into containers, torn down."""

    def __init__(
        self,
        pod: Obj,
        pod_dir: Path,
        client: Any,
        layout: Layout,
        node_name: str,
        *,
        objects: ObjectCache | None = None,
        clock: Any = time.time,
    ):
        self.pod = pod
        self._objects = objects
        self.pod_dir = pod_dir
        self.client = client
        self.layout = layout
        self.node_name = node_name
        self._clock = clock
        self._state = _State()

    # --- properties of the Pod ---
    @property
    def _meta(self) -> Obj:
        return self.pod.get("metadata") or {}

    @property
    def _spec(self) -> Obj:
        return self.pod.get("spec") or {}

    @property
    def _namespace(self) -> str:
        return str(self._meta.get("namespace", "default"))

    def _volumes(self) -> list[Obj]:
        return list(self._spec.get("volumes") or [])

    def volume_dir(self, volume: Obj) -> Path:
        """Where a volume's contents live on this machine (hostPath: the path under the node root)."""
        kind = _source_kind(volume)
        if kind == "hostPath":
            return self.layout.host(volume["hostPath"]["path"])
        if kind in _CLAIMS:
            path = self._state.claims.get(volume["name"])
            if path is None:
                raise VolumeError("FailedMount", self._failed(volume, "the claim's volume is not set up"))
            return path
        if kind not in PLUGIN_DIRS:
            raise VolumeError("FailedMount", self._failed(volume, f"volume type {kind!r} is not supported here"))
        return Layout.pod_volume_dir(self.pod_dir, PLUGIN_DIRS[kind], volume["name"])

    @staticmethod
    def _failed(volume: Obj, message: str) -> str:
        return f'MountVolume.SetUp failed for volume "{volume.get("name", "")}" : {message}'

    # --- lifecycle ---
    async def setup(self) -> None:
        """Materialise every volume; VolumeError (FailedMount) on the first that cannot be set up."""
        for volume in self._volumes():
            await self._set_up(volume)

    async def refresh(self, pod: Obj | None = None) -> None:
        """Re-sync API-data volumes (with the Pod's current labels/annotations if `pod` is given) and renew tokens
        that are due. Every volume is tried; the first failure is raised after the others were refreshed."""
        if pod is not None:
            self.pod = pod
        first: VolumeError | None = None
        for volume in self._volumes():
            if _source_kind(volume) not in _API_DATA:
                continue
            try:
                await self._set_up(volume)
            except VolumeError as e:
                log.warning(
                    "refreshing volume %s of pod %s/%s: %s",
                    volume.get("name"),
                    self._namespace,
                    self._meta.get("name"),
                    e.message,
                )
                first = first or e
        if first is not None:
            raise first

    async def teardown(self) -> None:
        """Unmount memory-backed emptyDirs and remove the Pod's volume directories (never a hostPath)."""
        await asyncio.to_thread(self._remove)

    def _remove(self) -> None:
        volumes = self.pod_dir / "volumes"
        mounted = set(self._state.tmpfs) | {p for p in volumes.glob("*/*") if os.path.ismount(p)}  # also adopted ones
        for path in sorted(mounted, reverse=True):  # nothing mounted may be deleted through
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)
        self._state.tmpfs.clear()
        shutil.rmtree(volumes, ignore_errors=True)

    # --- mounts ---
    def mounts_for(self, container: Obj, env: dict[str, str] | None = None) -> list[Mount]:
        """The container's volumeMounts as Mounts (subPath / subPathExpr resolved into host_path, created if
        missing; API-data volumes always read-only, as the kubelet mounts them)."""
        volumes = {v.get("name"): v for v in self._volumes()}
        out: list[Mount] = []
        for vm in container.get("volumeMounts") or ():
            volume = volumes.get(vm.get("name"))
            if volume is None:
                raise VolumeError(
                    "CreateContainerConfigError",
                    f'cannot find volume "{vm.get("name")}" to mount into container "{container.get("name")}"',
                )
            base = self.volume_dir(volume)
            sub = vm.get("subPath") or ""
            if vm.get("subPathExpr"):
                sub = expand(vm["subPathExpr"], env or {})
            host = base
            if sub:
                p = PurePosixPath(sub)
                if p.is_absolute() or ".." in p.parts:
                    raise VolumeError(
                        "CreateContainerConfigError",
                        f'failed to prepare subPath for volumeMount "{vm.get("name")}" '
                        f"of container \"{container.get('name')}\": subPath {sub!r} must be a relative path without '..'",
                    )
                host = base / sub
                if not os.path.lexists(host):
                    host.mkdir(parents=True, exist_ok=True, mode=0o755)
                real, real_base = os.path.realpath(host), os.path.realpath(base)
                if real != real_base and not real.startswith(real_base.rstrip("/") + "/"):
                    raise VolumeError(  # a symlink planted in the volume must not reach the node's files
                        "CreateContainerConfigError",
                        f'failed to prepare subPath for volumeMount "{vm.get("name")}" '
                        f'of container "{container.get("name")}": subPath {sub!r} resolves outside the volume',
                    )
            read_only = bool(vm.get("readOnly")) or _source_kind(volume) in _API_DATA
            read_only = read_only or bool((volume.get("persistentVolumeClaim") or {}).get("readOnly"))
            out.append(Mount(host, str(vm.get("mountPath", "")), read_only))
        return out

    # --- per source ---
    async def _set_up(self, volume: Obj) -> None:
        kind = _source_kind(volume)
        try:
            if kind == "hostPath":
                self._host_path(volume)
            elif kind == "emptyDir":
                self._empty_dir(volume)
            elif kind in _CLAIMS:
                await self._claim(volume)
            elif kind in _API_DATA:
                payload = await self._payload(volume, kind)
                if payload is not None:
                    write_atomic(self.volume_dir(volume), payload)
            else:
                raise VolumeError("FailedMount", self._failed(volume, f"volume type {kind!r} is not supported here"))
            pod_sc = self._spec.get("securityContext") or {}
            if kind != "hostPath" and pod_sc.get("fsGroup") is not None and os.geteuid() == 0:
                set_volume_ownership(
                    self.volume_dir(volume),
                    int(pod_sc["fsGroup"]),
                    read_only=kind in _API_DATA,
                    policy=str(pod_sc.get("fsGroupChangePolicy") or "Always"),
                )
        except (EnvError, ValueError, OSError) as e:
            raise VolumeError("FailedMount", self._failed(volume, str(e))) from e

    def _host_path(self, volume: Obj) -> None:
        hp = volume["hostPath"]
        try:
            prepare_host_paths({"volumes": [volume]}, self.layout)
        except MountError as e:
            raise VolumeError("FailedMount", self._failed(volume, str(e))) from e
        path = self.layout.host(hp["path"])
        checks = {
            "Socket": (stat.S_ISSOCK, "a socket file"),
            "CharDevice": (stat.S_ISCHR, "a character device"),
            "BlockDevice": (stat.S_ISBLK, "a block device"),
        }
        check = checks.get(hp.get("type") or "")
        if check is not None:
            try:
                ok = check[0](path.stat().st_mode)
            except OSError:
                ok = False
            if not ok:
                raise VolumeError(
                    "FailedMount", self._failed(volume, f"hostPath type check failed: {hp['path']} is not {check[1]}")
                )

    async def _claim(self, volume: Obj) -> None:
        """Resolve a claim volume through its bound PersistentVolume (hostPath or local, a directory on this node)."""
        pod_name = str(self._meta.get("name", ""))
        if "ephemeral" in volume:
            name = f"{pod_name}-{volume['name']}"
        else:
            name = str(volume["persistentVolumeClaim"].get("claimName", ""))
        what = f"error processing PVC {self._namespace}/{name}"
        try:
            claim = await self.client.get(f"/api/v1/namespaces/{self._namespace}/persistentvolumeclaims/{name}")
        except ApiError as e:
            raise VolumeError("FailedMount", f"{what}: failed to fetch PVC from API server: {e.message}") from e
        if "ephemeral" in volume and not any(
            ref.get("uid") == self._meta.get("uid") and ref.get("controller")
            for ref in (claim.get("metadata") or {}).get("ownerReferences") or []
        ):
            raise VolumeError("FailedMount", f"{what}: PVC was not created for pod {self._namespace}/{pod_name} "
                              "(pod is not owner)")  # fmt: skip
        pv_name = (claim.get("spec") or {}).get("volumeName")
        if not pv_name or (claim.get("status") or {}).get("phase") != "Bound":
            raise VolumeError("FailedMount", f"{what}: PVC is not bound")
        try:
            pv = await self.client.get(f"/api/v1/persistentvolumes/{pv_name}")
        except ApiError as e:
            raise VolumeError(
                "FailedMount", f"{what}: failed to fetch PV {pv_name} from API server: {e.message}"
            ) from e
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") != (claim.get("metadata") or {}).get("uid"):
            raise VolumeError(
                "FailedMount", f"{what}: the PV's claimRef does not point to PVC {self._namespace}/{name}"
            )
        spec = pv.get("spec") or {}
        if spec.get("hostPath"):
            source: Obj = {"name": volume["name"], "hostPath": dict(spec["hostPath"])}
            self._host_path(source)
        elif spec.get("local"):
            source = {"name": volume["name"], "hostPath": {"path": spec["local"]["path"], "type": "Directory"}}
            self._host_path(source)
            self._fs_group(self.layout.host(spec["local"]["path"]))  # hostPath volumes keep their ownership
        else:
            raise VolumeError("FailedMount", self._failed(volume, f"PersistentVolume {pv_name}: only hostPath and "
                              "local volumes can be mounted on this node"))  # fmt: skip
        self._state.claims[volume["name"]] = self.layout.host(source["hostPath"]["path"])

    def _fs_group(self, root: Path) -> None:
        """The kubelet's SetVolumeOwnership for `securityContext.fsGroup`: group-owned by it, group read/write
        (execute where the owner has it), setgid directories; `OnRootMismatch` skips a volume whose root already
        matches."""
        context = self._spec.get("securityContext") or {}
        if context.get("fsGroup") is None:
            return
        gid = int(context["fsGroup"])
        st = root.stat()
        if (
            context.get("fsGroupChangePolicy") == "OnRootMismatch"
            and st.st_gid == gid
            and st.st_mode & 0o2070 == 0o2070
        ):
            return
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [None, *filenames]:
                path = Path(dirpath) if name is None else Path(dirpath) / name
                mode = path.lstat().st_mode
                if stat.S_ISLNK(mode):
                    continue
                os.chown(path, -1, gid)
                extra = stat.S_IRGRP | stat.S_IWGRP | (stat.S_IXGRP if mode & stat.S_IXUSR else 0)
                os.chmod(path, stat.S_IMODE(mode) | extra | (stat.S_ISGID if name is None else 0))
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]

    def _empty_dir(self, volume: Obj) -> None:
        path = self.volume_dir(volume)
        src = volume.get("emptyDir") or {}
        path.mkdir(parents=True, exist_ok=True)
        if src.get("medium") == "Memory" and os.geteuid() == 0 and not os.path.ismount(path):
            size = src.get("sizeLimit") or node_allocatable()["memory"]
            res = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"mode=0777,size={_bytes(str(size))}", "tmpfs", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                raise VolumeError("FailedMount", self._failed(volume, f"mount tmpfs failed: {res.stderr.strip()}"))
            self._state.tmpfs.add(path)
        path.chmod(0o777)  # the kubelet's emptyDir is world-writable

    async def _payload(self, volume: Obj, kind: str) -> dict[str, tuple[bytes, int]] | None:
        """The files of an API-data volume; None for an optional source that does not exist (left as it is)."""
        cache = self._objects if self._objects is not None else ObjectCache(self.client)
        src = volume[kind] or {}
        default_mode = int(src.get("defaultMode", _DEFAULT_MODE))
        if kind == "configMap":
            return await self._object_files(cache, "configmaps", src.get("name", ""), src, default_mode, create=True)
        if kind == "secret":
            return await self._object_files(cache, "secrets", src.get("secretName", ""), src, default_mode, create=True)
        if kind == "downwardAPI":
            return self._downward_files(src.get("items") or (), default_mode)
        payload: dict[str, tuple[bytes, int]] = {}
        errors: list[str] = []
        for index, source in enumerate(src.get("sources") or ()):
            try:
                if source.get("configMap") is not None:
                    sub = source["configMap"]
                    files = await self._object_files(cache, "configmaps", sub.get("name", ""), sub, default_mode)
                elif source.get("secret") is not None:
                    sub = source["secret"]
                    files = await self._object_files(cache, "secrets", sub.get("name", ""), sub, default_mode)
                elif source.get("downwardAPI") is not None:
                    files = self._downward_files(source["downwardAPI"].get("items") or (), default_mode)
                elif source.get("serviceAccountToken") is not None:
                    files = await self._token_file(volume, index, source["serviceAccountToken"], default_mode)
                else:
                    raise EnvError(f"unsupported projected source {sorted(source)}")
                payload.update(files or {})
            except EnvError as e:
                errors.append(str(e))
        if errors:
            raise EnvError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return payload

    async def _object_files(
        self, cache: ObjectCache, resource: str, name: str, src: Obj, default_mode: int, *, create: bool = False
    ) -> dict[str, tuple[bytes, int]] | None:
        kind = "configmap" if resource == "configmaps" else "secret"
        optional = bool(src.get("optional"))
        obj = await cache.get(self._namespace, resource, name)
        if obj is None:
            if optional:
                return {} if create else None
            raise EnvError(f'{kind} "{name}" not found')
        data: dict[str, bytes] = {}
        if resource == "configmaps":
            data.update({k: str(v).encode() for k, v in (obj.get("data") or {}).items()})
            data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        else:
            data.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        items = src.get("items") or ()
        if not items:
            return {k: (v, default_mode) for k, v in data.items()}
        out: dict[str, tuple[bytes, int]] = {}
        for item in items:
            key = item.get("key", "")
            if key not in data:
                if optional:
                    continue
                what = (
                    "configmap references non-existent config key"
                    if kind == "configmap"
                    else ("references non-existent secret key")
                )
                raise EnvError(f"{what}: {key}")
            out[item.get("path") or key] = (data[key], int(item.get("mode", default_mode)))
        return out

    def _downward_files(self, items: Any, default_mode: int) -> dict[str, tuple[bytes, int]]:
        out: dict[str, tuple[bytes, int]] = {}
        for item in items:
            if item.get("fieldRef"):
                value = field_value(self.pod, item["fieldRef"].get("fieldPath", ""), node_name=self.node_name)
            elif item.get("resourceFieldRef"):
                ref = item["resourceFieldRef"]
                container: dict[str, Any] = next(
                    (c for c in self._spec.get("containers") or () if c.get("name") == ref.get("containerName")), {}
                )
                value = resource_value(self.pod, container, ref, node_allocatable())
            else:
                continue
            out[item.get("path", "")] = (value.encode(), int(item.get("mode", default_mode)))
        return out

    async def _token_file(self, volume: Obj, index: int, src: Obj, mode: int) -> dict[str, tuple[bytes, int]]:
        key = (volume["name"], index)
        now = self._clock()
        cached = self._state.tokens.get(key)
        if cached is None or cached.needs_renewal(now):
            cached = await self._request_token(src)
            self._state.tokens[key] = cached
        return {src.get("path", "token"): (cached.token.encode(), mode)}

    async def _request_token(self, src: Obj) -> _Token:
        sa = self._spec.get("serviceAccountName") or self._spec.get("serviceAccount") or "default"
        spec: Obj = {
            "expirationSeconds": int(src.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS),
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": self._meta.get("name", ""),
                "uid": self._meta.get("uid", ""),
            },
        }
        if src.get("audience"):
            spec["audiences"] = [src["audience"]]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        issued = self._clock()
        try:
            resp = await self.client.post(f"/api/v1/namespaces/{self._namespace}/serviceaccounts/{sa}/token", body)
        except ApiError as e:
            raise EnvError(f"failed to fetch token: {e.message}") from e
        status = resp.get("status") or {}
        token = status.get("token")
        if not token:
            raise EnvError("failed to fetch token: the TokenRequest answer has no token")
        try:
            expires = _parse_time(str(status.get("expirationTimestamp")))
        except ValueError:
            expires = issued + spec["expirationSeconds"]
        return _Token(token, issued, expires)


def _bytes(quantity: str) -> int:
    from pykubeadm.util.quantity import parse_quantity

    return int(parse_quantity(quantity))


async def mount_pod_volumes(
    pod: Obj,
    pod_dir: Path,
    client: Any,
    layout: Layout,
    node_name: str,
    *,
    objects: ObjectCache | None,
    on_failure: Callable[[str], None],
    first_retry: float,
) -> PodVolumes:
    """A Pod's volumes, set up: a failure is reported (`on_failure`, the FailedMount event's message) and retried with
    back-off from `first_retry` seconds up to 2 minutes, as the kubelet's volume manager keeps trying."""
    volumes = PodVolumes(pod, pod_dir, client, layout, node_name, objects=objects)
    delay = first_retry
    while True:
        try:
            await volumes.setup()
            return volumes
        except VolumeError as e:
            on_failure(e.message)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 120.0)
