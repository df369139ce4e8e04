"""The node's one relist (`ContainerRelist`) against the fake runtime (held to containerd by the contract tests):
each waiter wakes when its own container stops running, and the runtime is asked ListContainers once per period
whatever the number of waiters, never ContainerStatus per container."""

from __future__ import annotations

import asyncio

import pytest

from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.cri.fake import FakeRuntime
from pykubeadm.kubelet.cri.relist import ContainerRelist


async def _running(fake: FakeRuntime, n: int) -> list[str]:
    fake.add_image("busybox:1.36")
    sandbox_config = api.PodSandboxConfig(metadata=api.PodSandboxMetadata(name="p", namespace="ns", uid="u"))
    sandbox = await fake.run_pod_sandbox(sandbox_config)
    ids = []
    for i in range(n):
        config = api.ContainerConfig(
            metadata=api.ContainerMetadata(name=f"c{i}"), image=api.ImageSpec(image="busybox:1.36")
        )
        cid = await fake.create_container(sandbox, config, sandbox_config)
        await fake.start_container(cid)
        ids.append(cid)
    return ids


@pytest.mark.asyncio
async def test_each_waiter_wakes_when_its_container_exits_and_one_list_serves_all() -> None:
    fake = FakeRuntime()
    ids = await _running(fake, 20)
    relist = ContainerRelist(fake, period=0.02)
    waits = {cid: asyncio.ensure_future(relist.wait_not_running(cid)) for cid in ids}
    fake.calls.clear()
    await asyncio.sleep(0.2)
    assert not any(w.done() for w in waits.values())
    lists = fake.calls.count("ListContainers")
    assert 1 <= lists <= 12 and set(fake.calls) == {"ListContainers"}  # ~10 periods, not 20 containers × 10

    fake.exit(ids[3], 1)
    await asyncio.wait_for(waits[ids[3]], 5)
    assert [cid for cid, w in waits.items() if w.done()] == [ids[3]]

    await fake.remove_container(ids[5])  # gone from the list: as good as exited
    await asyncio.wait_for(waits[ids[5]], 5)

    for w in waits.values():
        w.cancel()
    await asyncio.gather(*waits.values(), return_exceptions=True)
    await asyncio.sleep(0.1)
    assert relist._task is None or relist._task.done()  # no waiter: the relist stops
