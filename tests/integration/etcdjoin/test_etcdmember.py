"""The etcd membership helpers of etcd-join against a real etcd: the learner add is idempotent (an unstarted member
with our peer URL is reused, not added twice) and a member that never starts fails the wait with a clear error."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.phases import etcdmember
from pykubeadm.testing.etcd import EtcdCluster, etcd_available

pytestmark = pytest.mark.skipif(not etcd_available(), reason="needs the etcd binary")

HOST = "127.0.40.11"
PEER = "https://127.0.40.12:2380"  # a member that is announced but never started


def test_add_learner_is_idempotent_and_an_unstarted_member_times_out(tmp_path: Path) -> None:
    with EtcdCluster(tmp_path / "etcd", hosts=[HOST]) as cluster:
        layout = Layout(tmp_path / "node")  # plain HTTP endpoints: no certificates needed
        first = cluster.members[0]
        endpoints = cluster.endpoints

        got = etcdmember.add_learner(layout, endpoints, "cp2", PEER)
        assert sorted(got) == [("cp2", PEER), (first.name, first.peer_url)]
        members = etcdmember.list_members(layout, endpoints)
        ours = etcdmember.find_member(members, PEER)
        assert ours is not None and ours.get("isLearner") and not ours.get("name")

        # a second join attempt reuses the unstarted learner instead of failing on "Peer URLs already exists"
        assert sorted(etcdmember.add_learner(layout, endpoints, "cp2", PEER)) == sorted(got)
        again = etcdmember.list_members(layout, endpoints)
        assert len(again) == 2 and etcdmember.find_member(again, PEER)["ID"] == ours["ID"]

        start = time.monotonic()
        with pytest.raises(KubeadmError) as err:
            etcdmember.wait_joined(layout, endpoints, "cp2", PEER, timeout=1.5, interval=0.2)
        assert time.monotonic() - start < 10
        msg = str(err.value)
        assert msg.startswith(f'etcd member "cp2" ({PEER}) did not join the etcd cluster within 1.5s'), msg
        assert "last error: failed to promote the etcd learner" in msg, msg
        # the cluster itself is untouched by the failed promotion: the learner does not count for quorum
        assert first.healthy()
