"""`pykubeadm lab up|join|status|exec|load|stop|start|reset|upgrade|down`: a local multi-node cluster, its nodes in network
namespaces of their own or on loopback addresses (see pykubeadm.lab)."""

from __future__ import annotations

from pathlib import Path

import click

from pykubeadm import constants as c
from pykubeadm.lab.cluster import DATASTORES, lab_join, lab_up, parse_image_flags
from pykubeadm.lab.topology import parse_publish

# lab.nodectl, lab.status and lab.upgrade are imported by their own commands: nodectl brings reset's phases (etcd3gw,
# requests: ~0.15 s) that `lab up` and `lab join` do not run.

__all__ = ["command"]

_DIR = click.option(
    "--dir",
    "lab_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="lab",
    show_default=True,
    help="Directory holding one root directory per node.",
)


@click.group(name="lab")
def command() -> None:
    """Run a local multi-node cluster: control planes and workers each in its own root dir and (as root) its own
    network namespace on the lab's bridge, else on 127.0.10.x."""


@command.command("up")
@_DIR
@click.option("--workers", type=int, default=2, show_default=True, help="Number of worker nodes.")
@click.option(
    "--control-planes",
    type=int,
    default=1,
    show_default=True,
    help="Number of control-plane nodes (an odd number is recommended). More than one needs --datastore etcd or "
    "external-etcd and puts HAProxy in front of the apiservers as the controlPlaneEndpoint.",
)
@click.option(
    "--datastore",
    type=click.Choice(list(DATASTORES)),
    default="sqlite",
    show_default=True,
    help="sqlite: the built-in apiserver's embedded store; etcd: a real etcd static Pod on every control plane "
    "(stacked); external-etcd: a separate 3-member etcd cluster the lab runs (etcd.external).",
)
@click.option(
    "--load-balancer/--no-load-balancer",
    default=None,
    help="Put HAProxy in front of the apiservers as the controlPlaneEndpoint and upload the certificates, so that "
    "control planes can join later ('lab join --control-plane'). Default: on with more than one control plane or an "
    "external etcd.",
)
@click.option(
    "--kubernetes-version",
    help="The cluster's Kubernetes version (default: the built-in components' own), e.g. an older one to try "
    "'lab upgrade'.",
)
@click.option(
    "--image",
    "images",
    multiple=True,
    metavar="IMAGE=PROGRAM",
    help="Run IMAGE (a reference or repository, e.g. nginx) as PROGRAM (a command line) on every node: written to "
    "each node's /etc/pykubeadm/images.yaml. Repeatable.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A kind-like Cluster file: its nodes' roles, kubeadmConfigPatches merged into the configurations the lab "
    "generates (for all nodes or one), and extraMounts copied into the nodes before they init or join.",
)
@click.option(
    "--topology",
    type=click.Choice(["netns", "loopback"]),
    default=None,
    help="netns: each node in its own network and UTS namespaces on the lab's bridge (172.18.0.0/16), the API server "
    "published on the host's 127.0.0.1 (needs root); loopback: every node in the host's network namespace on "
    "127.0.10.x. Default: netns where it can be made, else loopback.",
)
@click.option(
    "--publish",
    "published",
    multiple=True,
    metavar="PORT[:NODEPORT]",
    help="netns topology: publish NODEPORT (default PORT) of the cluster on the host's 127.0.0.1:PORT (kind's "
    "extraPortMappings). Repeatable.",
)
@click.option(
    "--addon",
    "addons",
    multiple=True,
    type=click.Choice(["metrics-server"]),
    help="Deploy an addon once init is done: metrics-server (metrics.k8s.io for 'kubectl top' and the "
    "HorizontalPodAutoscaler, as k3s ships it and kind users install it). Repeatable.",
)
@click.option(
    "--runtime",
    type=click.Choice(["containerd", "builtin"]),
    default=None,
    help="containerd: each node runs its own containerd (Debian's, with runc and the CNI plugins), kubeadm's "
    "criSocket; builtin: the kubelet's built-in process runtime. Default: containerd where it can run (root, "
    "containerd installed, the netns topology), else builtin.",
)
@click.option(
    "--registry",
    is_flag=True,
    help="Run a local registry (Debian's docker-registry) on the lab network, published on the host's "
    "127.0.0.1:5001: push to localhost:5001/NAME, run localhost:5001/NAME (kind's local registry, with its "
    "local-registry-hosting ConfigMap). Needs the containerd runtime.",
)
@click.option(
    "--registry-mirror",
    "registry_mirrors",
    multiple=True,
    metavar="REGISTRY=URL",
    help="Have every node's containerd pull REGISTRY's images from the mirror at URL first (a hosts.toml), e.g. "
    "docker.io=http://mirror.example:5000; URL is reached from the nodes' network. Repeatable.",
)
@click.pass_context
def up(
    ctx: click.Context,
    lab_dir: Path,
    workers: int,
    control_planes: int,
    datastore: str,
    load_balancer: bool | None,
    kubernetes_version: str | None,
    images: tuple[str, ...],
    config_file: Path | None,
    topology: str | None,
    published: tuple[str, ...],
    addons: tuple[str, ...],
    runtime: str | None,
    registry: bool,
    registry_mirrors: tuple[str, ...],
) -> None:
    """Create the lab: `init` on the first control plane, `join` on every other node, wait until all Nodes are Ready."""
    cluster_config = None
    if config_file is not None:
        from pykubeadm.lab.clusterconfig import load_cluster_config

        for flag in ("workers", "control_planes"):
            if ctx.get_parameter_source(flag) == click.core.ParameterSource.COMMANDLINE:
                raise click.UsageError(f"--{flag.replace('_', '-')} and --config: the config's nodes give the roles")
        cluster_config = load_cluster_config(config_file)
        workers = cluster_config.count("worker")
        control_planes = cluster_config.count("control-plane")
    lab_up(
        lab_dir,
        workers,
        datastore,
        click.echo,
        image_map=parse_image_flags(images),
        control_planes=control_planes,
        with_load_balancer=load_balancer,
        kubernetes_version=kubernetes_version,
        cluster_config=cluster_config,
        topology_name=topology,
        publish=parse_publish(published),
        addons=addons,
        runtime_name=runtime,
        registry=registry,
        registry_mirrors=registry_mirrors,
    )
    click.echo(f"[lab] Each node's bootstrap on one time axis: pykubeadm lab timeline --dir {lab_dir} [--svg FILE]")


