"""Admission plugins: NamespaceLifecycle, NodeRestriction, ServiceAccount, Priority, the CSR plugins, and chain order."""

from __future__ import annotations

import base64
import copy

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykubeadm.apiserver.admission.certificates import (
    CertificateApproval,
    CertificateSigning,
    CertificateSubjectRestriction,
)
from pykubeadm.apiserver.admission.chain import AdmissionChain
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, AdmissionError, Operation
from pykubeadm.apiserver.admission.lifecycle import NamespaceLifecycle
from pykubeadm.apiserver.admission.noderestriction import NodeRestriction, is_forbidden_node_label
from pykubeadm.apiserver.admission.priority import Priority
from pykubeadm.apiserver.admission.serviceaccount import SERVICE_ACCOUNT_MOUNT_PATH, ServiceAccount
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.node import NodeAuthorizer
from pykubeadm.apiserver.authz.rbac import RBACAuthorizer
from pykubeadm.apiserver.authz.union import privileged_groups, union

NODE_A = UserInfo("system:node:node-a", groups=("system:nodes", "system:authenticated"))
ADMIN = UserInfo("kubernetes-admin", groups=("kubeadm:cluster-admins", "system:authenticated"))
C, U, D = Operation.CREATE, Operation.UPDATE, Operation.DELETE


def attrs(op, resource, obj=None, old=None, *, user=NODE_A, ns="", name="", sub="", group="") -> AdmissionAttributes:
    name = name or ((obj or old or {}).get("metadata") or {}).get("name", "")
    return AdmissionAttributes(op, resource, user, namespace=ns, name=name, group=group, subresource=sub, obj=obj,
                               old_obj=old)  # fmt: skip


async def rejects(plugin, a: AdmissionAttributes) -> AdmissionError:
    fn = getattr(plugin, "validate", None) or plugin.admit
    with pytest.raises(AdmissionError) as err:
        await fn(a)
    return err.value


# --- NamespaceLifecycle -----------------------------------------------------------------------------------------


async def test_lifecycle_missing_terminating_and_immortal(source):
    nl = NamespaceLifecycle(source)
    cm = {"metadata": {"name": "c"}}
    err = await rejects(nl, attrs(C, "configmaps", cm, ns="nope", user=ADMIN))
    assert (err.code, err.message) == (404, 'namespaces "nope" not found')
    err = await rejects(nl, attrs(C, "configmaps", cm, ns="dying", user=ADMIN))
    assert err.code == 403
    assert err.message == (
        'configmaps "c" is forbidden: unable to create new content in namespace dying because it is being terminated'
    )
    assert err.details["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace dying is being terminated",
            "field": "metadata.namespace",
        }
    ]
    for ns in ("default", "kube-system", "kube-public"):
        err = await rejects(nl, attrs(D, "namespaces", name=ns, user=ADMIN))
        assert err.message == f'namespaces "{ns}" is forbidden: this namespace may not be deleted'
    await nl.admit(attrs(D, "namespaces", name="kube-node-lease", user=ADMIN))
    await nl.admit(attrs(U, "configmaps", cm, cm, ns="dying", user=ADMIN))  # updates are fine
    await nl.admit(attrs(D, "configmaps", old=cm, ns="nope", user=ADMIN))  # deletes always pass
    err = await rejects(nl, attrs(U, "configmaps", cm, cm, ns="nope", user=ADMIN))
    assert err.code == 404
    await nl.admit(attrs(C, "configmaps", cm, ns="default", user=ADMIN))
    await nl.admit(attrs(C, "namespaces", {"metadata": {"name": "new"}}, user=ADMIN))
    await nl.admit(attrs(C, "localsubjectaccessreviews", {}, ns="nope", group="authorization.k8s.io", user=ADMIN))


# --- NodeRestriction --------------------------------------------------------------------------------------------


