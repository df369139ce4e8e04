"""pykubeadm.options: kubeadm's init flags as click options; only flags the user set are reported."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click
from click.testing import CliRunner

from pykubeadm.options import FLAGS, INIT_FLAGS, apply_options, flags_from_click


def _capture(*argv: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    @click.command()
    @apply_options(INIT_FLAGS)
    @click.pass_context
    def cmd(ctx: click.Context, **params: Any) -> None:
        seen.update(flags_from_click(params, ctx))

    result = CliRunner().invoke(cmd, list(argv), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return seen


def test_only_set_flags_are_returned() -> None:
    assert _capture() == {}
    flags = _capture(
        "--pod-network-cidr=10.244.0.0/16",
        "--apiserver-cert-extra-sans=a.example.com,10.0.0.5",
        "--apiserver-cert-extra-sans",
        "b.example.com",
        "--token-ttl=2h30m",
        "--apiserver-bind-port=7443",
        "--upload-certs",
        "--skip-phases=preflight,addon/kube-proxy",
        "--kubernetes-version",
        "stable-1",
    )
    assert flags == {
        "pod-network-cidr": "10.244.0.0/16",
        "apiserver-cert-extra-sans": ["a.example.com", "10.0.0.5", "b.example.com"],
        "token-ttl": timedelta(hours=2, minutes=30),
        "apiserver-bind-port": 7443,
        "upload-certs": True,
        "skip-phases": ["preflight", "addon/kube-proxy"],
        "kubernetes-version": "stable-1",  # set explicitly, even though it equals the default
    }


def test_help_lists_kubeadm_flags_with_defaults() -> None:
    @click.command()
    @apply_options(INIT_FLAGS)
    def cmd(**params: Any) -> None:
        pass

    out = CliRunner().invoke(cmd, ["--help"], terminal_width=200).output
    for name in INIT_FLAGS:
        assert f"--{name}" in out
    assert "default: 24h0m0s" in out and "default: 10.96.0.0/12" in out and "default: stable-1" in out
    assert set(INIT_FLAGS) <= set(FLAGS)


def test_bad_duration_is_a_usage_error() -> None:
    @click.command()
    @apply_options(["token-ttl"])
    def cmd(**params: Any) -> None:
        pass

    result = CliRunner().invoke(cmd, ["--token-ttl=forever"])
    assert result.exit_code == 2 and 'time: invalid duration "forever"' in result.output


def test_v_after_the_subcommand_is_kubeadms_persistent_flag_but_components_keep_their_own() -> None:
    from pykubeadm.cli.main import _hoist_verbosity

    assert _hoist_verbosity(["join", "1.2.3.4:6443", "--v=5"]) == ["--v", "5", "join", "1.2.3.4:6443"]
    assert _hoist_verbosity(["--root-dir", "/n", "reset", "-f", "-v5"]) == [
        "--v",
        "5",
        "--root-dir",
        "/n",
        "reset",
        "-f",
    ]
    assert _hoist_verbosity(["-v", "3", "token", "list"]) == ["--v", "3", "token", "list"]
    kubelet = ["component", "kubelet", "--config=/c.yaml", "--v=5"]
    assert _hoist_verbosity(kubelet) == kubelet
    # the node's root dir before the component (how init/join start the built-in kubelet)
    assert _hoist_verbosity(["--root-dir", "/n", *kubelet]) == ["--root-dir", "/n", *kubelet]
    assert _hoist_verbosity(["--root-dir=/n", *kubelet]) == ["--root-dir=/n", *kubelet]
