"""Builds the authenticator, authorizer, admission function and review evaluators from ServerOptions.

Uses the auth package's builder (`authn.config.build_auth`) when it is present; otherwise a minimal fallback: x509
client certificates (CN/O) against --client-ca-file, anonymous, and an authorizer that allows `system:masters`, the
public-info paths for everyone and discovery for authenticated users.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from pykubeadm.apiserver.authn.user import Authenticator, UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Authorizer, Decision
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.apiserver.options import ServerOptions
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.base import RequestContext
from pykubeadm.apiserver.requestinfo import RequestInfo
from pykubeadm.apiserver.state import AdmissionFn, ApiState
from pykubeadm.errors import ValidationError

Obj = dict[str, Any]

log = logging.getLogger("pykubeadm.apiserver")

PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")
DISCOVERY_PREFIXES = ("/api", "/apis", "/openapi")


def _fallback_authenticator(options: ServerOptions) -> Authenticator:
    from pykubeadm.apiserver.authn.union import request_authenticator
    from pykubeadm.apiserver.authn.x509 import X509Authenticator

    x509 = X509Authenticator.from_file(options.client_ca_file) if options.client_ca_file else None
    return request_authenticator(x509=x509, anonymous_auth=False)


def _fallback_authorizer(options: ServerOptions) -> Authorizer:
    allow_all = "AlwaysAllow" in options.authorization_mode

    async def authorize(attrs: Attributes) -> tuple[Decision, str]:
        if allow_all or "system:masters" in attrs.user.groups:
            return Decision.ALLOW, ""
        if not attrs.resource_request and attrs.verb == "get":
            if any(attrs.path == p or attrs.path.startswith(p + "/") for p in PUBLIC_PATHS):
                return Decision.ALLOW, ""
            if "system:authenticated" in attrs.user.groups and attrs.path.startswith(DISCOVERY_PREFIXES):
                return Decision.ALLOW, ""
        if (
            attrs.resource_request
            and attrs.api_group in ("authorization.k8s.io", "authentication.k8s.io")
            and attrs.resource in ("selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews")
            and attrs.verb == "create"
        ):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    return authorize


def _mutated_by_webhook() -> bool:
    """A mutating webhook patched the object of this request (its mutation audit annotation is there)."""
    from pykubeadm.apiserver.admission import recorder

    record = recorder.current()
    return record is not None and any(k.startswith("mutation.webhook.admission.k8s.io/") for k in record.annotations)


def admission_adapter(chain: Any) -> AdmissionFn:
    """Adapt the auth package's AdmissionChain to the store's admission callback."""
    from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation

    plugins = list(getattr(chain, "plugins", []))
    mutating = [p for p in plugins if callable(getattr(p, "admit", None))]
    validating = [p for p in plugins if callable(getattr(p, "validate", None))]

    async def admit(
        op: str, info: RequestInfo, user: UserInfo, store: Store, new: Any, old: Any, dry_run: bool = False
    ) -> None:
        meta = (new or old or {}).get("metadata") or {}
        attrs = AdmissionAttributes(
            operation=Operation(op),
            resource=store.plural,
            user=user,
            namespace=info.namespace or meta.get("namespace", ""),
            name=info.name or meta.get("name", ""),
            group=store.group,
            version=store.strategy.version,
            kind=store.strategy.kind,
            subresource=info.subresource,
            obj=new,
            old_obj=old,
            dry_run=dry_run,
        )
        # Same order as AdmissionChain.run (every mutating plugin, then every validating one), with the plugin
        # lists resolved once instead of runtime-checkable Protocol isinstance checks on every request.
        for p in mutating:
            if p.handles(attrs.operation):
                await p.admit(attrs)
        if new is not None and _mutated_by_webhook():
            ctx = RequestContext(user=user, namespace=attrs.namespace, dry_run=dry_run)
            store.revalidate(new, old, ctx, info.subresource)
        for p in validating:
            if p.handles(attrs.operation):
                await p.validate(attrs)

    return admit


async def wire_auth(state: ApiState, options: ServerOptions, source: ObjectSource) -> None:
    """Fill state.authenticator/authorizer/admission/reviews. Raises ValidationError for bad security flags."""
    try:
        config = importlib.import_module("pykubeadm.apiserver.authn.config")
    except ImportError:
        config = None
    if config is None or not hasattr(config, "build_auth"):
        _wire_fallback(state, options, source)
        return
    try:
        built = config.build_auth(options.raw_flags, source, resolve_path=options.host_path)
    except config.AuthConfigError as e:
        raise ValidationError([str(e)]) from None
    state.authenticator = built.authenticator
    state.authorizer = built.authorizer
    state.anonymous = False  # build_auth's authenticator applies --anonymous-auth itself
    state.admission = admission_adapter(built.admission)
    _wire_reviews(state, built)


def _wire_reviews(state: ApiState, built: Any) -> None:
    from pykubeadm.apiserver.authn import reviews as authn_reviews
    from pykubeadm.apiserver.authz import reviews as authz_reviews

    authorizer = built.authorizer

    async def ssar(request: Any, kind: Any, body: Obj, user: UserInfo) -> Obj:
        return await authz_reviews.self_subject_access_review(body, user, authorizer)

    async def sar(request: Any, kind: Any, body: Obj, user: UserInfo) -> Obj:
        return await authz_reviews.subject_access_review(body, authorizer)

    async def lsar(request: Any, kind: Any, body: Obj, user: UserInfo) -> Obj:
        from pykubeadm.apiserver.handlers.context import info_of

        return await authz_reviews.local_subject_access_review(body, info_of(request).namespace, authorizer)

    async def ssrr(request: Any, kind: Any, body: Obj, user: UserInfo) -> Obj:
        resolvers = [built.rbac] if built.rbac is not None else []
        return await authz_reviews.self_subject_rules_review(
            body, user, resolvers, node_authorizer="Node" in built.authorization_modes
        )

    async def ssr(request: Any, kind: Any, body: Obj, user: UserInfo) -> Obj:
        return await authn_reviews.self_subject_review(body, user)

    async def tr(request: Any, kind: Any, body: Obj, user: UserInfo) -> Obj:
        return await authn_reviews.token_review(body, built.token_authenticator, built.api_audiences)

    state.reviews.update(
        {
            "SelfSubjectAccessReview": ssar,
            "SubjectAccessReview": sar,
            "LocalSubjectAccessReview": lsar,
            "SelfSubjectRulesReview": ssrr,
            "SelfSubjectReview": ssr,
            "TokenReview": tr,
        }
    )


def _wire_fallback(state: ApiState, options: ServerOptions, source: ObjectSource) -> None:
    log.warning("auth package builder not found: using the built-in x509 + system:masters fallback")
    state.authenticator = _fallback_authenticator(options)
    state.authorizer = _fallback_authorizer(options)
    state.anonymous = options.anonymous_auth
