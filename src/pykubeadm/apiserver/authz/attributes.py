"""Authorization attributes of a request (k8s.io/apiserver authorizer.Attributes), decisions, and the Authorizer protocol.

`union()` combines authorizers: the first ALLOW or DENY wins, NO_OPINION falls through; all NO_OPINION → deny.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from pykubeadm.apiserver.authn.user import UserInfo

__all__ = ["Attributes", "Authorizer", "Decision"]


class Decision(enum.Enum):
    DENY = "deny"
    ALLOW = "allow"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True)
class Attributes:
    user: UserInfo
    verb: str  # get list watch create update patch delete deletecollection approve sign ... or http verb for non-resource
    resource_request: bool
    namespace: str = ""
    api_group: str = ""  # "" = core
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""  # for non-resource requests


class Authorizer(Protocol):
    async def __call__(self, attrs: Attributes) -> tuple[Decision, str]: ...
