"""--encryption-provider-config: reads and validates an `apiserver.config.k8s.io/v1` EncryptionConfiguration and
answers which providers apply to a resource.

Resources are named as kube names them: `secrets` (core), `deployments.apps`, `*.apps` (every resource of a group),
`*.` (every core resource), `*.*` (everything). A resource takes the first matching entry: its exact name, then its
group's wildcard, then `*.*`. Errors carry kube's field paths (`resources[0].providers[1].aescbc.keys[0].secret`).
KMS providers need a KMS plugin over gRPC, which this apiserver does not have: they are refused at start-up by name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pykubeadm.apiserver.encryption.providers import (
    AESCBC,
    AESGCMTransformer,
    Identity,
    PrefixTransformer,
    PrefixTransformers,
    Secretbox,
    Transformer,
)
from pykubeadm.util.yamlload import load_yaml

__all__ = ["EncryptionConfig", "EncryptionConfigError", "load_encryption_config", "parse_encryption_config"]

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"

_AES_KEY_SIZES = (16, 24, 32)
_SECRETBOX_KEY_SIZES = (32,)
_PROVIDERS = ("identity", "aescbc", "aesgcm", "secretbox", "kms")
#: provider field → (the name kube's messages use, key sizes, transformer factory)
_KEYED: dict[str, tuple[str, tuple[int, ...], Callable[[bytes], Transformer]]] = {
    "aescbc": ("AES-CBC", _AES_KEY_SIZES, AESCBC),
    "aesgcm": ("AES-GCM", _AES_KEY_SIZES, AESGCMTransformer),
    "secretbox": ("secretbox", _SECRETBOX_KEY_SIZES, Secretbox),
}


class EncryptionConfigError(Exception):
    """The file cannot be used; the message names the field (kube's field path) and what is wrong."""


@dataclass
class EncryptionConfig:
    #: exact `resource.group` (core: `resource.`) → transformers; `*.group` → …; `*.*` → …
    exact: dict[str, PrefixTransformers] = field(default_factory=dict)
    groups: dict[str, PrefixTransformers] = field(default_factory=dict)
    everything: PrefixTransformers | None = None
    #: sha256 of the file's bytes: what automatic reload compares.
    digest: str = ""

    def transformer_for(self, group: str, resource: str) -> PrefixTransformers | None:
        """The providers of `resource` in `group` ("" = core), None when the config does not list it."""
        t = self.exact.get(f"{resource}.{group}")
        if t is None:
            t = self.groups.get(group)
        if t is None:
            t = self.everything
        return t


def _invalid(path: str, value: str, detail: str) -> EncryptionConfigError:
    return EncryptionConfigError(f"{path}: Invalid value: {value}: {detail}")


def _required(path: str, detail: str) -> EncryptionConfigError:
    return EncryptionConfigError(f"{path}: Required value: {detail}")


def _normalize_resource(path: str, name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise _required(path, "resource name is required")
    if name != name.lower():
        raise _invalid(path, f'"{name}"', "resource name should not contain capital letters")
    if name == "*":
        raise _invalid(
            path, '"*"', "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        )
    if name.endswith(".events.k8s.io"):
        raise _invalid(
            path,
            f'"{name}"',
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the "
            "config file",
        )
    if name.endswith(".extensions"):
        raise _invalid(
            path,
            f'"{name}"',
            "'extensions' group has been removed and cannot be used for encryption",
        )
    return name if "." in name else name + "."


def _keyed_provider(path: str, kind: str, spec: Any, seen_names: set[str]) -> list[PrefixTransformer]:
    label, sizes, factory = _KEYED[kind]
    keys = (spec or {}).get("keys") if isinstance(spec, dict) else None
    if not keys or not isinstance(keys, list):
        raise _required(f"{path}.keys", f"at least one key is required for a {label} provider")
    out: list[PrefixTransformer] = []
    for j, k in enumerate(keys):
        kp = f"{path}.keys[{j}]"
        if not isinstance(k, dict):
            raise _invalid(kp, "", "a key is an object with name and secret")
        name, secret = k.get("name"), k.get("secret")
        if not name or not isinstance(name, str):
            raise _required(f"{kp}.name", "name is a mandatory field for a key")
        if name in seen_names:
            raise _invalid(f"{kp}.name", f'"{name}"', "key names must be unique within a provider")
        seen_names.add(name)
        if not secret or not isinstance(secret, str):
            raise _required(f"{kp}.secret", "secret is a mandatory field for a key")
        try:
            raw = base64.b64decode(secret, validate=True)
        except (binascii.Error, ValueError):
            raise _invalid(f"{kp}.secret", '"REDACTED"', "secrets must be base64 encoded") from None
        if len(raw) not in sizes:
            raise _invalid(
                f"{kp}.secret",
                '"REDACTED"',
                f"secret is not of the expected length, got {len(raw)}, expected one of "
                f"[{' '.join(str(s) for s in sizes)}]",
            )
        out.append(PrefixTransformer(f"k8s:enc:{kind}:v1:{name}:".encode(), factory(raw)))
    return out


def _providers(path: str, providers: Any) -> PrefixTransformers:
    if not providers or not isinstance(providers, list):
        raise _required(path, "at least one provider is required")
    chain: list[PrefixTransformer] = []
    for i, p in enumerate(providers):
        pp = f"{path}[{i}]"
        if not isinstance(p, dict):
            raise _invalid(pp, "", "a provider is an object naming one of " + ", ".join(_PROVIDERS))
        given = [k for k in p if p.get(k) is not None or k == "identity"]
        unknown = [k for k in given if k not in _PROVIDERS]
        if unknown:
            raise _invalid(pp, f'"{unknown[0]}"', "unknown provider (known: " + ", ".join(_PROVIDERS) + ")")
        if len(given) > 1:
            raise _invalid(
                pp,
                "",
                "more than one provider specified in a single element, should split into different list elements",
            )
        if not given:
            raise _invalid(
                pp,
                "",
                "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
            )
        kind = given[0]
        if kind == "kms":
            raise EncryptionConfigError(
                f"{pp}.kms: Unsupported value: KMS providers (kms v1 and v2) are not supported by this kube-apiserver: "
                "it has no KMS plugin client; use aescbc, aesgcm or secretbox"
            )
        if kind == "identity":
            chain.append(PrefixTransformer(b"", Identity()))
            continue
        chain.extend(_keyed_provider(f"{pp}.{kind}", kind, p[kind], set()))
    return PrefixTransformers(chain)


def parse_encryption_config(doc: Any, digest: str = "") -> EncryptionConfig:
    """Validate a decoded EncryptionConfiguration into an EncryptionConfig; raises EncryptionConfigError."""
    if not isinstance(doc, dict):
        raise EncryptionConfigError("the file is not an EncryptionConfiguration object")
    if doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        raise EncryptionConfigError(
            f"apiVersion/kind: Invalid value: {doc.get('apiVersion')!r}/{doc.get('kind')!r}: "
            f"want apiVersion {API_VERSION} and kind {KIND}"
        )
    resources = doc.get("resources")
    if not resources or not isinstance(resources, list):
        raise _required("resources", "at least one resource is required")
    cfg = EncryptionConfig(digest=digest)
    for i, entry in enumerate(resources):
        ep = f"resources[{i}]"
        if not isinstance(entry, dict):
            raise _invalid(ep, "", "an entry is an object with resources and providers")
        names = entry.get("resources")
        if not names or not isinstance(names, list):
            raise _required(f"{ep}.resources", "at least one resource is required")
        normalized = [_normalize_resource(f"{ep}.resources[{j}]", n) for j, n in enumerate(names)]
        seen: set[str] = set()
        for j, n in enumerate(normalized):
            if n in seen:
                raise _invalid(f"{ep}.resources[{j}]", f'"{names[j]}"', f'the resource "{names[j]}" is duplicated')
            seen.add(n)
        wild = {n[2:] for n in normalized if n.startswith("*.")}
        for j, n in enumerate(normalized):
            if n.startswith("*."):
                continue
            group = n.split(".", 1)[1]
            if group in wild or "*" in wild:
                raise _invalid(
                    f"{ep}.resources[{j}]",
                    f'"{names[j]}"',
                    "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed "
                    "as they will be masked",
                )
        chain = _providers(f"{ep}.providers", entry.get("providers"))
        for n in normalized:
            if n == "*.*":
                if cfg.everything is None:
                    cfg.everything = chain
            elif n.startswith("*."):
                cfg.groups.setdefault(n[2:], chain)
            else:
                cfg.exact.setdefault(n, chain)
    return cfg


def load_encryption_config(path: Path) -> EncryptionConfig:
    """Read and validate the file at `path`; raises EncryptionConfigError naming the file or field."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise EncryptionConfigError(
            f"error reading encryption provider configuration file {path}: {e.strerror}"
        ) from None
    try:
        doc = load_yaml(raw)
    except yaml.YAMLError as e:
        raise EncryptionConfigError(f"error while parsing file {path}: {e}") from None
    try:
        return parse_encryption_config(doc, hashlib.sha256(raw).hexdigest())
    except EncryptionConfigError as e:
        raise EncryptionConfigError(f"error while parsing file {path}: {e}") from None
