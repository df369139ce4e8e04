"""Image garbage collection's policy and decisions against the fake runtime (the real containerd's in
tests/integration/cri/test_image_gc.py): the KubeletConfiguration fields with the kubelet's defaults and validation
messages; over the high threshold, unused images go oldest-used first down to the low threshold, never one a
container uses, a pinned one, the sandbox image, nor one younger than imageMinimumGCAge; freeing too little is
FreeDiskSpaceFailed, a repeated failure ImageGCFailed; imageMaximumGCAge removes long-unused images at any usage."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.errors import ValidationError
from pykubeadm.kubelet.cri.fake import FakeRuntime
from pykubeadm.kubelet.imagegc import ImageGCError, ImageGCManager, ImageGCPolicy

MiB = 1 << 20


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    def record_node(self, kind: str, reason: str, message: str) -> None:
        self.recorded.append((kind, reason, message))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def disk(capacity: int, available: int) -> Any:
    async def image_fs(_: Any) -> dict[str, Any]:
        return {"capacityBytes": capacity, "availableBytes": available}

    return image_fs


async def start_container(fake: FakeRuntime, image: str) -> str:
    config = api.PodSandboxConfig(metadata=api.PodSandboxMetadata(name="p", uid="u"), log_directory="/logs")
    sandbox = await fake.run_pod_sandbox(config)
    cid = await fake.create_container(
        sandbox, api.ContainerConfig(image=api.ImageSpec(image=image), log_path="c/0.log"), config
    )
    await fake.start_container(cid)
    return cid


def tags(fake: FakeRuntime) -> set[str]:
    return set(fake.images)


# --- policy ----------------------------------------------------------------------------------------------------------


def test_policy_defaults_are_the_kubelets() -> None:
    policy = ImageGCPolicy.from_config({})
    assert (policy.high_threshold_percent, policy.low_threshold_percent, policy.min_age, policy.max_age) == (
        85,
        80,
        120.0,
        0.0,
    )
    assert ImageGCPolicy.from_config({"imageMinimumGCAge": "0s"}).min_age == 120.0  # zero is defaulted
    assert ImageGCPolicy.from_config({"imageGCHighThresholdPercent": 1, "imageGCLowThresholdPercent": 0}).enabled
    assert not ImageGCPolicy.from_config({"imageGCHighThresholdPercent": 100}).enabled


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"imageGCHighThresholdPercent": 101},
            "invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 "
            "and 100, inclusive",
        ),
        (
            {"imageGCLowThresholdPercent": -1},
            "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and "
            "100, inclusive",
        ),
        (
            {"imageGCHighThresholdPercent": 0, "imageGCLowThresholdPercent": 0},
            "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 0 must be less than "
            "imageGCHighThresholdPercent (--image-gc-high-threshold) 0",
        ),
        (
            {"imageMaximumGCAge": "1m", "imageMinimumGCAge": "2m"},
            "invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s",
        ),
        ({"imageMaximumGCAge": "-1h"}, "invalid configuration: imageMaximumGCAge -1h0m0s must not be negative"),
    ],
)
def test_policy_validation_names_the_field(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        ImageGCPolicy.from_config(config)
    assert message in err.value.errors


# --- collection ------------------------------------------------------------------------------------------------------


async def test_over_the_high_threshold_frees_down_to_the_low_one_oldest_first() -> None:
    fake, clock, events = FakeRuntime(), Clock(), Events()
    for name in ("old", "older", "used", "pinned", "pause"):
        fake.add_image(f"example.test/{name}:1", size=10 * MiB)
    fake.images["example.test/pinned:1"].pinned = True
    await start_container(fake, "example.test/used:1")
    # 100 MiB disk, 10 MiB available: 90% used ≥ 85 → free 100*20% - 10 = 10 MiB, one image's worth
    gc = ImageGCManager(
        fake,
        ImageGCPolicy(),
        events,
        sandbox_images=["example.test/pause:1"],
        clock=clock,
        image_fs=disk(100 * MiB, 10 * MiB),
    )
    await gc.detect_images(clock.now)
    clock.now += 60
    fake.add_image("example.test/new:1", size=10 * MiB)  # detected now: too young at the collection
    await gc.detect_images(clock.now)
    clock.now += 100  # "old" and friends are 160 s old, "new" 100 s
    # "old" was last used before "older": it goes first, and one image is enough
    gc.records[fake.images["example.test/older:1"].id].last_used = clock.now - 50
    gc.records[fake.images["example.test/old:1"].id].last_used = clock.now - 150
    await gc.garbage_collect(began=clock.now)
    assert tags(fake) == {f"example.test/{n}:1" for n in ("older", "used", "pinned", "pause", "new")}
    assert events.recorded == []


async def test_freeing_too_little_is_free_disk_space_failed() -> None:
    fake, clock, events = FakeRuntime(), Clock(), Events()
    fake.add_image("example.test/a:1", size=MiB)
    fake.add_image("example.test/used:1", size=50 * MiB)
    await start_container(fake, "example.test/used:1")
    gc = ImageGCManager(fake, ImageGCPolicy(1, 0, 1.0), events, clock=clock, image_fs=disk(100 * MiB, 40 * MiB))
    await gc.detect_images(clock.now)
    clock.now += 2
    with pytest.raises(ImageGCError) as err:
        await gc.garbage_collect(began=clock.now)
    assert tags(fake) == {"example.test/used:1"}
    message = (
        f"Failed to garbage collect required amount of images. Attempted to free {60 * MiB} bytes, but only found "
        f"{MiB} bytes eligible to free."
    )
    assert str(err.value) == message
    assert events.recorded == [("Warning", "FreeDiskSpaceFailed", message)]


async def test_under_the_high_threshold_nothing_goes() -> None:
    fake, clock, events = FakeRuntime(), Clock(), Events()
    fake.add_image("example.test/a:1")
    gc = ImageGCManager(fake, ImageGCPolicy(), events, clock=clock, image_fs=disk(100 * MiB, 16 * MiB))  # 84%
    await gc.detect_images(clock.now - 3600)
    await gc.garbage_collect(began=clock.now)
    assert tags(fake) == {"example.test/a:1"}


async def test_a_zero_capacity_is_invalid_disk_capacity() -> None:
    events = Events()
    gc = ImageGCManager(FakeRuntime(), ImageGCPolicy(), events, image_fs=disk(0, 0))
    with pytest.raises(ImageGCError, match="invalid capacity 0 on image filesystem"):
        await gc.garbage_collect(began=0)
    assert events.recorded == [("Warning", "InvalidDiskCapacity", "invalid capacity 0 on image filesystem")]


async def test_maximum_age_removes_long_unused_images_at_any_usage() -> None:
    fake, clock, events = FakeRuntime(), Clock(), Events()
    fake.add_image("example.test/stale:1")
    fake.add_image("example.test/used:1")
    await start_container(fake, "example.test/used:1")
    policy = ImageGCPolicy.from_config({"imageMaximumGCAge": "1h"})
    gc = ImageGCManager(fake, policy, events, clock=clock, image_fs=disk(100 * MiB, 90 * MiB))
    began = clock.now
    await gc.detect_images(clock.now)
    clock.now += 1800
    await gc.garbage_collect(began)  # the kubelet has not been up an hour yet
    assert tags(fake) == {"example.test/stale:1", "example.test/used:1"}
    clock.now += 1801
    await gc.garbage_collect(began)
    assert tags(fake) == {"example.test/used:1"}


async def test_a_repeated_failure_is_image_gc_failed() -> None:
    events = Events()

    async def broken(_: Any) -> dict[str, Any]:
        from pykubeadm.kubelet.fsstats import ImageFsError

        raise ImageFsError("missing image stats: ")

    gc = ImageGCManager(FakeRuntime(), ImageGCPolicy(), events, image_fs=broken)
    task = asyncio.ensure_future(gc.run(period=0.01))
    try:
        async with asyncio.timeout(5):
            while not events.recorded:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert events.recorded[0] == ("Warning", "ImageGCFailed", "missing image stats: ")


async def test_high_threshold_100_turns_image_gc_off() -> None:
    fake = FakeRuntime()
    gc = ImageGCManager(fake, ImageGCPolicy.from_config({"imageGCHighThresholdPercent": 100}), Events())
    await asyncio.wait_for(gc.run(period=0.01), 5)  # returns at once
    assert fake.calls == []


def test_the_kubelets_image_gc_flags_win_over_the_config_file() -> None:
    from pykubeadm.kubelet.config import KubeletSettings

    config = {"imageGCHighThresholdPercent": 90, "imageGCLowThresholdPercent": 70}
    s = KubeletSettings.resolve(config, {"image_gc_low_threshold": 60, "minimum_image_ttl_duration": "5m"})
    assert (s.image_gc.high_threshold_percent, s.image_gc.low_threshold_percent, s.image_gc.min_age) == (90, 60, 300)
    with pytest.raises(ValidationError, match=r"\(--image-gc-low-threshold\) 95 must be less than"):
        KubeletSettings.resolve(config, {"image_gc_low_threshold": 95})
