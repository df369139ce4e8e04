"""The committed CRI modules are exactly what grpcio-tools makes from the committed api.proto, and they serve both
services with every method the kubelet and kubeadm call."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pykubeadm.cri.v1 import api_pb2, api_pb2_grpc

ROOT = Path(__file__).resolve().parents[3]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate_cri", ROOT / "scripts" / "generate_cri.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regenerating_from_the_proto_gives_the_committed_modules(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (a test dependency) is not installed")
    for generated in _generator().generate(tmp_path):
        committed = ROOT / "src/pykubeadm/cri/v1" / generated.name
        assert generated.read_bytes() == committed.read_bytes(), (
            f"{committed} differs from what api.proto generates: run scripts/generate_cri.py"
        )


def test_the_proto_is_kubernetes_v1_33_runtime_v1_with_its_license() -> None:
    text = (ROOT / "src/pykubeadm/cri/v1/api.proto").read_text()
    assert "Licensed under the Apache License, Version 2.0" in text
    assert "package runtime.v1;" in text
    assert api_pb2.DESCRIPTOR.package == "runtime.v1"


def test_both_services_carry_the_calls_the_kubelet_and_kubeadm_make() -> None:
    runtime = api_pb2.DESCRIPTOR.services_by_name["RuntimeService"].methods_by_name
    image = api_pb2.DESCRIPTOR.services_by_name["ImageService"].methods_by_name
    for name in (
        "Version",
        "Status",
        "RunPodSandbox",
        "StopPodSandbox",
        "RemovePodSandbox",
        "ListPodSandbox",
        "CreateContainer",
        "StartContainer",
        "StopContainer",
        "RemoveContainer",
        "ListContainers",
        "ContainerStatus",
        "ExecSync",
        "Exec",
        "Attach",
        "PortForward",
        "ContainerStats",
    ):
        assert name in runtime
    for name in ("ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo"):
        assert name in image
    assert hasattr(api_pb2_grpc, "RuntimeServiceStub") and hasattr(api_pb2_grpc, "ImageServiceStub")
