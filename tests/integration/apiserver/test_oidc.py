"""OpenID Connect with a real apiserver: an issuer written for the test (its own RSA keys, discovery document and
JWKS, served over TLS with its own CA on 127.0.0.1), ID tokens used by the real kubectl as bearer tokens, RBAC
applied to the mapped user and groups, and 401 for expired or wrongly signed tokens; an AuthenticationConfiguration's
CEL claim mappings and claim/user validation rules."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from pykubeadm.testing.apiserver import ApiServer, generate_pki, running_apiserver

pytestmark = pytest.mark.integration

CLIENT_ID = "kubernetes"


class Issuer:
    """A minimal OIDC provider: /.well-known/openid-configuration and /keys over HTTPS."""

    def __init__(self, directory: Path):
        pki = generate_pki(directory)
        cert, key = pki.sign("oidc-issuer", server=True, ips=["127.0.0.1"], name="issuer")
        self.ca_file = pki.ca_cert
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "key-1"
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body = {
                        "issuer": issuer.url,
                        "jwks_uri": issuer.url + "/keys",
                        "id_token_signing_alg_values_supported": ["RS256"],
                    }
                elif self.path == "/keys":
                    issuer.fetches += 1
                    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(issuer.key.public_key()))
                    body = {"keys": [{**jwk, "kid": issuer.kid, "use": "sig", "alg": "RS256"}]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(cert), str(key))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def token(self, key: Any = None, kid: str | None = None, expires_in: float = 300, **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "sub": "u-123",
            "iat": now,
            "exp": now + int(expires_in),
            **claims,
        }
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})


@pytest.fixture
def issuer(tmp_path: Path) -> Iterator[Issuer]:
    iss = Issuer(tmp_path / "issuer-pki")
    iss.thread.start()
    try:
        yield iss
    finally:
        iss.server.shutdown()
        iss.server.server_close()


def _bind_viewer(api: ApiServer, group: str) -> None:
    api.kubectl("create", "clusterrolebinding", "oidc-devs-view", "--clusterrole=view", f"--group={group}")


def _whoami(api: ApiServer, token: str) -> Any:
    res = api.kubectl("auth", "whoami", "-o", "json", kubeconfig=api.kubeconfig_token(token, "oidc"))
    return json.loads(res.stdout)["status"]["userInfo"]


def _authn_config(tmp_path: Path, issuer: Issuer, **jwt_fields: Any) -> Path:
    """An AuthenticationConfiguration trusting `issuer` (its CA inline), with the given JWT authenticator fields."""
    config = tmp_path / "authn.yaml"
    jwt_authenticator = {
        "issuer": {"url": issuer.url, "audiences": [CLIENT_ID], "certificateAuthority": issuer.ca_file.read_text()},
        **jwt_fields,
    }
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1beta1",
                "kind": "AuthenticationConfiguration",
                "jwt": [jwt_authenticator],
            }
        )
    )
    return config


def test_oidc_flags_email_and_groups_rbac_and_401s(tmp_path: Path, issuer: Issuer) -> None:
    flags = [
        f"--oidc-issuer-url={issuer.url}",
        f"--oidc-client-id={CLIENT_ID}",
        "--oidc-username-claim=email",
        "--oidc-username-prefix=oidc:",
        "--oidc-groups-claim=groups",
        "--oidc-groups-prefix=oidc:",
        f"--oidc-ca-file={issuer.ca_file}",
    ]
    with running_apiserver(tmp_path / "api", extra_flags=flags) as api:
        _bind_viewer(api, "oidc:devs")
        good = issuer.token(email="jane@example.com", email_verified=True, groups=["devs", "qa"])
        who = _whoami(api, good)
        assert who["username"] == "oidc:jane@example.com"
        assert {"oidc:devs", "oidc:qa", "system:authenticated"} <= set(who["groups"])

        kc = api.kubeconfig_token(good, "oidc")
        assert api.kubectl("get", "configmaps", "-n", "kube-system", "-o", "name", kubeconfig=kc).returncode == 0
        denied = api.kubectl("get", "secrets", "-n", "kube-system", kubeconfig=kc, check=False)
        assert denied.returncode != 0
        assert 'User "oidc:jane@example.com" cannot list resource "secrets"' in denied.stderr

        outsider = issuer.token(email="eve@example.com", groups=["guests"])
        res = api.kubectl("get", "configmaps", kubeconfig=api.kubeconfig_token(outsider, "eve"), check=False)
        assert res.returncode != 0 and "forbidden" in res.stderr.lower()

        expired = issuer.token(email="jane@example.com", groups=["devs"], expires_in=-60)
        wrong_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = issuer.token(key=wrong_key, email="jane@example.com", groups=["devs"])
        unknown_kid = issuer.token(key=wrong_key, kid="other", email="jane@example.com")
        wrong_aud = issuer.token(email="jane@example.com", aud="someone-else")
        unverified = issuer.token(email="jane@example.com", email_verified=False)
        for name, token in (
            ("expired", expired),
            ("forged", forged),
            ("unknown-kid", unknown_kid),
            ("aud", wrong_aud),
            ("unverified", unverified),
        ):
            res = api.kubectl("get", "configmaps", kubeconfig=api.kubeconfig_token(token, name), check=False)
            assert res.returncode != 0 and "Unauthorized" in res.stderr, (name, res.stderr)

        # The issuer rotates its key: a token with the new kid is accepted after the apiserver re-fetches the JWKS.
        issuer.key, issuer.kid = wrong_key, "key-2"
        rotated = issuer.token(email="jane@example.com", groups=["devs"])
        deadline = time.monotonic() + 30
        while True:
            res = api.kubectl("auth", "whoami", kubeconfig=api.kubeconfig_token(rotated, "rotated"), check=False)
            if res.returncode == 0:
                break
            assert time.monotonic() < deadline, res.stderr
            time.sleep(0.5)
        assert "oidc:jane@example.com" in res.stdout


def test_authentication_config_issuer_with_claim_rules(tmp_path: Path, issuer: Issuer) -> None:
    config = _authn_config(
        tmp_path,
        issuer,
        claimValidationRules=[{"claim": "hd", "requiredValue": "example.com"}],
        claimMappings={
            "username": {"claim": "email", "prefix": "sso:"},
            "groups": {"claim": "groups", "prefix": "sso:"},
        },
    )
    with running_apiserver(tmp_path / "api", extra_flags=[f"--authentication-config={config}"]) as api:
        who = _whoami(api, issuer.token(email="joe@example.com", groups=["admins"], hd="example.com"))
        assert who["username"] == "sso:joe@example.com" and "sso:admins" in who["groups"]
        lacking = issuer.token(email="joe@example.com", groups=["admins"])
        res = api.kubectl("auth", "whoami", kubeconfig=api.kubeconfig_token(lacking, "lacking"), check=False)
        assert res.returncode != 0 and "Unauthorized" in res.stderr


def _token_review_error(api: ApiServer, token: str) -> str:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    res = api.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(review))
    status = json.loads(res.stdout)["status"]
    assert status.get("authenticated") is not True
    return str(status.get("error", ""))


def test_authentication_config_cel_rules_and_mappings(tmp_path: Path, issuer: Issuer) -> None:
    config = _authn_config(
        tmp_path,
        issuer,
        claimValidationRules=[
            {"expression": 'claims.?hd.orValue("") == "example.com"', "message": "hd must be ours"},
            {"expression": "claims.?email_verified.orValue(true) == true", "message": "unverified"},
        ],
        claimMappings={
            "username": {"expression": "'cel:' + claims.email"},
            "groups": {"expression": "claims.?roles.orValue([]).map(r, 'cel:' + r)"},
            "uid": {"expression": "'uid-' + claims.sub"},
            "extra": [{"key": "example.com/tier", "valueExpression": "claims.?tier.orValue('')"}],
        },
        userValidationRules=[{"expression": "!user.username.startsWith('cel:system:')", "message": "no system names"}],
    )
    with running_apiserver(tmp_path / "api", extra_flags=[f"--authentication-config={config}"]) as api:
        good = issuer.token(email="joe@example.com", hd="example.com", roles=["devs"], tier="gold")
        who = _whoami(api, good)
        assert who["username"] == "cel:joe@example.com"
        assert {"cel:devs", "system:authenticated"} <= set(who["groups"])
        assert who["uid"] == "uid-u-123" and who["extra"]["example.com/tier"] == ["gold"]

        # RBAC applies to the group the expression mapped
        _bind_viewer(api, "cel:devs")
        kc = api.kubeconfig_token(good, "cel")
        assert api.kubectl("get", "configmaps", "-n", "kube-system", "-o", "name", kubeconfig=kc).returncode == 0

        lacking = issuer.token(email="joe@example.com", roles=["devs"])
        res = api.kubectl("auth", "whoami", kubeconfig=api.kubeconfig_token(lacking, "lacking"), check=False)
        assert res.returncode != 0 and "Unauthorized" in res.stderr
        assert _token_review_error(api, lacking).endswith(
            "oidc: error evaluating claim validation expression: validation expression "
            '\'claims.?hd.orValue("") == "example.com"\' failed: hd must be ours'
        )

        system = issuer.token(email="system:admin", hd="example.com")
        res = api.kubectl("auth", "whoami", kubeconfig=api.kubeconfig_token(system, "system"), check=False)
        assert res.returncode != 0 and "Unauthorized" in res.stderr
        assert _token_review_error(api, system).endswith(
            "oidc: error evaluating user info validation rule: validation expression "
            "'!user.username.startsWith('cel:system:')' failed: no system names"
        )


def test_authentication_config_cel_compile_error_stops_start_up(tmp_path: Path, issuer: Issuer) -> None:
    config = _authn_config(
        tmp_path, issuer, claimMappings={"username": {"claim": "sub", "prefix": "", "expression": "claims.sub"}}
    )
    api = ApiServer(tmp_path / "api", extra_flags=[f"--authentication-config={config}"])
    try:
        with pytest.raises(RuntimeError) as e:
            api.start()
    finally:
        api.stop()
    assert "apiserver exited with" in str(e.value)
    assert 'jwt[0].claimMappings.username: Invalid value: "": claim and expression can\'t both be set' in str(e.value)
