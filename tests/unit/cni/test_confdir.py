"""Loading the node's CNI configuration directory as containerd's CRI plugin does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykubeadm.cni import ConfigError, load_conf_dir, parse_network_config

CONFLIST = {"cniVersion": "0.4.0", "name": "kindnet", "plugins": [{"type": "bridge"}, {"type": "portmap"}]}


def test_no_directory_or_no_file_is_not_ready(tmp_path: Path) -> None:
    assert load_conf_dir(tmp_path / "missing") is None
    (tmp_path / "README").write_text("not a config")
    (tmp_path / "10-x.conflist.tmp").write_text("{}")
    assert load_conf_dir(tmp_path) is None


def test_the_lowest_sorting_file_wins(tmp_path: Path) -> None:
    (tmp_path / "20-other.conflist").write_text(json.dumps({**CONFLIST, "name": "other"}))
    (tmp_path / "10-kindnet.conflist").write_text(json.dumps(CONFLIST))
    net = load_conf_dir(tmp_path)
    assert net is not None
    assert (net.name, net.cni_version, [p["type"] for p in net.plugins]) == ("kindnet", "0.4.0", ["bridge", "portmap"])
    assert net.source.endswith("10-kindnet.conflist")


def test_a_single_plugin_conf_becomes_a_list(tmp_path: Path) -> None:
    (tmp_path / "05-one.conf").write_text(json.dumps({"cniVersion": "0.3.1", "name": "one", "type": "bridge"}))
    net = load_conf_dir(tmp_path)
    assert net is not None and net.name == "one" and [p["type"] for p in net.plugins] == ["bridge"]
    # what is cached for DEL parses back as the same list
    again = parse_network_config(net.raw, single=False)
    assert again.plugins == net.plugins and again.cni_version == "0.3.1"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "error parsing configuration list"),
        (json.dumps({"cniVersion": "0.4.0", "plugins": [{"type": "bridge"}]}), "no name"),
        (json.dumps({"cniVersion": "0.4.0", "name": "x", "plugins": []}), "has no networks"),
        (json.dumps({"cniVersion": "0.4.0", "name": "x", "plugins": [{"bridge": "cni0"}]}), "plugin 0 has no type"),
    ],
)
def test_a_broken_first_file_names_the_file(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "10-bad.conflist").write_text(text)
    (tmp_path / "20-good.conflist").write_text(json.dumps(CONFLIST))
    with pytest.raises(ConfigError) as err:
        load_conf_dir(tmp_path)
    assert fragment in str(err.value) and "10-bad.conflist" in str(err.value)
