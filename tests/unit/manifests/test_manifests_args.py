"""kubeadm's ArgumentsToCommand (§5.2) and the Arg helpers."""

from __future__ import annotations

from pykubeadm.manifests.args import Arg, arguments_to_command, get_arg_value, set_arg_value


def test_overrides_replace_every_default_of_that_name_and_keep_duplicates() -> None:
    base = [Arg("b", "1"), Arg("a", "x"), Arg("a", "y"), Arg("c", "3")]
    user = [{"name": "a", "value": "z"}, ("a", "w"), Arg("d", "")]
    assert arguments_to_command(base, user) == ["--a=w", "--a=z", "--b=1", "--c=3", "--d="]


def test_get_and_set() -> None:
    args = [Arg("x", "1"), Arg("x", "2")]
    assert get_arg_value(args, "x") == "2"
    assert get_arg_value(args, "y") is None
    assert set_arg_value(args, "x", "3") == [Arg("x", "3")]
    assert set_arg_value(args, "y", "") == [*args, Arg("y", "")]
