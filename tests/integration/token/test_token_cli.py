"""`pykubeadm token create|list|delete` against a real apiserver process (running_apiserver), through --kubeconfig."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from lightkube.resources.core_v1 import Secret
from tests.conftest import run_pykubeadm

from pykubeadm.client import sync_client
from pykubeadm.pki.keys import public_key_pin
from pykubeadm.testing.apiserver import ApiServer, running_apiserver

TOKEN_RE = re.compile(r"^[a-z0-9]{6}\.[a-z0-9]{16}$")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory):
    with running_apiserver(tmp_path_factory.mktemp("token-api")) as server:
        yield server


def tok(api: ApiServer, *args: str, **kw):
    env = {"KUBECONFIG": ""}
    return run_pykubeadm("token", *args, "--kubeconfig", str(api.kubeconfig()), env=env, **kw)


def _secret(api: ApiServer, tid: str) -> Secret:
    with sync_client(api.kubeconfig()) as client:
        return client.get(Secret, f"bootstrap-token-{tid}", namespace="kube-system")


def _data(secret: Secret) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}


def test_create_list_delete_round_trip(api: ApiServer) -> None:
    res = tok(api, "create", "--description", "round trip")
    assert res.returncode == 0, res.stderr
    token = res.stdout.strip()
    assert TOKEN_RE.match(token), res.stdout
    tid, tsecret = token.split(".")

    secret = _secret(api, tid)
    assert secret.type == "bootstrap.kubernetes.io/token"
    data = _data(secret)
    assert data["token-id"] == tid
    assert data["token-secret"] == tsecret
    assert data["description"] == "round trip"
    assert data["usage-bootstrap-signing"] == "true"
    assert data["usage-bootstrap-authentication"] == "true"
    assert data["auth-extra-groups"] == "system:bootstrappers:kubeadm:default-node-token"
    expires = datetime.strptime(data["expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert timedelta(hours=23, minutes=58) < expires - datetime.now(UTC) <= timedelta(hours=24)

    res = tok(api, "list")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA", "GROUPS"]
    row = next(line for line in lines if line.startswith(token))
    assert re.match(
        rf"^{re.escape(token)}   23h         \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ   authentication,signing   round trip"
        r" {46}   system:bootstrappers:kubeadm:default-node-token$",
        row,
    ), row
    # the columns line up with the header (tabwriter: minwidth 10, padding 3)
    assert lines[0].index("TTL") == row.index("23h") == 26

    res = tok(api, "delete", tid)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f'bootstrap token "{tid}" deleted\n'
    assert token not in tok(api, "list").stdout
    res = tok(api, "delete", token)
    assert res.returncode != 0
    assert f'failed to delete bootstrap token "{tid}"' in res.stderr
    assert "not found" in res.stderr


def test_create_explicit_token_ttl_zero_and_duplicate_id(api: ApiServer) -> None:
    token = "abcdef.0123456789abcdef"
    res = tok(
        api,
        "create",
        token,
        "--ttl",
        "0",
        "--usages",
        "signing,authentication",
        "--groups",
        "system:bootstrappers:extra",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == token + "\n"
    data = _data(_secret(api, "abcdef"))
    assert "expiration" not in data
    assert data["auth-extra-groups"] == "system:bootstrappers:extra"

    row = next(line for line in tok(api, "list").stdout.splitlines() if line.startswith(token))
    assert row.split()[1:3] == ["<forever>", "<never>"]

    res = tok(api, "create", "abcdef.ffffffffffffffff")
    assert res.returncode == 1
    assert 'a token with id "abcdef" already exists' in res.stderr
    assert "ffffffffffffffff" not in res.stderr
    assert _data(_secret(api, "abcdef"))["token-secret"] == "0123456789abcdef"
    tok(api, "delete", "abcdef", check=True)


def test_create_rejects_bad_input(api: ApiServer) -> None:
    res = tok(api, "create", "not-a-token")
    assert res.returncode != 0
    assert 'the bootstrap token "not-a-token" was not of the form' in res.stderr
    res = tok(api, "create", "--usages", "bogus")
    assert res.returncode == 3
    assert "invalid bootstrap token usage string: bogus" in res.stderr
    res = tok(api, "create", "--certificate-key", "00" * 32)
    assert res.returncode == 1
    assert "cannot use --certificate-key without --print-join-command" in res.stderr
    res = tok(api, "delete", "NOPE")
    assert res.returncode == 1
    assert 'given token didn\'t match pattern "\\\\A([a-z0-9]{6})\\\\.([a-z0-9]{16})\\\\z"' in res.stderr
    res = tok(api, "delete")
    assert "missing argument; 'token delete' is missing token of form" in res.stderr


def test_print_join_command(api: ApiServer) -> None:
    ca = x509.load_pem_x509_certificate(api.pki.ca_cert.read_bytes())
    pin = public_key_pin(ca.public_key())
    res = tok(api, "create", "--print-join-command")
    assert res.returncode == 0, res.stderr
    m = re.fullmatch(
        rf"kubeadm join {api.host}:{api.port} --token ([a-z0-9]{{6}}\.[a-z0-9]{{16}}) "
        rf"--discovery-token-ca-cert-hash {pin} \n",
        res.stdout,
    )
    assert m, res.stdout
    tid = m.group(1).split(".")[0]
    assert _data(_secret(api, tid))["token-secret"] == m.group(1).split(".")[1]

    key = "ab" * 32
    res = tok(api, "create", "--print-join-command", "--certificate-key", key)
    assert res.returncode == 0, res.stderr
    assert res.stdout.endswith(f"--discovery-token-ca-cert-hash {pin} --control-plane --certificate-key {key}\n")


def test_list_yaml_and_json(api: ApiServer) -> None:
    token = "yamlid.0123456789abcdef"
    tok(api, "create", token, "--description", "for <output> & more", check=True)
    res = tok(api, "list", "-o", "yaml")
    assert res.returncode == 0, res.stderr
    docs = [d for d in yaml.safe_load_all(res.stdout) if d]
    doc = next(d for d in docs if d["token"] == token)
    assert doc["apiVersion"] == "output.kubeadm.k8s.io/v1alpha3"
    assert doc["kind"] == "BootstrapToken"
    assert doc["usages"] == ["authentication", "signing"]
    assert doc["groups"] == ["system:bootstrappers:kubeadm:default-node-token"]
    assert doc["description"] == "for <output> & more"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(doc["expires"]))
    assert 'expires: "' in res.stdout  # quoted like go-yaml, not a YAML timestamp

    res = tok(api, "list", "--output", "json")
    assert res.returncode == 0, res.stderr
    assert "\\u003coutput\\u003e \\u0026 more" in res.stdout  # Go's HTML-safe JSON
    objs = [json.loads(chunk) for chunk in re.split(r"(?m)^(?=\{)", res.stdout) if chunk.strip()]
    obj = next(o for o in objs if o["token"] == token)
    assert list(obj)[:3] == ["kind", "apiVersion", "token"]
    assert obj["description"] == "for <output> & more"
    assert '\n    "kind": "BootstrapToken",' in res.stdout

    res = tok(api, "list", "-o", "wide")
    assert res.returncode == 1
    assert 'unable to match a printer suitable for the output format "wide"' in res.stderr
    tok(api, "delete", "yamlid", check=True)


def test_kubeconfig_default_is_admin_conf_under_root(api: ApiServer, tmp_path: Path) -> None:
    root = tmp_path / "node"
    (root / "etc/kubernetes").mkdir(parents=True)
    (root / "etc/kubernetes/admin.conf").write_text(api.kubeconfig().read_text())
    res = run_pykubeadm("token", "list", root=root, env={"KUBECONFIG": ""})
    assert res.returncode == 0, res.stderr
    res = run_pykubeadm("token", "list", root=tmp_path / "empty", env={"KUBECONFIG": ""})
    assert res.returncode == 1
    assert "admin.conf" in res.stderr


def test_dry_run_creates_nothing(api: ApiServer) -> None:
    res = tok(api, "create", "dryrun.0123456789abcdef", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "[dryrun] Would create Secret 'bootstrap-token-dryrun' in namespace kube-system" in res.stdout
    assert "dryrun" not in tok(api, "list").stdout


def test_create_from_config_creates_every_token_and_prints_the_first(api: ApiServer, tmp_path: Path) -> None:
    cfg = tmp_path / "init.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubeadm.k8s.io/v1beta4",
                "kind": "InitConfiguration",
                "bootstrapTokens": [
                    {"token": "cfgone.0123456789abcdef", "ttl": "2h", "description": "first"},
                    {"token": "cfgtwo.0123456789abcdef", "usages": ["authentication", "signing"]},
                ],
            }
        )
    )
    res = tok(api, "create", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "cfgone.0123456789abcdef\n"
    assert _data(_secret(api, "cfgone"))["description"] == "first"
    assert _data(_secret(api, "cfgtwo"))["token-secret"] == "0123456789abcdef"
    res = tok(api, "create", "--config", str(cfg), "--ttl", "1h")
    assert res.returncode == 3
    assert "can not mix '--config' with arguments [ttl]" in res.stderr
    tok(api, "delete", "cfgone", "cfgtwo", check=True)


def test_list_reports_a_broken_token_secret_and_goes_on(api: ApiServer) -> None:
    from lightkube import codecs

    broken = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "bootstrap-token-brokn1", "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": {"token-id": base64.b64encode(b"brokn1").decode()},
    }
    with sync_client(api.kubeconfig()) as client:
        client.create(codecs.from_dict(broken))
    try:
        tok(api, "create", "goodid.0123456789abcdef", check=True)
        res = tok(api, "list")
        assert res.returncode == 0, res.stderr
        assert "bootstrap Token Secret has no token-secret data: bootstrap-token-brokn1" in res.stderr
        assert "goodid.0123456789abcdef" in res.stdout
        assert "brokn1" not in res.stdout
    finally:
        with sync_client(api.kubeconfig()) as client:
            client.delete(Secret, "bootstrap-token-brokn1", namespace="kube-system")
        tok(api, "delete", "goodid")


def test_kubeconfig_env_is_used_when_the_flag_is_not_given(api: ApiServer, tmp_path: Path) -> None:
    res = run_pykubeadm("token", "list", root=tmp_path / "empty", env={"KUBECONFIG": str(api.kubeconfig())})
    assert res.returncode == 0, res.stderr
    res = run_pykubeadm(
        "token",
        "list",
        "--kubeconfig",
        "/nope.conf",
        root=tmp_path / "empty",
        env={"KUBECONFIG": str(api.kubeconfig())},
    )
    assert res.returncode == 1  # the flag wins over $KUBECONFIG
    assert "nope.conf" in res.stderr


def test_join_command_pin_from_embedded_ca_data(api: ApiServer, tmp_path: Path) -> None:
    doc = yaml.safe_load(api.kubeconfig().read_text())
    cluster = doc["clusters"][0]["cluster"]
    ca_pem = Path(cluster.pop("certificate-authority")).read_bytes()
    cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    kubeconfig = tmp_path / "embedded.conf"
    kubeconfig.write_text(yaml.safe_dump(doc))
    pin = public_key_pin(x509.load_pem_x509_certificate(ca_pem).public_key())
    res = run_pykubeadm(
        "token", "create", "--print-join-command", "--kubeconfig", str(kubeconfig), env={"KUBECONFIG": ""}
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"kubeadm join {api.host}:{api.port} --token ")
    assert res.stdout.endswith(f" --discovery-token-ca-cert-hash {pin} \n")
