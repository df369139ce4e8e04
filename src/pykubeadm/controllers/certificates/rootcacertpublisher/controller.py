"""The root-ca-cert-publisher controller: a `kube-root-ca.crt` ConfigMap with the cluster CA in every namespace.

The CA is --root-ca-file (kubeadm: /etc/kubernetes/pki/ca.crt). A missing or edited ConfigMap is re-created or put back.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from lightkube.resources.core_v1 import ConfigMap, Namespace

from pykubeadm.client import ApiError, is_already_exists, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = ["ROOT_CA_CONFIGMAP", "RootCACertPublisher", "desired_configmap"]

log = logging.getLogger(__name__)

ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
ROOT_CA_KEY: Final = "ca.crt"
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters."
)


def desired_configmap(namespace: str, ca_pem: str, existing: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ConfigMap to write (create when `existing` is None), or None when `existing` is already right."""
    if existing is not None:
        data = existing.get("data") or {}
        annotations = (existing.get("metadata") or {}).get("annotations") or {}
        if data == {ROOT_CA_KEY: ca_pem} and annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION:
            return None
        body = dict(existing)
        body["metadata"] = dict(existing.get("metadata") or {})
        body["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
        body["data"] = {ROOT_CA_KEY: ca_pem}
        return body
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "namespace": namespace,
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
        },
        "data": {ROOT_CA_KEY: ca_pem},
    }


def _kubeconfig_ca(client: Any) -> str | None:
    """Without --root-ca-file kube-controller-manager publishes the CA its own kubeconfig trusts."""
    try:
        cluster = client.config.cluster
    except AttributeError:
        return None
    if cluster.certificate_auth_data:
        return base64.b64decode(cluster.certificate_auth_data).decode()
    if cluster.certificate_auth:
        return Path(client.config.abs_file(cluster.certificate_auth)).read_text()
    return None


class RootCACertPublisher(Controller):
    name = "root-ca-cert-publisher"
    service_account = "root-ca-cert-publisher"

    def setup(self) -> None:
        opts = self.ctx.options
        self.ca_pem: str | None = None
        if opts is not None and opts.root_ca_file:
            self.ca_pem = opts.root_ca_file.read_text()
        else:
            self.ca_pem = _kubeconfig_ca(self.ctx.client)
        self.namespaces = self.watch(Namespace, self._on_namespace)
        self.configmaps = self.watch(ConfigMap, self._on_configmap, namespace="*")

    def _on_namespace(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.queue.add(obj.metadata.name)

    def _on_configmap(self, event: str, obj: Any, old: Any) -> None:
        if obj.metadata.name == ROOT_CA_CONFIGMAP:
            self.queue.add(obj.metadata.namespace)

    async def sync(self, key: Any) -> None:
        if self.ca_pem is None:
            return
        ns = self.namespaces.get(key)
        if ns is None or (ns.status is not None and ns.status.phase == "Terminating"):
            return
        cm = self.configmaps.get(f"{key}/{ROOT_CA_CONFIGMAP}")
        body = desired_configmap(key, self.ca_pem, cm.to_dict() if cm is not None else None)
        if body is None:
            return
        try:
            if cm is None:
                await self.client.create(model(ConfigMap, body))
            else:
                await self.client.replace(model(ConfigMap, body))
        except ApiError as err:
            if is_already_exists(err) or is_conflict(err):
                raise TemporaryError(f"{key}/{ROOT_CA_CONFIGMAP} changed meanwhile") from err
            if is_not_found(err) or (err.status.code == 403 and "being terminated" in (err.status.message or "")):
                return
            raise
