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
    # get list watch create update patch delete deletecollection approve sign ... or the lowercase HTTP method of a
    # non-resource request
    verb: str
    resource_request: bool
    namespace: str = ""
    api_group: str = ""  # "" = core
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""  # for non-resource requests
    # Raw `fieldSelector` / `labelSelector` query values of list/watch requests (the Node authorizer lets a node
    # list/watch pods only with `spec.nodeName=<self>`). For list/watch with `metadata.name=<n>`, also set `name`.
    field_selector: str = ""
    label_selector: str = ""

    @property
    def is_resource_request(self) -> bool:
        return self.resource_request


class Authorizer(Protocol):
    async def __call__(self, attrs: Attributes) -> tuple[Decision, str]: ...
