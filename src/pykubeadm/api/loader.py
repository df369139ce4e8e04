"""Loading kubeadm configuration: file (multi-document YAML, v1beta4 or v1beta3) and/or flags → defaulted, validated
config objects. kubeadm's LoadOrDefaultInitConfiguration / LoadOrDefaultJoinConfiguration and friends.

Order: the --config/flags mixing rule → read and dispatch documents (unknown apiVersion/kind/field → ValidationError,
documents of other commands ignored with kubeadm's warning) → convert v1beta3 → apply flags → dynamic defaults →
validation (every problem at once) → component configs.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubeadm import constants as c
from pykubeadm.api import componentconfigs as cc
from pykubeadm.api import defaults, v1beta4, validation
from pykubeadm.api import flags as fl
from pykubeadm.api._base import KubeModel, field_names
from pykubeadm.api.netutil import dns_service_ip
from pykubeadm.api.yamlio import Document, decode, dump_documents, dump_yaml, split_documents
from pykubeadm.errors import KubeadmError, ValidationError

__all__ = [
    "InitConfig",
    "LoadedDocuments",
    "dump_cluster_configuration",
    "dump_init_config",
    "load_documents",
    "load_init_config",
    "load_join_config",
    "load_reset_config",
    "load_upgrade_config",
    "migrate_config",
    "validate_config_file",
]

log = logging.getLogger(__name__)

_OLD_API_VERSIONS = {
    "kubeadm.k8s.io/v1alpha1": "v1.11",
    "kubeadm.k8s.io/v1alpha2": "v1.12",
    "kubeadm.k8s.io/v1alpha3": "v1.14",
    "kubeadm.k8s.io/v1beta1": "v1.15",
    "kubeadm.k8s.io/v1beta2": "v1.22",
}
_MIGRATE_HINT = (
    "'kubeadm config migrate --old-config old-config-file --new-config new-config-file', which will write the new, "
    "similar spec using a newer API version."
)


@dataclass(frozen=True)
class InitConfig:
    """Everything `init` needs: InitConfiguration, ClusterConfiguration and the two component configs (dicts)."""

    init: v1beta4.InitConfiguration
    cluster: v1beta4.ClusterConfiguration
    kubelet: dict[str, Any]
    kube_proxy: dict[str, Any]


# --- documents ------------------------------------------------------------------------------------------------------


@dataclass
class LoadedDocuments:
    """The documents of one config file, decoded: `kinds` (v1beta4 objects by kind; v1beta3 ones converted),
    `component_configs` (raw dicts by kind) and `old` (the v1beta3 objects as read)."""

    kinds: dict[str, KubeModel]
    component_configs: dict[str, dict[str, Any]]
    old: dict[str, KubeModel]


def _known_kinds_hint() -> str:
    kinds = ", ".join(v1beta4.KINDS)
    comps = ", ".join(f"{k} ({v})" for k, v in cc.COMPONENT_CONFIG_KINDS.items())
    return f"supported kinds: {kinds} ({c.KUBEADM_API_VERSION}); {comps}"


def _check_version(doc: Document) -> None:
    if doc.api_version in _OLD_API_VERSIONS:
        raise ValidationError(
            [
                f'your configuration file uses an old API spec: "{doc.api_version}" (kind: "{doc.kind}"). Please use '
                f"kubeadm {_OLD_API_VERSIONS[doc.api_version]} instead and run {_MIGRATE_HINT}"
            ]
        )
    if doc.api_version == c.KUBEADM_OLD_API_VERSION:
        log.warning(
            'your configuration file uses a deprecated API spec: "%s" (kind: "%s"). Please use %s',
            doc.api_version,
            doc.kind,
            _MIGRATE_HINT,
        )


def load_documents(text: str | bytes) -> LoadedDocuments:
    """Decode every document of a config file (strictly); raise ValidationError on unknown versions, kinds, fields."""
    loaded = LoadedDocuments({}, {}, {})
    seen: set[tuple[str, str]] = set()
    for doc in split_documents(text):
        key = (doc.api_version, doc.kind)
        if key in seen:
            raise ValidationError([f'invalid configuration: kind "{doc.kind}" is specified twice in YAML file'])
        seen.add(key)
        if doc.group == c.KUBEADM_GROUP:
            _check_version(doc)
            if doc.api_version == c.KUBEADM_API_VERSION and doc.kind in v1beta4.KINDS:
                loaded.kinds[doc.kind] = decode(v1beta4.KINDS[doc.kind], doc)
                continue
            if doc.api_version == c.KUBEADM_OLD_API_VERSION:
                # The v1beta3 models are imported only when a v1beta3 document is read (or migrated).
                from pykubeadm.api import v1beta3

                if doc.kind in v1beta3.KINDS:
                    loaded.old[doc.kind] = decode(v1beta3.KINDS[doc.kind], doc)
                    continue
            raise ValidationError([f"unknown configuration {doc.gvk}; {_known_kinds_hint()}"])
        if doc.kind in cc.COMPONENT_CONFIG_KINDS and cc.COMPONENT_CONFIG_KINDS[doc.kind].split("/")[0] == doc.group:
            if doc.api_version != cc.COMPONENT_CONFIG_KINDS[doc.kind]:
                raise ValidationError(
                    [
                        f"unknown configuration {doc.gvk}; {doc.kind} is supported only in version "
                        f"{cc.COMPONENT_CONFIG_KINDS[doc.kind]}"
                    ]
                )
            loaded.component_configs[doc.kind] = dict(doc.body)
            continue
        raise ValidationError([f"unknown configuration {doc.gvk}; {_known_kinds_hint()}"])
    if loaded.old:
        _convert_old(loaded)
    return loaded


def _convert_old(loaded: LoadedDocuments) -> None:
    """v1beta3 → v1beta4: the converted objects go to `loaded.kinds`."""
    from pykubeadm.api import v1beta3

    old = loaded.old.get("ClusterConfiguration")
    old_cluster = old if isinstance(old, v1beta3.ClusterConfiguration) else None
    if old_cluster is not None:
        loaded.kinds["ClusterConfiguration"] = v1beta3.convert_cluster(old_cluster)
    old_init = loaded.old.get("InitConfiguration")
    if isinstance(old_init, v1beta3.InitConfiguration):
        loaded.kinds["InitConfiguration"] = v1beta3.convert_init(old_init, old_cluster)
    elif old_cluster is not None and old_cluster.api_server.timeout_for_control_plane:
        init = loaded.kinds.setdefault("InitConfiguration", v1beta4.InitConfiguration())
        assert isinstance(init, v1beta4.InitConfiguration) and init.timeouts is not None
        init.timeouts.control_plane_component_health_check = old_cluster.api_server.timeout_for_control_plane
    old_join = loaded.old.get("JoinConfiguration")
    if isinstance(old_join, v1beta3.JoinConfiguration):
        loaded.kinds["JoinConfiguration"] = v1beta3.convert_join(old_join)


def _read(path: Path) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise KubeadmError(f'unable to read config from "{path}" : {e}') from None


def _ignore_others(loaded: LoadedDocuments, wanted: set[str]) -> None:
    for kind, obj in loaded.kinds.items():
        if kind not in wanted:
            log.warning(
                "[config] WARNING: Ignored YAML document with GroupVersionKind %s",
                f"{getattr(obj, 'api_version', '')}, Kind={kind}",  # every kind has one; KubeModel does not declare it
            )


# --- init -----------------------------------------------------------------------------------------------------------


def _placeholders_for_validation(init: v1beta4.InitConfiguration) -> v1beta4.InitConfiguration:
    """A copy with kubeadm's placeholders where only dynamic defaulting would fill a value (for static validation)."""
    init = init.copy()
    nr = init.node_registration
    nr.name = nr.name or "node"
    nr.cri_socket = nr.cri_socket or c.DEFAULT_CRI_SOCKET
    if not init.local_api_endpoint.advertise_address:
        init.local_api_endpoint.advertise_address = "1.2.3.4"
    for bt in init.bootstrap_tokens:
        bt.token = bt.token or "abcdef.0123456789abcdef"
    return init


