"""The tokencleaner controller: deletes expired bootstrap-token Secrets in kube-system (tokencleaner.go).

An expired Secret (expiration in the past, or unparseable) is deleted with a UID precondition; one that will expire is
re-queued for exactly its expiry; one without an `expiration` key is kept forever.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from lightkube.resources.core_v1 import Secret

from pykubeadm import constants as c
from pykubeadm.bootstrap.secret import BOOTSTRAP_TOKEN_SECRET_TYPE, BootstrapTokenSecret, is_expired, parse_expiration
from pykubeadm.client import ApiError, delete_with_uid, status_code
from pykubeadm.controllers.runtime import Controller

__all__ = ["TokenCleanerController", "token_cleanup"]

log = logging.getLogger(__name__)


def token_cleanup(secret: Mapping[str, Any], now: datetime) -> float | None:
    """0 to delete the Secret now, seconds until it must be checked again, or None to keep it forever."""
    token = BootstrapTokenSecret.from_secret(secret)
    if token is None or token.expiration is None:
        return None
    if is_expired(token.expiration, now):
        return 0.0
    when = parse_expiration(token.expiration)
    assert when is not None
    return max(0.0, (when - now).total_seconds())


class TokenCleanerController(Controller):
    name = "tokencleaner"
    service_account = "token-cleaner"

    def setup(self) -> None:
        self.secrets = self.watch(Secret, self._on_secret, namespace=c.NAMESPACE_SYSTEM)

    def _on_secret(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED" and obj.type == BOOTSTRAP_TOKEN_SECRET_TYPE:
            self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    async def sync(self, key: Any) -> None:
        obj = self.secrets.get(key)
        if obj is None:
            return
        wait = token_cleanup(obj.to_dict(), datetime.now(UTC))
        if wait is None:
            return
        if wait > 0:
            self.queue.add_after(key, wait + 0.05)
            return
        try:
            await delete_with_uid(
                self.client, Secret, obj.metadata.name, obj.metadata.uid or "", namespace=c.NAMESPACE_SYSTEM
            )
            log.info("deleted expired bootstrap token Secret %s", key)
        except ApiError as err:
            if status_code(err) not in (404, 409):
                raise