def mirror_pod(node="node-a", **spec) -> dict:
    return {
        "metadata": {
            "name": f"etcd-{node}",
            "namespace": "kube-system",
            "annotations": {"kubernetes.io/config.mirror": "abc"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node, "uid": f"uid-{node}", "controller": True}
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": "etcd"}], **spec},
    }


async def test_node_may_create_only_its_own_mirror_pods(source):
    nr = NodeRestriction(source)
    await nr.validate(attrs(C, "pods", mirror_pod(), ns="kube-system"))
    plain = mirror_pod()
    del plain["metadata"]["annotations"]
    err = await rejects(nr, attrs(C, "pods", plain, ns="kube-system"))
    assert err.message == (
        'pods "etcd-node-a" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" '
        "can only create mirror pods"
    )
    other = mirror_pod()
    other["spec"]["nodeName"] = "node-b"
    err = await rejects(nr, attrs(C, "pods", other, ns="kube-system"))
    assert 'node "node-a" can only create pods with spec.nodeName set to itself' in err.message
    for bad_spec, text in (
        ({"serviceAccountName": "x"}, "reference a service account"),
        ({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}, "reference secrets"),
        ({"volumes": [{"name": "c", "configMap": {"name": "c"}}]}, "reference configmaps"),
        ({"volumes": [{"name": "p", "persistentVolumeClaim": {"claimName": "p"}}]}, "reference persistentvolumeclaims"),
    ):
        err = await rejects(nr, attrs(C, "pods", mirror_pod(**bad_spec), ns="kube-system"))
        assert text in err.message
    wrong_uid = mirror_pod()
    wrong_uid["metadata"]["ownerReferences"][0]["uid"] = "stale"
    assert (
        "node node-a UID mismatch: expected stale got uid-node-a"
        in (await rejects(nr, attrs(C, "pods", wrong_uid, ns="kube-system"))).message
    )


async def test_node_pod_delete_status_eviction_rules(source):
    nr = NodeRestriction(source)
    pod_a = source.objects[("pods", "default", "pod-a")]
    pod_b = source.objects[("pods", "default", "pod-b")]
    await nr.validate(attrs(D, "pods", old=pod_a, ns="default"))
    err = await rejects(nr, attrs(D, "pods", old=pod_b, ns="default"))
    assert (
        err.message == 'pods "pod-b" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself'
    )
    new_a = copy.deepcopy(pod_a)
    new_a["status"] = {"phase": "Running"}
    await nr.validate(attrs(U, "pods", new_a, pod_a, ns="default", sub="status"))
    relabeled = copy.deepcopy(new_a)
    relabeled["metadata"]["labels"] = {"x": "y"}
    assert (
        "cannot update labels through pod status"
        in (await rejects(nr, attrs(U, "pods", relabeled, pod_a, ns="default", sub="status"))).message
    )
    err = await rejects(nr, attrs(U, "pods", pod_b, pod_b, ns="default", sub="status"))
    assert "can only update pod status for pods with spec.nodeName set to itself" in err.message
    err = await rejects(nr, attrs(U, "pods", new_a, pod_a, ns="default"))
    assert 'unexpected operation "UPDATE", node "node-a" can only create and delete mirror pods' in err.message
    eviction = {"metadata": {"name": "pod-b", "namespace": "default"}}
    err = await rejects(nr, attrs(C, "pods", eviction, ns="default", name="pod-b", sub="eviction"))
    assert err.message == 'pods "pod-b" is forbidden: node node-a can only evict pods with spec.nodeName set to itself'
    err = await rejects(nr, attrs(C, "pods", {}, ns="default", name="pod-a", sub="exec"))
    assert "only 'status' and 'eviction' are allowed" in err.message


@pytest.mark.parametrize(
    "label,forbidden",
    [
        ("kubernetes.io/hostname", False),
        ("node.kubernetes.io/exclude-from-external-load-balancers", False),
        ("node.kubernetes.io/instance-type", False),
        ("foo.node.kubernetes.io/x", False),
        ("kubelet.kubernetes.io/x", False),
        ("topology.kubernetes.io/zone", False),
        ("example.com/role", False),
        ("plain", False),
        ("node-role.kubernetes.io/control-plane", True),
        ("node-restriction.kubernetes.io/secure", True),
        ("x.node-restriction.kubernetes.io/y", True),
        ("kubernetes.io/custom", True),
        ("k8s.io/anything", True),
        ("team.k8s.io/x", True),
    ],
)
def test_node_label_rule(label, forbidden):
    assert is_forbidden_node_label(label) is forbidden


async def test_node_may_modify_only_itself_and_allowed_labels(source):
    nr = NodeRestriction(source)
    node_a = {"metadata": {"name": "node-a", "labels": {"kubernetes.io/hostname": "node-a"}}, "spec": {}}
    await nr.validate(attrs(C, "nodes", node_a))
    err = await rejects(nr, attrs(C, "nodes", {"metadata": {"name": "node-b"}}))
    assert err.message == 'nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"'
    err = await rejects(nr, attrs(U, "nodes", {"metadata": {"name": "node-b"}}, {"metadata": {"name": "node-b"}}))
    assert 'is not allowed to modify node "node-b"' in err.message
    bad = copy.deepcopy(node_a)
    bad["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    err = await rejects(nr, attrs(C, "nodes", bad))
    assert err.message.endswith(
        'node "node-a" is not allowed to set the following labels: node-role.kubernetes.io/control-plane'
    )
    err = await rejects(nr, attrs(U, "nodes", bad, node_a))
    assert (
        err.message
        == 'nodes "node-a" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane'
    )
    # Keeping an existing restricted label (set by an admin) is fine; removing it is not.
    await nr.validate(attrs(U, "nodes", bad, bad))
    assert "modify labels" in (await rejects(nr, attrs(U, "nodes", node_a, bad))).message
    tainted = copy.deepcopy(node_a)
    tainted["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert "not allowed to modify taints" in (await rejects(nr, attrs(U, "nodes", node_a, tainted))).message
    # Admins are not restricted.
    await nr.validate(attrs(U, "nodes", node_a, tainted, user=ADMIN))


async def test_node_leases_pvcs_and_tokens(source):
    nr = NodeRestriction(source)
    lease = {"metadata": {"name": "node-a", "namespace": "kube-node-lease"}}
    await nr.validate(attrs(C, "leases", lease, ns="kube-node-lease", group="coordination.k8s.io"))
    other = {"metadata": {"name": "node-b", "namespace": "kube-node-lease"}}
    err = await rejects(nr, attrs(U, "leases", other, other, ns="kube-node-lease", group="coordination.k8s.io"))
    assert err.message == (
        'leases.coordination.k8s.io "node-b" is forbidden: can only access node lease with the same name as the '
        "requesting node"
    )
    pvc = {"metadata": {"name": "a-pvc"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {}}
    resized = copy.deepcopy(pvc)
    resized["status"]["capacity"] = {"storage": "2Gi"}
    await nr.validate(attrs(U, "persistentvolumeclaims", resized, pvc, ns="default", sub="status"))
    grown = copy.deepcopy(resized)
    grown["spec"]["resources"]["requests"]["storage"] = "5Gi"
    assert (
        "not allowed to update fields other than"
        in (await rejects(nr, attrs(U, "persistentvolumeclaims", grown, pvc, ns="default", sub="status"))).message
    )
    assert (
        "may only update PVC status"
        in (await rejects(nr, attrs(U, "persistentvolumeclaims", grown, pvc, ns="default"))).message
    )

    def token_request(pod: str, uid: str) -> dict:
        return {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}}}

    await nr.validate(attrs(C, "serviceaccounts", token_request("pod-a", "uid-pod-a"), ns="default", name="a-sa",
                            sub="token"))  # fmt: skip
    err = await rejects(nr, attrs(C, "serviceaccounts", token_request("pod-b", "uid-pod-b"), ns="default",
                                  name="default", sub="token"))  # fmt: skip
    assert "bound to a pod scheduled on a different node" in err.message
    err = await rejects(nr, attrs(C, "serviceaccounts", {"spec": {}}, ns="default", name="a-sa", sub="token"))
    assert "node requested token not bound to a pod" in err.message
    err = await rejects(nr, attrs(C, "serviceaccounts", token_request("pod-a", "old-uid"), ns="default", name="a-sa",
                                  sub="token"))  # fmt: skip
    assert "does not match the UID in record" in err.message


# --- ServiceAccount ---------------------------------------------------------------------------------------------


async def test_service_account_defaulting_and_token_volume(source):
    sa = ServiceAccount(source)
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}],
                                                 "initContainers": [{"name": "i"}]}}  # fmt: skip
    a = attrs(C, "pods", pod, ns="default", user=ADMIN)
    await sa.admit(a)
    spec = a.obj["spec"]
    assert spec["serviceAccountName"] == "default"
    (vol,) = spec["volumes"]
    assert vol["name"].startswith("kube-api-access-") and len(vol["name"]) == len("kube-api-access-") + 5
    sources = vol["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    for c in spec["containers"] + spec["initContainers"]:
        assert c["volumeMounts"] == [{"name": vol["name"], "readOnly": True, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH}]


async def test_service_account_missing_and_automount_off(source):
    sa = ServiceAccount(source)
    err = await rejects(
        type("P", (), {"admit": sa.admit})(),
        attrs(C, "pods", {"metadata": {"name": "web"}, "spec": {"serviceAccountName": "ghost"}}, ns="default"),
    )
    assert err.message == (
        'pods "web" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found'
    )
    pod = {"metadata": {"name": "w"}, "spec": {"automountServiceAccountToken": False, "containers": [{"name": "a"}]}}
    a = attrs(C, "pods", pod, ns="default")
    await sa.admit(a)
    assert "volumes" not in a.obj["spec"] and a.obj["spec"]["serviceAccountName"] == "default"
    source.objects[("serviceaccounts", "default", "default")]["imagePullSecrets"] = [{"name": "registry"}]
    a = attrs(C, "pods", {"metadata": {"name": "w2"}, "spec": {"containers": [{"name": "a"}]}}, ns="default")
    await sa.admit(a)
    assert a.obj["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    mirror = mirror_pod()
    a = attrs(C, "pods", copy.deepcopy(mirror), ns="kube-system")
    await sa.admit(a)
    assert a.obj == mirror  # mirror pods untouched


# --- Priority ---------------------------------------------------------------------------------------------------


async def test_priority_classes(source):
    pr = Priority(source)
    a = attrs(C, "pods", {"metadata": {"name": "etcd"}, "spec": {"priorityClassName": "system-node-critical"}},
              ns="kube-system")  # fmt: skip
    await pr.admit(a)
    assert a.obj["spec"]["priority"] == 2000001000
    assert a.obj["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    a = attrs(C, "pods", {"metadata": {"name": "x"}, "spec": {}}, ns="default")
    await pr.admit(a)
    assert a.obj["spec"]["priority"] == 0
    err = await rejects(type("P", (), {"admit": pr.admit})(),
                        attrs(C, "pods", {"metadata": {"name": "x"}, "spec": {"priorityClassName": "gold"}}, ns="d"))  # fmt: skip
    assert err.message == 'pods "x" is forbidden: no PriorityClass with name gold was found'
    source.put("priorityclasses.scheduling.k8s.io", {"metadata": {"name": "std"}, "value": 100, "globalDefault": True})
    a = attrs(C, "pods", {"metadata": {"name": "x"}, "spec": {}}, ns="default")
    await pr.admit(a)
    assert (a.obj["spec"]["priorityClassName"], a.obj["spec"]["priority"]) == ("std", 100)
    err = await rejects(pr, attrs(C, "priorityclasses", {"metadata": {"name": "other"}, "globalDefault": True},
                                  group="scheduling.k8s.io"))  # fmt: skip
    assert "PriorityClass std is already marked as default. Only one default can exist" in err.message


# --- CSR plugins --------------------------------------------------------------------------------------------------


def _csr(signer: str, orgs=("system:nodes",)) -> dict:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
                     + [x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-a")])  # fmt: skip
    pem = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    pem_bytes = pem.public_bytes(serialization.Encoding.PEM)
    return {"metadata": {"name": "csr-1"}, "spec": {"signerName": signer, "request": base64.b64encode(pem_bytes).decode()},
            "status": {}}  # fmt: skip


async def test_csr_approval_and_signing_need_signer_permissions(source):
    authz = union(privileged_groups(), NodeAuthorizer(source), RBACAuthorizer(source))
    approval, signing = CertificateApproval(authz), CertificateSigning(authz)
    csr = _csr("kubernetes.io/kube-apiserver-client-kubelet")
    approved = copy.deepcopy(csr)
    approved["status"]["conditions"] = [{"type": "Approved", "status": "True"}]
    g = "certificates.k8s.io"
    err = await rejects(approval, attrs(U, "certificatesigningrequests", approved, csr, sub="approval", group=g))
    assert err.message == (
        'certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: user not permitted to approve requests '
        'with signerName "kubernetes.io/kube-apiserver-client-kubelet"'
    )
    await approval.validate(attrs(U, "certificatesigningrequests", approved, csr, sub="approval", group=g, user=ADMIN))
    kcm = UserInfo("system:serviceaccount:kube-system:certificate-controller", groups=("system:serviceaccounts",))
    await approval.validate(attrs(U, "certificatesigningrequests", approved, csr, sub="approval", group=g, user=kcm))
    serving = _csr("kubernetes.io/kubelet-serving")
    serving_ok = copy.deepcopy(serving)
    serving_ok["status"]["conditions"] = [{"type": "Approved", "status": "True"}]
    await rejects(
        approval, attrs(U, "certificatesigningrequests", serving_ok, serving, sub="approval", group=g, user=kcm)
    )
    issued = copy.deepcopy(approved)
    issued["status"]["certificate"] = "LS0t"
    await signing.validate(attrs(U, "certificatesigningrequests", issued, approved, sub="status", group=g, user=kcm))
    err = await rejects(signing, attrs(U, "certificatesigningrequests", issued, approved, sub="status", group=g))
    assert (
        'user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client-kubelet"'
        in err.message
    )
    await signing.validate(
        attrs(U, "certificatesigningrequests", approved, approved, sub="status", group=g)
    )  # no change


async def test_wildcard_signer_resource_name_is_literal(source):
    source.put("clusterroles.rbac.authorization.k8s.io", {"metadata": {"name": "approve-all-k8s"}, "rules": [
        {"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
         "resourceNames": ["kubernetes.io/*"]}]})  # fmt: skip
    source.put("clusterrolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": "approve-all-k8s"}, "roleRef": {"kind": "ClusterRole", "name": "approve-all-k8s"},
        "subjects": [{"kind": "User", "name": "approver"}]})  # fmt: skip
    approval = CertificateApproval(RBACAuthorizer(source))
    csr = _csr("kubernetes.io/kubelet-serving")
    user = UserInfo("approver", groups=("system:authenticated",))
    await approval.validate(attrs(U, "certificatesigningrequests", csr, csr, sub="approval", group="certificates.k8s.io",
                                  user=user))  # fmt: skip


async def test_subject_restriction_blocks_system_masters():
    plugin = CertificateSubjectRestriction()
    csr = _csr("kubernetes.io/kube-apiserver-client", orgs=("system:masters",))
    err = await rejects(plugin, attrs(C, "certificatesigningrequests", csr, group="certificates.k8s.io", user=ADMIN))
    assert "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed" in err.message
    await plugin.validate(attrs(C, "certificatesigningrequests", _csr("kubernetes.io/kube-apiserver-client-kubelet",
                                                                      orgs=("system:masters",)),
                                group="certificates.k8s.io", user=ADMIN))  # fmt: skip


# --- chain ------------------------------------------------------------------------------------------------------


async def test_chain_runs_all_mutating_before_any_validating():
    calls: list[str] = []

    class Both:
        def __init__(self, name):
            self.name = name

        def handles(self, op):
            return True

        async def admit(self, a):
            calls.append(f"admit:{self.name}")

        async def validate(self, a):
            calls.append(f"validate:{self.name}")

    class DeleteOnly(Both):
        def handles(self, op):
            return op is Operation.DELETE

    chain = AdmissionChain([Both("a"), DeleteOnly("d"), Both("b")])
    await chain.run(attrs(C, "pods", {}, user=ADMIN))
    assert calls == ["admit:a", "admit:b", "validate:a", "validate:b"]
