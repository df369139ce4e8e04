"""The ClusterIP allocator keeps kube-apiserver's static band: dynamic allocation takes from the upper band first, so
addresses such as kube-dns's .10 stay free for the Services that ask for them explicitly."""

from __future__ import annotations

import ipaddress

from pykubeadm.apiserver.registry.service import IPAllocator


def test_static_band_size_follows_kube_apiserver() -> None:
    assert IPAllocator("127.96.0.0/16").static_band() == 256  # min(max(16, 65536/16), 256)
    assert IPAllocator("10.96.0.0/12").static_band() == 256
    assert IPAllocator("10.0.0.0/24").static_band() == 16  # max(16, 256/16)
    assert IPAllocator("10.0.0.0/28").static_band() == 16
    assert IPAllocator("10.0.0.0/29").static_band() == 0  # smaller than 16: no band


def test_dynamic_allocation_takes_the_upper_band_first_then_the_static_band() -> None:
    held = {"10.0.0.1"}
    alloc = IPAllocator("10.0.0.0/24", in_use=lambda: held)
    upper = [alloc.allocate() for _ in range(254 - 16)]
    offsets = {int(ipaddress.ip_address(ip)) - int(ipaddress.ip_address("10.0.0.0")) for ip in upper}
    assert offsets == set(range(17, 255))  # every upper address once, no network or broadcast address
    lower = {alloc.allocate() for _ in range(15)}
    assert lower == {f"10.0.0.{i}" for i in range(2, 17)}  # then the static band, minus what is held
