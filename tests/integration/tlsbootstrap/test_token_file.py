"""Issue 9, static token file (`--token-auth-file`) in the real kube-apiserver process: the page's
`token,user,uid,"group1,group2"` lines (comments and blank lines ignored) authenticate as that user and groups, anything
else is Unauthorized, and a malformed file stops kube-apiserver at start with the file and line number."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.tlsbootstrap.cluster import TOKEN_FILE, Machine, PageApiServer, make_operator_ca, page_token

pytestmark = pytest.mark.integration


def whoami(api: PageApiServer, token: str) -> subprocess.CompletedProcess[str]:
    return api.kubectl("auth", "whoami", "-o", "json", kubeconfig=api.kubeconfig_token(token, "t"), check=False)


def test_token_file_users_and_groups(tmp_path: Path) -> None:
    master = Machine(tmp_path / "master")
    make_operator_ca(master)
    bootstrap, multi = page_token(), page_token()
    master.write(
        TOKEN_FILE,
        "# token,user,uid,groups\n"
        "\n"
        f'{bootstrap},kubelet-bootstrap,10001,"system:bootstrappers"\n'
        f'{multi},ops,42,"system:bootstrappers:workers,ops-team"\n',
        0o600,
    )
    api = PageApiServer(
        master, tmp_path / "apiserver", host="127.0.0.1", auth_flags=[f"--token-auth-file={TOKEN_FILE}"]
    )
    try:
        api.start(timeout=60)
        for token, user, uid, groups in (
            (bootstrap, "kubelet-bootstrap", "10001", ["system:authenticated", "system:bootstrappers"]),
            (multi, "ops", "42", ["ops-team", "system:authenticated", "system:bootstrappers:workers"]),
        ):
            res = whoami(api, token)
            assert res.returncode == 0, res.stderr
            info = json.loads(res.stdout)["status"]["userInfo"]
            assert (info["username"], info.get("uid"), sorted(info["groups"])) == (user, uid, groups)
        for wrong in (bootstrap.upper(), bootstrap[:-1], bootstrap + "0", "kubelet-bootstrap"):
            res = whoami(api, wrong)
            assert res.returncode != 0 and "Unauthorized" in res.stderr, (wrong, res.stderr)
        log = api.log_path.read_text(errors="replace")
        assert bootstrap not in log and multi not in log  # secrets never logged
    finally:
        api.stop()


@pytest.mark.parametrize(
    ("content", "line", "detail"),
    [
        ('# ok\n\nabc,kubelet-bootstrap,10001,"system:bootstrappers\n', 3, 'extraneous or missing "'),
        ("abc,user,1\nonly,two\n", 2, "must have at least 3 columns"),
    ],
)
def test_malformed_token_file_stops_the_apiserver(tmp_path: Path, content: str, line: int, detail: str) -> None:
    master = Machine(tmp_path / "master")
    master.write(TOKEN_FILE, content, 0o600)
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    res = subprocess.run(
        [sys.executable, "-m", "pykubeadm", "--root-dir", str(master.root), "component", "kube-apiserver",
         f"--token-auth-file={TOKEN_FILE}", "--etcd-servers=memory://", "--bind-address=127.0.0.1",
         "--secure-port=0"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert res.returncode != 0
    err = res.stdout + res.stderr
    assert "--token-auth-file" in err and f"line {line}" in err and detail in err, err
    assert "abc" not in err.replace(str(master.root), "")  # the token itself is not echoed
