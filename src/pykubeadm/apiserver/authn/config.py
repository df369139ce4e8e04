"""Build the apiserver's security layers from kube-apiserver flags: `build_auth(flags, source) -> AuthConfig`.

The one entry point the HTTP core calls at start. Flags are the ones kubeadm writes into kube-apiserver.yaml
(`--client-ca-file`, `--enable-bootstrap-token-auth`, `--token-auth-file`, `--service-account-key-file`,
`--service-account-issuer`, `--api-audiences`, `--requestheader-*`, `--anonymous-auth`, `--authorization-mode`,
`--enable-admission-plugins`, `--disable-admission-plugins`). Files are read here, once; bad files or values raise
`AuthConfigError` naming the flag.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pykubeadm.apiserver.admission.certificates import (
    CertificateApproval,
    CertificateSigning,
    CertificateSubjectRestriction,
)
from pykubeadm.apiserver.admission.chain import AdmissionChain
from pykubeadm.apiserver.admission.config import AdmissionConfigError, load_admission_config
from pykubeadm.apiserver.admission.defaulttolerationseconds import DefaultTolerationSeconds
from pykubeadm.apiserver.admission.lifecycle import NamespaceLifecycle
from pykubeadm.apiserver.admission.limitranger import LimitRanger
from pykubeadm.apiserver.admission.noderestriction import NodeRestriction
from pykubeadm.apiserver.admission.podsecurity import PodSecurity, parse_pod_security_config
from pykubeadm.apiserver.admission.policy import ValidatingAdmissionPolicy, kinds_from_registry
from pykubeadm.apiserver.admission.priority import Priority
from pykubeadm.apiserver.admission.rbac_escalation import RBACEscalationCheck
from pykubeadm.apiserver.admission.resourcequota import ResourceQuota
from pykubeadm.apiserver.admission.serviceaccount import ServiceAccount
from pykubeadm.apiserver.admission.storage import DefaultStorageClass, StorageObjectInUseProtection
from pykubeadm.apiserver.admission.webhook import MutatingWebhooks, ValidatingWebhooks
from pykubeadm.apiserver.authn.bootstrap import BootstrapTokenAuthenticator
from pykubeadm.apiserver.authn.requestheader import RequestHeaderAuthenticator, RequestHeaderConfig
from pykubeadm.apiserver.authn.serviceaccount import ServiceAccountTokenAuthenticator, load_public_keys
from pykubeadm.apiserver.authn.tokencache import CachedTokenAuthenticator
from pykubeadm.apiserver.authn.tokenfile import StaticTokenAuthenticator, TokenFileError
from pykubeadm.apiserver.authn.union import request_authenticator, token_union
from pykubeadm.apiserver.authn.user import Authenticator, TokenAuthenticator
from pykubeadm.apiserver.authn.x509 import X509Authenticator, load_ca_bundle
from pykubeadm.apiserver.authz.attributes import Authorizer
from pykubeadm.apiserver.authz.node import NodeAuthorizer
from pykubeadm.apiserver.authz.rbac import RBACAuthorizer
from pykubeadm.apiserver.authz.union import always_allow, always_deny, privileged_groups, union
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["DEFAULT_ADMISSION_PLUGINS", "AuthConfig", "AuthConfigError", "build_auth"]

log = logging.getLogger("pykubeadm.apiserver")

Flags = Mapping[str, str | Sequence[str] | bool | None]

#: Plugins we implement, in kube-apiserver's fixed execution order.
_IMPLEMENTED_ORDER = (
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "CertificateApproval",
    "CertificateSigning",
    "CertificateSubjectRestriction",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
)
#: kube-apiserver 1.33's default-enabled plugins (the ones we implement run; the rest are accepted as no-ops).
DEFAULT_ADMISSION_PLUGINS = (
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
    "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PersistentVolumeClaimResize",
    "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction", "DefaultIngressClass", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook", "ResourceQuota",
)  # fmt: skip
_KNOWN_PLUGINS = frozenset(DEFAULT_ADMISSION_PLUGINS) | {
    "AlwaysAdmit", "AlwaysPullImages", "AlwaysDeny", "AntiAffinity", "DenyServiceExternalIPs", "EventRateLimit",
    "ExtendedResourceToleration", "ImagePolicyWebhook", "LimitPodHardAntiAffinityTopology", "NamespaceAutoProvision",
    "NamespaceExists", "NodeRestriction", "OwnerReferencesPermissionEnforcement", "PodNodeSelector",
    "PodTolerationRestriction", "StorageObjectInUseProtection", "MutatingAdmissionPolicy",
}  # fmt: skip
_AUTHZ_MODES = ("AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC", "Node")


class AuthConfigError(ValueError):
    """A security flag is invalid or names an unreadable file (a kube-apiserver startup error)."""


@dataclass
class AuthConfig:
    """What the core wires in: request authenticator, TokenReview authenticator, authorizer, RBAC rule resolver (for
    SelfSubjectRulesReview), the admission chain and the API audiences (for TokenReview)."""

    authenticator: Authenticator
    token_authenticator: TokenAuthenticator
    authorizer: Authorizer
    rbac: RBACAuthorizer | None
    admission: AdmissionChain
    api_audiences: tuple[str, ...]
    authorization_modes: tuple[str, ...]


def _values(flags: Flags, name: str) -> list[str]:
    """Every value of a repeatable / comma-separated flag."""
    raw = flags.get(name)
    if raw is None or raw is False:
        return []
    items = [raw] if isinstance(raw, str | bool) else list(raw)
    out: list[str] = []
    for item in items:
        out.extend(p.strip() for p in str(item).split(",") if p.strip())
    return out


def _single(flags: Flags, name: str) -> str:
    raw = flags.get(name)
    if raw is None or raw is False:
        return ""
    if isinstance(raw, str | bool):
        return str(raw)
    return str(list(raw)[-1]) if raw else ""


def _bool(flags: Flags, name: str, default: bool) -> bool:
    raw = flags.get(name)
    if raw is None:
        return default
    if isinstance(raw, bool):
        return raw
    value = _single(flags, name).lower()
    if value in ("", "true", "1", "t"):
        return True if value else default
    if value in ("false", "0", "f"):
        return False
    raise AuthConfigError(
        f'invalid argument "{value}" for "--{name}" flag: strconv.ParseBool: parsing "{value}": invalid syntax'
    )


def build_auth(
    flags: Flags,
    source: ObjectSource,
    *,
    resolve_path: Callable[[str], Path] = Path,
) -> AuthConfig:
    """Assemble authentication, authorization and admission from kube-apiserver flags (names without `--`).

    `resolve_path` maps a path given in a flag to the file to read (built-in mode maps container paths under the node
    root). Raises AuthConfigError for unknown modes/plugins or unreadable files."""

    def path_of(flag: str, value: str) -> Path:
        path = resolve_path(value)
        if not Path(path).is_file():
            raise AuthConfigError(f"--{flag}: open {value}: no such file or directory")
        return Path(path)

    # --- authentication -----------------------------------------------------------------------------------------
    x509_auth = None
    if ca_file := _single(flags, "client-ca-file"):
        try:
            x509_auth = X509Authenticator(load_ca_bundle(path_of("client-ca-file", ca_file)))
        except ValueError as err:
            raise AuthConfigError(f"--client-ca-file: {err}") from err
    front_proxy = None
    if rh_ca := _single(flags, "requestheader-client-ca-file"):
        try:
            rh_roots = tuple(load_ca_bundle(path_of("requestheader-client-ca-file", rh_ca)))
        except ValueError as err:
            raise AuthConfigError(f"--requestheader-client-ca-file: {err}") from err
        front_proxy = RequestHeaderAuthenticator(
            RequestHeaderConfig(
                client_ca=rh_roots,
                allowed_names=tuple(_values(flags, "requestheader-allowed-names")),
                username_headers=tuple(_values(flags, "requestheader-username-headers")) or ("X-Remote-User",),
                uid_headers=tuple(_values(flags, "requestheader-uid-headers")),
                group_headers=tuple(_values(flags, "requestheader-group-headers")) or ("X-Remote-Group",),
                extra_header_prefixes=tuple(_values(flags, "requestheader-extra-headers-prefix"))
                or ("X-Remote-Extra-",),
            )
        )
    tokens: list[TokenAuthenticator] = []
    if token_file := _single(flags, "token-auth-file"):
        try:
            tokens.append(StaticTokenAuthenticator.from_file(path_of("token-auth-file", token_file)))
        except TokenFileError as err:
            raise AuthConfigError(f"--token-auth-file: {err}") from err
    issuers = tuple(_values(flags, "service-account-issuer"))
    audiences = tuple(_values(flags, "api-audiences")) or issuers
    key_files = _values(flags, "service-account-key-file")
    if key_files:
        key_paths = [path_of("service-account-key-file", k) for k in key_files]
        try:
            keys = load_public_keys(key_paths)
        except ValueError as err:
            raise AuthConfigError(f"--service-account-key-file: {err}") from err
        lookup = _bool(flags, "service-account-lookup", True)
        tokens.append(ServiceAccountTokenAuthenticator(keys, issuers, audiences, source if lookup else None))
    if _bool(flags, "enable-bootstrap-token-auth", False):
        tokens.append(BootstrapTokenAuthenticator(source))
    if flags.get("authentication-config") or any(k.startswith("oidc-") and flags.get(k) for k in flags):
        # Imported only when JWT issuers may be configured: their CEL claim mappings bring protobuf, about 0.1 s of
        # every apiserver start otherwise.
        from pykubeadm.apiserver.authn.jwt import JWTConfigError, jwt_authenticators

        try:
            tokens.extend(jwt_authenticators(flags, path_of))
        except JWTConfigError as err:
            raise AuthConfigError(str(err)) from err
    authenticator = request_authenticator(
        front_proxy,
        x509_auth,
        [CachedTokenAuthenticator(token_union(*tokens))] if tokens else [],  # kube's 10 s token success cache
        anonymous_auth=_bool(flags, "anonymous-auth", True),
    )

    # --- authorization ------------------------------------------------------------------------------------------
    modes = tuple(_values(flags, "authorization-mode")) or ("AlwaysAllow",)
    authorizers: list[Authorizer] = [privileged_groups()]
    rbac: RBACAuthorizer | None = None
    for mode in modes:
        if mode not in _AUTHZ_MODES:
            raise AuthConfigError(f'--authorization-mode: authorization mode "{mode}" is not a valid mode')
        if mode == "Node":
            authorizers.append(NodeAuthorizer(source))
        elif mode == "RBAC":
            rbac = RBACAuthorizer(source)
            authorizers.append(rbac)
        elif mode == "AlwaysAllow":
            authorizers.append(always_allow())
        elif mode == "AlwaysDeny":
            authorizers.append(always_deny())
        else:
            raise AuthConfigError(f'--authorization-mode: authorization mode "{mode}" is not supported by pykubeadm')
    authorizer = union(*authorizers)

    # --- admission ----------------------------------------------------------------------------------------------
    enabled = set(DEFAULT_ADMISSION_PLUGINS) | set(_values(flags, "enable-admission-plugins"))
    disabled = set(_values(flags, "disable-admission-plugins"))
    for name in sorted((enabled | disabled) - _KNOWN_PLUGINS):
        raise AuthConfigError(f'--enable-admission-plugins: plugin "{name}" is unknown')
    active = enabled - disabled
    plugin_configs: dict[str, dict[str, object]] = {}
    if config_file := _single(flags, "admission-control-config-file"):
        try:
            plugin_configs = load_admission_config(path_of("admission-control-config-file", config_file))
        except AdmissionConfigError as err:
            raise AuthConfigError(str(err)) from err
    try:
        pod_security_config = parse_pod_security_config(plugin_configs.get("PodSecurity") or {})
    except ValueError as err:
        raise AuthConfigError(f"--admission-control-config-file: {err}") from err
    factories = {
        "NamespaceLifecycle": lambda: NamespaceLifecycle(source),
        "ServiceAccount": lambda: ServiceAccount(source),
        "NodeRestriction": lambda: NodeRestriction(source),
        "Priority": lambda: Priority(source),
        "DefaultTolerationSeconds": lambda: DefaultTolerationSeconds.from_flags(flags),
        "DefaultStorageClass": lambda: DefaultStorageClass(source),
        "StorageObjectInUseProtection": StorageObjectInUseProtection,
        "CertificateApproval": lambda: CertificateApproval(authorizer),
        "CertificateSigning": lambda: CertificateSigning(authorizer),
        "CertificateSubjectRestriction": CertificateSubjectRestriction,
        "LimitRanger": lambda: LimitRanger(source),
        "ResourceQuota": lambda: ResourceQuota(source),
        "PodSecurity": lambda: PodSecurity(source, pod_security_config),
        "MutatingAdmissionWebhook": lambda: MutatingWebhooks(source),
        "ValidatingAdmissionWebhook": lambda: ValidatingWebhooks(source),
        "ValidatingAdmissionPolicy": lambda: ValidatingAdmissionPolicy(source, kinds_from_registry()),
    }
    plugins = [factories[name]() for name in _IMPLEMENTED_ORDER if name in active]
    missing = [name for name in DEFAULT_ADMISSION_PLUGINS if name in active and name not in factories]
    if missing:
        log.warning("admission plugins enabled but not implemented by pykubeadm (they admit everything): %s",
                    ", ".join(missing))  # fmt: skip
    if rbac is not None:  # kube-apiserver's RBAC storage refuses privilege escalation; not a switchable plugin
        plugins.append(RBACEscalationCheck(rbac, authorizer))
    chain = AdmissionChain(plugins)
    return AuthConfig(
        authenticator=authenticator,
        token_authenticator=token_union(*tokens),
        authorizer=authorizer,
        rbac=rbac,
        admission=chain,
        api_audiences=audiences,
        authorization_modes=modes,
    )
