"""The CRI client against a small gRPC server on a unix socket: the runtime's answers arrive as typed messages, its
errors as CRIError subclasses carrying its message in grpc-go's wording, and deadlines are kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from pykubeadm.cri import errors
from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.endpoint import socket_path, unix_endpoint
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.cri.v1 import api_pb2_grpc


class _Runtime(api_pb2_grpc.RuntimeServiceServicer):
    async def Version(self, request, context):  # type: ignore[no-untyped-def]
        return api.VersionResponse(version="0.1.0", runtime_name="fake", runtime_version="1", runtime_api_version="v1")

    async def ContainerStatus(self, request, context):  # type: ignore[no-untyped-def]
        await context.abort(
            grpc.StatusCode.NOT_FOUND,
            f'an error occurred when try to find container "{request.container_id}": not found',
        )

    async def ListContainers(self, request, context):  # type: ignore[no-untyped-def]
        await asyncio.sleep(5)
        return api.ListContainersResponse()


class _Images(api_pb2_grpc.ImageServiceServicer):
    async def ImageStatus(self, request, context):  # type: ignore[no-untyped-def]
        if request.image.image == "present":
            return api.ImageStatusResponse(image=api.Image(id="sha256:abc", size=42))
        return api.ImageStatusResponse()


@pytest.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[str]:
    server = grpc.aio.server()
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(_Runtime(), server)
    api_pb2_grpc.add_ImageServiceServicer_to_server(_Images(), server)
    sock = tmp_path / "cri.sock"
    server.add_insecure_port(f"unix://{sock}")
    await server.start()
    try:
        yield unix_endpoint(str(sock))
    finally:
        await server.stop(None)


async def test_answers_are_typed_messages(endpoint: str) -> None:
    async with CRIClient(endpoint) as cri:
        version = await cri.version()
        assert (version.runtime_name, version.runtime_api_version) == ("fake", "v1")
        image = await cri.image_status("present")
        assert image is not None and image.size == 42
        assert await cri.image_status("absent") is None


async def test_a_runtime_error_carries_the_runtimes_message(endpoint: str) -> None:
    async with CRIClient(endpoint) as cri:
        with pytest.raises(errors.CRINotFound) as caught:
            await cri.container_status("c1")
    assert caught.value.method == "ContainerStatus"
    assert str(caught.value) == (
        'rpc error: code = NotFound desc = an error occurred when try to find container "c1": not found'
    )


async def test_a_call_past_its_deadline_raises_deadline_exceeded(endpoint: str) -> None:
    async with CRIClient(endpoint, timeout=0.2) as cri:
        with pytest.raises(errors.CRIDeadlineExceeded, match="code = DeadlineExceeded"):
            await cri.list_containers()


async def test_an_unimplemented_call_says_so(endpoint: str) -> None:
    async with CRIClient(endpoint) as cri:
        with pytest.raises(errors.CRIUnimplemented, match="code = Unimplemented"):
            await cri.status()


async def test_no_runtime_on_the_socket_is_unavailable(tmp_path: Path) -> None:
    async with CRIClient(unix_endpoint(str(tmp_path / "missing.sock")), timeout=2) as cri:
        with pytest.raises(errors.CRIUnavailable) as caught:
            await cri.version()
    assert str(caught.value).startswith("rpc error: code = Unavailable desc = ")
    assert "missing.sock" in str(caught.value)


@pytest.mark.parametrize(
    ("endpoint", "says"),
    [
        ("/run/containerd/containerd.sock", 'write it as "unix:///run/containerd/containerd.sock"'),
        ("tcp://127.0.0.1:1234", 'unsupported URL scheme "tcp"'),
        ("unix://run/containerd.sock", "must name an absolute socket path: unix:///run/containerd.sock"),
        ("unix:///" + "a" * 120, "longer than 107 bytes"),
    ],
)
def test_bad_endpoints_say_what_to_write(endpoint: str, says: str) -> None:
    with pytest.raises(errors.CRIEndpointError, match=None) as caught:
        socket_path(endpoint)
    assert says in str(caught.value)


def test_a_good_endpoint_gives_its_socket() -> None:
    assert socket_path("unix:///var/run/containerd/containerd.sock") == "/var/run/containerd/containerd.sock"
