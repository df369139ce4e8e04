"""Every kind discovery lists, driven through the official Python clients (sync `kubernetes`, async
`kubernetes_asyncio`), whose models validate every answer: create, read, list by label, replace, patch (merge,
strategic, JSON patch, apply), one watch event, delete (the answer is the type the client declares for that call:
the deleted object for pods/services/serviceaccounts, a Status or the kept object otherwise), deletecollection.

MINIMAL holds one minimal valid body per kind; a served kind without an entry fails the test, so new kinds cannot
slip by untested.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykubeadm.testing.apiserver import ApiServer, running_apiserver

NS = "walk"
LABEL = "walk-test=yes"
_POD_TEMPLATE = {
    "metadata": {"labels": {"app": "walk"}},
    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
}
_SELECTOR = {"matchLabels": {"app": "walk"}}


def _csr() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "walk")]))
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


#: kind → minimal valid body (apiVersion, kind and metadata.name are added). `None` name: metadata.name from NAMES.
MINIMAL: dict[str, Callable[[], dict[str, Any]]] = {
    "Namespace": lambda: {},
    "Secret": lambda: {"data": {"k": "dg=="}},
    "ConfigMap": lambda: {"data": {"k": "v"}},
    "ServiceAccount": lambda: {},
    "Node": lambda: {},
    "Pod": lambda: {"spec": dict(_POD_TEMPLATE["spec"])},
    "Service": lambda: {"spec": {"ports": [{"port": 80}]}},
    "Endpoints": lambda: {"subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}]}]},
    "Event": lambda: {
        "involvedObject": {"kind": "Pod", "name": "x", "namespace": NS},
        "reason": "Walk",
        "message": "m",
        "type": "Normal",
    },
    "Lease": lambda: {"spec": {"holderIdentity": "h"}},
    "CertificateSigningRequest": lambda: {
        "spec": {"request": _csr(), "signerName": "example.com/walk", "usages": ["digital signature"]}
    },
    "Role": lambda: {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    "ClusterRole": lambda: {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    "RoleBinding": lambda: {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "walker", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    "ClusterRoleBinding": lambda: {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "walker", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    "Deployment": lambda: {"spec": {"replicas": 0, "selector": _SELECTOR, "template": _POD_TEMPLATE}},
    "DaemonSet": lambda: {"spec": {"selector": _SELECTOR, "template": _POD_TEMPLATE}},
    "ReplicaSet": lambda: {"spec": {"replicas": 0, "selector": _SELECTOR, "template": _POD_TEMPLATE}},
    "ControllerRevision": lambda: {"revision": 1, "data": {"spec": {}}},
    "Job": lambda: {
        "spec": {
            "suspend": True,
            "template": {"spec": {**_POD_TEMPLATE["spec"], "restartPolicy": "Never"}},
        }
    },
    "CronJob": lambda: {
        "spec": {
            "schedule": "*/5 * * * *",
            "suspend": True,
            "jobTemplate": {"spec": {"template": {"spec": {**_POD_TEMPLATE["spec"], "restartPolicy": "Never"}}}},
        }
    },
    "EndpointSlice": lambda: {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"]}],
        "ports": [{"port": 80, "protocol": "TCP"}],
    },
    "PodDisruptionBudget": lambda: {"spec": {"minAvailable": 1, "selector": _SELECTOR}},
    "PriorityClass": lambda: {"value": 1000},
    "APIService": lambda: {
        "spec": {
            "group": "walk.example.com",
            "version": "v1",
            "groupPriorityMinimum": 100,
            "versionPriority": 10,
        }
    },
    "PodTemplate": lambda: {"template": _POD_TEMPLATE},
    "ResourceQuota": lambda: {"spec": {"hard": {"configmaps": "1000"}}},
    "LimitRange": lambda: {"spec": {"limits": [{"type": "Container", "max": {"memory": "64Gi"}}]}},
    "PersistentVolume": lambda: {
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/walk"}}
    },
    "PersistentVolumeClaim": lambda: {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    "ReplicationController": lambda: {"spec": {"replicas": 0, "selector": {"app": "walk"}, "template": _POD_TEMPLATE}},
    "StatefulSet": lambda: {
        "spec": {"replicas": 0, "serviceName": "walk", "selector": _SELECTOR, "template": _POD_TEMPLATE}
    },
    "HorizontalPodAutoscaler": lambda: {
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "walk"}, "maxReplicas": 2}
    },
    "NetworkPolicy": lambda: {"spec": {"podSelector": {}}},
    "Ingress": lambda: {"spec": {"defaultBackend": {"service": {"name": "walk", "port": {"number": 80}}}}},
    "IngressClass": lambda: {"spec": {"controller": "example.com/walk"}},
    "IPAddress": lambda: {"spec": {"parentRef": {"resource": "services", "namespace": NS, "name": "walk"}}},
    "ServiceCIDR": lambda: {"spec": {"cidrs": ["127.1.0.0/24"]}},
    "StorageClass": lambda: {"provisioner": "example.com/walk"},
    "CSIDriver": lambda: {"spec": {}},
    "CSINode": lambda: {"spec": {"drivers": []}},
    "VolumeAttachment": lambda: {
        "spec": {"attacher": "example.com/walk", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}
    },
    "CSIStorageCapacity": lambda: {"storageClassName": "walk"},
    "RuntimeClass": lambda: {"handler": "walk"},
    "FlowSchema": lambda: {"spec": {"priorityLevelConfiguration": {"name": "walk"}}},
    "PriorityLevelConfiguration": lambda: {"spec": {"type": "Exempt", "exempt": {}}},
    "MutatingWebhookConfiguration": lambda: {"webhooks": []},
    "ValidatingWebhookConfiguration": lambda: {"webhooks": []},
    "ValidatingAdmissionPolicy": lambda: {"spec": {"validations": [{"expression": "true"}]}},
    "ValidatingAdmissionPolicyBinding": lambda: {"spec": {"policyName": "walk", "validationActions": ["Deny"]}},
    "CustomResourceDefinition": lambda: {
        "spec": {
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        }
    },
}
#: Kinds whose names are dictated by their content. (The walk's APIService is Local: the availability controller
#: leaves it alone, so the replace step does not race a status update; test_aggregator covers the non-local kind.)
NAMES = {
    "APIService": ("v1.walk.example.com", "v2.walk.example.com"),
    "CustomResourceDefinition": ("widgets.walk.example.com", "gadgets.walk.example.com"),
}


def _snake(kind: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", kind)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _api_class(module: Any, group: str, version: str) -> Any:
    """The typed API class kubernetes.utils.create_from_yaml picks: CoreV1Api, AppsV1Api, RbacAuthorizationV1Api..."""
    g = "core" if not group else "".join(group.rsplit(".k8s.io", 1))
    g = "".join(w.capitalize() for w in g.split("."))
    return getattr(module, f"{g}{version.capitalize()}Api")


def _declared(method: Any, code: str = "200") -> str:
    """The response type the generated client declares (37.x: in the method; kubernetes_asyncio: in *_with_http_info)."""
    for m in (method, getattr(method.__self__, method.__name__ + "_with_http_info", None)):
        if m is None:
            continue
        found = re.search(rf"['\"]?{code}['\"]?: \"(\w+)\"", inspect.getsource(m))
        if found:
            return found.group(1)
    raise AssertionError(f"no declared {code} type for {method.__name__}")


def _kinds(api_client: Any, module: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(group, version, resource) for every served top-level kind with the full verb set, from discovery."""
    out = []
    gvs = [("", "v1")]
    for g in module.ApisApi(api_client).get_api_versions().groups:
        gvs += [(g.name, v.version) for v in g.versions]
    for group, version in gvs:
        rl = _api_class(module, group, version)(api_client).get_api_resources()
        for r in rl.resources:
            if "/" in r.name or "get" not in r.verbs or "create" not in r.verbs:
                continue
            out.append((group, version, {"kind": r.kind, "namespaced": r.namespaced, "verbs": list(r.verbs)}))
    return out


