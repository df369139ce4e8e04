"""kube-proxy's command line: explicit flags override --config, kube's errors, --write-config-to."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from pykubeadm.api.componentconfigs import default_kube_proxy_config
from pykubeadm.proxy.cli import command


def write(tmp_path: Path, **user: object) -> Path:
    path = tmp_path / "config.conf"
    path.write_text(yaml.safe_dump(default_kube_proxy_config(user=dict(user))))
    return path


def test_explicit_flags_override_the_config_file(tmp_path: Path) -> None:
    config = write(tmp_path, mode="nftables", metricsBindAddress="127.0.0.1:10249")
    out = tmp_path / "out.yaml"
    result = CliRunner().invoke(
        command, [f"--config={config}", "--metrics-bind-address=127.0.0.9:1234", f"--write-config-to={out}"]
    )
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert doc["metricsBindAddress"] == "127.0.0.9:1234"
    assert doc["mode"] == "nftables"  # not given on the command line: the file wins over the flag's default
    assert doc["healthzBindAddress"] == "0.0.0.0:10256"


def test_flags_alone_make_a_configuration(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    result = CliRunner().invoke(command, ["--proxy-mode=nftables", "--kubeconfig=/k.conf", f"--write-config-to={out}"])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert doc["mode"] == "nftables" and doc["clientConnection"]["kubeconfig"] == "/k.conf"


def test_unknown_flag_and_invalid_mode(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, ["--bogus=1"])
    assert result.exit_code == 1 and "Error: unknown flag: --bogus" in result.output
    result = CliRunner().invoke(command, [f"--config={write(tmp_path, mode='userspace')}"])
    assert result.exit_code == 1
    assert 'failed validate: KubeProxyConfiguration.Mode.ProxyMode: Invalid value: "userspace"' in result.output
