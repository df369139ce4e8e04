"""Kubeconfig handling: the file written after bootstrap, loading under a root dir, the validity check."""

from __future__ import annotations

import base64
import datetime as dt
import stat

import yaml

from pykubeadm.kubelet import csr
from pykubeadm.kubelet.certstore import PairStore
from pykubeadm.kubelet.kubeconfig import (
    bootstrapped_kubeconfig,
    is_valid_client_kubeconfig,
    load_client_config,
    write_kubeconfig,
)
from pykubeadm.layout import Layout


def _bootstrap_file(path, ca_pem):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "kubernetes",
                        "cluster": {
                            "server": "https://127.0.10.1:6443",
                            "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                        },
                    }
                ],
                "contexts": [
                    {
                        "name": "tls-bootstrap-token-user@kubernetes",
                        "context": {"cluster": "kubernetes", "user": "tls-bootstrap-token-user"},
                    }
                ],
                "current-context": "tls-bootstrap-token-user@kubernetes",
                "users": [{"name": "tls-bootstrap-token-user", "user": {"token": "abcdef.0123456789abcdef"}}],
            }
        )
    )


def test_bootstrapped_kubeconfig_shape(tmp_path, tiny_ca):
    boot = tmp_path / "bootstrap-kubelet.conf"
    _bootstrap_file(boot, tiny_ca.pem)
    cfg = bootstrapped_kubeconfig(boot, "/var/lib/kubelet/pki")
    current = "/var/lib/kubelet/pki/kubelet-client-current.pem"
    assert cfg["clusters"] == [
        {
            "name": "default-cluster",
            "cluster": {
                "server": "https://127.0.10.1:6443",
                "certificate-authority-data": base64.b64encode(tiny_ca.pem).decode(),
            },
        }
    ]
    assert cfg["users"] == [{"name": "default-auth", "user": {"client-certificate": current, "client-key": current}}]
    assert cfg["contexts"] == [
        {
            "name": "default-context",
            "context": {"cluster": "default-cluster", "namespace": "default", "user": "default-auth"},
        }
    ]
    assert cfg["current-context"] == "default-context"
    assert "token" not in yaml.safe_dump(cfg)  # the bootstrap credential is not carried over
    out = tmp_path / "kubelet.conf"
    write_kubeconfig(out, cfg)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_load_maps_node_paths_under_root_and_validity(tmp_path, tiny_ca):
    layout = Layout(root=tmp_path)
    boot = layout.host("/etc/kubernetes/bootstrap-kubelet.conf")
    _bootstrap_file(boot, tiny_ca.pem)
    kc = layout.host("/etc/kubernetes/kubelet.conf")
    write_kubeconfig(kc, bootstrapped_kubeconfig(boot, "/var/lib/kubelet/pki"))
    cfg = load_client_config(kc, layout)
    assert cfg.cert_file == str(tmp_path / "var/lib/kubelet/pki/kubelet-client-current.pem")
    assert cfg.token is None and cfg.ca_pem == tiny_ca.pem
    assert not is_valid_client_kubeconfig(kc, layout)  # the certificate does not exist yet
    bcfg = load_client_config(boot, layout)
    assert bcfg.token == "abcdef.0123456789abcdef" and bcfg.server == "https://127.0.10.1:6443"
    # once the certificate is there the kubeconfig is valid, until it expires
    key = csr.generate_key()
    cert = tiny_ca.sign_csr(csr.create_csr_pem(key, csr.client_template("n")), lifetime=dt.timedelta(hours=1))
    PairStore(layout.host("/var/lib/kubelet/pki"), "kubelet-client").update(cert, key)
    assert is_valid_client_kubeconfig(kc, layout)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    assert not is_valid_client_kubeconfig(kc, layout, now=later)


def test_a_token_file_is_read_again_for_each_request(tmp_path):
    """A user's tokenFile (a Pod's rotated service-account token, as client-go reads it): the token sent is the file's
    current content, the one loaded when the file cannot be read."""
    token = tmp_path / "token"
    token.write_text("first\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"tokenFile": "token"}}],  # relative to the kubeconfig
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    cfg = load_client_config(kubeconfig)
    assert cfg.bearer_token() == "first"
    token.write_text("rotated\n")
    assert cfg.bearer_token() == "rotated"
    token.unlink()
    assert cfg.bearer_token() == "first"
