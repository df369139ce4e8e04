"""kubeadm's runtime questions over CRI (against a small gRPC runtime on a unix socket): a runtime that answers but
is not ready, the sandbox image from its info, and pull retries, each in kubeadm's words."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from pykubeadm.cri.endpoint import unix_endpoint
from pykubeadm.cri.kubeadmruntime import PULL_IMAGE_RETRY, ContainerRuntime
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.cri.v1 import api_pb2_grpc
from pykubeadm.errors import KubeadmError


class _NotReady(api_pb2_grpc.RuntimeServiceServicer):
    def Status(self, request, context):  # type: ignore[no-untyped-def]
        return api.StatusResponse(
            status=api.RuntimeStatus(
                conditions=[
                    api.RuntimeCondition(type="RuntimeReady", status=False, reason="Booting", message="wait"),
                    api.RuntimeCondition(type="NetworkReady", status=False, reason="NoCNI", message="no"),
                ]
            ),
            info={"config": '{"sandboxImage":"registry.k8s.io/pause:3.6"}'} if request.verbose else {},
        )


class _Images(api_pb2_grpc.ImageServiceServicer):
    def __init__(self) -> None:
        self.pulls = 0

    def PullImage(self, request, context):  # type: ignore[no-untyped-def]
        self.pulls += 1
        context.abort(grpc.StatusCode.UNKNOWN, f'failed to resolve reference "{request.image.image}": denied')


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[tuple[str, _Images]]:
    # A threaded server: ContainerRuntime's calls are synchronous, as kubeadm's are.
    server = grpc.server(ThreadPoolExecutor(2))
    images = _Images()
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(_NotReady(), server)
    api_pb2_grpc.add_ImageServiceServicer_to_server(images, server)
    sock = tmp_path / "cri.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    try:
        yield unix_endpoint(str(sock)), images
    finally:
        server.stop(None)


def test_a_runtime_not_ready_is_reported_by_its_condition(runtime: tuple[str, _Images]) -> None:
    endpoint, _ = runtime
    with pytest.raises(KubeadmError) as caught:
        ContainerRuntime(endpoint).is_running()
    # NetworkReady is not checked (no CNI yet is normal before init), only RuntimeReady.
    assert str(caught.value) == 'container runtime condition "RuntimeReady" is not true. reason: Booting, message: wait'


def test_the_sandbox_image_comes_from_the_runtimes_info(runtime: tuple[str, _Images]) -> None:
    endpoint, _ = runtime
    assert ContainerRuntime(endpoint).sandbox_image() == "registry.k8s.io/pause:3.6"


def test_a_failing_pull_is_retried_then_reported(runtime: tuple[str, _Images]) -> None:
    endpoint, images = runtime
    with pytest.raises(KubeadmError) as caught:
        ContainerRuntime(endpoint).pull_image("r.example/x:1")
    assert images.pulls == PULL_IMAGE_RETRY
    assert str(caught.value) == (
        'failed to pull image r.example/x:1: rpc error: code = Unknown desc = failed to resolve reference "r.example/x:1": '
        "denied"
    )
