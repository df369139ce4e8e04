"""Image → program resolution of the built-in runtime: built-in map, the node's image map file, shell images, and
the ErrImagePull message for anything else; plus the container back-off."""

from __future__ import annotations

import shutil
import sys

import pytest

from pykubeadm.kubelet.backoff import BackOff
from pykubeadm.kubelet.builtin import images
from pykubeadm.kubelet.builtin.runtime import ImageError


def test_control_plane_images_are_built_in() -> None:
    r = images.resolve_image("registry.k8s.io/kube-scheduler:v1.33.2")
    assert r.kind == "builtin" and r.program.version == "v1.33.2"
    assert images.container_argv(r, ["kube-scheduler", "--v=2"], []) == [
        sys.executable, "-m", "pykubeadm", "component", "kube-scheduler", "--v=2",
    ]  # fmt: skip


@pytest.mark.parametrize("image", ["registry.k8s.io/pause:3.10", "k8s.gcr.io/pause:3.2", "registry.k8s.io/pause"])
def test_pause_runs_a_pause_program_whatever_the_command(image: str) -> None:
    r = images.resolve_image(image)
    assert r.kind == "pause"
    argv = images.container_argv(r, ["/pause"], ["ignored"])
    assert argv == list(r.program.entrypoint) and "ignored" not in argv


def test_image_map_wins_over_shell_images_and_matches_short_and_long_forms(tmp_path) -> None:
    path = tmp_path / "images.yaml"
    path.write_text(
        "nginx: /usr/sbin/nginx -g 'daemon off;'\nexample.com/app:v2: [/opt/app, --serve]\nbusybox: [/bin/true]\n"
    )
    m = images.load_image_map(path)
    assert m["nginx"] == ["/usr/sbin/nginx", "-g", "daemon off;"]
    for ref in ("nginx", "nginx:1.25", "docker.io/library/nginx:1.25", "nginx@sha256:" + "0" * 64):
        assert images.resolve_image(ref, image_map=m).program.entrypoint == ("/usr/sbin/nginx", "-g", "daemon off;")
    app = images.resolve_image("example.com/app:v2", image_map=m)
    # the program stands in for the entrypoint: args follow, a command's first word (the binary) is replaced
    assert images.container_argv(app, ["/app", "--port=1"], ["-v"]) == ["/opt/app", "--serve", "--port=1", "-v"]
    with pytest.raises(ImageError):
        images.resolve_image("example.com/app:v3", image_map=m)  # a tagged key matches only that tag
    assert images.resolve_image("busybox:1.36", image_map=m).kind == "mapped"
    assert images.load_image_map(tmp_path / "missing.yaml") == {}


@pytest.mark.parametrize(
    ("image", "command", "args", "expected_first", "rest"),
    [
        ("busybox", ["sh", "-c", "echo hi"], [], "sh", ["-c", "echo hi"]),
        ("docker.io/library/alpine:3.20", ["/bin/sh", "-c", "true"], [], "sh", ["-c", "true"]),
        ("quay.io/foo/busybox:latest", [], ["sh", "-c", "x"], "sh", ["-c", "x"]),
        ("python:3.12-slim", ["python3", "-m", "http.server"], [], "python3", ["-m", "http.server"]),
        ("ubuntu:24.04", ["bash", "-c", "true"], [], "bash", ["-c", "true"]),
    ],
)
def test_shell_images_run_their_command_with_host_programs(image, command, args, expected_first, rest) -> None:
    r = images.resolve_image(image)
    assert r.kind == "shell"
    argv = images.container_argv(r, command, args)
    assert argv[1:] == rest
    assert argv[0].startswith("/") and expected_first in argv[0].rsplit("/", 1)[-1]


def test_shell_image_without_command_runs_its_default_shell() -> None:
    argv = images.container_argv(images.resolve_image("busybox"), [], [])
    assert argv == [shutil.which("sh") or "/bin/sh"]


def test_unknown_image_is_err_image_pull_naming_the_image_and_how_to_map_it() -> None:
    with pytest.raises(ImageError) as e:
        images.resolve_image("docker.io/library/nginx:1.25", map_file="/root/node/etc/pykubeadm/images.yaml")
    assert e.value.reason == "ErrImagePull"
    msg = e.value.message
    assert msg.startswith('Failed to pull image "docker.io/library/nginx:1.25"')
    assert "/root/node/etc/pykubeadm/images.yaml" in msg and "pykubeadm lab up --image nginx=PROGRAM" in msg


def test_back_off_is_immediate_then_doubles_to_five_minutes_and_resets() -> None:
    b = BackOff(initial=10, cap=300, reset_after=600)
    assert [b.next_delay(1) for _ in range(8)] == [0, 10, 20, 40, 80, 160, 300, 300]
    assert b.next_delay(601) == 0  # ran long enough: back to the start
    assert b.next_delay(1) == 10


def test_kube_proxy_image_runs_the_built_in_proxy_with_the_daemonsets_flags() -> None:
    r = images.resolve_image("registry.k8s.io/kube-proxy:v1.33.2")
    assert r.kind == "builtin" and r.program.version == "v1.33.2"
    command = ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=n1"]
    assert images.container_argv(r, command, []) == [
        sys.executable, "-m", "pykubeadm", "component", "kube-proxy",
        "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=n1",
    ]  # fmt: skip


def test_coredns_image_runs_the_built_in_dns_server_with_the_deployments_args() -> None:
    r = images.resolve_image("registry.k8s.io/coredns/coredns:v1.12.0")
    assert r.kind == "builtin" and r.program.version == "v1.12.0"
    assert images.container_argv(r, [], ["-conf", "/etc/coredns/Corefile"]) == [
        sys.executable, "-m", "pykubeadm", "component", "coredns", "-conf", "/etc/coredns/Corefile",
    ]  # fmt: skip
