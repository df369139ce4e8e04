"""The bootstrapsigner controller: keeps `jws-kubeconfig-<token-id>` signatures in kube-public/cluster-info.

Every change of cluster-info or of a bootstrap-token Secret in kube-system re-computes the signatures (bootstrapsigner.go):
all `jws-kubeconfig-*` keys are dropped, one detached JWS per signing-eligible token is added, and the ConfigMap is
written only if that changes it. Besides the upstream triggers, the sync is re-queued at the next token expiry so an
expired token's signature disappears on time even before the tokencleaner deletes its Secret.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from lightkube.resources.core_v1 import ConfigMap, Secret

from pykubeadm import constants as c
from pykubeadm.bootstrap.jws import compute_detached_signature
from pykubeadm.bootstrap.secret import (
    BOOTSTRAP_TOKEN_SECRET_TYPE,
    BootstrapTokenSecret,
    is_expired,
    parse_expiration,
    token_id_from_secret_name,
)
from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = ["BootstrapSignerController", "signed_data", "signing_tokens"]

log = logging.getLogger(__name__)

_KEY = f"{c.NAMESPACE_PUBLIC}/{c.CLUSTER_INFO_CONFIGMAP}"


def signing_tokens(secrets: Iterable[Mapping[str, Any]], now: datetime) -> tuple[dict[str, bytes], datetime | None]:
    """token-id → token-secret of every signing-eligible token, and the earliest future expiry among them."""
    tokens: dict[str, bytes] = {}
    next_expiry: datetime | None = None
    for secret in secrets:
        token = BootstrapTokenSecret.from_secret(secret)
        if token is None:
            continue
        name_id = token_id_from_secret_name(token.name)
        if name_id is None or not token.token_id or token.token_id != name_id:
            continue
        if not token.token_secret or is_expired(token.expiration, now):
            continue
        if "signing" not in token.usages:
            continue
        if token.token_id in tokens:
            continue  # the first Secret claiming an id wins
        tokens[token.token_id] = token.token_secret
        when = parse_expiration(token.expiration) if token.expiration else None
        if when is not None and (next_expiry is None or when < next_expiry):
            next_expiry = when
    return tokens, next_expiry


def signed_data(data: Mapping[str, str], tokens: Mapping[str, bytes]) -> dict[str, str] | None:
    """cluster-info's new `data` with exactly one signature per token, or None when nothing needs to change."""
    content = data.get(c.CLUSTER_INFO_KUBECONFIG_KEY)
    if content is None:
        return None
    new = {k: v for k, v in data.items() if not k.startswith(c.JWS_SIGNATURE_KEY_PREFIX)}
    for token_id, secret in tokens.items():
        new[c.JWS_SIGNATURE_KEY_PREFIX + token_id] = compute_detached_signature(content, token_id, secret)
    return None if new == dict(data) else new


class BootstrapSignerController(Controller):
    name = "bootstrapsigner"
    service_account = "bootstrap-signer"

    def setup(self) -> None:
        self.configmaps = self.watch(ConfigMap, self._on_configmap, namespace=c.NAMESPACE_PUBLIC)
        self.secrets = self.watch(Secret, self._on_secret, namespace=c.NAMESPACE_SYSTEM)

    def _on_configmap(self, event: str, obj: Any, old: Any) -> None:
        if obj.metadata.name == c.CLUSTER_INFO_CONFIGMAP and event != "DELETED":
            self.queue.add(_KEY)

    def _on_secret(self, event: str, obj: Any, old: Any) -> None:
        if obj.type == BOOTSTRAP_TOKEN_SECRET_TYPE:
            self.queue.add(_KEY)

    async def sync(self, key: Any) -> None:
        cm = self.configmaps.get(key)
        if cm is None:
            return
        now = datetime.now(UTC)
        secrets = [s.to_dict() for s in self.secrets.items()]
        tokens, next_expiry = signing_tokens(secrets, now)
        if next_expiry is not None:
            self.queue.add_after(key, max(0.0, (next_expiry - now).total_seconds()) + 0.05)
        data = dict(cm.data or {})
        if c.CLUSTER_INFO_KUBECONFIG_KEY not in data:
            log.info("no %s key in %s; not signing", c.CLUSTER_INFO_KUBECONFIG_KEY, key)
            return
        new = signed_data(data, tokens)
        if new is None:
            return
        body = cm.to_dict()
        body["data"] = new
        try:
            await self.client.replace(model(ConfigMap, body))
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError("conflict updating cluster-info") from err
            raise
        log.info("updated cluster-info signatures: %s", sorted(tokens))
