"""The apiserver's shared state (`STATE` app key): registry stores, auth plug-ins, options, version; built by app.py.

Handlers and middlewares read it with `request.app[STATE]`; nothing else holds global state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from pykubeadm.apiserver.authn.user import Authenticator, UserInfo
from pykubeadm.apiserver.authz.attributes import Authorizer
from pykubeadm.apiserver.registry import STRATEGIES, VIRTUAL_KINDS, Store, VirtualKind
from pykubeadm.apiserver.registry.versioned import VersionedStore
from pykubeadm.apiserver.requestinfo import RequestInfo
from pykubeadm.storage.interface import Store as Backend

__all__ = ["STATE", "AdmissionFn", "ApiState"]

Obj = dict[str, Any]

#: Admission: (operation, request info, user, store, new object or None, old object or None, dry run) → raises
#: ApiError. Mutating plugins may change `new` in place; they run before the store's validation.
AdmissionFn = Callable[[str, RequestInfo, UserInfo, Store, "Obj | None", "Obj | None", bool], Awaitable[None]]


@dataclass
class ApiState:
    backend: Backend
    version_info: dict[str, str]
    authenticator: Authenticator
    authorizer: Authorizer
    admission: AdmissionFn | None = None
    anonymous: bool = True
    stores: dict[tuple[str, str, str], Store] = field(default_factory=dict)
    by_resource: dict[str, Store] = field(default_factory=dict)
    virtual: dict[tuple[str, str, str], VirtualKind] = field(default_factory=dict)
    #: Review evaluators: kind → async (request, body, user) → status dict. Filled by wiring.
    reviews: dict[str, Callable[..., Awaitable[Obj]]] = field(default_factory=dict)
    ready: bool = False
    shutting_down: bool = False
    #: endpoint (healthz/livez/readyz) → check name → async check returning None (ok) or a reason.
    health_checks: dict[str, dict[str, Callable[[], Awaitable[str | None]]]] = field(default_factory=dict)
    audit: Callable[[Obj], None] | None = None
    #: TLS settings for proxying to kubelets (pods/log); built from --kubelet-client-certificate/-key.
    kubelet_client: Any = None
    #: The aggregation layer (apiserver/aggregator.Aggregator): APIService routing and availability; None = off.
    aggregator: Any = None
    #: The CRD controller (apiserver/crd/controller.CRDController): serves custom resources; None = not started.
    crds: Any = None
    #: --profiling: serve /debug/pprof/ (to authorized users).
    profiling: bool = False
    #: --feature-gates as set (a gate not named has its v1.33 default).
    feature_gates: dict[str, bool] = field(default_factory=dict)
    #: The watchers of the watch requests being served: closed at shutdown, so each watch ends at once.
    open_watchers: set[Any] = field(default_factory=set)

    def __post_init__(self) -> None:
        for s in STRATEGIES:
            store = VersionedStore(s, self.backend) if s.storage_version else Store(s, self.backend)
            self.stores[(s.group, s.version, s.plural)] = store
            if not s.storage_version:  # a resource's store by name is its storage version's
                self.by_resource[s.resource_name] = store
        for v in VIRTUAL_KINDS:
            self.virtual[(v.group, v.version, v.plural)] = v

    def store(self, resource: str) -> Store:
        """The store of `plural` (core) or `plural.group`."""
        return self.by_resource[resource]


STATE = web.AppKey("state", ApiState)
