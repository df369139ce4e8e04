"""kubeadm's view of the node's container runtime (cmd/kubeadm/app/util/runtime): is it running, which Pods does it
hold, remove them, pull and look up images, which sandbox image it uses; synchronous calls over `CRIClient` with
kubeadm's 2 s deadline and retries, raising KubeadmError with kubeadm's wording. Used by preflight, `config images
pull` and `reset`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Final, TypeVar

from pykubeadm.cri.client import KUBEADM_TIMEOUT, CRIClient
from pykubeadm.cri.errors import CRIError
from pykubeadm.errors import KubeadmError

__all__ = ["PULL_IMAGE_RETRY", "REMOVE_CONTAINER_RETRY", "ContainerRuntime", "run_with_client"]

#: kubeadm's constants.PullImageRetry and RemoveContainerRetry.
PULL_IMAGE_RETRY: Final = 5
REMOVE_CONTAINER_RETRY: Final = 5
#: CRI RuntimeReady condition type (NetworkReady is not checked, on purpose, as in kubeadm).
_RUNTIME_READY = "RuntimeReady"

T = TypeVar("T")


def run_with_client(endpoint: str, call: Callable[[CRIClient], Awaitable[T]], *, timeout: float) -> T:
    """Run `call(client)` to completion from synchronous code; inside a running event loop it runs on a worker
    thread and blocks that loop until done (kubeadm's calls are short and have deadlines)."""

    async def main() -> T:
        async with CRIClient(endpoint, timeout=timeout) as cri:
            return await call(cri)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


async def _stop_and_remove(cri: CRIClient, sandbox: str) -> str:
    """Stop and remove one sandbox: an empty string when done, else kubeadm's words for what failed."""
    try:
        await cri.stop_pod_sandbox(sandbox)
    except CRIError as err:
        return f"failed to stop running pod {sandbox}: {err}"
    try:
        await cri.remove_pod_sandbox(sandbox)
    except CRIError as err:
        return f"failed to remove pod {sandbox}: {err}"
    return ""


class ContainerRuntime:
    """The runtime behind one CRI endpoint, as kubeadm asks it things."""

    def __init__(self, endpoint: str, *, timeout: float = KUBEADM_TIMEOUT) -> None:
        self.endpoint = endpoint
        self.timeout = timeout

    def _run(self, call: Callable[[CRIClient], Awaitable[T]]) -> T:
        return run_with_client(self.endpoint, call, timeout=self.timeout)

    def is_running(self) -> None:
        """Nothing when the runtime answers Status with RuntimeReady true; else KubeadmError in kubeadm's words."""
        try:
            resp = self._run(lambda cri: cri.status())
        except CRIError as err:
            raise KubeadmError(f"container runtime is not running: {err}") from err
        for cond in resp.status.conditions:
            if cond.type == _RUNTIME_READY and not cond.status:
                raise KubeadmError(
                    f'container runtime condition "{cond.type}" is not true. reason: {cond.reason}, '
                    f"message: {cond.message}"
                )

    def list_kube_containers(self) -> list[str]:
        """The ids of every Pod sandbox (kubeadm's ListKubeContainers lists sandboxes)."""
        try:
            return [s.id for s in self._run(lambda cri: cri.list_pod_sandbox())]
        except CRIError as err:
            raise KubeadmError(f"failed to list pod sandboxes: {err}") from err

    def remove_containers(self, sandbox_ids: Sequence[str]) -> None:
        """Stop and remove each sandbox (retrying each up to 5 times); every failure is reported together."""
        errors: list[str] = []
        for sandbox in sandbox_ids:
            last = ""
            for _ in range(REMOVE_CONTAINER_RETRY):
                last = self._run(partial(_stop_and_remove, sandbox=sandbox))
                if not last:
                    break
            if last:
                errors.append(last)
        if errors:
            raise KubeadmError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")

    def pull_image(self, image: str) -> str:
        """Pull `image` (up to 5 attempts, no deadline per attempt); returns the runtime's image reference."""
        last: CRIError | None = None
        for _ in range(PULL_IMAGE_RETRY):
            try:
                return run_with_client(self.endpoint, lambda cri: cri.pull_image(image), timeout=self.timeout)
            except CRIError as err:
                last = err
        raise KubeadmError(f"failed to pull image {image}: {last}") from last

    def image_exists(self, image: str) -> bool:
        try:
            return self._run(lambda cri: cri.image_status(image)) is not None
        except CRIError:
            return False

    def sandbox_image(self) -> str:
        """The runtime's sandbox (pause) image, from its verbose Status info (containerd's `sandboxImage`)."""
        try:
            resp = self._run(lambda cri: cri.status(verbose=True))
        except CRIError as err:
            raise KubeadmError(f"failed to get runtime status: {err}") from err
        config = resp.info.get("config")
        if config is None:
            raise KubeadmError(f"no 'config' field in CRI info: {resp}")
        try:
            image = json.loads(config).get("sandboxImage", "")
        except (ValueError, AttributeError) as err:
            raise KubeadmError(f"failed to unmarshal CRI info config: {err}") from err
        if not image:
            raise KubeadmError("no 'sandboxImage' field in CRI info config")
        return str(image)
