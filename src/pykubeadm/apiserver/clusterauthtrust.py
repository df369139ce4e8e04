"""kube-apiserver's post-start hook `start-cluster-authentication-info-controller` (the ClusterAuthenticationTrust
controller): publishes how this apiserver authenticates clients in the ConfigMap
kube-system/extension-apiserver-authentication, which kube-scheduler, kube-controller-manager and aggregated API
servers read for delegated authentication when they have no --client-ca-file of their own.

The data, as kube writes it: `client-ca-file` (the PEM bundle of --client-ca-file) and, when
--requestheader-client-ca-file is set, `requestheader-client-ca-file` (PEM) with `requestheader-username-headers`,
`requestheader-uid-headers`, `requestheader-group-headers`, `requestheader-extra-headers-prefix` and
`requestheader-allowed-names` as JSON string arrays (`["X-Remote-User"]`; `[]` when the flag is unset).
Several apiservers (HA) share the object: each sync combines what is stored with what this apiserver requires —
header lists are the union in order (stored first, then ours), CA bundles the union of both certificate lists without
duplicates and without certificates that expired more than five minutes ago — so no apiserver removes another's CA.
Nothing to publish and no ConfigMap: nothing is written; unchanged data is never rewritten.

The controller syncs at start in the background (a storage outage never fails start: failures are retried with
backoff), again on every change of the ConfigMap (a deleted or edited one is restored), and every minute, re-reading
the CA files so a rotated CA is published.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime as dt
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykubeadm import constants as c
from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.options import ServerOptions
from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.apiserver.state import ApiState

__all__ = [
    "HOOK_NAME",
    "ClusterAuthenticationInfo",
    "ClusterAuthenticationTrustController",
    "authentication_info_from_options",
    "combine",
    "configmap_data",
    "info_from_data",
]

log = logging.getLogger("pykubeadm.apiserver.clusterauthtrust")

Obj = dict[str, Any]

#: The post-start hook's name, as /healthz lists it (`poststarthook/<name>`).
HOOK_NAME: Final = "start-cluster-authentication-info-controller"
NAMESPACE: Final = c.NAMESPACE_SYSTEM
NAME: Final = c.EXTENSION_APISERVER_AUTHENTICATION_CONFIGMAP
#: kube's resync period ("checks are cheap. run once a minute just to be sure we stay in sync").
RESYNC_INTERVAL: Final = 60.0
#: Retry pauses after a failed sync (kube's rate-limited requeue, capped lower so start-up outages heal quickly).
RETRY_INITIAL: Final = 0.5
RETRY_MAX: Final = 30.0
#: Certificates that expired longer ago than this are dropped from the combined bundles.
EXPIRY_SLACK: Final = dt.timedelta(minutes=5)

_CTX = RequestContext(field_manager="kube-apiserver")
_HEADER_KEYS: Final = (
    ("requestheader-username-headers", "requestheader_username_headers"),
    ("requestheader-uid-headers", "requestheader_uid_headers"),
    ("requestheader-group-headers", "requestheader_group_headers"),
    ("requestheader-extra-headers-prefix", "requestheader_extra_headers_prefix"),
    ("requestheader-allowed-names", "requestheader_allowed_names"),
)


@dataclass(frozen=True)
class ClusterAuthenticationInfo:
    """What an apiserver requires of delegated authenticators (kube's ClusterAuthenticationInfo): PEM bundles are
    b"" when absent; `requestheader_ca` absent means no request-header data at all."""

    client_ca: bytes = b""
    requestheader_ca: bytes = b""
    requestheader_username_headers: tuple[str, ...] = ()
    requestheader_uid_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ()
    requestheader_extra_headers_prefix: tuple[str, ...] = ()
    requestheader_allowed_names: tuple[str, ...] = ()


def _flag_list(value: Any) -> tuple[str, ...]:
    items: Iterable[Any] = value if isinstance(value, list | tuple) else [value or ""]
    return tuple(part.strip() for item in items for part in str(item).split(",") if part.strip())


def authentication_info_from_options(options: ServerOptions) -> ClusterAuthenticationInfo:
    """This apiserver's requirement, from its flags; reads the CA files now (raises OSError when unreadable)."""
    client_ca = Path(options.client_ca_file).read_bytes() if options.client_ca_file else b""
    if options.requestheader_client_ca_file is None:
        return ClusterAuthenticationInfo(client_ca=client_ca)
    return ClusterAuthenticationInfo(
        client_ca=client_ca,
        requestheader_ca=Path(options.requestheader_client_ca_file).read_bytes(),
        requestheader_username_headers=tuple(options.requestheader_username_headers),
        requestheader_uid_headers=_flag_list(options.raw_flags.get("requestheader-uid-headers")),
        requestheader_group_headers=tuple(options.requestheader_group_headers),
        requestheader_extra_headers_prefix=tuple(options.requestheader_extra_headers_prefix),
        requestheader_allowed_names=tuple(options.requestheader_allowed_names),
    )


def _json_list(key: str, text: str) -> tuple[str, ...]:
    if not text:
        return ()
    value = json.loads(text)  # json.JSONDecodeError is a ValueError
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key}: want a JSON array of strings, got {text!r}")
    return tuple(value)