class Walker:
    """One kind through every verb; `call` runs a client method (sync or async) and returns its result."""

    def __init__(self, module: Any, api_client: Any, call: Callable[..., Any], group: str, version: str, res: dict):
        self.kind, self.namespaced, self.verbs = res["kind"], res["namespaced"], res["verbs"]
        self.api = _api_class(module, group, version)(api_client)
        self.api_version = f"{group}/{version}" if group else version
        self.call = call
        self.snake = _snake(self.kind)

    def m(self, verb: str, collection: bool = False) -> Any:
        scope = "namespaced_" if self.namespaced else ""
        return getattr(self.api, f"{verb}_{scope}{self.snake}")

    def args(self, *rest: Any) -> tuple[Any, ...]:
        return (*rest, NS) if self.namespaced else rest

    def body(self, name: str) -> dict[str, Any]:
        b = MINIMAL[self.kind]()
        b.update({"apiVersion": self.api_version, "kind": self.kind})
        b["metadata"] = {"name": name, "labels": {"walk-test": "yes"}}
        if self.kind == "APIService":  # the name is <version>.<group>
            b["spec"]["version"], b["spec"]["group"] = name.split(".", 1)
        if self.kind == "CustomResourceDefinition":  # the name is <plural>.<group>
            plural, b["spec"]["group"] = name.split(".", 1)
            b["spec"]["names"] = {"plural": plural, "kind": plural.capitalize()}
        return b

    async def run(self, names: tuple[str, str], watch_one: Callable[..., Any]) -> None:
        name, other = names
        created = await self.call(self.m("create"), *self.args(), body=self.body(name))
        assert created.metadata.name == name
        got = await self.call(self.m("read"), *self.args(name))
        assert got.metadata.uid == created.metadata.uid
        listed = await self.call(self.m("list"), *self.args(), label_selector=LABEL)
        assert name in [i.metadata.name for i in listed.items]
        got.metadata.labels["replaced"] = "1"
        replaced = await self.call(self.m("replace"), *self.args(name), body=got)
        assert replaced.metadata.labels["replaced"] == "1"
        patch = self.m("patch")
        p = await self.call(patch, *self.args(name), body={"metadata": {"labels": {"merge": "1"}}},
                            _content_type="application/merge-patch+json")  # fmt: skip
        assert p.metadata.labels["merge"] == "1"
        p = await self.call(patch, *self.args(name), body={"metadata": {"labels": {"smp": "1"}}})
        assert p.metadata.labels["smp"] == "1"
        ops = [{"op": "add", "path": "/metadata/labels/jsonpatch", "value": "1"}]
        p = await self.call(patch, *self.args(name), body=ops)
        assert p.metadata.labels["jsonpatch"] == "1"
        applied = self.body(name)
        applied["metadata"]["labels"]["applied"] = "1"
        p = await self.call(patch, *self.args(name), body=applied, field_manager="walk", force=True,
                            _content_type="application/apply-patch+yaml")  # fmt: skip
        assert p.metadata.labels["applied"] == "1"
        ev_type, ev_name = await watch_one(self.m("list"), *self.args(), field_selector=f"metadata.name={name}")
        assert (ev_type, ev_name) == ("ADDED", name)
        deleted = await self.call(self.m("delete"), *self.args(name))
        declared = _declared(self.m("delete"))
        if declared in ("object", "V1Status"):  # kube answers a Status (or the object while finalizers hold it)
            as_dict = deleted if isinstance(deleted, dict) else deleted.to_dict()
            kind, status = as_dict.get("kind"), as_dict.get("status")
            assert kind in ("Status", self.kind), as_dict
            if kind == "Status":
                assert status == "Success" and as_dict["details"]["name"] == name, as_dict
        else:
            assert type(deleted).__name__ == declared, (type(deleted).__name__, declared)
            assert deleted.metadata.name == name
        if "deletecollection" in self.verbs:
            await self.call(self.m("create"), *self.args(), body=self.body(other))
            collection = getattr(self.api, f"delete_collection_{'namespaced_' if self.namespaced else ''}{self.snake}")
            await self.call(collection, *self.args(), label_selector=LABEL)
            left = await self.call(self.m("list"), *self.args(), label_selector=LABEL)
            assert other not in [i.metadata.name for i in left.items if not i.metadata.deletion_timestamp]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("walk")) as server:
        server.kubectl("create", "namespace", NS)
        # Pods need the namespace's default ServiceAccount; no controller-manager runs here to create it.
        server.kubectl("create", "serviceaccount", "default", "-n", NS, check=False)
        server.kubectl("get", "serviceaccount", "default", "-n", NS)
        yield server


