"""Image garbage collection: the kubelet's image GC manager (pkg/kubelet/images/image_gc_manager.go), through the
runtime boundary only (ListImages, ListContainers, ImageFsInfo, RemoveImage).

Every five minutes the kubelet takes stock of the runtime's images: when it first saw each one, when a container last
used it (any container the runtime still has, exited ones too), its size. Then, in the real kubelet's order:
- with `imageMaximumGCAge` set (and the kubelet up longer than that), every unused image not used for that long goes;
- the image filesystem's usage is `100 - available*100/capacity` (ImageFsInfo's mountpoint, statfs: kubelet.fsstats);
  at or over `imageGCHighThresholdPercent` it frees `capacity*(100-low)/100 - available` bytes, unused images in the
  order last used (never used first) then first seen, skipping those younger than `imageMinimumGCAge`; freeing less
  than that is the Warning `FreeDiskSpaceFailed` on the Node.
An image in use by a container is never removed, nor a pinned one, nor the runtime's sandbox (pause) image: the real
kubelet counts on the runtime to pin that (containerd does from 1.7), and Debian's containerd 1.6 does not, so the
kubelet also keeps the sandbox image the runtime names in its Status (and `--pod-infra-container-image`), as kubelets
before 1.29 did. A GC that fails logs "Image garbage collection failed once. Stats initialization may not have
completed yet"; a second failure in a row is the Warning `ImageGCFailed`. `imageGCHighThresholdPercent: 100` with no
maximum age turns image GC off.

`ImageGCPolicy.from_config` reads and validates the KubeletConfiguration fields with the kubelet's defaults and
messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from pykubeadm.errors import ValidationError
from pykubeadm.kubelet.fsstats import ImageFsError, image_fs_stats
from pykubeadm.util.goduration import format_duration, parse_duration

if TYPE_CHECKING:
    from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["IMAGE_GC_PERIOD", "ImageGCError", "ImageGCManager", "ImageGCPolicy"]

log = logging.getLogger(__name__)

#: How often the kubelet collects images (the kubelet's ImageGCPeriod).
IMAGE_GC_PERIOD = 300.0

DEFAULT_HIGH_THRESHOLD = 85
DEFAULT_LOW_THRESHOLD = 80
DEFAULT_MINIMUM_GC_AGE = 120.0


class ImageGCError(Exception):
    """A garbage collection that could not do what the policy asks (its message is the event's)."""


class NodeEvents(Protocol):
    def record_node(self, kind: str, reason: str, message: str) -> None: ...


def _go_duration(seconds: float) -> str:
    return format_duration(timedelta(seconds=seconds))


@dataclass(frozen=True)
class ImageGCPolicy:
    """The band image GC keeps the image filesystem in, and the ages that protect or condemn an image (seconds)."""

    high_threshold_percent: int = DEFAULT_HIGH_THRESHOLD
    low_threshold_percent: int = DEFAULT_LOW_THRESHOLD
    min_age: float = DEFAULT_MINIMUM_GC_AGE
    max_age: float = 0.0

    @property
    def enabled(self) -> bool:
        return self.high_threshold_percent != 100 or self.max_age > 0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ImageGCPolicy:
        """imageGCHighThresholdPercent / imageGCLowThresholdPercent / imageMinimumGCAge / imageMaximumGCAge of a
        KubeletConfiguration, defaulted and validated as the kubelet does (every problem at once)."""
        errors: list[str] = []

        def percent(key: str, flag: str, default: int) -> int:
            value = config.get(key)
            if value is None:
                return default
            if isinstance(value, bool) or not isinstance(value, int):
                errors.append(f"invalid configuration: {key} ({flag}) {value!r} must be an integer")
                return default
            if not 0 <= value <= 100:
                errors.append(f"invalid configuration: {key} ({flag}) {value} must be between 0 and 100, inclusive")
            return value

        def duration(key: str, default: float) -> float:
            value = config.get(key)
            if value in (None, ""):
                return default
            try:
                seconds = parse_duration(str(value)).total_seconds()
            except ValueError as e:
                errors.append(f"invalid configuration: {key} {value!r}: {e} (a duration such as 2m0s)")
                return default
            return default if seconds == 0 else seconds

        high = percent("imageGCHighThresholdPercent", "--image-gc-high-threshold", DEFAULT_HIGH_THRESHOLD)
        low = percent("imageGCLowThresholdPercent", "--image-gc-low-threshold", DEFAULT_LOW_THRESHOLD)
        if low >= high:
            errors.append(
                f"invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less "
                f"than imageGCHighThresholdPercent (--image-gc-high-threshold) {high}"
            )
        min_age = duration("imageMinimumGCAge", DEFAULT_MINIMUM_GC_AGE)
        max_age = duration("imageMaximumGCAge", 0.0)
        if max_age < 0:
            errors.append(f"invalid configuration: imageMaximumGCAge {_go_duration(max_age)} must not be negative")
        elif 0 < max_age <= min_age:
            errors.append(
                f"invalid configuration: imageMaximumGCAge {_go_duration(max_age)} must be greater than "
                f"imageMinimumGCAge {_go_duration(min_age)}"
            )
        if errors:
            raise ValidationError(errors)
        return cls(high, low, min_age, max_age)


@dataclass
class _Record:
    first_detected: float
    last_used: float = 0.0  # 0: never seen in use
    size: int = 0
    pinned: bool = False
    references: tuple[str, ...] = field(default_factory=tuple)


class ImageGCManager:
    """Tracks the runtime's images and frees them by the policy; `run()` is the kubelet's GC loop."""

    def __init__(
        self,
        runtime: KubeletRuntime,
        policy: ImageGCPolicy,
        events: NodeEvents,
        *,
        sandbox_images: Iterable[str] = (),
        clock: Callable[[], float] = time.time,
        image_fs: Callable[[KubeletRuntime], Awaitable[dict[str, Any]]] = image_fs_stats,
    ) -> None:
        self.runtime = runtime
        self.policy = policy
        self.events = events
        self.sandbox_images = {s for s in sandbox_images if s}
        self.clock = clock
        self.image_fs = image_fs
        self.records: dict[str, _Record] = {}

    async def runtime_sandbox_image(self) -> str:
        """The sandbox image the runtime names in its verbose Status (containerd's `sandboxImage`), or ""."""
        try:
            info = (await self.runtime.status(verbose=True)).info.get("config", "")
            return str(json.loads(info).get("sandboxImage", "")) if info else ""
        except Exception as e:  # an older runtime, another runtime's info: keep what the kubelet was told
            log.info("the runtime's sandbox image is unknown: %s", e)
            return ""

    def _is_sandbox_image(self, references: Iterable[str]) -> bool:
        return any(ref in self.sandbox_images for ref in references)

    async def detect_images(self, detect_time: float) -> set[str]:
        """Record the runtime's images (new ones first seen at `detect_time`, those in use last used now); the IDs of
        the images in use."""
        images = await self.runtime.list_images()
        containers = await self.runtime.list_containers()
        used_refs = {ref for ct in containers for ref in (ct.image_ref, ct.image.image) if ref}
        now = self.clock()
        in_use: set[str] = set()
        current: set[str] = set()
        for image in images:
            references = (image.id, *image.repo_tags, *image.repo_digests)
            current.add(image.id)
            record = self.records.get(image.id)
            if record is None:
                log.debug("Image ID is new: %s", image.id)
                record = self.records[image.id] = _Record(first_detected=detect_time)
            if any(ref in used_refs for ref in references):
                in_use.add(image.id)
                record.last_used = now
            record.size = image.size
            record.pinned = image.pinned
            record.references = references
        for gone in set(self.records) - current:
            del self.records[gone]
        return in_use

    async def _eviction_order(self, free_time: float) -> list[tuple[str, _Record]]:
        in_use = await self.detect_images(free_time)
        candidates = [
            (image_id, record)
            for image_id, record in self.records.items()
            if image_id not in in_use and not record.pinned and not self._is_sandbox_image(record.references)
        ]
        candidates.sort(key=lambda item: (item[1].last_used, item[1].first_detected))
        return candidates

    async def _free_image(self, image_id: str, record: _Record) -> None:
        log.info("Removing image to free bytes imageID=%s size=%d", image_id, record.size)
        await self.runtime.remove_image(image_id)
        self.records.pop(image_id, None)

    async def _free_old_images(
        self, images: list[tuple[str, _Record]], free_time: float, began: float
    ) -> list[tuple[str, _Record]]:
        max_age = self.policy.max_age
        if max_age <= 0 or free_time - began <= max_age:
            return images
        remaining, errors = [], []
        for image_id, record in images:
            if free_time - record.last_used > max_age:
                try:
                    await self._free_image(image_id, record)
                    continue
                except Exception as e:
                    errors.append(str(e))
            remaining.append((image_id, record))
        if errors:
            raise ImageGCError(
                f"wanted to free images older than {_go_duration(max_age)}, encountered errors in image deletion: "
                + _aggregate(errors)
            )
        return remaining

    async def _free_space(self, to_free: int, free_time: float, images: list[tuple[str, _Record]]) -> int:
        freed = 0
        errors: list[str] = []
        for image_id, record in images:
            if record.last_used >= free_time:
                continue
            if free_time - record.first_detected < self.policy.min_age:
                log.debug("Image ID's age is less than the policy's minAge: %s", image_id)
                continue
            try:
                await self._free_image(image_id, record)
            except Exception as e:
                errors.append(str(e))
                continue
            freed += record.size
            if freed >= to_free:
                break
        if errors:
            raise ImageGCError(
                f"wanted to free {to_free} bytes, but freed {freed} bytes space with errors in image deletion: "
                + _aggregate(errors)
            )
        return freed

    async def garbage_collect(self, began: float) -> None:
        """One collection (`began`: when the GC loop started, for imageMaximumGCAge); ImageGCError when it fails."""
        free_time = self.clock()
        images = await self._eviction_order(free_time)
        images = await self._free_old_images(images, free_time, began)
        try:
            fs = await self.image_fs(self.runtime)
        except ImageFsError as e:
            raise ImageGCError(str(e)) from e
        capacity, available = int(fs["capacityBytes"]), int(fs["availableBytes"])
        if available > capacity:
            log.info("Availability is larger than capacity available=%d capacity=%d", available, capacity)
            available = capacity
        if capacity == 0:
            message = "invalid capacity 0 on image filesystem"
            self.events.record_node("Warning", "InvalidDiskCapacity", message)
            raise ImageGCError(message)
        usage = 100 - available * 100 // capacity
        if usage < self.policy.high_threshold_percent:
            return
        to_free = capacity * (100 - self.policy.low_threshold_percent) // 100 - available
        log.info(
            "Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low "
            "threshold usage=%d highThreshold=%d amountToFree=%d lowThreshold=%d",
            usage,
            self.policy.high_threshold_percent,
            to_free,
            self.policy.low_threshold_percent,
        )
        freed = await self._free_space(to_free, free_time, images)
        if freed < to_free:
            message = (
                f"Failed to garbage collect required amount of images. Attempted to free {to_free} bytes, but only "
                f"found {freed} bytes eligible to free."
            )
            self.events.record_node("Warning", "FreeDiskSpaceFailed", message)
            raise ImageGCError(message)

    async def run(self, period: float = IMAGE_GC_PERIOD) -> None:
        """The GC loop: a collection at once and `period` after each; failures logged, repeated ones an event."""
        if not self.policy.enabled:
            log.info("ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC")
            return
        self.sandbox_images.add(await self.runtime_sandbox_image())
        self.sandbox_images.discard("")
        began = self.clock()
        failed_before = False
        while True:
            try:
                await self.garbage_collect(began)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the runtime's errors too: the loop goes on, as wait.Until does
                if failed_before:
                    log.error("Image garbage collection failed multiple times in a row: %s", e)
                    self.events.record_node("Warning", "ImageGCFailed", str(e))
                else:
                    log.error(
                        "Image garbage collection failed once. Stats initialization may not have completed yet: %s", e
                    )
                failed_before = True
            else:
                if failed_before:
                    log.info("Image garbage collection succeeded")
                failed_before = False
            await asyncio.sleep(period)


def _aggregate(errors: list[str]) -> str:
    """errors.NewAggregate's text: one error as it is, several as `[a, b]`."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
