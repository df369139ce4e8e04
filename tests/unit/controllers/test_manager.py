"""--controllers parsing and the kube-controller-manager command line (flags, unknown flags)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner

from pykubeadm.cli.component import command as component
from pykubeadm.controllers.app.flags import parse_go_bool
from pykubeadm.controllers.app.manager import CONTROLLERS, ControllerSelectionError, enabled_controllers
from pykubeadm.util.goduration import parse_duration as parse_go_duration


def ours(selection: str) -> set[str]:
    return enabled_controllers(selection.split(",")) & set(CONTROLLERS)


def test_star_leaves_bootstrap_controllers_off() -> None:
    assert ours("*") == set(CONTROLLERS) - {"bootstrapsigner", "tokencleaner", "csrservingapproving"}


def test_kubeadm_selection_enables_everything_but_the_opt_in_serving_approver() -> None:
    assert ours("*,bootstrapsigner,tokencleaner") == set(CONTROLLERS) - {"csrservingapproving"}
    assert ours("*,bootstrapsigner,tokencleaner,csrservingapproving") == set(CONTROLLERS)


def test_exclusions_and_explicit_lists() -> None:
    assert ours("*,-csrsigning,-nodeipam") == set(CONTROLLERS) - {
        "bootstrapsigner",
        "tokencleaner",
        "csrservingapproving",
        "csrsigning",
        "nodeipam",
    }
    assert ours("csrapproving,csrsigning") == {"csrapproving", "csrsigning"}
    assert ours("-csrsigning") == set()
    assert ours("*,-attachdetach") == ours("*")  # a known upstream controller we do not run


def test_long_names_are_aliases() -> None:
    assert ours("certificatesigningrequest-approving-controller,bootstrap-signer-controller") == {
        "csrapproving",
        "bootstrapsigner",
    }
    assert "csrsigning" not in ours("*,-certificatesigningrequest-signing-controller")


def test_unknown_controller_is_an_error() -> None:
    with pytest.raises(ControllerSelectionError, match='"bogus" is not in the list of known controllers'):
        enabled_controllers(["*", "-bogus"])


def test_go_durations_and_bools() -> None:
    assert parse_go_duration("8760h0m0s") == timedelta(hours=8760)
    assert parse_go_duration("1h30m") == timedelta(minutes=90)
    assert parse_go_duration("1.5s") == timedelta(seconds=1.5)
    assert parse_go_duration("250ms") == timedelta(milliseconds=250)
    assert parse_go_duration("0") == timedelta(0)
    for bad in ("", "10", "1d", "h"):
        with pytest.raises(ValueError, match="duration"):
            parse_go_duration(bad)
    assert parse_go_bool("true") and parse_go_bool("1") and not parse_go_bool("false")
    with pytest.raises(ValueError):
        parse_go_bool("yes")


def test_unknown_flags_are_named_at_startup(tmp_path) -> None:
    kubeconfig = tmp_path / "controller-manager.conf"
    kubeconfig.write_text("apiVersion: v1\n")
    result = CliRunner().invoke(
        component, ["kube-controller-manager", f"--kubeconfig={kubeconfig}", "--bogus-flag=1", "--other"]
    )
    assert result.exit_code != 0
    assert "unknown flags: --bogus-flag --other" in result.output


def test_bad_values_are_startup_errors(tmp_path) -> None:
    kubeconfig = tmp_path / "controller-manager.conf"
    kubeconfig.write_text("apiVersion: v1\n")
    runner = CliRunner()
    result = runner.invoke(component, ["kube-controller-manager", f"--kubeconfig={kubeconfig}", "--controllers=*,nope"])
    assert result.exit_code != 0 and '"nope" is not in the list of known controllers' in result.output
    result = runner.invoke(
        component, ["kube-controller-manager", f"--kubeconfig={kubeconfig}", "--cluster-signing-duration=forever"]
    )
    assert result.exit_code != 0 and 'invalid duration "forever"' in result.output
    result = runner.invoke(
        component,
        [
            "kube-controller-manager",
            f"--kubeconfig={kubeconfig}",
            f"--cluster-signing-cert-file={kubeconfig}",
            "--cluster-signing-key-file=/no/key",
        ],
    )
    assert result.exit_code != 0 and "--cluster-signing-key-file: open /no/key" in result.output


def test_scheduler_unknown_flags(tmp_path) -> None:
    kubeconfig = tmp_path / "scheduler.conf"
    kubeconfig.write_text("apiVersion: v1\n")
    result = CliRunner().invoke(component, ["kube-scheduler", f"--kubeconfig={kubeconfig}", "--cluster-cidr=x"])
    assert result.exit_code != 0 and "unknown flag: --cluster-cidr" in result.output


KUBEADM_KCM_FLAGS = [
    "--allocate-node-cidrs=true",
    "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--bind-address=127.0.0.1",
    "--client-ca-file=/etc/kubernetes/pki/ca.crt",
    "--cluster-cidr=10.244.0.0/16",
    "--cluster-name=kubernetes",
    "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
    "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
    "--controllers=*,bootstrapsigner,tokencleaner",
    "--kubeconfig=/etc/kubernetes/controller-manager.conf",
    "--leader-elect=true",
    "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
    "--root-ca-file=/etc/kubernetes/pki/ca.crt",
    "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
    "--service-cluster-ip-range=10.96.0.0/12",
    "--use-service-account-credentials=true",
]


def parse(command, args: list[str]) -> tuple[dict, list[str]]:  # type: ignore[no-untyped-def]
    ctx = command.make_context(command.name, list(args))
    return ctx.params, ctx.args


def test_every_flag_kubeadm_writes_is_parsed() -> None:
    from pykubeadm.controllers.app.cli import command

    params, leftover = parse(command, KUBEADM_KCM_FLAGS)
    assert leftover == []
    assert params["allocate_node_cidrs"] is True and params["use_service_account_credentials"] is True
    assert params["leader_elect"] is True and params["secure_port"] == 10257
    assert params["cluster_signing_duration"] == timedelta(hours=8760)
    assert params["controllers"] == "*,bootstrapsigner,tokencleaner"
    assert params["leader_elect_lease_duration"] == timedelta(seconds=15)
    assert params["leader_elect_renew_deadline"] == timedelta(seconds=10)
    assert params["leader_elect_retry_period"] == timedelta(seconds=2)
    # external CA: kubeadm writes the signing flags with empty values
    params, leftover = parse(
        command, [*KUBEADM_KCM_FLAGS, "--cluster-signing-cert-file=", "--cluster-signing-key-file="]
    )
    assert leftover == [] and params["cluster_signing_key_file"] == ""
    # bare and false booleans, Go durations
    params, _ = parse(command, ["--leader-elect", "--allocate-node-cidrs=false", "--cluster-signing-duration=720h"])
    assert params["leader_elect"] is True and params["allocate_node_cidrs"] is False
    assert params["cluster_signing_duration"] == timedelta(hours=720)


def test_every_flag_kubeadm_writes_for_the_scheduler_is_parsed() -> None:
    from pykubeadm.scheduler.cli import command

    params, leftover = parse(
        command,
        [
            "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--bind-address=127.0.0.1",
            "--kubeconfig=/etc/kubernetes/scheduler.conf",
            "--leader-elect=true",
        ],
    )
    assert leftover == []
    assert params["secure_port"] == 10259 and params["leader_elect"] is True
    assert params["leader_elect_resource_name"] == "kube-scheduler"