def _names(kind: str, flavour: str) -> tuple[str, str]:
    if kind in NAMES:
        return NAMES[kind] if flavour == "sync" else tuple(n.replace(".walk.", ".walk-async.") for n in NAMES[kind])
    base = f"walk-{flavour}-{kind.lower()}"
    return base, base + "-2"


def _check_table(kinds: list[tuple[str, str, dict[str, Any]]]) -> None:
    missing = sorted({r["kind"] for _, _, r in kinds} - set(MINIMAL))
    assert not missing, f"served kinds without a MINIMAL body in {__file__}: {missing}"


def test_every_kind_with_the_sync_client(api: ApiServer) -> None:
    from kubernetes import client, watch

    api_client = api.python_client()
    kinds = _kinds(api_client, client)
    _check_table(kinds)

    async def call(fn: Any, *a: Any, **kw: Any) -> Any:
        return fn(*a, **kw)

    async def watch_one(fn: Any, *a: Any, **kw: Any) -> tuple[str, str]:
        w = watch.Watch()
        for ev in w.stream(fn, *a, timeout_seconds=10, **kw):
            w.stop()
            return ev["type"], ev["object"].metadata.name
        return "", ""

    async def main() -> None:
        for group, version, res in kinds:
            walker = Walker(client, api_client, call, group, version, res)
            try:
                await walker.run(_names(res["kind"], "sync"), watch_one)
            except Exception as e:
                raise AssertionError(f"{res['kind']} ({group}/{version}): {type(e).__name__}: {e}") from e

    asyncio.run(main())


