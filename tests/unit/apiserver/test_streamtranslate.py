"""The stream translator's Status relay: the kubelet's v4 Status read as client-go's executor reads it and written as
kube-apiserver's translator writes it (an exit code stays one, with kube's message; anything else is an internal
error naming the kubelet's message), a refused upgrade's body, and which upgrades are translated (v5 exec/attach,
SPDY-tunnelling port-forward) or pass through (older protocols, SPDY, a gate set to false). End to end with kubectl and containerd:
tests/integration/cri/test_kubelet_cri_pods.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from pykubeadm.apiserver.handlers.podconnect import route
from pykubeadm.apiserver.handlers.streamtranslate import _refusal, relay_status


def _exit(code: str) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "reason": "NonZeroExitCode",
        "message": "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
        "details": {"causes": [{"reason": "ExitCode", "message": code}]},
    }


def test_success_stays_success() -> None:
    assert relay_status({"metadata": {}, "status": "Success"}) == {"metadata": {}, "status": "Success"}


def test_an_exit_code_stays_an_exit_code_with_kubes_message() -> None:
    assert relay_status(_exit("3")) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: command terminated with exit code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (_exit("300"), 'error stream protocol error: invalid exit code value "300"'),
        ({**_exit("1"), "details": None}, "error stream protocol error: details must be set"),
        ({**_exit("1"), "details": {"causes": []}}, "error stream protocol error: no ExitCode cause given"),
        ({"status": "Weird"}, "error stream protocol error: unknown error"),
        (
            {"status": "Failure", "message": 'executable file not found in $PATH: "nope"', "reason": "InternalError"},
            'executable file not found in $PATH: "nope"',
        ),
    ],
)
def test_anything_else_is_an_internal_error(status: dict[str, Any], message: str) -> None:
    assert relay_status(status) == {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def test_a_refused_upgrade_relays_a_status_body_or_names_the_text() -> None:
    forbidden = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403}
    assert _refusal(json.dumps(forbidden).encode()) == forbidden
    status = _refusal(b'container "x" in pod "web" is not available\n')
    assert status["message"] == (
        'Internal error occurred: unable to upgrade connection: container "x" in pod "web" is not available'
    )


@pytest.mark.parametrize(
    ("sub", "headers", "gates", "way"),
    [
        ("exec", {"Sec-WebSocket-Protocol": "v5.channel.k8s.io, v4.channel.k8s.io"}, {}, "translate"),
        ("attach", {"Sec-WebSocket-Protocol": "v5.channel.k8s.io"}, {}, "translate"),
        ("exec", {"Sec-WebSocket-Protocol": "v4.channel.k8s.io"}, {}, "pass"),  # the Python client's older protocol
        (
            "exec",
            {"Sec-WebSocket-Protocol": "v5.channel.k8s.io"},
            {"TranslateStreamCloseWebsocketRequests": False},
            "pass",
        ),
        ("portforward", {"Sec-WebSocket-Protocol": "SPDY/3.1+portforward.k8s.io"}, {}, "tunnel"),
        (
            "portforward",
            {"Sec-WebSocket-Protocol": "SPDY/3.1+portforward.k8s.io"},
            {"PortForwardWebsockets": False},
            "pass",
        ),
        ("portforward", {"Sec-WebSocket-Protocol": "v4.channel.k8s.io"}, {}, "pass"),
        ("exec", {"Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "v4.channel.k8s.io"}, {}, "pass"),
    ],
)
def test_which_upgrades_are_translated(sub: str, headers: dict[str, str], gates: dict[str, bool], way: str) -> None:
    base = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"}
    request = make_mocked_request("GET", f"/api/v1/namespaces/default/pods/web/{sub}", headers={**base, **headers})
    assert route(sub, gates, request) == way