@command.command("join")
@_DIR
@click.option("--control-plane", is_flag=True, help="Join a control plane (join --control-plane --certificate-key).")
@click.option("--node", "name", help="Join this node of the lab again (after 'lab reset NODE').")
def join(lab_dir: Path, control_plane: bool, name: str | None) -> None:
    """Add one node (a worker unless --control-plane) to the lab."""
    node = lab_join(lab_dir, click.echo, control_plane=control_plane, name=name)
    click.echo(f"[lab] {node.name} is Ready")


@command.command("status")
@_DIR
def status(lab_dir: Path) -> None:
    """Show the lab's nodes, their kubelets and readiness; for an HA lab also each control plane's apiserver, etcd
    member, leadership and the load balancer's view."""
    from pykubeadm.lab.status import lab_status

    st = lab_status(lab_dir)
    if not st.nodes:
        click.echo(f"no lab in {lab_dir.absolute()}")
        return
    click.echo(f"{'NODE':<22} {'ROLE':<14} {'ADDRESS':<14} {'KUBELET':<12} STATUS")
    for r in st.nodes:
        pid = f"pid {r.kubelet_pid}" if r.kubelet_pid else "stopped"
        role = "control-plane" if r.node.control_plane else "worker"
        click.echo(f"{r.node.name:<22} {role:<14} {r.node.address:<14} {pid:<12} {r.ready}")
    if st.load_balancer:
        click.echo(f"\nLoad balancer: {st.load_balancer}")
        click.echo(f"{'CONTROL PLANE':<22} {'APISERVER':<10} {'ETCD':<9} {'LEADS':<40} LOAD BALANCER")
        for cp in st.control_planes:
            leads = ",".join(cp.leads) or "-"
            click.echo(f"{cp.node.name:<22} {cp.apiserver:<10} {cp.etcd:<9} {leads:<40} {cp.load_balancer}")
    if st.etcd_members:
        click.echo(f"\n{'EXTERNAL ETCD':<22} {'CLIENT URL':<28} ROLE")
        for name, url, role in st.etcd_members:
            click.echo(f"{name:<22} {url:<28} {role}")


