"""Authorization for the built-in kube-apiserver: attributes, decisions, union, RBAC, Node, and 403 messages."""

from pykubeadm.apiserver.authz.attributes import Attributes, Authorizer, Decision
from pykubeadm.apiserver.authz.messages import (
    StatusError,
    forbidden_message,
    forbidden_status,
    unauthorized_status,
)
from pykubeadm.apiserver.authz.union import always_allow, always_deny, privileged_groups, union

__all__ = [
    "Attributes",
    "Authorizer",
    "Decision",
    "StatusError",
    "always_allow",
    "always_deny",
    "forbidden_message",
    "forbidden_status",
    "privileged_groups",
    "unauthorized_status",
    "union",
]
