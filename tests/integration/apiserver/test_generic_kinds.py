"""The kinds served by the generic registry, through the real kubectl: `kubectl api-resources` as a v1.33 cluster
lists it, kube's printer columns, /scale, selectors, schema validation, and ResourceQuota / LimitRange admission."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pykubeadm.apiserver.openapi import definitions as defs
from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

#: `kubectl api-resources` of a v1.33 kube-apiserver for these groups (NAME SHORTNAMES APIVERSION NAMESPACED KIND).
V133_RESOURCES = """
configmaps cm v1 true ConfigMap
endpoints ep v1 true Endpoints
events ev v1 true Event
limitranges limits v1 true LimitRange
namespaces ns v1 false Namespace
nodes no v1 false Node
persistentvolumeclaims pvc v1 true PersistentVolumeClaim
persistentvolumes pv v1 false PersistentVolume
pods po v1 true Pod
podtemplates - v1 true PodTemplate
replicationcontrollers rc v1 true ReplicationController
resourcequotas quota v1 true ResourceQuota
secrets - v1 true Secret
serviceaccounts sa v1 true ServiceAccount
services svc v1 true Service
mutatingwebhookconfigurations - admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration
validatingadmissionpolicies - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy
validatingadmissionpolicybindings - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding
validatingwebhookconfigurations - admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration
controllerrevisions - apps/v1 true ControllerRevision
daemonsets ds apps/v1 true DaemonSet
deployments deploy apps/v1 true Deployment
replicasets rs apps/v1 true ReplicaSet
statefulsets sts apps/v1 true StatefulSet
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler
cronjobs cj batch/v1 true CronJob
jobs - batch/v1 true Job
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest
leases - coordination.k8s.io/v1 true Lease
flowschemas - flowcontrol.apiserver.k8s.io/v1 false FlowSchema
prioritylevelconfigurations - flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration
ingressclasses - networking.k8s.io/v1 false IngressClass
ingresses ing networking.k8s.io/v1 true Ingress
ipaddresses ip networking.k8s.io/v1 false IPAddress
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy
servicecidrs - networking.k8s.io/v1 false ServiceCIDR
runtimeclasses - node.k8s.io/v1 false RuntimeClass
csidrivers - storage.k8s.io/v1 false CSIDriver
csinodes - storage.k8s.io/v1 false CSINode
csistoragecapacities - storage.k8s.io/v1 true CSIStorageCapacity
storageclasses sc storage.k8s.io/v1 false StorageClass
volumeattachments - storage.k8s.io/v1 false VolumeAttachment
"""
#: Served by a real cluster but not by us (yet): the create-only `bindings` and read-only `componentstatuses`.
NOT_SERVED = {"bindings", "componentstatuses"}


def _rows(text: str) -> set[tuple[str, ...]]:
    return {tuple(line.split()) for line in text.strip().splitlines()}


def _apply(api: ApiServer, tmp_path: Path, name: str, text: str, *args: str, check: bool = True):
    path = tmp_path / name
    path.write_text(text)
    return api.kubectl("apply", "-f", str(path), *args, check=check)


def test_fixture_kinds_are_upstream_v133_kinds() -> None:
    for _, _, api_version, _, kind in _rows(V133_RESOURCES):
        group, _, version = api_version.rpartition("/")
        assert defs.gvk_of(group, version, kind), f"{api_version} {kind} is not a v1.33 definition"


def test_api_resources_equal_a_v133_cluster(api: ApiServer) -> None:
    out = api.kubectl("api-resources", "--no-headers").stdout
    groups = {r[2] for r in _rows(V133_RESOURCES)}
    served = set()
    for line in out.strip().splitlines():
        parts = line.split()
        if len(parts) == 4:  # no SHORTNAMES column value
            parts.insert(1, "-")
        if parts[2] in groups and parts[0] not in NOT_SERVED:
            served.add(tuple(parts))
    assert served == _rows(V133_RESOURCES)


def test_printer_columns_scale_and_selectors(api: ApiServer, tmp_path: Path) -> None:
    _apply(
        api,
        tmp_path,
        "objs.yaml",
        """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default, labels: {tier: db}}
