"""`pykubeadm token`: bootstrap token commands. For now only `token generate` (no cluster needed); create, list and
delete are added by the cluster-side work as further sub-commands of this group."""

from __future__ import annotations

import click

from pykubeadm.bootstrap.token import generate_token

__all__ = ["command"]


@click.group(
    name="token",
    help="""This command manages bootstrap tokens. It is optional and needed only for advanced use cases.

In short, bootstrap tokens are used for establishing bidirectional trust between a client and a server.
A bootstrap token can be used when a client (for example a node that is about to join the cluster) needs
to trust the server it is talking to. Then a bootstrap token with the "signing" usage can be used.
bootstrap tokens can also function as a way to allow short-lived authentication to the API Server
(the token serves as a way for the API Server to trust the client), for example for doing the TLS Bootstrap.

What is a bootstrap token more exactly?
 - It is a Secret in the kube-system namespace of type "bootstrap.kubernetes.io/token".
 - A bootstrap token must be of the form "[a-z0-9]{6}.[a-z0-9]{16}". The former part is the public token ID,
   while the latter is the Token Secret and it must be kept private at all circumstances!
 - The name of the Secret must be named "bootstrap-token-(token-id)".""",
)
def command() -> None:
    """Manage bootstrap tokens"""


@command.command(name="generate")
def generate() -> None:
    """Generate and print a bootstrap token, but do not create it on the server

    This command will print out a randomly-generated bootstrap token that can be used with
    the "init" and "join" commands.

    You don't have to use this command in order to generate a token. You can do so
    yourself as long as it is in the format "[a-z0-9]{6}.[a-z0-9]{16}". This
    command is provided for convenience to generate tokens in the given format.

    You can also use "kubeadm init" without specifying a token and it will
    generate and print one for you.
    """
    click.echo(generate_token())