def test_every_kind_with_the_async_client(api: ApiServer) -> None:
    kubernetes_asyncio = pytest.importorskip("kubernetes_asyncio")
    from kubernetes_asyncio import client, config, watch

    async def main() -> None:
        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(api.kubeconfig()), client_configuration=cfg)
        async with client.ApiClient(cfg) as api_client:
            gvs = [("", "v1")]
            for g in (await client.ApisApi(api_client).get_api_versions()).groups:
                gvs += [(g.name, v.version) for v in g.versions]
            kinds = []
            for group, version in gvs:
                rl = await _api_class(client, group, version)(api_client).get_api_resources()
                for r in rl.resources:
                    if "/" not in r.name and "get" in r.verbs and "create" in r.verbs:
                        kinds.append((group, version, {"kind": r.kind, "namespaced": r.namespaced, "verbs": r.verbs}))
            _check_table(kinds)

            async def call(fn: Any, *a: Any, **kw: Any) -> Any:
                return await fn(*a, **kw)

            async def watch_one(fn: Any, *a: Any, **kw: Any) -> tuple[str, str]:
                async with watch.Watch() as w:
                    async for ev in w.stream(fn, *a, timeout_seconds=10, **kw):
                        return ev["type"], ev["object"].metadata.name
                return "", ""

            for group, version, res in kinds:
                walker = Walker(client, api_client, call, group, version, res)
                try:
                    await walker.run(_names(res["kind"], "async"), watch_one)
                except Exception as e:
                    raise AssertionError(f"{res['kind']} ({group}/{version}): {type(e).__name__}: {e}") from e

    assert kubernetes_asyncio is not None
    asyncio.run(main())