spec:
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-gen, labels: {tier: db}}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/x}, storageClassName: fast}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: example.com/fast
""",
    )
    sts = api.kubectl("get", "sts", "web").stdout.splitlines()
    assert sts[0].split() == ["NAME", "READY", "AGE"] and sts[1].split()[:2] == ["web", "0/1"]
    pv = api.kubectl("get", "pv", "pv-gen").stdout.splitlines()
    assert pv[0].split()[:6] == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY"]
    assert pv[1].split()[:5] == ["pv-gen", "1Gi", "RWO", "Retain", "Pending"]
    sc = api.kubectl("get", "sc").stdout
    assert "fast (default)" in sc and "example.com/fast" in sc
    # defaults from SetDefaults_StatefulSet
    spec = json.loads(api.kubectl("get", "sts", "web", "-o", "json").stdout)["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady" and spec["updateStrategy"]["type"] == "RollingUpdate"
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    api.kubectl("scale", "sts", "web", "--replicas=3")
    assert json.loads(api.kubectl("get", "sts", "web", "-o", "json").stdout)["spec"]["replicas"] == 3
    names = api.kubectl("get", "pv,sts", "-A", "-l", "tier=db", "-o", "name").stdout.split()
    assert sorted(names) == ["persistentvolume/pv-gen", "statefulset.apps/web"]
    sel = api.kubectl("get", "pv", "--field-selector", "metadata.name=nope", "-o", "name").stdout
    assert sel.strip() == ""


def test_schema_required_fields(api: ApiServer, tmp_path: Path) -> None:
    res = _apply(
        api,
        tmp_path,
        "nosel.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: nosel, namespace: default}\n"
        "spec: {serviceName: x, template: {spec: {containers: [{name: c, image: i}]}}}\n",
        check=False,
    )
    assert res.returncode != 0
    assert 'The StatefulSet "nosel" is invalid: spec.selector: Required value' in res.stderr


def _run_until_forbidden(api: ApiServer, name: str, namespace: str) -> str:
    """`kubectl run` until admission refuses it: admission reads quotas from a watch-fed cache, as kube-apiserver's
    informers do, so a quota created a moment ago may not be enforced yet."""
    deadline = time.monotonic() + 30
    while True:
        res = api.kubectl("run", name, "-n", namespace, "--image=nginx", check=False)
        if res.returncode != 0 or time.monotonic() > deadline:
            return res.stderr
        api.kubectl("delete", "pod", name, "-n", namespace, "--grace-period=0", "--force", check=False)


def test_resource_quota_and_limit_range_admission(api: ApiServer, tmp_path: Path) -> None:
    api.kubectl("create", "namespace", "quota")
    api.kubectl("create", "serviceaccount", "default", "-n", "quota", check=False)
    api.kubectl("create", "quota", "q1", "-n", "quota", "--hard=pods=1,configmaps=2")
    _apply(
        api,
        tmp_path,
        "lr.yaml",
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr, namespace: quota}\n"
        "spec: {limits: [{type: Container, max: {memory: 1Gi}, default: {cpu: 500m}}]}\n",
    )
    assert "requests.cpu" not in api.kubectl("get", "quota", "q1", "-n", "quota").stdout
    api.kubectl("run", "p1", "-n", "quota", "--image=nginx")
    err = _run_until_forbidden(api, "p2", "quota")
    assert 'pods "p2" is forbidden: exceeded quota: q1, requested: pods=1, used: pods=1, limited: pods=1' in err
    pod = json.loads(api.kubectl("get", "pod", "p1", "-n", "quota", "-o", "json").stdout)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "500m", "memory": "1Gi"}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"].startswith("LimitRanger plugin set: ")
    api.kubectl("delete", "pod", "p1", "-n", "quota", "--wait=false")
    big = '{"spec":{"containers":[{"name":"p3","image":"nginx","resources":{"limits":{"memory":"2Gi"}}}]}}'
    res = api.kubectl("run", "p3", "-n", "quota", "--image=nginx", f"--overrides={big}", check=False)
    assert 'pods "p3" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi' in res.stderr
