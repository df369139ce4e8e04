"""Bootstrap-token authenticator (--enable-bootstrap-token-auth): bearer `<id>.<secret>` → system:bootstrap:<id>.

Looks up Secret kube-system/bootstrap-token-<id> through the ObjectSource and applies kube-apiserver's checks in order
(fact sheet controlplane §1.3). Every rejection is "not handled" (None), indistinguishable to the client; the bearer
layer turns an unhandled token into 401 "invalid bearer token".
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pykubeadm import constants
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.bootstrap import secret as tokensecret

__all__ = ["BootstrapTokenAuthenticator"]

log = logging.getLogger(__name__)


class BootstrapTokenAuthenticator:
    """A TokenAuthenticator over bootstrap-token Secrets in kube-system."""

    def __init__(self, source: ObjectSource, clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self._source = source
        self._clock = clock

    async def __call__(self, token: str) -> UserInfo | None:
        parts = tokensecret.split_token(token)
        if parts is None:
            return None
        token_id, token_secret = parts
        name = tokensecret.secret_name(token_id)
        obj = await self._source.get("secrets", constants.NAMESPACE_SYSTEM, name)
        if obj is None:
            log.debug("bootstrap token secret %s/%s not found", constants.NAMESPACE_SYSTEM, name)
            return None
        sec = tokensecret.BootstrapTokenSecret.from_secret(obj)
        if sec is None or sec.deleting:
            log.debug("secret %s is not a usable bootstrap token secret", name)
            return None
        if sec.token_secret is None or not hmac.compare_digest(sec.token_secret, token_secret.encode()):
            log.debug("bootstrap token %s: secret does not match", token_id)  # never log the secret itself
            return None
        if sec.token_id != token_id:
            log.debug("bootstrap token %s: token-id mismatch in secret", token_id)
            return None
        if tokensecret.is_expired(sec.expiration, self._clock()):
            log.debug("bootstrap token %s has expired", token_id)
            return None
        if "authentication" not in sec.usages:
            log.debug("bootstrap token %s is not usable for authentication", token_id)
            return None
        groups = {constants.BOOTSTRAPPERS_GROUP}
        for group in sec.extra_groups:
            if not tokensecret.valid_extra_group(group):
                log.debug("bootstrap token %s has an invalid auth-extra-groups entry", token_id)
                return None
            groups.add(group)
        return UserInfo(name=constants.BOOTSTRAP_USER_PREFIX + token_id, groups=tuple(sorted(groups)))
