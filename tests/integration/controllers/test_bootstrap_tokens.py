"""Issue 6 acceptance, token part: bootstrapsigner signs kube-public/cluster-info, tokencleaner deletes expired tokens."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
import yaml
from harness import ControllerManager, b64, create_token, embedded_kubeconfig, wait_until
from lightkube import ApiError, Client
from lightkube.resources.core_v1 import ConfigMap, Secret

from pykubeadm.bootstrap.jws import detached_token_is_valid
from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> Client:
    start_kcm()
    # cluster-info as kubeadm's bootstrap-token phase writes it: one cluster named "" with server and CA data
    kubeconfig = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [
                {
                    "name": "",
                    "cluster": {"server": api.url, "certificate-authority-data": b64(api.pki.ca_cert.read_bytes())},
                }
            ],
            "contexts": None,
            "current-context": "",
            "users": None,
        }
    )
    admin = sync_client(api.kubeconfig())
    admin.create(
        ConfigMap.from_dict(
            {"metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": {"kubeconfig": kubeconfig}}
        )
    )
    rbac = "rbac.authorization.k8s.io"
    api.kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump_all(
            [
                {
                    "apiVersion": f"{rbac}/v1",
                    "kind": "Role",
                    "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "resources": ["configmaps"],
                            "resourceNames": ["cluster-info"],
                            "verbs": ["get"],
                        }
                    ],
                },
                {
                    "apiVersion": f"{rbac}/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
                    "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "kubeadm:bootstrap-signer-clusterinfo"},
                    "subjects": [{"apiGroup": rbac, "kind": "User", "name": "system:anonymous"}],
                },
            ]
        ),
    )
    return sync_client(api.kubeconfig())


def cluster_info(api: ApiServer) -> dict[str, str]:
    # read it the way join discovery does: anonymously
    anonymous = sync_client(embedded_kubeconfig(api, api.dir / "anon.conf", "anonymous"))
    return dict(anonymous.get(ConfigMap, "cluster-info", namespace="kube-public").data or {})


def secret_exists(client: Client, token_id: str) -> bool:
    try:
        client.get(Secret, f"bootstrap-token-{token_id}", namespace="kube-system")
        return True
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise


def test_new_token_gets_a_valid_signature_within_2s(api: ApiServer, admin: Client) -> None:
    start = time.monotonic()
    tid, secret = create_token(api)
    key = f"jws-kubeconfig-{tid}"
    data = wait_until(lambda: (lambda d: d if key in d else None)(cluster_info(api)), 2.0, what="signature")
    assert time.monotonic() - start < 2.0
    assert detached_token_is_valid(data[key], data["kubeconfig"], tid, secret)
    assert not detached_token_is_valid(data[key], data["kubeconfig"], tid, "0" * 16)


def test_deleted_token_loses_its_signature(api: ApiServer, admin: Client) -> None:
    tid, _ = create_token(api)
    key = f"jws-kubeconfig-{tid}"
    wait_until(lambda: key in cluster_info(api), 2.0, what="signature")
    admin.delete(Secret, f"bootstrap-token-{tid}", namespace="kube-system")
    wait_until(lambda: key not in cluster_info(api), 2.0, what="signature removed")


def test_token_without_signing_usage_is_not_used(api: ApiServer, admin: Client) -> None:
    signer_id, _ = create_token(api)
    tid, _ = create_token(api, usages=("authentication",))
    wait_until(lambda: f"jws-kubeconfig-{signer_id}" in cluster_info(api), 2.0, what="other signature")
    assert f"jws-kubeconfig-{tid}" not in cluster_info(api)


def test_expiring_token_loses_signature_and_secret(api: ApiServer, admin: Client) -> None:
    tid, _ = create_token(api, expires_in=timedelta(seconds=3))
    key = f"jws-kubeconfig-{tid}"
    wait_until(lambda: key in cluster_info(api), 2.0, what="signature")
    wait_until(lambda: key not in cluster_info(api), 6.0, what="signature removed at expiry")
    wait_until(lambda: not secret_exists(admin, tid), 3.0, what="expired Secret deleted")


def test_expired_token_secret_is_deleted(api: ApiServer, admin: Client) -> None:
    tid, _ = create_token(api, expires_in=timedelta(seconds=-60))
    wait_until(lambda: not secret_exists(admin, tid), 2.0, what="expired Secret deleted")
    assert f"jws-kubeconfig-{tid}" not in cluster_info(api)


def test_token_without_expiration_is_kept(api: ApiServer, admin: Client) -> None:
    tid, _ = create_token(api, expires_in=None)
    time.sleep(1.0)
    assert secret_exists(admin, tid)
