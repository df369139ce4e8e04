"""The local-path provisioner's configuration, directory names and addon objects."""

from __future__ import annotations

import json

import pytest

from pykubeadm.localpath.addon import addon_objects
from pykubeadm.localpath.config import DEFAULT_PATH, ConfigError, parse_config
from pykubeadm.localpath.provisioner import volume_dir


def test_node_paths_with_the_default_for_unlisted_nodes() -> None:
    doc = {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["/opt/lp/"]},
                           {"node": "big", "paths": ["/data1", "/data2"]}]}  # fmt: skip
    config = parse_config({"config.json": json.dumps(doc), "setup": "mkdir"})
    assert config.base_path("big") == "/data1"
    assert config.base_path("other") == "/opt/lp"
    assert config.setup == "mkdir" and 'rm -rf "$VOL_DIR"' in config.teardown
    assert parse_config({}).base_path("any") == DEFAULT_PATH


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "config.json is not valid JSON"),
        ('{"nodePathMap": [{"node": "a", "paths": []}]}', "nodePathMap[0] needs a node"),
        ('{"nodePathMap": [{"node": "a", "paths": ["rel"]}]}', "must be absolute"),
    ],
)
def test_bad_configuration_names_the_key(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_config({"config.json": text})


def test_a_volume_directory_is_pv_namespace_claim() -> None:
    claim = {"metadata": {"name": "www-web-0", "namespace": "default"}}
    assert volume_dir("/var/local-path-provisioner", "pvc-1", claim) == (
        "/var/local-path-provisioner/pvc-1_default_www-web-0"
    )


def test_the_addon_makes_standard_the_default_wait_for_first_consumer_class() -> None:
    objects = {(o["kind"], o["metadata"]["name"]): o for o in addon_objects()}
    sc = objects[("StorageClass", "standard")]
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert (sc["provisioner"], sc["volumeBindingMode"], sc["reclaimPolicy"]) == (
        "rancher.io/local-path", "WaitForFirstConsumer", "Delete",
    )  # fmt: skip
    deployment = objects[("Deployment", "local-path-provisioner")]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"][:3] == ["local-path-provisioner", "--debug", "start"]
