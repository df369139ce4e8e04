"""A container's environment as the kubelet builds it: envFrom, env with $(VAR) expansion, and the downward API.

Called by the pod worker before it starts a container (`container_env`), and by `volumes` for downwardAPI files
(`field_value`, `resource_value`). Follows the kubelet's makeEnvironmentVariables: every `envFrom` source in order
(keys prefixed, keys that are not valid variable names skipped with an InvalidEnvironmentVariableNames warning), then
every `env` entry in order, a `value` expanding `$(NAME)` against what is defined so far and the service variables
(`$$` escapes, an unknown name stays as written). ConfigMaps and Secrets are read through the kubelet's client (the
Node authorizer lets it read exactly those of Pods bound to it); errors are worded as the kubelet's, which the pod
worker shows as the container's CreateContainerConfigError message. `expand_command` applies the same expansion to
`command` and `args`.
"""

from __future__ import annotations

import asyncio
import base64
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from pykubeadm.kubelet.api import ApiError
from pykubeadm.kubelet.node import meminfo_kib
from pykubeadm.util.goquote import go_quote
from pykubeadm.util.quantity import parse_quantity

__all__ = [
    "EnvError",
    "ObjectCache",
    "container_env",
    "expand",
    "expand_command",
    "field_value",
    "format_map",
    "is_env_var_name",
    "node_allocatable",
    "resource_value",
]

Obj = dict[str, Any]
#: A callback for Pod events: (reason, message), e.g. InvalidEnvironmentVariableNames.
EventSink = Callable[[str, str], None]

_ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_SUBSCRIPT = re.compile(r"^(metadata\.(?:labels|annotations))\['(.*)'\]$")


class EnvError(Exception):
    """The environment cannot be built (a missing ConfigMap, Secret or key; an unsupported field path)."""


def is_env_var_name(name: str) -> bool:
    """Kubernetes' IsEnvVarName: `[-._a-zA-Z][-._a-zA-Z0-9]*`."""
    return bool(_ENV_VAR_NAME.match(name))