@command.command("exec", context_settings={"ignore_unknown_options": True})
@_DIR
@click.argument("node")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_(lab_dir: Path, node: str, cmd: tuple[str, ...]) -> None:
    """Run CMD inside NODE (its network and UTS namespaces, kind's `docker exec`): `lab exec NODE -- CMD ARGS...`."""
    import os

    from pykubeadm.lab.cluster import find_node
    from pykubeadm.util.namespaces import enter

    found = find_node(lab_dir.absolute(), node)
    if found.namespaces:
        enter(found.namespaces)  # a loopback lab's node is the host's namespace: the command runs as it is
    os.environ[c.ROOT_DIR_ENV] = str(found.root)  # pykubeadm commands act on the node, as on a machine
    try:
        os.execvp(cmd[0], list(cmd))  # noqa: S606 - the command the user gave, as docker exec runs it
    except OSError as err:
        raise click.ClickException(f"{cmd[0]}: {err.strerror}") from err


@command.command("timeline")
@_DIR
@click.option("--node", "node_name", help="Only this node.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--svg", "svg_file", type=click.Path(dir_okay=False, path_type=Path), help="Also draw it into this SVG file."
)
def timeline(lab_dir: Path, node_name: str | None, output: str, svg_file: Path | None) -> None:
    """Each node's bootstrap on one time axis (join, discovery, CSRs and who approved them, Node registered and Ready),
    then later events (certificate rotations and renewals, kubelet restarts), from the records that say so."""
    import json

    from pykubeadm.lab.timeline import collect, render_svg, render_text

    try:
        timelines = collect(lab_dir, node_name)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--node") from err
    if svg_file is not None:
        svg_file.write_text(render_svg(timelines))
    if output == "json":
        click.echo(json.dumps({"nodes": [t.to_dict() for t in timelines]}, indent=2))
    else:
        click.echo(render_text(timelines), nl=False)
        if svg_file is not None:
            click.echo(f"[lab] timeline drawn in {svg_file}")


@command.command("load")
@_DIR
@click.argument("archives", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
def load(lab_dir: Path, archives: tuple[Path, ...]) -> None:
    """Import OCI or docker image archives into every node's containerd (kind's 'load image-archive')."""
    from pykubeadm.lab.load import lab_load

    lab_load(lab_dir, list(archives), click.echo)


@command.command("stop")
@_DIR
@click.argument("node")
def stop(lab_dir: Path, node: str) -> None:
    """Power NODE off: kill every process of the node (kubelet, static Pods, etcd) at once."""
    from pykubeadm.lab.nodectl import lab_stop

    lab_stop(lab_dir, node, click.echo)


@command.command("start")
@_DIR
@click.argument("node")
def start(lab_dir: Path, node: str) -> None:
    """Power NODE on: start its kubelet, which starts its static Pods again."""
    from pykubeadm.lab.nodectl import lab_start

    lab_start(lab_dir, node, click.echo)


@command.command("reset")
@_DIR
@click.argument("node")
def reset(lab_dir: Path, node: str) -> None:
    """`reset -f` NODE (its etcd member leaves first), take it out of the load balancer, delete its Node."""
    from pykubeadm.lab.nodectl import lab_reset

    lab_reset(lab_dir, node, click.echo)


@command.command("upgrade")
@_DIR
@click.argument("version")
@click.option(
    "--skip-drain",
    is_flag=True,
    help="Do not drain and uncordon the nodes (their kubelets are still upgraded and restarted).",
)
@click.option(
    "--delete-emptydir-data",
    is_flag=True,
    help="As kubectl drain's: also evict Pods with emptyDir volumes (their data is lost).",
)
@click.option("--force", is_flag=True, help="As kubectl drain's: also delete Pods that declare no controller.")
def upgrade(lab_dir: Path, version: str, skip_drain: bool, delete_emptydir_data: bool, force: bool) -> None:
    """kubeadm's upgrade procedure, one node at a time: `upgrade plan` and `upgrade apply VERSION` on the first control
    plane, `upgrade node` on every other node; each node then drained (`kubectl drain --ignore-daemonsets`, through
    the Eviction API), its kubelet upgraded to VERSION and restarted, and uncordoned."""
    from pykubeadm.lab.drain import DrainOptions
    from pykubeadm.lab.upgrade import lab_upgrade

    opts = DrainOptions(delete_emptydir_data=delete_emptydir_data, force=force)
    lab_upgrade(lab_dir, version, click.echo, skip_drain=skip_drain, drain_opts=opts)


@command.command("down")
@_DIR
def down(lab_dir: Path) -> None:
    """Reset every node, stop the load balancer and external etcd, and leave the lab directory empty."""
    from pykubeadm.lab.down import lab_down

    lab_down(lab_dir, click.echo)
