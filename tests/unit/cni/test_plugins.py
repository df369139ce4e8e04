"""The plugin protocol of pykubeadm.cni against a recording fake plugin (the real plugins run in
tests/integration/cni): what each plugin gets on stdin and in its environment, and how its errors come back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykubeadm.cni import CNIError, CNIRuntime, RuntimeConf, parse_network_config

FAKE = """#!/usr/bin/env python3
import json, os, sys
conf = json.load(sys.stdin)
with open(os.environ["FAKE_LOG"], "a") as f:
    env = {k: v for k, v in os.environ.items() if k.startswith("CNI_")}
    f.write(json.dumps({"conf": conf, "env": env}) + "\\n")
if conf.get("fail"):
    print(json.dumps({"cniVersion": conf["cniVersion"], "code": 7, "msg": "invalid range", "details": "10.0.0.0/33"}))
    sys.exit(1)
prev = conf.get("prevResult") or {"cniVersion": conf["cniVersion"], "interfaces": [], "ips": []}
prev = dict(prev)
prev["ips"] = prev["ips"] + [{"version": "4", "address": conf["addr"], "interface": 0}] if conf.get("addr") else prev["ips"]
prev["interfaces"] = prev["interfaces"] or [{"name": "eth0", "sandbox": os.environ["CNI_NETNS"]}]
if os.environ["CNI_COMMAND"] == "ADD":
    print(json.dumps(prev))
"""


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CNIRuntime:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("first", "second"):
        (bindir / name).write_text(FAKE)
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.jsonl"))
    return CNIRuntime([str(tmp_path / "nowhere"), str(bindir)], tmp_path / "cache")


def calls(tmp_path: Path) -> list[dict]:
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    (tmp_path / "calls.jsonl").unlink()
    return [json.loads(x) for x in lines]


NET = parse_network_config(
    json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "podnet",
            "plugins": [
                {"type": "first", "addr": "10.244.1.5/24"},
                {"type": "second", "capabilities": {"portMappings": True}},
            ],
        }
    ).encode()
)
RT = RuntimeConf(
    "c1",
    "/run/netns/p1",
    args=(("IgnoreUnknown", "1"), ("K8S_POD_NAMESPACE", "default"), ("K8S_POD_NAME", "web")),
    capability_args={"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}], "bandwidth": {}},
)


def test_add_chains_prev_results_and_passes_capabilities(runtime: CNIRuntime, tmp_path: Path) -> None:
    result = runtime.add(NET, RT)
    first, second = calls(tmp_path)
    assert first["env"] == {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "c1",
        "CNI_NETNS": "/run/netns/p1",
        "CNI_IFNAME": "eth0",
        "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web",
        "CNI_PATH": f"{tmp_path / 'nowhere'}:{tmp_path / 'bin'}",
    }
    assert first["conf"]["name"] == "podnet" and first["conf"]["cniVersion"] == "0.4.0"
    assert "prevResult" not in first["conf"] and "runtimeConfig" not in first["conf"]
    assert second["conf"]["prevResult"]["ips"][0]["address"] == "10.244.1.5/24"
    assert second["conf"]["runtimeConfig"] == {"portMappings": RT.capability_args["portMappings"]}  # declared only
    assert result["ips"][0]["address"] == "10.244.1.5/24"
    entry = runtime.cached("podnet", "c1", "eth0")
    assert entry is not None and entry.result == result and entry.rt.args == RT.args


def test_del_runs_in_reverse_from_the_cache(runtime: CNIRuntime, tmp_path: Path) -> None:
    result = runtime.add(NET, RT)
    calls(tmp_path)
    fresh = CNIRuntime(runtime.bin_dirs, runtime.cache_dir)  # a restarted kubelet: only the cache is left
    assert fresh.delete(None, RuntimeConf("c1", "/run/netns/p1"), name="podnet")
    second, first = calls(tmp_path)
    assert [second["env"]["CNI_COMMAND"], first["env"]["CNI_COMMAND"]] == ["DEL", "DEL"]
    assert second["conf"]["type"] == "second" and first["conf"]["type"] == "first"
    assert first["conf"]["prevResult"] == result
    assert first["env"]["CNI_ARGS"].startswith("IgnoreUnknown=1")  # the arguments ADD had
    assert second["conf"]["runtimeConfig"]["portMappings"][0]["hostPort"] == 8080
    assert fresh.cached("podnet", "c1", "eth0") is None
    assert not fresh.delete(None, RuntimeConf("c1", ""), name="podnet")


def test_check_uses_the_cached_result(runtime: CNIRuntime, tmp_path: Path) -> None:
    with pytest.raises(CNIError, match="no cached result"):
        runtime.check(NET, RT)
    result = runtime.add(NET, RT)
    calls(tmp_path)
    runtime.check(NET, RT)
    assert [c["conf"]["prevResult"] for c in calls(tmp_path)] == [result, result]


def test_a_plugin_error_carries_its_code_and_message(runtime: CNIRuntime, tmp_path: Path) -> None:
    bad = parse_network_config(
        json.dumps({"cniVersion": "0.4.0", "name": "n", "plugins": [{"type": "first", "fail": True}]}).encode()
    )
    with pytest.raises(CNIError) as err:
        runtime.add(bad, RT)
    assert (err.value.code, err.value.msg, err.value.details) == (7, "invalid range", "10.0.0.0/33")
    assert str(err.value) == 'plugin type="first" failed (add): invalid range; 10.0.0.0/33'
    assert runtime.cached("n", "c1", "eth0") is None
    with pytest.raises(CNIError, match=r'failed to find plugin "nope" in path \['):
        runtime.find_plugin("nope")


def test_pod_ips_are_the_sandbox_addresses() -> None:
    from pykubeadm.cni import pod_ips

    result = {
        "interfaces": [{"name": "cni0"}, {"name": "veth1"}, {"name": "eth0", "sandbox": "/run/netns/p"}],
        "ips": [{"address": "10.244.1.1/24", "interface": 0}, {"address": "10.244.1.7/24", "interface": 2}],
    }
    assert pod_ips(result) == ["10.244.1.7"]
    assert pod_ips({"ips": [{"address": "10.244.1.7/24"}]}) == ["10.244.1.7"]
