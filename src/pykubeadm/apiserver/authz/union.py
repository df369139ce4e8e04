"""Authorizer combinators: `union()` (first ALLOW or DENY wins, NO_OPINION falls through, all NO_OPINION → deny)
and the always-first `system:masters` privileged-group authorizer. Used by `authn.config.build_auth`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pykubeadm import constants
from pykubeadm.apiserver.authz.attributes import Attributes, Authorizer, Decision

__all__ = ["always_allow", "always_deny", "privileged_groups", "union"]


def union(*authorizers: Authorizer) -> Authorizer:
    """kube-apiserver's union authorizer; NO_OPINION reasons are joined with newlines into the final reason."""

    async def authorize(attrs: Attributes) -> tuple[Decision, str]:
        reasons: list[str] = []
        for authz in authorizers:
            decision, reason = await authz(attrs)
            if decision in (Decision.ALLOW, Decision.DENY):
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, "\n".join(reasons)

    return authorize


def privileged_groups(groups: Iterable[str] = (constants.SYSTEM_PRIVILEGED_GROUP,)) -> Authorizer:
    """ALLOW anything for members of the given groups (system:masters), else NO_OPINION."""
    wanted = frozenset(groups)

    async def authorize(attrs: Attributes) -> tuple[Decision, str]:
        if wanted.intersection(attrs.user.groups):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    return authorize


def always_allow() -> Authorizer:
    async def authorize(attrs: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""

    return authorize


def always_deny() -> Authorizer:
    async def authorize(attrs: Attributes) -> tuple[Decision, str]:
        return Decision.DENY, "Everything is forbidden."

    return authorize
