"""The live encryption configuration of a running apiserver: maps each storage key to its resource's providers and,
with --encryption-provider-config-automatic-reload, re-reads the file when its content changes (a file that no longer
validates is logged and the previous configuration kept, as kube-apiserver does)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path

from pykubeadm.apiserver.encryption.config import EncryptionConfig, EncryptionConfigError, load_encryption_config
from pykubeadm.apiserver.encryption.providers import PrefixTransformers

__all__ = ["RELOAD_POLL_SECONDS", "EncryptionRuntime"]

log = logging.getLogger("pykubeadm.apiserver.encryption")

#: How often automatic reload looks at the file (kube reacts to file events and re-checks every minute).
RELOAD_POLL_SECONDS = 1.0

_REGISTRY = "/registry/"


class EncryptionRuntime:
    """`resolve(key)` for storage.transformed.TransformedStore, over the current EncryptionConfig.

    `prefixes` maps built-in kinds' storage key prefixes (`/registry/secrets/`, `/registry/services/specs/`) to their
    (group, resource); other keys `/registry/<group with a dot>/<resource>/…` are custom resources."""

    def __init__(self, path: Path, config: EncryptionConfig, prefixes: Iterable[tuple[str, str, str]]):
        self.path = path
        self.config = config
        self._kinds: dict[str, tuple[str, str]] = {}
        for prefix, group, resource in prefixes:
            self._kinds.setdefault(prefix, (group, resource))
        self._by_resource: dict[tuple[str, str], PrefixTransformers | None] = {}

    def _group_resource(self, key: str) -> tuple[str, str] | None:
        if not key.startswith(_REGISTRY):
            return None
        parts = key[len(_REGISTRY) :].split("/", 2)
        one = _REGISTRY + parts[0] + "/"
        if one in self._kinds:
            return self._kinds[one]
        if len(parts) >= 2:
            two = one + parts[1] + "/"
            if two in self._kinds:
                return self._kinds[two]
            if "." in parts[0]:
                return parts[0], parts[1]
        return None

    def resolve(self, key: str) -> PrefixTransformers | None:
        gr = self._group_resource(key)
        if gr is None:
            return None
        try:
            return self._by_resource[gr]
        except KeyError:
            t = self._by_resource[gr] = self.config.transformer_for(*gr)
            return t

    def reload(self) -> bool:
        """Re-read the file when its content changed; True when a new configuration took effect."""
        try:
            digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError as e:
            log.error("encryption provider configuration %s: %s", self.path, e.strerror)
            return False
        if digest == self.config.digest:
            return False
        try:
            config = load_encryption_config(self.path)
        except EncryptionConfigError as e:
            log.error("failed to reload the encryption provider configuration, keeping the previous one: %s", e)
            self.config.digest = digest  # do not log the same bad content every poll
            return False
        self.config = config
        self._by_resource = {}
        log.info("encryption provider configuration %s reloaded", self.path)
        return True

    async def watch_file(self) -> None:
        while True:
            await asyncio.sleep(RELOAD_POLL_SECONDS)
            self.reload()
