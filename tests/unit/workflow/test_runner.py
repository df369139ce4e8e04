"""The phase runner: order, --skip-phases, `phase <name>`, `all`, lazy data, error wrapping."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from pykubeadm.errors import KubeadmError, PhaseError, ValidationError
from pykubeadm.workflow import Phase, Runner, all_phase


def _tree(log: list[str], fail: str | None = None) -> list[Phase[list[str]]]:
    def step(name: str):
        def run(data: list[str]) -> None:
            if name == fail:
                raise KubeadmError(f"{name} broke")
            data.append(name)
            log.append(name)

        return run

    return [
        Phase("preflight", "Run pre-flight checks", run=step("preflight")),
        Phase(
            "certs",
            "Certificate generation",
            children=(
                all_phase("Generate all certificates", inherit_flags=("cert-dir",)),
                Phase("ca", "Generate the CA", run=step("certs/ca"), inherit_flags=("cert-dir",)),
                Phase("apiserver", "Generate apiserver", run=step("certs/apiserver"), inherit_flags=("cert-dir",)),
            ),
        ),
        Phase("hidden", "Hidden", run=step("hidden"), hidden=True),
        Phase("addon", "Addons", run=step("addon"), run_if=lambda d: "skip-addon" not in d),
    ]


def test_runs_in_tree_order_and_builds_data_once() -> None:
    log: list[str] = []
    built: list[int] = []

    def build() -> list[str]:
        built.append(1)
        return []

    data = Runner(_tree(log), build).run()
    assert log == ["preflight", "certs/ca", "certs/apiserver", "hidden", "addon"]
    assert data == log
    assert built == [1]


def test_skip_phases_skips_children_of_skipped_parent() -> None:
    log: list[str] = []
    Runner(_tree(log), list).run(["certs", "addon"])
    assert log == ["preflight", "hidden"]
    log.clear()
    Runner(_tree(log), list).run(["certs/ca"])
    assert log == ["preflight", "certs/apiserver", "hidden", "addon"]


def test_unknown_skip_phase_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="certz"):
        Runner(_tree([]), list).run(["certz"])


def test_run_if_false_skips() -> None:
    log: list[str] = []
    Runner(_tree(log), lambda: ["skip-addon"]).run()
    assert "addon" not in log


def test_run_single_phase_and_all() -> None:
    log: list[str] = []
    Runner(_tree(log), list).run_phase("certs/apiserver")
    assert log == ["certs/apiserver"]
    log.clear()
    Runner(_tree(log), list).run_phase("certs/all")
    assert log == ["certs/ca", "certs/apiserver"]
    log.clear()
    Runner(_tree(log), list).run_phase("certs")
    assert log == ["certs/ca", "certs/apiserver"]


def test_failure_is_wrapped_with_phase_path() -> None:
    with pytest.raises(PhaseError) as e:
        Runner(_tree([], fail="certs/apiserver"), list).run()
    assert str(e.value) == "error execution phase certs/apiserver: certs/apiserver broke"


def test_help_block_lists_phases_not_all_nor_hidden() -> None:
    block = Runner(_tree([]), list).help_block().splitlines()
    assert block[0].startswith("preflight ")
    assert block[2].startswith("  /ca ")
    assert not any("hidden" in line or "/all" in line for line in block)


def test_phase_commands_expose_inherited_flags_only() -> None:
    log: list[str] = []
    seen: list[tuple[str, dict]] = []
    runner = Runner(_tree(log), list)

    def options(flag: str):
        return click.option(f"--{flag}", default=None)

    def invoke(r: Runner, path: str, params: dict) -> None:
        seen.append((path, params))
        r.run_phase(path)

    group = runner.phase_commands(options, invoke)
    cli = CliRunner()
    res = cli.invoke(group, ["certs", "all", "--cert-dir", "/x"])
    assert res.exit_code == 0, res.output
    assert seen == [("certs/all", {"cert_dir": "/x"})]
    assert log == ["certs/ca", "certs/apiserver"]
    res = cli.invoke(group, ["preflight", "--cert-dir", "/x"])
    assert res.exit_code != 0 and "No such option" in res.output


def test_runner_without_data_builds_commands_and_refuses_to_run() -> None:
    # the CLIs build `phase` sub-commands and help from a data-less runner; `invoke` brings a runner with real data
    log: list[str] = []
    described: Runner[list[str]] = Runner.without_data(_tree(log))
    assert "certs" in described.help_block()

    def invoke(r: Runner[list[str]], path: str, params: dict) -> None:
        Runner(r.phases, list).run_phase(path)

    res = CliRunner().invoke(described.phase_commands(lambda flag: click.option(f"--{flag}"), invoke), ["preflight"])
    assert res.exit_code == 0, res.output
    assert log == ["preflight"]
    with pytest.raises(KubeadmError, match="no run data"):
        described.run_phase("preflight")
    assert log == ["preflight"]
