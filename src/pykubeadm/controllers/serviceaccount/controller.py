"""The serviceaccount controller: makes sure every active namespace has the `default` ServiceAccount."""

from __future__ import annotations

from typing import Any, Final

from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, ServiceAccount

from pykubeadm.client import ApiError, is_already_exists, is_not_found
from pykubeadm.controllers.runtime import Controller

__all__ = ["DEFAULT_SERVICE_ACCOUNTS", "ServiceAccountsController"]

#: The ServiceAccounts every namespace gets.
DEFAULT_SERVICE_ACCOUNTS: Final = ("default",)


class ServiceAccountsController(Controller):
    name = "serviceaccount"
    service_account = "service-account-controller"

    def setup(self) -> None:
        self.namespaces = self.watch(Namespace, self._on_namespace)
        self.accounts = self.watch(ServiceAccount, self._on_account, namespace="*")

    def _on_namespace(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.queue.add(obj.metadata.name)

    def _on_account(self, event: str, obj: Any, old: Any) -> None:
        if event == "DELETED" and obj.metadata.name in DEFAULT_SERVICE_ACCOUNTS:
            self.queue.add(obj.metadata.namespace)

    async def sync(self, key: Any) -> None:
        ns = self.namespaces.get(key)
        if ns is None or (ns.status is not None and ns.status.phase == "Terminating"):
            return
        for name in DEFAULT_SERVICE_ACCOUNTS:
            if self.accounts.get(f"{key}/{name}") is not None:
                continue
            try:
                await self.client.create(ServiceAccount(metadata=ObjectMeta(name=name, namespace=key)))
            except ApiError as err:
                if is_already_exists(err) or is_not_found(err):
                    continue
                if err.status.code == 403 and "being terminated" in (err.status.message or ""):
                    return
                raise