def info_from_data(data: Mapping[str, str]) -> ClusterAuthenticationInfo:
    """What a stored ConfigMap's data says (kube's getClusterAuthenticationInfoFor); raises ValueError on a malformed
    entry."""
    fields = {attr: _json_list(key, data.get(key, "")) for key, attr in _HEADER_KEYS}
    return ClusterAuthenticationInfo(
        client_ca=data.get("client-ca-file", "").encode(),
        requestheader_ca=data.get("requestheader-client-ca-file", "").encode(),
        **fields,
    )


def _union(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *second]))


def _certificates(bundle: bytes) -> list[x509.Certificate]:
    if not bundle.strip():
        return []
    return x509.load_pem_x509_certificates(bundle)  # ValueError when it holds no valid certificate


def _combine_bundles(first: bytes, second: bytes, now: dt.datetime) -> bytes:
    seen: set[bytes] = set()
    out: list[bytes] = []
    for cert in [*_certificates(first), *_certificates(second)]:
        der = cert.public_bytes(serialization.Encoding.DER)
        if der in seen or cert.not_valid_after_utc <= now - EXPIRY_SLACK:
            continue
        seen.add(der)
        out.append(cert.public_bytes(serialization.Encoding.PEM))
    return b"".join(out)


def combine(
    stored: ClusterAuthenticationInfo, required: ClusterAuthenticationInfo, now: dt.datetime | None = None
) -> ClusterAuthenticationInfo:
    """kube's combinedClusterAuthenticationInfo: stored entries first, then this apiserver's, without duplicates."""
    now = now or dt.datetime.now(dt.UTC)
    return ClusterAuthenticationInfo(
        client_ca=_combine_bundles(stored.client_ca, required.client_ca, now),
        requestheader_ca=_combine_bundles(stored.requestheader_ca, required.requestheader_ca, now),
        **{attr: _union(getattr(stored, attr), getattr(required, attr)) for _, attr in _HEADER_KEYS},
    )


def configmap_data(info: ClusterAuthenticationInfo) -> dict[str, str]:
    """The ConfigMap data for `info` (kube's getConfigMapDataFor): JSON arrays in kube's compact form."""
    data: dict[str, str] = {}
    if info.client_ca:
        data["client-ca-file"] = info.client_ca.decode()
    if info.requestheader_ca:
        for key, attr in _HEADER_KEYS:
            data[key] = json.dumps(list(getattr(info, attr)), separators=(",", ":"))
        data["requestheader-client-ca-file"] = info.requestheader_ca.decode()
    return data


def desired_data(stored: Mapping[str, str], required: ClusterAuthenticationInfo) -> dict[str, str]:
    return configmap_data(combine(info_from_data(stored), required))


class ClusterAuthenticationTrustController:
    """Keeps kube-system/extension-apiserver-authentication holding this apiserver's authentication info."""

    def __init__(
        self,
        state: ApiState,
        required: Callable[[], ClusterAuthenticationInfo],
        interval: float = RESYNC_INTERVAL,
    ) -> None:
        self.state = state
        self.required = required
        self.interval = interval

    async def sync(self) -> bool:
        """Write the combined data if it differs from what is stored; True when something was written."""
        required = self.required()
        store = self.state.store("configmaps")
        current = await store.try_get(NAMESPACE, NAME)
        stored = (current or {}).get("data") or {}
        if desired_data(stored, required) == stored:
            return False
        await self._ensure_namespace()

        def transform(old: Obj | None) -> Obj:
            new = copy.deepcopy(old) if old is not None else {"metadata": {"name": NAME, "namespace": NAMESPACE}}
            new.setdefault("metadata", {}).pop("resourceVersion", None)
            new["data"] = desired_data((old or {}).get("data") or {}, required)
            return new

        log.info("writing updated authentication info to %s configmaps/%s", NAMESPACE, NAME)
        try:
            await store.update(NAMESPACE, NAME, transform, _CTX, create_if_missing=True)
        except st.ApiError as err:
            if err.code == 413 or (err.code == 422 and "Too long" in err.message):
                # kube: clear an oversized object and count on the apiservers to add the right data back
                with contextlib.suppress(st.ApiError):
                    await store.delete(NAMESPACE, NAME, _CTX)
            raise
        return True

    async def _ensure_namespace(self) -> None:
        namespaces = self.state.store("namespaces")
        if await namespaces.try_get("", NAMESPACE) is None:
            with contextlib.suppress(st.ApiError):  # AlreadyExists: another apiserver was first
                await namespaces.create("", {"metadata": {"name": NAMESPACE}}, _CTX)

    async def _wait_for_change(self, since: int, timeout: float) -> None:
        """Return on the first change of the ConfigMap after revision `since`, or after `timeout` seconds."""
        store = self.state.store("configmaps")
        # The watcher itself, not the async-iterator form: a cancelled wait_for() around an async generator's
        # __anext__ could leave the controller's cancellation waiting for ever.
        w = await store.open_watch(
            NAMESPACE, since + 1, LabelSelector(), FieldSelector((("metadata.name", True, NAME),))
        )
        try:
            await w.wait(timeout)
        finally:
            w.close()

    async def run(self) -> None:
        log.info("Starting cluster_authentication_trust_controller controller")
        backoff = RETRY_INITIAL
        while True:
            try:
                since = await self.state.backend.current_revision()
                await self.sync()
                backoff = RETRY_INITIAL
                await self._wait_for_change(since, self.interval)
            except asyncio.CancelledError:
                log.info("Shutting down cluster_authentication_trust_controller controller")
                raise
            except Exception as err:
                log.warning("%s/%s failed with : %s", NAMESPACE, NAME, err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX)
