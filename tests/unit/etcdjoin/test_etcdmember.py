"""Pure parts of the etcd membership helpers join uses: which member is ours, the `--initial-cluster` pairs."""

from __future__ import annotations

from pykubeadm.phases.etcdmember import client_url_of_peer, find_member, initial_cluster

MEMBERS = [
    {"ID": "11", "name": "cp1", "peerURLs": ["https://10.0.0.1:2380"], "clientURLs": ["https://10.0.0.1:2379"]},
    # unstarted members have no name (and no client URL) yet
    {"ID": "255", "peerURLs": ["https://10.0.0.3:2380"], "isLearner": True},
    {"ID": "4096", "peerURLs": ["https://10.0.0.2:2380"], "isLearner": True},
]


def test_initial_cluster_names_this_member_and_unstarted_others_by_hex_id() -> None:
    assert initial_cluster(MEMBERS, "cp2", "https://10.0.0.2:2380") == [
        ("cp1", "https://10.0.0.1:2380"),
        ("ff", "https://10.0.0.3:2380"),
        ("cp2", "https://10.0.0.2:2380"),
    ]


def test_find_member_matches_the_first_peer_url_only() -> None:
    assert find_member(MEMBERS, "https://10.0.0.2:2380") is MEMBERS[2]
    assert find_member(MEMBERS, "https://10.0.0.2:2379") is None
    assert find_member([{"ID": "1", "peerURLs": []}], "https://10.0.0.2:2380") is None


def test_client_url_of_peer_keeps_the_host_and_brackets_ipv6() -> None:
    assert client_url_of_peer("https://10.0.0.2:2380") == "https://10.0.0.2:2379"
    assert client_url_of_peer("https://[fd00::2]:2380") == "https://[fd00::2]:2379"
