"""Builds the kubelet's native helpers from the C sources beside this module: `pause`, `pod-sandbox`, `cri-log`.

Called by `pykubeadm.kubelet.builtin.sandbox` (`pause_path()`, the launcher) and by scripts/setup.sh
(`python -m pykubeadm.kubelet.builtin.native`). A binary's file name carries a hash of its source, so an edited source is
rebuilt and a stale binary is never run. Look-up order: the package's `build/` directory (what setup.sh fills), then
the node's cache (`Layout.native_cache_dir`, under the node root), where a missing binary is compiled on first use
with the C compiler on PATH (static where the C library allows, else dynamic). Without a compiler the error names
the fix.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

__all__ = ["NATIVE_PROGRAMS", "NativeBuildError", "binary_name", "build", "native_binary"]

#: Program name → C source file in this directory.
NATIVE_PROGRAMS = {"pause": "pause.c", "pod-sandbox": "pod-sandbox.c", "cri-log": "cri-log.c"}

#: Optional libraries a program is built with when present: (extra compiler flags) tried in order, the last none.
_OPTIONAL_LIBS = {"pod-sandbox": (("-DHAVE_SECCOMP", "-lseccomp"),)}  # Debian: libseccomp-dev

_SOURCE_DIR = Path(__file__).resolve().parent
#: Where scripts/setup.sh puts the binaries (git-ignored).
PACKAGE_BUILD_DIR = _SOURCE_DIR / "build"
_CFLAGS = ("-Os", "-Wall", "-s")


class NativeBuildError(RuntimeError):
    """A native helper is missing and cannot be built here."""


@cache
def binary_name(program: str) -> str:
    """`pause-<12 hex of the sha256 of the source and its build options>`: changes whenever the source does."""
    source = _SOURCE_DIR / NATIVE_PROGRAMS[program]
    digest = hashlib.sha256(source.read_bytes())
    digest.update(repr(_OPTIONAL_LIBS.get(program, ())).encode())  # how it is built is part of what it is
    return f"{program}-{digest.hexdigest()[:12]}"


def _compiler() -> str | None:
    for name in (os.environ.get("CC") or "", "cc", "gcc", "clang"):
        if name and (found := shutil.which(name)):
            return found
    return None


def build(program: str, out_dir: Path) -> Path:
    """Compile `program` into `out_dir` (atomically: a temp file renamed into place); returns the binary's path."""
    target = out_dir / binary_name(program)
    if os.access(target, os.X_OK):
        return target
    cc = _compiler()
    if cc is None:
        raise NativeBuildError(
            f"the built-in runtime needs its native {program!r} program and no C compiler was found to build it: "
            "install one (Debian: apt-get install gcc libc6-dev) and run scripts/setup.sh, or set CC"
        )
    source = _SOURCE_DIR / NATIVE_PROGRAMS[program]
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd, tmp = tempfile.mkstemp(prefix=f".{program}-", dir=out_dir)
    os.close(fd)
    try:
        errors = ""
        variants = [
            (*link, *libs)
            for libs in (*_OPTIONAL_LIBS.get(program, ()), ())
            for link in (("-static",), ())  # static is smaller in memory (no ld.so, no libc mapping)
        ]
        for flags in variants:
            libs = [f for f in flags if f.startswith("-l")]
            opts = [f for f in flags if not f.startswith("-l")]
            res = subprocess.run(
                [cc, *_CFLAGS, *opts, "-o", tmp, str(source), *libs], capture_output=True, text=True, check=False
            )
            if res.returncode == 0:
                break
            errors = res.stderr
        else:
            raise NativeBuildError(f"building {source} with {cc} failed:\n{errors.strip()}")
        os.chmod(tmp, 0o755)  # noqa: S103 - an executable everybody may run
        os.replace(tmp, target)
        for old in out_dir.glob(f"{program}-*"):  # binaries of older sources
            if old.name != target.name and not old.name.startswith("."):
                old.unlink(missing_ok=True)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def native_binary(program: str, cache_dir: Path) -> Path:
    """The built `program`: from the package's build dir if setup.sh made it, else from (or built into) `cache_dir`."""
    prebuilt = PACKAGE_BUILD_DIR / binary_name(program)
    if os.access(prebuilt, os.X_OK):
        return prebuilt
    return build(program, cache_dir)


def main() -> int:
    """Build every helper into the package's build dir (scripts/setup.sh)."""
    try:
        for program in NATIVE_PROGRAMS:
            print(f"[native] {build(program, PACKAGE_BUILD_DIR)}")
    except NativeBuildError as e:
        print(f"[native] WARNING: {e}", file=sys.stderr)
        return 1
    return 0
