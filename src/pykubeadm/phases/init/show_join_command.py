"""init phase `show-join-command`: kubeadm's closing text with the worker (and control-plane) join commands (§6.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

__all__ = ["PHASE", "init_done_text"]

_HEAD = """Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i {admin} $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=/etc/kubernetes/admin.conf

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

"""

_CP_WITH_KEY = """You can now join any number of control-plane nodes running the following command on each as root:

  {cmd}

Please note that the certificate-key gives access to cluster sensitive data, keep it secret!
As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use
"kubeadm init phase upload-certs --upload-certs" to reload certs afterward.

"""

_CP_WITHOUT_KEY = """You can now join any number of control-plane nodes by copying certificate authorities
and service account keys on each node and then running the following as root:

  {cmd}

"""

_WORKERS = """Then you can join any number of worker nodes by running the following on each as root:

{cmd}"""


def init_done_text(data: InitData) -> str:
    """The text kubeadm prints at the end of a successful init."""
    from pykubeadm.kubeconfig.config import current_cluster, load_kubeconfig
    from pykubeadm.phases.joincommand import WITHHELD, join_command
    from pykubeadm.pki.certs import try_load_cert
    from pykubeadm.pki.keys import public_key_pin

    layout = data.layout
    _, cluster, _ = current_cluster(load_kubeconfig(layout.admin_kubeconfig), str(layout.admin_kubeconfig))
    endpoint = cluster["server"].removeprefix("https://")
    ca = try_load_cert(layout.pki_dir, c.CA_CERT_AND_KEY_BASE_NAME)
    hashes = [public_key_pin(ca.public_key())]
    tokens = data.cfg.init.bootstrap_tokens
    token = WITHHELD if data.skip_token_print else (str(tokens[0].token) if tokens else "")
    key = data.cfg.init.certificate_key if data.upload_certs else ""
    if key and data.skip_certificate_key_print:
        key = WITHHELD
    admin = f"{c.KUBERNETES_DIR}/{c.ADMIN_KUBECONFIG_FILE}" if not data.dry_run else str(layout.admin_kubeconfig)
    text = _HEAD.format(admin=admin)
    if data.cfg.cluster.control_plane_endpoint:
        cp = join_command(endpoint, token, hashes, control_plane=True, certificate_key=key)
        text += (_CP_WITH_KEY if data.upload_certs else _CP_WITHOUT_KEY).format(cmd=cp)
    text += _WORKERS.format(cmd=join_command(endpoint, token, hashes))
    return text


def run(data: InitData) -> None:
    data.out(init_done_text(data))


PHASE: Phase[InitData] = Phase(
    name="show-join-command",
    short="Show the join command for control-plane and worker node",
    run=run,
    inherit_flags=("config", "kubeconfig", "dry-run", "skip-token-print", "skip-certificate-key-print"),
)
