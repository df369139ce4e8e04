"""What only the fake runtime does (the rest is held to containerd by the contract tests): a test ends a container
with an exit code, and decides what ExecSync answers."""

from __future__ import annotations

from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.cri.fake import FakeRuntime


async def test_exit_and_exec_are_the_tests_to_decide() -> None:
    fake = FakeRuntime(exec_handler=lambda cid, cmd: api.ExecSyncResponse(stdout=" ".join(cmd).encode(), exit_code=3))
    fake.add_image("busybox")
    config = api.PodSandboxConfig(metadata=api.PodSandboxMetadata(name="p", uid="u"), log_directory="/logs")
    sandbox = await fake.run_pod_sandbox(config)
    cid = await fake.create_container(
        sandbox, api.ContainerConfig(image=api.ImageSpec(image="busybox"), log_path="c/0.log"), config
    )
    await fake.start_container(cid)
    answer = await fake.exec_sync(cid, ["cat", "/ready"])
    assert (answer.stdout, answer.exit_code) == (b"cat /ready", 3)
    fake.exit(cid, 1)
    status = await fake.container_status(cid)
    assert (status.state, status.exit_code, status.reason) == (api.ContainerState.CONTAINER_EXITED, 1, "Error")
    assert status.log_path == "/logs/c/0.log"
    assert fake.calls[:3] == ["RunPodSandbox", "CreateContainer", "StartContainer"]
