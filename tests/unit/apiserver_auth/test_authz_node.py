"""Node authorizer details beyond the matrix: graph edges (mirror pods, projected and env references), unknown nodes."""

from __future__ import annotations

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.authz.node import NodeAuthorizer, node_name_of, parse_field_selector, pod_references

NODE_A = UserInfo("system:node:node-a", groups=("system:nodes", "system:authenticated"))


def get(resource: str, name: str, ns: str = "default", group: str = "", user: UserInfo = NODE_A) -> Attributes:
    return Attributes(user, "get", True, namespace=ns, api_group=group, resource=resource, name=name)


def test_node_identity_needs_prefix_and_group():
    assert node_name_of(NODE_A) == "node-a"
    assert node_name_of(UserInfo("system:node:x")) is None  # not in system:nodes
    assert node_name_of(UserInfo("alice", groups=("system:nodes",))) is None
    assert node_name_of(UserInfo("system:node:", groups=("system:nodes",))) == ""


def test_field_selector_parsing():
    assert parse_field_selector("spec.nodeName=n1,metadata.name==x,status.phase!=Failed") == {
        "spec.nodeName": "n1",
        "metadata.name": "x",
    }


def test_pod_references_cover_env_envfrom_volumes_projected_and_pull_secrets():
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "serviceAccountName": "sa",
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [
                {"envFrom": [{"secretRef": {"name": "envfrom-s"}}, {"configMapRef": {"name": "envfrom-c"}}]}
            ],
            "containers": [{"env": [{"name": "x", "valueFrom": {"secretKeyRef": {"name": "env-s", "key": "k"}}}]}],
            "volumes": [
                {
                    "name": "v1",
                    "projected": {"sources": [{"secret": {"name": "proj-s"}}, {"configMap": {"name": "proj-c"}}]},
                },
                {"name": "v2", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-s"}}},
                {"name": "v3", "persistentVolumeClaim": {"claimName": "claim"}},
            ],
        },
    }
    refs = pod_references(pod)
    assert refs["secrets"] == {"pull", "envfrom-s", "env-s", "proj-s", "csi-s"}
    assert refs["configmaps"] == {"envfrom-c", "proj-c"}
    assert refs["pvcs"] == {"claim"} and refs["serviceaccounts"] == {"sa"}


async def test_mirror_pods_grant_no_secret_access(source):
    source.put("pods", {"metadata": {"name": "static", "namespace": "kube-system",
                                     "annotations": {"kubernetes.io/config.mirror": "hash"}},
                        "spec": {"nodeName": "node-a", "volumes": [{"name": "s", "secret": {"secretName": "etcd"}}]}})  # fmt: skip
    decision, reason = await NodeAuthorizer(source)(get("secrets", "etcd", "kube-system"))
    assert decision is Decision.NO_OPINION
    assert reason == "no relationship found between node 'node-a' and this object"


async def test_kube_root_ca_via_projected_volume_is_readable(source):
    assert (await NodeAuthorizer(source)(get("configmaps", "kube-root-ca.crt")))[0] is Decision.ALLOW


async def test_unknown_node_name(source):
    user = UserInfo("system:node:", groups=("system:nodes",))
    assert await NodeAuthorizer(source)(get("secrets", "a-secret", user=user)) == (
        Decision.NO_OPINION,
        'unknown node for user "system:node:"',
    )


async def test_non_nodes_get_no_opinion_and_no_reason(source):
    assert await NodeAuthorizer(source)(get("secrets", "a-secret", user=UserInfo("alice"))) == (Decision.NO_OPINION, "")


async def test_pods_bound_to_the_node_and_static_rules(source):
    authz = NodeAuthorizer(source)
    assert (await authz(get("pods", "pod-a")))[0] is Decision.ALLOW
    assert (await authz(get("pods", "pod-b")))[0] is Decision.NO_OPINION
    create_mirror = Attributes(NODE_A, "create", True, namespace="kube-system", resource="pods")
    assert (await authz(create_mirror))[0] is Decision.ALLOW  # NodeRestriction decides the rest
    events = Attributes(NODE_A, "create", True, namespace="default", resource="events")
    assert (await authz(events))[0] is Decision.ALLOW
    services = Attributes(NODE_A, "watch", True, resource="services")
    assert (await authz(services))[0] is Decision.ALLOW
    deployments = Attributes(NODE_A, "list", True, api_group="apps", resource="deployments")
    assert await authz(deployments) == (Decision.NO_OPINION, "")
