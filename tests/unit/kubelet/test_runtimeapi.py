"""containerIDs as Pod status shows them: `<runtime type>://<id>`."""

from __future__ import annotations

import pytest

from pykubeadm.kubelet.runtimeapi import container_id_url, parse_container_id_url


def test_container_id_urls_name_their_runtime() -> None:
    assert container_id_url("containerd", "abc") == "containerd://abc"
    assert parse_container_id_url("pykubeadm://p1") == ("pykubeadm", "p1")


@pytest.mark.parametrize("url", ["abc", "://abc", "containerd://"])
def test_a_container_id_without_type_or_id_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="invalid container ID"):
        parse_container_id_url(url)
