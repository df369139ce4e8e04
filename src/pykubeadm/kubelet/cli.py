"""`pykubeadm component kubelet`: the kubelet's flags (those kubeadm and kubeadm-flags.env use) → KubeletSettings → run.

The node's root directory comes from `pykubeadm --root-dir`, `--node-root-dir` or $PYKUBEADM_ROOT_DIR: every node path
(flags, the config file's paths, manifests' hostPaths) resolves under it. The kubelet's own `--root-dir`
(/var/lib/kubelet) is accepted as data. Unknown flags (kubeletExtraArgs) are logged and ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.errors import ValidationError
from pykubeadm.layout import Layout
from pykubeadm.util import gctuning
from pykubeadm.util.fs import redirect_stdio

__all__ = ["command", "parse_kubeadm_flags_env", "parse_labels", "parse_taints"]

log = logging.getLogger("pykubeadm.kubelet")


def parse_kubeadm_flags_env(text: str) -> list[str]:
    """The kubelet arguments in a kubeadm-flags.env file (`KUBELET_KUBEADM_ARGS="--a=b --c=d"`, Go %q quoting),
    as systemd would pass them: split on whitespace, quotes and backslash escapes honoured."""
    args: list[str] = []
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if not sep or name.strip() != c.KUBELET_ENV_VARIABLE:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = bytes(value[1:-1], "utf-8").decode("unicode_escape")
        args.extend(shlex.split(value))
    return args


def parse_labels(value: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (value or "").split(","):
        if not item.strip():
            continue
        k, _, v = item.partition("=")
        out[k.strip()] = v.strip()
    return out


def parse_taints(value: str | None) -> list[dict[str, str]]:
    """`key[=value]:Effect,...` → Node taints."""
    out = []
    for item in (value or "").split(","):
        if not item.strip():
            continue
        kv, _, effect = item.partition(":")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValidationError([f'invalid taint spec "{item}": invalid taint effect "{effect}"'])
        k, _, v = kv.partition("=")
        taint = {"key": k, "effect": effect}
        if v:
            taint["value"] = v
        out.append(taint)
    return out


_BOOL = click.BOOL
_ARGS_META = "pykubeadm.kubelet.args"


@click.command(
    name="kubelet",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "max_content_width": 120},
)
@click.option("--bootstrap-kubeconfig", help="Path to a kubeconfig used to get a client certificate for the kubelet.")
@click.option("--kubeconfig", help="Path to the kubeconfig with the kubelet's credentials (written after bootstrap).")
@click.option("--config", "config_file", help="The kubelet's KubeletConfiguration file.")
@click.option("--node-ip", help="IP address of the node; the built-in kubelet also serves :10250 and healthz on it.")
@click.option("--hostname-override", help="Use this name instead of the hostname as the node name.")
@click.option(
    "--container-runtime-endpoint",
    help="The CRI runtime's socket (unix:///path, a node path): Pods whose images the built-in runtime does not own "
    "run there. Unset, or no socket there: every Pod runs on the built-in runtime.",
)
@click.option("--pod-infra-container-image", help="Accepted for compatibility (the pause image).")
@click.option("--image-gc-high-threshold", type=int, help="imageGCHighThresholdPercent (deprecated kubelet flag).")
@click.option("--image-gc-low-threshold", type=int, help="imageGCLowThresholdPercent (deprecated kubelet flag).")
@click.option("--minimum-image-ttl-duration", help="imageMinimumGCAge (deprecated kubelet flag).")
@click.option(
    "--cni-conf-dir",
    help="The built-in runtime's CNI configuration directory (a node path, e.g. /etc/cni/net.d): Pods without "
    "hostNetwork get their own network namespace and address through it; the node is not Ready until it holds a "
    "network configuration. Unset: Pods share the node's network.",
)
@click.option(
    "--cni-bin-dir",
    help=f"Directories of the CNI plugin binaries, ':'-separated (CNI_PATH). [default: {c.DEFAULT_CNI_BIN_DIR}]",
)
@click.option("--cni-cache-dir", help=f"The CNI result cache (a node path). [default: {c.DEFAULT_CNI_CACHE_DIR}]")
@click.option("--cert-dir", help="Directory of the kubelet's TLS certificates. [default: /var/lib/kubelet/pki]")
@click.option(
    "--rotate-certificates",
    type=_BOOL,
    is_flag=False,
    flag_value=True,
    default=None,
    help="Rotate the client certificate by requesting new certificates from the API.",
)
@click.option(
    "--rotate-server-certificates",
    type=_BOOL,
    is_flag=False,
    flag_value=True,
    default=None,
    help="Request and rotate the serving certificate through the CSR API (serverTLSBootstrap).",
)
@click.option(
    "--control-plane-cert-renewal-window",
    help="Not a kube flag: renew this control-plane node's kubeadm certificates and kubeconfig client certificates "
    "this long before they expire (a Go duration, e.g. 2160h; 0 or unset: off). See kubelet/certrenewal.py.",
)
@click.option("--tls-cert-file", help="Serving certificate of :10250.")
@click.option("--tls-private-key-file", help="Serving key of :10250.")
@click.option("--client-ca-file", help="CA bundle to verify client certificates of :10250.")
@click.option("--anonymous-auth", type=_BOOL, is_flag=False, flag_value=True, default=None)
@click.option("--authorization-mode", help="Webhook or AlwaysAllow.")
@click.option("--pod-manifest-path", help="Static Pod path (staticPodPath).")
@click.option("--address", help="Address of :10250.")
@click.option("--port", type=int, help="Port of the kubelet API.")
@click.option("--healthz-bind-address")
@click.option("--healthz-port", type=int)
@click.option("--cluster-dns", help="Comma-separated DNS server IPs.")
@click.option("--cluster-domain")
@click.option("--node-labels", help="key=value,... labels added at registration.")
@click.option("--register-with-taints", help="key=value:Effect,... taints added at registration.")
@click.option("--register-node", type=_BOOL, is_flag=False, flag_value=True, default=None)
@click.option("--root-dir", "kubelet_root_dir", help="The kubelet's directory (accepted; /var/lib/kubelet).")
@click.option(
    "--node-root-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Root directory of the node (default: pykubeadm --root-dir or $PYKUBEADM_ROOT_DIR).",
)
@click.option(
    "--static-pod-backoff",
    type=float,
    default=10.0,
    hidden=True,
    help="First CrashLoopBackOff delay in seconds (tests).",
)
@click.option(
    "--image-gc-period",
    type=float,
    default=300.0,
    hidden=True,
    help="Seconds between image garbage collections (the kubelet's 5 minutes; tests).",
)
@click.option(
    "--flags-from-stdin",
    is_flag=True,
    hidden=True,
    help="Warm start: import everything, then read the real flags and log file as one JSON line from stdin.",
)
@click.option(
    "--fork-server",
    is_flag=True,
    hidden=True,
    help="Fork the built-in control-plane components' containers from a server that has imported them.",
)
@click.option(
    "--zygote",
    "zygote_socket",
    hidden=True,
    help="Be a lab's kubelet zygote (kubelet/builtin/zygote.py): this socket, passed as stdin, asks for warm kubelets.",
)
@click.option("-v", "--v", "verbosity", type=int, default=None, help="Log level verbosity.")
@click.pass_context
def command(ctx: click.Context, **opts: Any) -> None:
    """Run the built-in kubelet: TLS bootstrap, certificate rotation, node status, static Pods as processes."""
    zygote_socket = opts.pop("zygote_socket")
    if zygote_socket:
        from pykubeadm.kubelet.builtin.zygote import serve

        serve(Path(zygote_socket))
    fork = opts.pop("fork_server")
    if opts.pop("flags_from_stdin"):
        args = _await_start(fork)
        if args is not None:
            ctx.meta[_ARGS_META] = args  # `ps` shows the warm start's command line, the log shows these
            with command.make_context(ctx.info_name, list(args), parent=ctx) as started:  # (click consumes the list)
                command.invoke(started)
        return
    if fork:  # a cold start: before any logging, credential or thread
        from pykubeadm.kubelet.builtin.forkserver import start_fork_server

        start_fork_server()
    verbosity = opts.pop("verbosity")
    logging.basicConfig(
        level=logging.DEBUG if (verbosity or 0) >= 5 else logging.INFO,
        format="%(levelname).1s%(asctime)s %(process)d %(name)s] %(message)s",
        force=True,
    )
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    log.info("flags: %s", shlex.join(ctx.meta.get(_ARGS_META) or _own_args(sys.argv)))
    if ctx.args:
        log.warning("ignoring flags the built-in kubelet does not implement: %s", " ".join(ctx.args))
    root = _root_dir(ctx, opts.pop("node_root_dir"))
    layout = Layout(root=root)
    backoff = opts.pop("static_pod_backoff")
    image_gc_period = opts.pop("image_gc_period")
    opts.pop("kubelet_root_dir")
    settings = resolve_settings(opts, layout)
    from pykubeadm.kubelet.kubelet import Kubelet

    kubelet = Kubelet(settings, layout, backoff_initial=backoff, image_gc_period=image_gc_period)
    log.info("starting kubelet %s for node %s (root %s)", kubelet.version, settings.node_name, root)
    gctuning.for_service()
    asyncio.run(_main(kubelet))


def _own_args(argv: list[str]) -> list[str]:
    """The kubelet's flags in `pykubeadm [--root-dir R] component kubelet FLAGS...`."""
    for i in range(len(argv) - 1):
        if argv[i] == "component" and argv[i + 1] == "kubelet":
            return argv[i + 2 :]
    return argv[1:]


