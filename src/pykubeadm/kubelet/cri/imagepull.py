"""A container's image on the CRI runtime, as the kubelet's image manager gets it: `imagePullPolicy` (unset:
Always for `:latest` or no tag, else IfNotPresent; Never: ErrImageNeverPull when absent), registry credentials from
the Pod's `imagePullSecrets` (`pullsecrets`), events worded as the kubelet's (Pulling, Pulled with duration and size,
"already present on machine", Failed), and its errors: ErrImagePull carrying the runtime's message, then
ImagePullBackOff while the per-image back-off runs. `imageID` is the image's digest reference.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pykubeadm.cri.errors import CRIError
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.cri.pullsecrets import matching_auths
from pykubeadm.kubelet.imageref import parse_image
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["ImagePullError", "default_pull_policy", "ensure_image", "image_id"]

Event = Callable[[str, str, str], None]


class ImagePullError(Exception):
    """The image is not there to run: `reason` is the container's waiting reason, `message` its message."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def default_pull_policy(image: str) -> str:
    """The API's default: Always for `:latest` or an image without tag or digest, IfNotPresent otherwise."""
    _, _, tag = parse_image(image)
    if "@" in image:
        return "IfNotPresent"
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _seconds(s: float) -> str:
    """Go's Duration String for the Pulled event: 1.234s, 512ms."""
    if s < 1:
        return f"{s * 1000:.3g}ms"
    return f"{s:.3f}".rstrip("0").rstrip(".") + "s"


def image_id(image: api.Image | None, fallback: str) -> str:
    """The Pod status imageID: the image's first repo digest (`docker.io/library/busybox@sha256:…`), else its id."""
    if image is None:
        return fallback
    if image.repo_digests:
        return str(image.repo_digests[0])
    return str(image.id or fallback)


@dataclass
class PullContext:
    runtime: KubeletRuntime
    secrets: Callable[[], Awaitable[list[Mapping[str, Any]]]]
    event: Event


async def ensure_image(
    ctx: PullContext, container: Mapping[str, Any], sandbox_config: api.PodSandboxConfig
) -> api.Image:
    """The image to create the container from (pulled when the policy says so), or ImagePullError."""
    image = str(container.get("image") or "")
    if not image:
        raise ImagePullError("InvalidImageName", "container has no image")
    policy = str(container.get("imagePullPolicy") or default_pull_policy(image))
    try:
        present = await ctx.runtime.image_status(image)
    except CRIError as e:
        raise ImagePullError("ErrImagePull", str(e)) from e
    if present is not None and policy != "Always":
        ctx.event("Normal", "Pulled", f'Container image "{image}" already present on machine')
        return present
    if policy == "Never":
        message = f'Container image "{image}" is not present with pull policy of Never'
        ctx.event("Warning", "ErrImageNeverPull", message)
        raise ImagePullError("ErrImageNeverPull", message)
    ctx.event("Normal", "Pulling", f'Pulling image "{image}"')
    started = time.monotonic()
    auths: list[api.AuthConfig | None] = list(matching_auths(image, await ctx.secrets())) or [None]
    error: CRIError | None = None
    for auth in auths:
        try:
            ref = await ctx.runtime.pull_image(image, auth=auth, sandbox_config=sandbox_config)
            break
        except CRIError as e:
            error = e
    else:
        assert error is not None
        ctx.event("Warning", "Failed", f'Failed to pull image "{image}": {error}')
        raise ImagePullError("ErrImagePull", str(error))
    took = _seconds(time.monotonic() - started)
    status = await ctx.runtime.image_status(ref) or await ctx.runtime.image_status(image)
    size = status.size if status is not None else 0
    ctx.event(
        "Normal",
        "Pulled",
        f'Successfully pulled image "{image}" in {took} ({took} including waiting). Image size: {size} bytes.',
    )
    return status if status is not None else api.Image(id=ref)
