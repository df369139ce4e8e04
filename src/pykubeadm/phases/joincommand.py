"""The `kubeadm join …` command kubeadm prints after init and for `token create --print-join-command` (§6.3, §8.2).

The endpoint is the admin kubeconfig's server without `https://`; the CA pin is over ca.crt's public key. The
multi-line form uses `\\` + newline + TAB between parts, exactly as kubeadm's template; the one-line form drops them.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["WITHHELD", "join_command", "one_line"]

#: What replaces a token or certificate key that must not be printed.
WITHHELD = "<value withheld>"


def join_command(
    endpoint: str,
    token: str,
    ca_cert_hashes: Sequence[str],
    *,
    control_plane: bool = False,
    certificate_key: str = "",
    program: str = "kubeadm",
) -> str:
    """The multi-line join command (kubeadm's joinCommandTemplate)."""
    text = f"{program} join {endpoint} --token {token} \\\n"
    text += "".join(f"\t--discovery-token-ca-cert-hash {h} " for h in ca_cert_hashes)
    if control_plane:
        text += "\\\n\t--control-plane "
        if certificate_key:
            text += f"--certificate-key {certificate_key}"
    return text


def one_line(command: str) -> str:
    """The single-line form printed by `token create --print-join-command`."""
    return command.replace("\\\n", "").replace("\t", "")
