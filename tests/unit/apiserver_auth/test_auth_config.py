"""build_auth from kube-apiserver flags: what gets enabled, and startup errors that name the flag."""

from __future__ import annotations

import pytest

from pykubeadm.apiserver.authn.config import AuthConfigError, build_auth
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from tests.unit.apiserver_auth.helpers import BOOTSTRAP_TOKEN, STATIC_TOKEN, kubeadm_flags


def test_kubeadm_flags_build_the_full_chain(pki_dir, source):
    cfg = build_auth(kubeadm_flags(pki_dir), source)
    assert cfg.authorization_modes == ("Node", "RBAC")
    assert cfg.admission.names == [
        "NamespaceLifecycle",
        "LimitRanger",
        "ServiceAccount",
        "NodeRestriction",
        "PodSecurity",
        "Priority",
        "DefaultTolerationSeconds",
        "DefaultStorageClass",
        "StorageObjectInUseProtection",
        "CertificateApproval",
        "CertificateSigning",
        "CertificateSubjectRestriction",
        "MutatingAdmissionWebhook",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionWebhook",
        "ResourceQuota",
        "RBACEscalationCheck",
    ]
    assert cfg.rbac is not None


def test_admission_control_config_file_errors_name_the_flag_and_field(pki_dir, source, tmp_path):
    flags = kubeadm_flags(pki_dir)
    flags["admission-control-config-file"] = str(tmp_path / "missing.yaml")
    with pytest.raises(AuthConfigError, match=r"--admission-control-config-file: open .*missing\.yaml"):
        build_auth(flags, source)
    bad = tmp_path / "admission.yaml"
    bad.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n"
        "  path: psa.yaml\n"
    )
    (tmp_path / "psa.yaml").write_text(
        "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
        "defaults: {enforce: strict}\n"
    )
    flags["admission-control-config-file"] = str(bad)
    with pytest.raises(AuthConfigError, match=r'defaults\.enforce: Invalid value: "strict"'):
        build_auth(flags, source)
    (tmp_path / "psa.yaml").write_text(
        "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
        "defaults: {enforce: baseline}\n"
    )
    cfg = build_auth(flags, source)
    psa = next(p for p in cfg.admission.plugins if getattr(p, "name", "") == "PodSecurity")
    assert str(psa.config.defaults.enforce) == "baseline:latest"


async def test_bootstrap_tokens_only_with_the_flag(pki_dir, source):
    flags = kubeadm_flags(pki_dir)
    del flags["enable-bootstrap-token-auth"]
    cfg = build_auth(flags, source)
    with pytest.raises(AuthenticationError):
        await cfg.authenticator(AuthRequest({"Authorization": f"Bearer {BOOTSTRAP_TOKEN}"}))
    assert (
        await cfg.authenticator(AuthRequest({"Authorization": f"Bearer {STATIC_TOKEN}"}))
    ).name == "kubelet-bootstrap"


async def test_anonymous_auth_false_returns_none(pki_dir, source):
    flags = {**kubeadm_flags(pki_dir), "anonymous-auth": "false"}
    assert await build_auth(flags, source).authenticator(AuthRequest({})) is None


async def test_default_mode_is_always_allow_but_masters_first(source):
    cfg = build_auth({}, source)
    anon = await cfg.authenticator(AuthRequest({}))
    assert (await cfg.authorizer(Attributes(anon, "delete", True, resource="nodes")))[0] is Decision.ALLOW


@pytest.mark.parametrize(
    "flags,message",
    [
        ({"authorization-mode": "Node,Magic"}, 'authorization mode "Magic" is not a valid mode'),
        ({"authorization-mode": "Webhook"}, "not supported"),
        ({"enable-admission-plugins": "NodeRestriction,Bogus"}, 'plugin "Bogus" is unknown'),
        ({"client-ca-file": "/nonexistent/ca.crt"}, "--client-ca-file: open /nonexistent/ca.crt"),
        ({"service-account-key-file": "/nonexistent/sa.pub"}, "--service-account-key-file"),
        ({"anonymous-auth": "maybe"}, '"--anonymous-auth"'),
    ],
)
def test_bad_flags_are_startup_errors(source, flags, message):
    with pytest.raises(AuthConfigError, match=message):
        build_auth(flags, source)


def test_malformed_token_file_is_a_startup_error_with_line(tmp_path, source):
    f = tmp_path / "tokens.csv"
    f.write_text("# header\ngood,user,1\nbad-line\n")
    with pytest.raises(
        AuthConfigError, match=r"--token-auth-file: token file '.*tokens.csv' line 3: must have at least 3"
    ):
        build_auth({"token-auth-file": str(f)}, source)


def test_resolve_path_maps_container_paths(pki_dir, source):
    flags = {"client-ca-file": "/etc/kubernetes/pki/ca.crt"}
    cfg = build_auth(flags, source, resolve_path=lambda p: pki_dir / p.rsplit("/", 1)[-1])
    assert cfg.authenticator is not None


def test_disable_admission_plugins(pki_dir, source):
    flags = {**kubeadm_flags(pki_dir), "disable-admission-plugins": ["ServiceAccount", "Priority"]}
    names = build_auth(flags, source).admission.names
    assert "ServiceAccount" not in names and "Priority" not in names and "NodeRestriction" in names


def test_default_plugins_not_implemented_are_logged_once(pki_dir, source, caplog):
    flags = kubeadm_flags(pki_dir)
    flags["disable-admission-plugins"] = "DefaultStorageClass"
    with caplog.at_level("WARNING", logger="pykubeadm.apiserver"):
        cfg = build_auth(flags, source)
    lines = [r.getMessage() for r in caplog.records if "not implemented by pykubeadm" in r.getMessage()]
    assert len(lines) == 1
    assert "TaintNodesByCondition" in lines[0] and "RuntimeClass" in lines[0]
    assert "DefaultStorageClass" not in lines[0]  # disabled: not active, so not reported
    for implemented in (
        "PodSecurity",
        "MutatingAdmissionWebhook",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionWebhook",
    ):
        assert implemented not in lines[0] and implemented in cfg.admission.names
    flags["disable-admission-plugins"] = "PodSecurity,ValidatingAdmissionPolicy"
    assert "PodSecurity" not in build_auth(flags, source).admission.names
