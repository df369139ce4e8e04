"""Talking to a stacked (local) etcd cluster about its membership: the v3 JSON gateway (etcd3gw) with the node's
etcd healthcheck-client certificate, as kubeadm's etcdutil client does with `etcd/healthcheck-client`.

Used by `join` (etcd-join: add this node as a learner, promote it, wait for the cluster) and by `reset`
(remove-etcd-member).

* `client(layout, url)` / `call(layout, urls, what, fn)`: one gateway client per endpoint; `call` tries each endpoint in
  turn and raises KubeadmError("failed to <what>: <url>: <etcd error>") when none answers.
* `add_learner(layout, endpoints, name, peer_url)`: kubeadm's AddMemberAsLearner, idempotent: a member that already has
  this peer URL (a previous, interrupted join) is reused instead of added again. Returns the initial cluster
  (name, peer URL) pairs for the new member's `--initial-cluster`, this member under `name`, unnamed (unstarted) others
  under their hex ID.
* `wait_joined(layout, endpoints, name, peer_url, timeout)`: promote the learner (etcd refuses until it has caught up
  with the leader) and wait until every endpoint, the new member's client URL included, answers a status call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import requests
from etcd3gw.client import Etcd3Client
from etcd3gw.exceptions import Etcd3Exception

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.util.endpoint import join_host_port

__all__ = [
    "ETCD_TIMEOUT",
    "JOIN_TIMEOUT",
    "add_learner",
    "call",
    "client",
    "client_url_of_peer",
    "find_member",
    "initial_cluster",
    "list_members",
    "wait_joined",
]

#: Per-request timeout of etcd calls.
ETCD_TIMEOUT = 5.0
#: kubeadm's etcdHealthyCheckInterval × etcdHealthyCheckRetries (5 s × 8): how long a new member may take to join.
JOIN_TIMEOUT = 40.0
#: How long a refused member add is retried (etcd answers "unhealthy cluster" right after a membership change).
ADD_TIMEOUT = 20.0


def client(layout: Layout, url: str) -> Etcd3Client:
    """A gateway client for one endpoint; TLS with the healthcheck-client pair. The environment is ignored (a
    REQUESTS_CA_BUNDLE or proxy variable must not replace the etcd CA or reroute loopback calls)."""
    u = urlsplit(url)
    session = requests.Session()
    session.trust_env = False
    if u.scheme == "https":
        base = c.ETCD_HEALTHCHECK_CLIENT_CERT_AND_KEY_BASE_NAME
        session.verify = str(layout.cert_path(c.ETCD_CA_CERT_AND_KEY_BASE_NAME))
        session.cert = (str(layout.cert_path(base)), str(layout.key_path(base)))
    return Etcd3Client(
        host=u.hostname or "127.0.0.1",
        port=u.port or c.ETCD_LISTEN_CLIENT_PORT,
        protocol=u.scheme or "http",
        timeout=ETCD_TIMEOUT,
        session=session,
    )


def call(layout: Layout, urls: Sequence[str], what: str, fn: Callable[[Etcd3Client], Any]) -> Any:
    """`fn(client)` against the first endpoint that answers; KubeadmError naming the last failure otherwise."""
    last: Exception | None = None
    for url in urls:
        try:
            return fn(client(layout, url))
        except (Etcd3Exception, OSError, ValueError) as err:
            detail = getattr(err, "detail_text", None)
            last = KubeadmError(f"{url}: {detail or err or type(err).__name__}")
    raise KubeadmError(f"failed to {what}: {last}")


def list_members(layout: Layout, urls: Sequence[str]) -> list[dict[str, Any]]:
    members: list[dict[str, Any]] = call(layout, urls, "list etcd members", lambda cl: cl.members())
    return members


def find_member(members: Sequence[dict[str, Any]], peer_url: str) -> dict[str, Any] | None:
    """The member whose first peer URL is `peer_url` (kubeadm's GetMemberID match)."""
    for m in members:
        if (m.get("peerURLs") or [""])[0] == peer_url:
            return m
    return None


def client_url_of_peer(peer_url: str) -> str:
    """kubeadm's GetClientURLByIP: the client URL on the peer URL's host."""
    host = urlsplit(peer_url).hostname or ""
    return f"https://{join_host_port(host, c.ETCD_LISTEN_CLIENT_PORT)}"


def _member_id(m: dict[str, Any]) -> int:
    return int(m.get("ID") or 0)


def initial_cluster(members: Sequence[dict[str, Any]], name: str, peer_url: str) -> list[tuple[str, str]]:
    """`--initial-cluster` pairs: this member under `name`, others under their name or, unstarted, their hex ID."""
    out: list[tuple[str, str]] = []
    for m in members:
        urls = m.get("peerURLs") or []
        if not urls:
            continue
        if urls[0] == peer_url:
            out.append((name, peer_url))
        else:
            out.append((m.get("name") or format(_member_id(m), "x"), urls[0]))
    return out


def add_learner(layout: Layout, endpoints: Sequence[str], name: str, peer_url: str) -> list[tuple[str, str]]:
    """Announce `peer_url` to the cluster as a learner (reusing a member that already has it); the initial cluster."""
    deadline = time.monotonic() + ADD_TIMEOUT

    def add(cl: Etcd3Client) -> Any:
        return cl.post(cl.get_url("/cluster/member/add"), json={"peerURLs": [peer_url], "isLearner": True})

    while True:
        try:
            members = list_members(layout, endpoints)
            if find_member(members, peer_url) is not None:
                return initial_cluster(members, name, peer_url)
            resp = call(layout, endpoints, "add the etcd member", add)
            return initial_cluster(resp.get("members") or [], name, peer_url)
        except KubeadmError:
            # "Peer URLs already exists" (a concurrent add won: the next list finds it) or a cluster that is busy
            # with another membership change: retry for a while, like kubeadm's addMember.
            if time.monotonic() >= deadline:
                raise
        time.sleep(c.ETCD_API_CALL_RETRY_INTERVAL.total_seconds())


def wait_joined(
    layout: Layout,
    endpoints: Sequence[str],
    name: str,
    peer_url: str,
    timeout: float = JOIN_TIMEOUT,
    interval: float = c.ETCD_API_CALL_RETRY_INTERVAL.total_seconds(),
) -> None:
    """Promote the learner `peer_url` and wait until every endpoint (its own client URL included) reports status."""
    all_endpoints = list(dict.fromkeys([*endpoints, client_url_of_peer(peer_url)]))
    deadline = time.monotonic() + timeout
    last = "no answer yet"

    def promote(member_id: int) -> Callable[[Etcd3Client], Any]:
        return lambda cl: cl.post(cl.get_url("/cluster/member/promote"), json={"ID": member_id})

    while True:
        try:
            member = find_member(list_members(layout, endpoints), peer_url)
            if member is None:
                raise KubeadmError(f"no etcd member has the peer URL {peer_url}")
            if member.get("isLearner"):
                call(layout, endpoints, "promote the etcd learner", promote(_member_id(member)))
            for url in all_endpoints:
                call(layout, [url], "get the etcd status", lambda cl: cl.status())
            return
        except KubeadmError as err:
            last = str(err)
        if time.monotonic() >= deadline:
            raise KubeadmError(
                f'etcd member "{name}" ({peer_url}) did not join the etcd cluster within {timeout:g}s: '
                f"timeout waiting for etcd cluster to be available; last error: {last}"
            )
        time.sleep(interval)