def component_configs(
    init: v1beta4.InitConfiguration,
    cluster: v1beta4.ClusterConfiguration,
    user: Mapping[str, dict[str, Any]] | None = None,
    *,
    systemd_resolved: bool | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(KubeletConfiguration, KubeProxyConfiguration) as kubeadm defaults them for this cluster."""
    user = user or {}
    kubelet = cc.default_kubelet_config(
        cluster_dns=dns_service_ip(cluster),
        cluster_domain=cluster.networking.dns_domain,
        certificates_dir=cluster.certificates_dir,
        user=user.get("KubeletConfiguration"),
        systemd_resolved=systemd_resolved,
    )
    proxy = cc.default_kube_proxy_config(
        pod_subnet=cluster.networking.pod_subnet,
        advertise_address=init.local_api_endpoint.advertise_address,
        user=user.get("KubeProxyConfiguration"),
    )
    return kubelet, proxy


def load_init_config(
    config_file: Path | None,
    flags: Mapping[str, object] | None = None,
    *,
    dynamic: bool = True,
    systemd_resolved: bool | None = None,
) -> InitConfig:
    """The configuration of `init`: from `--config` (Init/Cluster/component documents) or defaults plus flags.

    `flags` holds only the flags the user set, keyed by kubeadm flag name ("pod-network-cidr": "10.244.0.0/16").
    With `dynamic=False` only static defaults are applied (no token, hostname, address or version detection).
    """
    flags = dict(flags or {})
    flags.pop("config", None)
    fl.check_mixing(config_file, flags)
    user_components: dict[str, dict[str, Any]] = {}
    if config_file is not None:
        loaded = load_documents(_read(config_file))
        init_obj = loaded.kinds.get("InitConfiguration")
        cluster_obj = loaded.kinds.get("ClusterConfiguration")
        if init_obj is None and cluster_obj is None:
            raise ValidationError(["no InitConfiguration or ClusterConfiguration kind was found in the YAML file"])
        _ignore_others(loaded, {"InitConfiguration", "ClusterConfiguration"})
        init = init_obj if isinstance(init_obj, v1beta4.InitConfiguration) else v1beta4.InitConfiguration()
        cluster = (
            cluster_obj if isinstance(cluster_obj, v1beta4.ClusterConfiguration) else v1beta4.ClusterConfiguration()
        )
        user_components = loaded.component_configs
        for name, value in flags.items():
            fl.apply_common_flag(init, name, value)
    else:
        init, cluster = v1beta4.InitConfiguration(), v1beta4.ClusterConfiguration()
        fl.apply_init_flags(init, cluster, flags)
    if dynamic:
        defaults.set_init_dynamic_defaults(init, cluster)
        validation.raise_if(validation.validate_init(init, cluster))
    else:
        validation.raise_if(validation.validate_init(_placeholders_for_validation(init), cluster))
    kubelet, proxy = component_configs(
        init, cluster, user_components, systemd_resolved=systemd_resolved if dynamic else bool(systemd_resolved)
    )
    return InitConfig(init=init, cluster=cluster, kubelet=kubelet, kube_proxy=proxy)


# --- join -----------------------------------------------------------------------------------------------------------


def load_join_config(
    config_file: Path | None,
    flags: Mapping[str, object] | None = None,
    *,
    dynamic: bool = True,
) -> v1beta4.JoinConfiguration:
    """The configuration of `join`: a JoinConfiguration from `--config`, or from flags (+ the positional
    `api-server-endpoint`, passed as flags["api-server-endpoint"])."""
    flags = dict(flags or {})
    flags.pop("config", None)
    fl.check_mixing(config_file, {k: v for k, v in flags.items() if k != "api-server-endpoint"})
    if config_file is not None:
        loaded = load_documents(_read(config_file))
        join = loaded.kinds.get("JoinConfiguration")
        if not isinstance(join, v1beta4.JoinConfiguration):
            raise ValidationError(["no JoinConfiguration found in the supplied config"])
        _ignore_others(loaded, {"JoinConfiguration"})
        for name, value in flags.items():
            fl.apply_common_flag(join, name, value)
    else:
        join = v1beta4.JoinConfiguration()
        fl.apply_join_flags(join, flags)
    if dynamic:
        defaults.set_join_dynamic_defaults(join)
        validation.raise_if(validation.validate_join(join))
    return join


# --- reset / upgrade ------------------------------------------------------------------------------------------------


def load_reset_config(
    config_file: Path | None,
    flags: Mapping[str, object] | None = None,
    *,
    dynamic: bool = True,
) -> v1beta4.ResetConfiguration:
    """The configuration of `reset` (flags: cert-dir, cri-socket, cleanup-tmp-dir, force, dry-run, skip-phases, …)."""
    flags = dict(flags or {})
    flags.pop("config", None)
    fl.check_mixing(config_file, flags)
    if config_file is not None:
        loaded = load_documents(_read(config_file))
        reset = loaded.kinds.get("ResetConfiguration")
        if not isinstance(reset, v1beta4.ResetConfiguration):
            raise ValidationError(["no ResetConfiguration found in the supplied config"])
        _ignore_others(loaded, {"ResetConfiguration"})
    else:
        reset = v1beta4.ResetConfiguration()
    for name, value in flags.items():
        match name:
            case "cert-dir":
                reset.certificates_dir = str(value)
            case "cri-socket":
                reset.cri_socket = str(value)
            case "cleanup-tmp-dir":
                reset.cleanup_tmp_dir = bool(value)
            case "force":
                reset.force = bool(value)
            case "ignore-preflight-errors":
                reset.ignore_preflight_errors = sorted(
                    fl.validate_ignore_preflight_errors(fl.as_list(value), reset.ignore_preflight_errors)
                )
            case _:
                fl.apply_common_flag(reset, name, value)
    if dynamic:
        defaults.set_reset_dynamic_defaults(reset)
        validation.raise_if(validation.validate_reset(reset))
    return reset


_UPGRADE_FLAGS = {
    "allow-experimental-upgrades": "allow_experimental_upgrades",
    "allow-release-candidate-upgrades": "allow_rc_upgrades",
    "certificate-renewal": "certificate_renewal",
    "etcd-upgrade": "etcd_upgrade",
    "force": "force_upgrade",
    "dry-run": "dry_run",
    "print-config": "print_config",
}
#: The UpgradeConfiguration sections with a `kubernetesVersion` field, and those with `patches`.
_VERSIONED_UPGRADE_SECTIONS = (
    v1beta4.UpgradeApplyConfiguration,
    v1beta4.UpgradePlanConfiguration,
    v1beta4.UpgradeDiffConfiguration,
)
_PATCHED_UPGRADE_SECTIONS = (v1beta4.UpgradeApplyConfiguration, v1beta4.UpgradeNodeConfiguration)


def load_upgrade_config(
    config_file: Path | None,
    flags: Mapping[str, object] | None = None,
    *,
    dynamic: bool = True,
) -> v1beta4.UpgradeConfiguration:
    """The UpgradeConfiguration; flags are applied to every sub-command section that has the field."""
    flags = dict(flags or {})
    flags.pop("config", None)
    fl.check_mixing(config_file, flags)
    if config_file is not None:
        loaded = load_documents(_read(config_file))
        up = loaded.kinds.get("UpgradeConfiguration")
        if not isinstance(up, v1beta4.UpgradeConfiguration):
            up = v1beta4.UpgradeConfiguration()
        _ignore_others(loaded, {"UpgradeConfiguration", "ClusterConfiguration"})
    else:
        up = v1beta4.UpgradeConfiguration()
    sections = (up.apply, up.plan, up.node, up.diff)
    for name, value in flags.items():
        for sec in sections:
            attr = _UPGRADE_FLAGS.get(name)
            if attr and attr in field_names(type(sec)):
                setattr(sec, attr, bool(value))
            elif name == "kubernetes-version" and isinstance(sec, _VERSIONED_UPGRADE_SECTIONS):
                sec.kubernetes_version = str(value)
            elif name in ("ignore-preflight-errors", "skip-phases") and hasattr(sec, name.replace("-", "_")):
                setattr(sec, name.replace("-", "_"), fl.as_list(value))
            elif name == "patches" and isinstance(sec, _PATCHED_UPGRADE_SECTIONS):
                sec.patches = v1beta4.Patches(directory=str(value)) if value else None
            elif name == "context-lines" and isinstance(sec, v1beta4.UpgradeDiffConfiguration):
                sec.context_lines = fl.as_int(name, value)
    validation.raise_if(validation.validate_upgrade(up))
    return up


# --- whole-file operations (config validate / migrate) --------------------------------------------------------------


def validate_config_file(path: Path) -> None:
    """`kubeadm config validate`: decode strictly, default (CRI detection skipped) and validate every kind present."""
    loaded = load_documents(_read(path))
    kinds = loaded.kinds
    if "InitConfiguration" in kinds or "ClusterConfiguration" in kinds:
        init = kinds.get("InitConfiguration") or v1beta4.InitConfiguration()
        cluster = kinds.get("ClusterConfiguration") or v1beta4.ClusterConfiguration()
        assert isinstance(init, v1beta4.InitConfiguration) and isinstance(cluster, v1beta4.ClusterConfiguration)
        defaults.set_init_dynamic_defaults(init, cluster, detect_cri=lambda: c.DEFAULT_CRI_SOCKET)
        validation.raise_if(validation.validate_init(init, cluster))
    join = kinds.get("JoinConfiguration")
    if isinstance(join, v1beta4.JoinConfiguration):
        defaults.set_join_dynamic_defaults(join, detect_cri=lambda: c.DEFAULT_CRI_SOCKET)
        validation.raise_if(validation.validate_join(join))
    reset = kinds.get("ResetConfiguration")
    if isinstance(reset, v1beta4.ResetConfiguration):
        defaults.set_reset_dynamic_defaults(reset, detect_cri=lambda: c.DEFAULT_CRI_SOCKET)
        validation.raise_if(validation.validate_reset(reset))
    up = kinds.get("UpgradeConfiguration")
    if isinstance(up, v1beta4.UpgradeConfiguration):
        validation.raise_if(validation.validate_upgrade(up))


def migrate_config(text: str) -> str:
    """`kubeadm config migrate`: the file's kubeadm documents in v1beta4 with static defaults; component configs as-is."""
    loaded = load_documents(text)
    out: list[Any] = []
    kinds = loaded.kinds
    if "InitConfiguration" in kinds or "ClusterConfiguration" in kinds:
        out.append(kinds.get("InitConfiguration") or v1beta4.InitConfiguration())
        out.append(kinds.get("ClusterConfiguration") or v1beta4.ClusterConfiguration())
    for kind in ("JoinConfiguration", "ResetConfiguration", "UpgradeConfiguration"):
        if kind in kinds:
            out.append(kinds[kind])
    out.extend(copy.deepcopy(doc) for doc in loaded.component_configs.values())
    return dump_documents(out)


# --- writing --------------------------------------------------------------------------------------------------------


def dump_init_config(cfg: InitConfig, *, component_configs: bool = False) -> str:
    """InitConfiguration and ClusterConfiguration (and optionally the component configs) as YAML documents."""
    docs: list[Any] = [cfg.init, cfg.cluster]
    if component_configs:
        docs += [cfg.kubelet, cfg.kube_proxy]
    return dump_documents(docs)


def dump_cluster_configuration(cluster: v1beta4.ClusterConfiguration) -> str:
    """The ClusterConfiguration as stored in the kubeadm-config ConfigMap (key `ClusterConfiguration`)."""
    return dump_yaml(cluster)