def _await_start(fork: bool = False) -> list[str] | None:
    """A warm start (kubelet/service.prewarm_kubelet): import what the kubelet runs on while the command that
    started us works, then wait for {"args": [...], "log": path} on stdin. None on EOF: that command ended without
    starting us, and we exit having written nothing. With `fork`, the fork server is forked once the imports are done
    (before any flag or credential is read), to import the control-plane components while we wait."""
    failed: BaseException | None = None
    try:
        import pykubeadm.kubelet.config
        import pykubeadm.kubelet.kubelet  # noqa: F401
        from pykubeadm.kubelet.builtin.forkserver import start_fork_server

        if fork:
            start_fork_server()
    except Exception as e:  # reported in the log once there is one
        failed = e
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return None
    start = json.loads(line)
    redirect_stdio(start["log"])
    if failed is not None:
        raise failed
    return [str(a) for a in start["args"]]


def resolve_settings(opts: dict[str, Any], layout: Layout) -> Any:
    from pykubeadm.kubelet.config import KubeletSettings, load_kubelet_configuration

    config = load_kubelet_configuration(layout.host(opts["config_file"])) if opts.get("config_file") else {}
    flags = dict(opts)
    flags["node_labels"] = parse_labels(opts.get("node_labels"))
    flags["register_with_taints"] = parse_taints(opts.get("register_with_taints")) or None
    flags["cluster_dns"] = [x for x in (opts.get("cluster_dns") or "").split(",") if x] or None
    return KubeletSettings.resolve(config, flags)


def _root_dir(ctx: click.Context, explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit.absolute()
    from pykubeadm.cli.main import CliState

    state = ctx.find_object(CliState)
    if state is not None and str(state.root_dir) != "/":
        return state.root_dir
    return Path(os.environ.get(c.ROOT_DIR_ENV) or "/").absolute()


async def _main(kubelet: Any) -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(kubelet.run())
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task
    log.info("kubelet stopped")
