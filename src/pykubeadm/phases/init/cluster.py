"""Cluster access for init's API phases: the admin client (ensuring kubeadm:cluster-admins first) or dry-run printing.

kubeadm builds its client from admin.conf after the control plane is up; the first time, the ClusterRoleBinding
`kubeadm:cluster-admins` may not exist yet, so it is created with super-admin.conf when admin.conf is forbidden (§3.4).
In dry-run nothing is sent: each object is printed as "[dryrun] Would create …".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pykubeadm import constants as c
from pykubeadm.phases import objects as o
from pykubeadm.phases.init.data import InitData
from pykubeadm.phases.objects import Obj

if TYPE_CHECKING:
    from lightkube import Client

# The Kubernetes client (lightkube, httpx) is imported by the functions that talk to the cluster, so the phases that
# only write files (`init phase certs all`, ...) start without it.

__all__ = ["admin_client", "apply", "cluster_admins_binding"]

_CLIENT_KEY = "admin_client"


def cluster_admins_binding() -> Obj:
    return o.cluster_role_binding(
        c.CLUSTER_ADMINS_GROUP_AND_CLUSTER_ROLE_BINDING,
        "cluster-admin",
        [o.group(c.CLUSTER_ADMINS_GROUP_AND_CLUSTER_ROLE_BINDING)],
    )


def _ensure_cluster_admins(admin: Client, data: InitData) -> None:
    from lightkube import ApiError, codecs

    from pykubeadm.client import is_already_exists, status_code, sync_client
    from pykubeadm.phases.apply import retry_api_call

    crb = codecs.from_dict(cluster_admins_binding())

    def create() -> None:
        try:
            admin.create(crb)
            return
        except ApiError as err:
            if is_already_exists(err):
                return
            if status_code(err) != 403:
                raise
        with sync_client(data.layout.super_admin_kubeconfig) as sa:
            try:
                sa.create(crb)
            except ApiError as err:
                if not is_already_exists(err):
                    raise

    retry_api_call(create, f"create the ClusterRoleBinding {c.CLUSTER_ADMINS_GROUP_AND_CLUSTER_ROLE_BINDING}")


def admin_client(data: InitData) -> Client:
    """The admin.conf client of this init run (built once)."""
    from lightkube import Client

    from pykubeadm.client import sync_client

    client = data.state.get(_CLIENT_KEY)
    if client is None:
        client = sync_client(data.layout.admin_kubeconfig)
        _ensure_cluster_admins(client, data)
        data.state[_CLIENT_KEY] = client
    assert isinstance(client, Client)
    return client


def apply(data: InitData, objs: Iterable[Obj], *, retain: bool = False) -> list[Any]:
    """Create-or-update (or create-or-retain) objects, or print them in dry-run."""
    from pykubeadm.phases.apply import apply_objects, report_dry_run

    objs = list(objs)
    if data.dry_run:
        return report_dry_run(data.out, objs)
    return apply_objects(admin_client(data), objs, retain=retain)
