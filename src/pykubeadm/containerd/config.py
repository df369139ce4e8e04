"""A node's containerd config (config version 2, containerd 1.6): every path under the node root, the CRI plugin set
for this machine (cgroupfs, overlayfs, runc, kubeadm's pause image, Debian's CNI plugins, a loopback streaming server
on a random port); rendered by `render_config` and written by `write_config`, which `containerd.daemon` starts from.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import tomli_w

from pykubeadm import constants as c
from pykubeadm.cri.endpoint import unix_endpoint
from pykubeadm.layout import Layout
from pykubeadm.util.fs import write_file_atomic

__all__ = [
    "ContainerdConfig",
    "kubeadm_pause_image",
    "negative_oom_score_adj_refused",
    "render_config",
    "render_registry_hosts",
    "write_config",
    "write_registry_hosts",
]

_CRI = "io.containerd.grpc.v1.cri"
#: Plugins a node's containerd never uses (its snapshotter is overlayfs; no tracing): not loaded, so each of a lab's
#: containerds starts sooner and holds less memory.
_UNUSED_PLUGINS = (
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.internal.v1.tracing",
)


def kubeadm_pause_image(image_repository: str = c.DEFAULT_IMAGE_REPOSITORY) -> str:
    """kubeadm's pause image (`<imageRepository>/pause:<PauseVersion>`), which the runtime's sandbox_image should be."""
    return f"{image_repository}/{c.PAUSE}:{c.PAUSE_VERSION}"


@cache
def negative_oom_score_adj_refused() -> bool:
    """Whether this kernel refuses a process a negative oom_score_adj (as some VMs and user namespaces do), in which
    case runc cannot start containerd's pause containers (-998) unless `restrict_oom_score_adj` is set."""
    # A child tries, so our own score stays as it is.
    probe = subprocess.run(
        ["/bin/sh", "-c", "echo -998 > /proc/self/oom_score_adj"], capture_output=True, check=False, timeout=10
    )
    return probe.returncode != 0


@dataclass(frozen=True)
class ContainerdConfig:
    """What varies between nodes' containerds; every path comes from the node's `layout`."""

    layout: Layout
    sandbox_image: str = ""  # default: kubeadm's pause image
    snapshotter: str = "overlayfs"
    #: None: decide from the kernel (`negative_oom_score_adj_refused`).
    restrict_oom_score_adj: bool | None = None
    #: Where the streaming server (exec, attach, port-forward) listens; port "0" picks a free one.
    stream_server_address: str = "127.0.0.1"
    stream_server_port: str = "0"
    cni_bin_dir: str = c.CNI_BIN_DIR
    log_level: str = "info"

    @property
    def endpoint(self) -> str:
        """The CRI endpoint of this containerd (`unix:///<node root>/run/containerd/containerd.sock`)."""
        return unix_endpoint(str(self.layout.containerd_socket))


def render_config(cfg: ContainerdConfig) -> str:
    """The config.toml text."""
    layout = cfg.layout
    restrict = negative_oom_score_adj_refused() if cfg.restrict_oom_score_adj is None else cfg.restrict_oom_score_adj
    doc: dict[str, Any] = {
        "version": 2,
        "disabled_plugins": list(_UNUSED_PLUGINS),
        "root": str(layout.containerd_root),
        "state": str(layout.containerd_state),
        "grpc": {"address": str(layout.containerd_socket)},
        "ttrpc": {"address": f"{layout.containerd_socket}.ttrpc"},
        "debug": {"level": cfg.log_level},
        "plugins": {
            "io.containerd.internal.v1.opt": {"path": str(layout.containerd_opt)},
            _CRI: {
                "sandbox_image": cfg.sandbox_image or kubeadm_pause_image(),
                "stream_server_address": cfg.stream_server_address,
                "stream_server_port": cfg.stream_server_port,
                "restrict_oom_score_adj": restrict,
                # Pod network namespaces under the state dir, so each node's stay in its root.
                "netns_mounts_under_state_dir": True,
                "containerd": {
                    "snapshotter": cfg.snapshotter,
                    "default_runtime_name": "runc",
                    "runtimes": {
                        "runc": {
                            "runtime_type": "io.containerd.runc.v2",
                            # cgroupfs driver (no systemd); runc's state under this containerd's state dir.
                            "options": {"SystemdCgroup": False, "Root": str(layout.containerd_state / "runc")},
                        }
                    },
                },
                "cni": {"bin_dir": cfg.cni_bin_dir, "conf_dir": str(layout.cni_conf_dir)},
                "registry": {"config_path": str(layout.containerd_certs_dir)},
            },
        },
    }
    return tomli_w.dumps(doc)


def write_config(cfg: ContainerdConfig) -> Path:
    """Write config.toml and make the directories it names (and the short link its socket is named through, under a
    long node root); returns the config's path."""
    layout = cfg.layout
    for d in (
        layout.containerd_root,
        layout.containerd_state,
        layout.containerd_opt,
        layout.containerd_certs_dir,
        layout.cni_conf_dir,
    ):
        d.mkdir(parents=True, exist_ok=True)
    layout.link_containerd_socket_dir()
    path = layout.containerd_config
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomic(path, render_config(cfg).encode(), 0o644)
    return path


def render_registry_hosts(server: str, hosts: Sequence[str] = ()) -> str:
    """A `hosts.toml` (containerd's registry host configuration): `server` is the registry's own endpoint, each of
    `hosts` (default: `server` alone) is asked first, in order, for pulls and resolves. A host written with http://
    is reached over plain HTTP, which containerd allows only where a hosts.toml says so."""
    doc = {"server": server, "host": {h: {"capabilities": ["pull", "resolve"]} for h in (hosts or [server])}}
    return tomli_w.dumps(doc)


def write_registry_hosts(layout: Layout, registry: str, server: str, hosts: Sequence[str] = ()) -> Path:
    """Point the node's containerd at `server` (e.g. "http://127.0.0.1:5001") for images named `registry/...`, through
    `certs.d/<registry>/hosts.toml` under registry.config_path; `hosts`: mirrors asked before it (see
    render_registry_hosts)."""
    path = layout.containerd_certs_dir / registry / "hosts.toml"
    write_file_atomic(path, render_registry_hosts(server, hosts).encode(), 0o644)
    return path
