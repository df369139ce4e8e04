"""A local OCI registry for tests and benchmarks: Debian's docker-registry (distribution v2) on 127.0.0.1 and a free
port, storage under a tmp dir, started and stopped by pid; `push` copies an oci-archive into it with skopeo."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from pykubeadm.testing.etcd import free_port
from pykubeadm.util.child import terminate_child

__all__ = ["LocalRegistry", "htpasswd_line", "registry_skip_reason"]


def htpasswd_line(user: str, password: str) -> str:
    """One bcrypt htpasswd line (what distribution's htpasswd auth reads), made by apache2-utils' htpasswd."""
    res = subprocess.run(
        ["htpasswd", "-niB", user], input=password, capture_output=True, text=True, check=True, timeout=30
    )
    return res.stdout.strip() + "\n"


def registry_skip_reason(*, auth: bool = False) -> str | None:
    """Why a test registry cannot run here (None: it can); `auth` also needs htpasswd."""
    tools = [("docker-registry", "docker-registry"), ("skopeo", "skopeo")] + (
        [("htpasswd", "apache2-utils")] if auth else []
    )
    for tool, package in tools:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: {package})"
    return None


class LocalRegistry:
    """docker-registry serving http://127.0.0.1:<port> from `root`."""

    def __init__(self, root: Path, *, users: dict[str, str] | None = None) -> None:
        self.root = root
        #: With users, every request needs HTTP basic auth (htpasswd, bcrypt), as a private registry does.
        self.users = users or {}
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "config.yml"
        auth = ""
        if self.users:
            htpasswd = self.root / "htpasswd"
            htpasswd.write_text("".join(htpasswd_line(user, pw) for user, pw in self.users.items()))
            auth = f"auth:\n  htpasswd:\n    realm: pykubeadm-test\n    path: {htpasswd}\n"
        config.write_text(
            "version: 0.1\n"
            "log:\n  level: warn\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.root / 'data'}\n"
            f"http:\n  addr: {self.host}\n" + auth
        )
        log = open(self.root / "registry.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self.process = subprocess.Popen(
                ["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
        while True:
            try:
                with direct.open(f"http://{self.host}/v2/", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as err:
                if err.code == 401 and self.users:  # serving, and asking for credentials
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                log_text = (self.root / "registry.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"docker-registry did not serve {self.host}: {log_text}")
            time.sleep(0.02)

    def push(self, archive: Path, name: str) -> str:
        """Copy an oci-archive to `<this registry>/<name>`; returns the full reference."""
        ref = f"{self.host}/{name}"
        creds = [f"--dest-creds={user}:{pw}" for user, pw in list(self.users.items())[:1]]
        res = subprocess.run(
            [
                "skopeo",
                "copy",
                "--quiet",
                "--dest-tls-verify=false",
                *creds,
                f"oci-archive:{archive}",
                f"docker://{ref}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if res.returncode != 0:
            raise RuntimeError(f"skopeo copy to {ref} failed: {res.stderr.strip()}")
        return ref

    def stop(self) -> None:
        proc, self.process = self.process, None
        terminate_child(proc)
