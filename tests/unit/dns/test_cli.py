"""`pykubeadm component coredns`: CoreDNS's flags and its log line format."""

from __future__ import annotations

import logging

from click.testing import CliRunner

from pykubeadm.cli.component import command as component
from pykubeadm.dns import cli


def test_version_and_plugins_flags(monkeypatch):
    monkeypatch.setenv("PYKUBEADM_COMPONENT_VERSION", "v1.11.3")
    runner = CliRunner()
    res = runner.invoke(component, ["coredns", "-version"])
    assert res.exit_code == 0, res.output
    first, second = res.output.splitlines()
    assert first == "CoreDNS-1.11.3"
    assert second.startswith("linux/") and ", python3." in second
    res = runner.invoke(component, ["coredns", "-plugins"])
    assert res.exit_code == 0 and "Server types:\n  dns\n" in res.output
    assert "  dns.kubernetes\n" in res.output and "  dns.forward\n" in res.output


def test_missing_corefile_is_an_error(tmp_path):
    res = CliRunner().invoke(component, ["coredns", "-conf", str(tmp_path / "nope"), "-dns.port", "1053"])
    assert res.exit_code == 1
    assert "No such file or directory" in res.output


def test_log_lines_look_like_coredns():
    fmt = cli._Formatter()

    def line(name: str, level: int, msg: str) -> str:
        return fmt.format(logging.LogRecord(name, level, __file__, 1, msg, (), None))

    assert line("plugin/reload", logging.INFO, "Running configuration SHA512 = ab") == (
        "[INFO] plugin/reload: Running configuration SHA512 = ab"
    )
    assert line("coredns.banner", logging.INFO, ".:53") == ".:53"
    assert line("coredns", logging.INFO, "Reloading") == "[INFO] Reloading"
    assert line("coredns.fatal", logging.CRITICAL, "plugin/loop: Loop") == "[FATAL] plugin/loop: Loop"


def test_an_undefined_flag_is_named_as_go_does():
    res = CliRunner().invoke(component, ["coredns", "-conf", "Corefile", "-bogus=1"])
    assert res.exit_code == 2
    assert "flag provided but not defined: -bogus" in res.output
