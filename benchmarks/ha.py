"""An HA lab under failure: bring-up of 3 control planes (stacked etcd, HAProxy) + 2 workers; failover, the time from
killing the node that holds the kube-controller-manager Lease until a new node's CSR is issued (the new leader's
signer and approver at work); the p50/p99 latency of apiserver writes (ConfigMap creates) through HAProxy with that
control plane still down. Prints JSON.

Targets on a 2-core machine: bring-up <= 20 s, failover <= 20 s (bounded below by the 15 s lease duration), write
p99 <= 100 ms.
Run: .venv/bin/python benchmarks/ha.py [--writes 300] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PREFIX = "127.0.35."


def _pykubeadm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    env["PYKUBEADM_LAB_ADDRESS_PREFIX"] = PREFIX
    return subprocess.run([sys.executable, "-m", "pykubeadm", *args], capture_output=True, text=True, env=env)


def _check(res: subprocess.CompletedProcess[str], what: str) -> None:
    if res.returncode != 0:
        raise SystemExit(f"{what} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")


def _issued_for(client, node: str) -> bool:  # type: ignore[no-untyped-def]
    import base64

    from cryptography import x509
    from cryptography.x509.oid import NameOID
    from lightkube.resources.certificates_v1 import CertificateSigningRequest

    for csr in client.list(CertificateSigningRequest):
        req = x509.load_pem_x509_csr(base64.b64decode(csr.spec.request))
        cn = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        if cn == f"system:node:{node}" and csr.status and csr.status.certificate:
            return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.client import sync_client
    from pykubeadm.lab.status import lease_holder_node

    result: dict[str, object] = {"machine_cores": os.cpu_count(), "control_planes": 3, "workers": args.workers}
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as tmp:
        lab = Path(tmp) / "lab"
        try:
            t0 = time.monotonic()
            _check(
                _pykubeadm(
                    "lab", "up", "--topology", "loopback", "--dir", str(lab), "--control-planes", "3", "--workers", str(args.workers),
                    "--datastore", "etcd",
                ),
                "lab up",
            )  # fmt: skip
            result["bring_up_s"] = round(time.monotonic() - t0, 2)
            admin = lab / "lab-control-plane2/etc/kubernetes/admin.conf"
            with sync_client(admin) as client:
                deadline = time.monotonic() + 60
                leader = None
                while leader is None and time.monotonic() < deadline:
                    leader = lease_holder_node(lab, "kube-controller-manager")
                    time.sleep(0.2)
                result["leader_stopped"] = leader
                if leader == "lab-control-plane2":
                    admin = lab / "lab-control-plane/etc/kubernetes/admin.conf"
            with sync_client(admin) as client:
                t1 = time.monotonic()
                _check(_pykubeadm("lab", "stop", "--dir", str(lab), str(leader)), "lab stop")
                join = subprocess.Popen(
                    [sys.executable, "-m", "pykubeadm", "lab", "join", "--dir", str(lab)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env={**{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"},
                         "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX},
                )  # fmt: skip
                new_node = f"lab-worker{args.workers + 1}" if args.workers else "lab-worker"
                while not _issued_for(client, new_node):
                    if time.monotonic() - t1 > 180:
                        raise SystemExit("no CSR issued within 180 s of the leader's node going down")
                    time.sleep(0.1)
                result["failover_until_csr_issued_s"] = round(time.monotonic() - t1, 2)
                out, _ = join.communicate(timeout=240)
                if join.returncode != 0:
                    raise SystemExit(f"lab join after failover failed:\n{out.decode(errors='replace')[-3000:]}")
                result["new_leader"] = lease_holder_node(lab, "kube-controller-manager")
                lat = []
                for i in range(args.writes):
                    cm = ConfigMap(metadata=ObjectMeta(name=f"bench-{i}", namespace="default"), data={"i": str(i)})
                    s = time.perf_counter()
                    client.create(cm)
                    lat.append((time.perf_counter() - s) * 1000)
                lat.sort()
                result["writes_with_one_control_plane_down"] = {
                    "count": len(lat),
                    "p50_ms": round(statistics.median(lat), 2),
                    "p99_ms": round(lat[max(0, int(len(lat) * 0.99) - 1)], 2),
                    "max_ms": round(lat[-1], 2),
                }
        finally:
            down = _pykubeadm("lab", "down", "--dir", str(lab))
            result["lab_down_ok"] = down.returncode == 0
    result["targets"] = {"bring_up_s": 20, "failover_until_csr_issued_s": 20, "write_p99_ms": 100}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
