"""Registry credentials for CRI pulls from dockerconfigjson and dockercfg Secrets, matched by registry host and path
as the kubelet's keyring does."""

from __future__ import annotations

import base64
import json
from typing import Any

from pykubeadm.kubelet.cri.pullsecrets import image_registry, matching_auths


def _secret(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    key = ".dockerconfigjson" if kind == "json" else ".dockercfg"
    return {"data": {key: base64.b64encode(json.dumps(doc).encode()).decode()}}


def test_image_registry_is_dockers() -> None:
    assert image_registry("busybox") == ("docker.io", "library/busybox")
    assert image_registry("busybox:1.36") == ("docker.io", "library/busybox")
    assert image_registry("index.docker.io/foo/bar:1") == ("docker.io", "foo/bar")
    assert image_registry("localhost:5001/busybox@sha256:abc") == ("localhost:5001", "busybox")
    assert image_registry("registry.example/team/app:v1") == ("registry.example", "team/app")


def test_dockerconfigjson_with_auth_field_matches_its_host_only() -> None:
    auth = base64.b64encode(b"alice:s3cret").decode()
    secret = _secret("json", {"auths": {"127.0.0.1:5001": {"auth": auth}}})
    [cfg] = matching_auths("127.0.0.1:5001/busybox:1", [secret])
    assert (cfg.username, cfg.password, cfg.server_address) == ("alice", "s3cret", "https://127.0.0.1:5001")
    assert matching_auths("127.0.0.1:5002/busybox:1", [secret]) == []
    assert matching_auths("busybox", [secret]) == []


def test_dockercfg_for_docker_hub_and_path_prefixes() -> None:
    hub = _secret("cfg", {"https://index.docker.io/v1/": {"username": "bob", "password": "pw"}})
    [cfg] = matching_auths("busybox", [hub])
    assert (cfg.username, cfg.server_address) == ("bob", "https://registry-1.docker.io")
    scoped = _secret("json", {"auths": {"registry.example/team": {"username": "t", "password": "p"}}})
    general = _secret("json", {"auths": {"registry.example": {"username": "g", "password": "p"}}})
    found = matching_auths("registry.example/team/app:v1", [general, scoped])
    assert [a.username for a in found] == ["t", "g"]  # the most specific first
    assert [a.username for a in matching_auths("registry.example/other/app", [general, scoped])] == ["g"]


def test_other_secrets_give_nothing() -> None:
    assert matching_auths("busybox", [{"data": {"password": "eA=="}}, {"data": {".dockerconfigjson": "!!"}}]) == []
