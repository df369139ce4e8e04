"""`pykubeadm version [-o short|json|yaml]`: print the version in kubeadm's formats."""

from __future__ import annotations

import json
import platform
import sys
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.api.versions import parse_version
from pykubeadm.errors import KubeadmError

__all__ = ["command", "version_info"]

_FIELDS = (
    ("Major", "major"),
    ("Minor", "minor"),
    ("EmulationMajor", "emulationMajor"),
    ("EmulationMinor", "emulationMinor"),
    ("MinCompatibilityMajor", "minCompatibilityMajor"),
    ("MinCompatibilityMinor", "minCompatibilityMinor"),
    ("GitVersion", "gitVersion"),
    ("GitCommit", "gitCommit"),
    ("GitTreeState", "gitTreeState"),
    ("BuildDate", "buildDate"),
    ("GoVersion", "goVersion"),
    ("Compiler", "compiler"),
    ("Platform", "platform"),
)
#: Fields with `omitempty` in version.Info.
_OMITEMPTY = {"emulationMajor", "emulationMinor", "minCompatibilityMajor", "minCompatibilityMinor"}


def _platform() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(machine, machine)
    return f"{sys.platform}/{arch}"


def version_info() -> dict[str, str]:
    """kubeadm's version.Info, keyed by the JSON names (pykubeadm fills the build fields with Python's)."""
    major, minor, _, _ = parse_version(c.KUBEADM_VERSION)
    return {
        "major": str(major),
        "minor": str(minor),
        "emulationMajor": "",
        "emulationMinor": "",
        "minCompatibilityMajor": "",
        "minCompatibilityMinor": "",
        "gitVersion": c.KUBEADM_VERSION,
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": _platform(),
    }


def _go_struct(info: dict[str, str]) -> str:
    body = ", ".join(f'{go}:"{info[js]}"' for go, js in _FIELDS)
    return "&version.Info{" + body + "}"


def _json_obj(info: dict[str, str]) -> dict[str, Any]:
    return {"clientVersion": {k: v for k, v in info.items() if not (k in _OMITEMPTY and not v)}}


@click.command(name="version")
@click.option("-o", "--output", default="", help="Output format; available options are 'yaml', 'json' and 'short'")
def command(output: str) -> None:
    """Print the version of kubeadm"""
    info = version_info()
    if output == "":
        click.echo(f"kubeadm version: {_go_struct(info)}")
    elif output == "short":
        click.echo(info["gitVersion"])
    elif output == "yaml":
        from pykubeadm.api.yamlio import dump_yaml  # only this output format needs PyYAML

        click.echo(dump_yaml(_json_obj(info)), nl=False)
    elif output == "json":
        click.echo(json.dumps(_json_obj(info), indent=2))
    else:
        raise KubeadmError(f"invalid output format: {output}")
