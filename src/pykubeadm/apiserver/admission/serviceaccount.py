"""ServiceAccount admission: default `spec.serviceAccountName` to "default", require the account to exist, and mount
the projected `kube-api-access-<rand>` token volume (token + kube-root-ca.crt + namespace) unless automount is off.
Mirror pods are left alone but may not reference service accounts, secrets or configmaps.
"""

from __future__ import annotations

import secrets
from typing import Any

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["DEFAULT_SERVICE_ACCOUNT", "SERVICE_ACCOUNT_MOUNT_PATH", "ServiceAccount"]

DEFAULT_SERVICE_ACCOUNT = "default"
SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_VOLUME_PREFIX = "kube-api-access-"
_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TOKEN_EXPIRATION_SECONDS = 3607


def _random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_RAND_ALPHABET) for _ in range(n))


def _projected_volume(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": _TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }


class ServiceAccount:
    name = "ServiceAccount"

    def __init__(self, source: ObjectSource, *, mount_tokens: bool = True):
        self._source = source
        self._mount = mount_tokens

    def handles(self, op: Operation) -> bool:
        return op is Operation.CREATE

    def _applies(self, attrs: AdmissionAttributes) -> bool:
        return attrs.group == "" and attrs.resource == "pods" and not attrs.subresource and attrs.obj is not None

    async def admit(self, attrs: AdmissionAttributes) -> None:
        if not self._applies(attrs):
            return
        pod = attrs.obj or {}
        if _MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
            return
        spec = pod.setdefault("spec", {})
        sa_name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
        spec["serviceAccountName"] = sa_name
        spec["serviceAccount"] = sa_name
        sa = await self._source.get("serviceaccounts", attrs.namespace, sa_name)
        if sa is None:
            raise forbidden(
                attrs,
                f'error looking up service account {attrs.namespace}/{sa_name}: serviceaccount "{sa_name}" not found',
            )
        if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [dict(ref) for ref in sa["imagePullSecrets"]]
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        if not self._mount or automount is False:
            return
        containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or ()]
        if all(
            any(m.get("mountPath") == SERVICE_ACCOUNT_MOUNT_PATH for m in c.get("volumeMounts") or ())
            for c in containers
        ):
            return
        volumes = spec.setdefault("volumes", [])
        existing = {v.get("name") for v in volumes}
        vol_name = next(n for n in (_VOLUME_PREFIX + _random_suffix() for _ in range(100)) if n not in existing)
        volumes.append(_projected_volume(vol_name))
        for c in containers:
            mounts = c.setdefault("volumeMounts", [])
            if not any(m.get("mountPath") == SERVICE_ACCOUNT_MOUNT_PATH for m in mounts):
                mounts.append({"name": vol_name, "readOnly": True, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH})

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if not self._applies(attrs):
            return
        pod = attrs.obj or {}
        if _MIRROR_ANNOTATION not in ((pod.get("metadata") or {}).get("annotations") or {}):
            return
        spec = pod.get("spec") or {}
        if spec.get("serviceAccountName") or spec.get("serviceAccount"):
            raise forbidden(attrs, "a mirror pod may not reference service accounts")
        from pykubeadm.apiserver.authz.node import pod_references

        refs = pod_references(pod)
        if refs["secrets"]:
            raise forbidden(attrs, "a mirror pod may not reference secrets")
        if refs["configmaps"]:
            raise forbidden(attrs, "a mirror pod may not reference configmaps")
