"""`pykubeadm version` and `pykubeadm --help` import only what they run: none of the heavy libraries the other
commands need (config models, X.509, the HTTP stack, the Kubernetes client, YAML). Asserts on module names, not time."""

import subprocess
import sys

import pytest

HEAVY = ("pydantic", "cryptography", "aiohttp", "lightkube", "httpx", "yaml", "pykubeadm.api.v1beta4", "pykubeadm.pki")


def imported_modules(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pykubeadm", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    assert "pykubeadm.cli.main" in names, proc.stderr[-2000:]
    return names


@pytest.mark.parametrize("args", [("version",), ("--help",), ("version", "-o", "short")])
def test_light_commands_import_no_heavy_module(args):
    names = imported_modules(*args)
    heavy = sorted(n for n in names if n.split(".")[0] in HEAVY or n in HEAVY or n.startswith(HEAVY))
    assert heavy == [], f"`pykubeadm {' '.join(args)}` imported {heavy}"


def test_a_command_that_needs_the_config_api_still_gets_it():
    # The guard above means something: `config print init-defaults` really loads the models.
    names = imported_modules("config", "print", "init-defaults")
    assert "pydantic" in names and "pykubeadm.api.v1beta4" in names