def expand(value: str, *mappings: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: `$(NAME)` → the first mapping's value, or left as written if none has it;
    `$$` → `$`; a `$` not starting either is kept with the character after it; an unclosed `$(` stays."""
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        ch = value[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = value[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = value.find(")", i + 2)
            if close == -1:
                out.append("$(")
                i += 2
                continue
            name = value[i + 2 : close]
            for m in mappings:
                if name in m:
                    out.append(m[name])
                    break
            else:
                out.append(f"$({name})")
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def expand_command(container: Mapping[str, Any], env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The container's `command` and `args` with $(VAR) expanded against its environment (the kubelet's
    ExpandContainerCommandAndArgs)."""
    command = [expand(str(a), env) for a in container.get("command") or ()]
    args = [expand(str(a), env) for a in container.get("args") or ()]
    return command, args


def format_map(m: Mapping[str, str]) -> str:
    """The downward API's rendering of labels/annotations: sorted `key="value"` lines (Go's %q quoting)."""
    return "\n".join(f"{k}={go_quote(str(m[k]))}" for k in sorted(m))


def field_value(
    pod: Obj,
    field_path: str,
    *,
    node_name: str = "",
    host_ips: Sequence[str] = (),
    pod_ips: Sequence[str] = (),
) -> str:
    """The value of a downward-API fieldRef (`metadata.name`, `metadata.labels['k']`, `status.podIP`, …)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    m = _SUBSCRIPT.match(field_path)
    if m:
        return str((meta.get(m.group(1).split(".")[1]) or {}).get(m.group(2), ""))
    simple = {
        "metadata.name": lambda: meta.get("name", ""),
        "metadata.namespace": lambda: meta.get("namespace", ""),
        "metadata.uid": lambda: meta.get("uid", ""),
        "metadata.labels": lambda: format_map(meta.get("labels") or {}),
        "metadata.annotations": lambda: format_map(meta.get("annotations") or {}),
        "spec.nodeName": lambda: spec.get("nodeName") or node_name,
        "spec.serviceAccountName": lambda: spec.get("serviceAccountName") or spec.get("serviceAccount") or "",
        "status.hostIP": lambda: host_ips[0] if host_ips else "",
        "status.hostIPs": lambda: ",".join(host_ips),
        "status.podIP": lambda: pod_ips[0] if pod_ips else "",
        "status.podIPs": lambda: ",".join(pod_ips),
    }
    if field_path not in simple:
        raise EnvError(f"unsupported fieldPath: {field_path}")
    return str(simple[field_path]())


def node_allocatable() -> dict[str, str]:
    """This machine's cpu and memory, the kubelet's default for limits a container does not set."""
    memory = (meminfo_kib("MemTotal") or 0) * 1024
    return {"cpu": str(os.cpu_count() or 1), "memory": str(memory), "ephemeral-storage": str(2**40)}


def _find_container(pod: Obj, name: str) -> Obj | None:
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers"):
        for ct in spec.get(key) or ():
            if ct.get("name") == name:
                return ct
    return None


def resource_value(pod: Obj, container: Obj, ref: Mapping[str, Any], allocatable: Mapping[str, str]) -> str:
    """A resourceFieldRef (limits/requests cpu, memory, ephemeral-storage) divided by `divisor`, rounded up as kube
    does; an unset limit is the node's allocatable amount, an unset request is the limit if one is set, else 0."""
    if ref.get("containerName"):
        found = _find_container(pod, ref["containerName"])
        if found is None:
            raise EnvError(f"container {ref['containerName']} not found")
        container = found
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise EnvError(f"unsupported container resource : {resource}")
    res = container.get("resources") or {}
    limit = (res.get("limits") or {}).get(name)
    if kind == "limits":
        raw = limit if limit is not None else allocatable.get(name, "0")
    else:
        raw = (res.get("requests") or {}).get(name, limit if limit is not None else "0")
    value = parse_quantity(str(raw))
    divisor = parse_quantity(str(ref.get("divisor") or "1")) or Decimal(1)
    if divisor <= 0:
        raise EnvError(f"invalid divisor {ref.get('divisor')!r}")
    if name == "cpu":  # MilliValue() of both, rounded up, then the ceiling of the quotient
        return str(math.ceil(Decimal(math.ceil(value * 1000)) / Decimal(math.ceil(divisor * 1000))))
    return str(math.ceil(Decimal(math.ceil(value)) / Decimal(math.ceil(divisor))))


class ObjectCache:
    """ConfigMaps and Secrets read through the kubelet's client. A missing object is remembered as None.

    Made per use (ttl 0: each object read once for the lifetime of the cache), or shared by the kubelet across its
    Pods with a `ttl` in seconds, like the kubelet's TTL-based configmap/secret managers: a hundred Pods using
    `kube-root-ca.crt` then cost one read, concurrent readers of one object share one request.
    """

    def __init__(self, client: Any, *, ttl: float = 0.0, clock: Callable[[], float] = time.monotonic):
        self._client = client
        self._ttl = ttl
        self._clock = clock
        self._objects: dict[tuple[str, str, str], tuple[float, asyncio.Future[Obj | None]]] = {}

    async def get(self, namespace: str, resource: str, name: str) -> Obj | None:
        key = (namespace, resource, name)
        now = self._clock()
        hit = self._objects.get(key)
        if hit is None or (self._ttl and now - hit[0] > self._ttl):
            future: asyncio.Future[Obj | None] = asyncio.ensure_future(self._fetch(namespace, resource, name))
            hit = (now, future)
            self._objects[key] = hit
        try:
            return await asyncio.shield(hit[1])
        except Exception:
            if self._objects.get(key) is hit:
                del self._objects[key]  # errors are not remembered
            raise

    async def _fetch(self, namespace: str, resource: str, name: str) -> Obj | None:
        try:
            return dict(await self._client.get(f"/api/v1/namespaces/{namespace}/{resource}/{name}"))
        except ApiError as e:
            if e.status == 404:
                return None
            raise EnvError(f"failed to get {resource[:-1]} {namespace}/{name}: {e.message}") from e


def _secret_data(secret: Obj) -> dict[str, str]:
    return {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (secret.get("data") or {}).items()}


async def container_env(
    pod: Obj,
    container: Obj,
    client: Any,
    *,
    node_name: str,
    host_ip: str,
    pod_ip: str,
    host_ips: Sequence[str] | None = None,
    pod_ips: Sequence[str] | None = None,
    service_env: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    on_event: EventSink | None = None,
    objects: ObjectCache | None = None,
) -> dict[str, str]:
    """The container's variables from `envFrom`, `env` and `service_env` (the Service variables, lowest priority).
    ConfigMaps and Secrets are read through `objects` when given (a node-wide cache), else once per call.

    Raises EnvError with the kubelet's wording (`configmap "x" not found`, `couldn't find key K in ConfigMap NS/N`).
    """
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace", "default")
    cache = objects if objects is not None else ObjectCache(client)
    services = dict(service_env or {})
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        prefix = source.get("prefix") or ""
        if source.get("configMapRef"):
            ref, resource, kind = source["configMapRef"], "configmaps", "configMap"
        elif source.get("secretRef"):
            ref, resource, kind = source["secretRef"], "secrets", "secret"
        else:
            continue
        name = ref.get("name", "")
        obj = await cache.get(ns, resource, name)
        if obj is None:
            if ref.get("optional"):
                continue
            raise EnvError(f'{kind.lower()} "{name}" not found')
        data = _secret_data(obj) if resource == "secrets" else dict(obj.get("data") or {})
        invalid = []
        for key, value in data.items():
            full = prefix + key
            if not is_env_var_name(full):
                invalid.append(full)
                continue
            env[full] = value
        if invalid and on_event is not None:
            on_event(
                "InvalidEnvironmentVariableNames",
                f"Keys [{', '.join(sorted(invalid))}] from the EnvFrom {kind} {ns}/{name} were skipped since they "
                "are considered invalid environment variable names.",
            )
    hips = list(host_ips) if host_ips else ([host_ip] if host_ip else [])
    pips = list(pod_ips) if pod_ips else ([pod_ip] if pod_ip else [])
    for var in container.get("env") or ():
        name = var.get("name", "")
        source = var.get("valueFrom")
        if not source:
            env[name] = expand(str(var.get("value", "")), env, services)
            continue
        if source.get("fieldRef"):
            env[name] = field_value(
                pod, source["fieldRef"].get("fieldPath", ""), node_name=node_name, host_ips=hips, pod_ips=pips
            )
        elif source.get("resourceFieldRef"):
            env[name] = resource_value(pod, container, source["resourceFieldRef"], allocatable or node_allocatable())
        elif source.get("configMapKeyRef") or source.get("secretKeyRef"):
            is_cm = bool(source.get("configMapKeyRef"))
            ref = source["configMapKeyRef"] if is_cm else source["secretKeyRef"]
            ref_name, key, optional = ref.get("name", ""), ref.get("key", ""), bool(ref.get("optional"))
            obj = await cache.get(ns, "configmaps" if is_cm else "secrets", ref_name)
            if obj is None:
                if optional:
                    continue
                raise EnvError(f'{"configmap" if is_cm else "secret"} "{ref_name}" not found')
            data = dict(obj.get("data") or {}) if is_cm else _secret_data(obj)
            if key not in data:
                if optional:
                    continue
                raise EnvError(f"couldn't find key {key} in {'ConfigMap' if is_cm else 'Secret'} {ns}/{ref_name}")
            env[name] = data[key]
    for key, value in services.items():
        env.setdefault(key, value)
    return env
