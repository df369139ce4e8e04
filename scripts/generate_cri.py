"""Generates the CRI Python modules (src/pykubeadm/cri/v1/api_pb2.py, .pyi, api_pb2_grpc.py) from api.proto.

Run after changing api.proto or grpcio-tools: `.venv/bin/python scripts/generate_cri.py`. The generated modules are
committed (the package then installs without a compiler); tests/unit/cri/test_generated.py fails when they differ from
what this script makes, so the proto and the modules cannot drift apart.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PROTO = "pykubeadm/cri/v1/api.proto"
GENERATED = ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py")


def generate(out_dir: Path) -> list[Path]:
    """Compile api.proto into out_dir/pykubeadm/cri/v1/ and return the generated files."""
    from grpc_tools import protoc  # test-only dependency (grpcio-tools)

    with tempfile.TemporaryDirectory() as tmp:
        # Compile from a copy so protoc sees only the proto (import paths relative to src/ give package imports).
        proto = Path(tmp, PROTO)
        proto.parent.mkdir(parents=True)
        shutil.copyfile(SRC / PROTO, proto)
        rc = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{tmp}",
                f"--python_out={out_dir}",
                f"--pyi_out={out_dir}",
                f"--grpc_python_out={out_dir}",
                str(proto),
            ]
        )
    if rc != 0:
        raise RuntimeError(f"protoc failed on {PROTO} (exit {rc})")
    return [out_dir / "pykubeadm/cri/v1" / name for name in GENERATED]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for path in generate(Path(tmp)):
            shutil.copyfile(path, SRC / "pykubeadm/cri/v1" / path.name)
            print(f"wrote src/pykubeadm/cri/v1/{path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
