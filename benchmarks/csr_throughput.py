"""Benchmark: 1000 kubelet-client CSRs from bootstrap-token clients, approved and issued by our controller-manager.

Starts our apiserver (generated PKI, SQLite) and one `pykubeadm component kube-controller-manager` with kubeadm's
flags, creates the CSRs concurrently through several bootstrap-token clients (lightkube async, HTTPS), and measures the
time until every CSR carries a certificate, plus the CPU seconds the controller-manager (and apiserver) used meanwhile.
Prints one JSON object. Target on a 2-core machine: all 1000 issued within 20 s.

    .venv/bin/python benchmarks/csr_throughput.py [--csrs 1000] [--tokens 10] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from lightkube.resources.certificates_v1 import CertificateSigningRequest as CSR

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "controllers"))

from harness import (
    ControllerManager,
    b64,
    create_token,
    embedded_kubeconfig,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
)

from pykubeadm.client import Informer, async_client
from pykubeadm.testing.apiserver import running_apiserver


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def make_csrs(count: int) -> list[dict]:
    bodies = []
    for i in range(count):
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:bench-{i}"),
            ]
        )
        pem = (
            x509.CertificateSigningRequestBuilder()
            .subject_name(subject)
            .sign(key, hashes.SHA256())
            .public_bytes(serialization.Encoding.PEM)
        )
        bodies.append(
            {
                "apiVersion": "certificates.k8s.io/v1",
                "kind": "CertificateSigningRequest",
                "metadata": {"generateName": "csr-"},
                "spec": {
                    "request": b64(pem),
                    "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                    "usages": ["digital signature", "client auth"],
                },
            }
        )
    return bodies


async def run(api, kcm: ControllerManager, kubeconfigs: list[Path], bodies: list[dict], concurrency: int) -> dict:
    admin = async_client(api.kubeconfig(), timeout=60)
    issued: set[str] = set()
    ours: set[str] = set()
    all_issued = asyncio.Event()

    def on_event(event: str, obj, old) -> None:  # type: ignore[no-untyped-def]
        if obj.status and obj.status.certificate:
            issued.add(obj.metadata.name)
            if len(ours) == len(bodies) and ours <= issued:
                all_issued.set()

    informer = Informer(admin, CSR)
    informer.add_handler(on_event)
    watcher = asyncio.create_task(informer.run())
    await informer.synced.wait()

    clients = [async_client(k, timeout=60) for k in kubeconfigs]
    gate = asyncio.Semaphore(concurrency)

    async def create(i: int, body: dict) -> None:
        async with gate:
            obj = await clients[i % len(clients)].create(CSR.from_dict(body))
            ours.add(obj.metadata.name)

    kcm_cpu0, api_cpu0 = cpu_seconds(kcm.proc.pid), cpu_seconds(api.proc.pid)
    start = time.monotonic()
    await asyncio.gather(*(create(i, b) for i, b in enumerate(bodies)))
    created = time.monotonic() - start
    if ours <= issued:
        all_issued.set()
    try:
        await asyncio.wait_for(all_issued.wait(), timeout=300)
        done = time.monotonic() - start
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        for c in [admin, *clients]:
            await c.close()
    return {
        "csrs": len(bodies),
        "token_clients": len(kubeconfigs),
        "concurrency": concurrency,
        "seconds_to_create_all": round(created, 3),
        "seconds_until_all_issued": round(done, 3),
        "issued_per_second": round(len(bodies) / done, 1),
        "kcm_cpu_seconds": round(cpu_seconds(kcm.proc.pid) - kcm_cpu0, 2),
        "apiserver_cpu_seconds": round(cpu_seconds(api.proc.pid) - api_cpu0, 2),
        "target_seconds": 20.0,
        "meets_target": done <= 20.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csrs", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    bodies = make_csrs(args.csrs)
    with tempfile.TemporaryDirectory(prefix="csr-bench-") as tmp, running_apiserver(Path(tmp), audit_log=False) as api:
        kubeadm_rbac(api)
        service_accounts = token_request_available(api)
        if not service_accounts:
            grant_controller_roles_to_kcm_user(api)
        kubeconfigs = []
        for i in range(args.tokens):
            tid, secret = create_token(api)
            kubeconfigs.append(
                embedded_kubeconfig(
                    api, Path(tmp) / f"bootstrap-{i}.conf", "tls-bootstrap-token-user", token=f"{tid}.{secret}"
                )
            )
        kcm = ControllerManager(api, Path(tmp))
        try:
            kcm.start()
            result = asyncio.run(run(api, kcm, kubeconfigs, bodies, args.concurrency))
            result["controller_credentials"] = (
                "service-accounts" if service_accounts else "controller-manager (fallback)"
            )
        finally:
            kcm.stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
