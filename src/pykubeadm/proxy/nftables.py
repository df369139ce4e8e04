"""The nftables data plane (kube-proxy's `mode: nftables`): running `nft -f -` for each sync, and `--cleanup`.

Used by `proxy.server` in nftables mode and by `--cleanup` / `pykubeadm reset`. The text comes from `nftrules`; only
kube-proxy's own table (`ip kube-proxy`, `ip6 kube-proxy`) is ever written or deleted. The first sync of a process
rebuilds the table, later ones write only what changed (`full=True`, the periodic resync, rewrites every service);
after a failed transaction the next sync rebuilds again. Chains that went unused are deleted a second later in a small
transaction of their own (kernels before 6.2 still count a just-deleted map element as a reference).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Sequence

from pykubeadm.proxy.nftrules import KUBE_PROXY_TABLE, Ruleset, build_ruleset
from pykubeadm.proxy.servicemap import ProxyTable

__all__ = ["KUBE_PROXY_TABLE", "NftError", "NftablesProxier", "build_ruleset", "cleanup", "nft_binary", "run_nft"]

log = logging.getLogger("kube-proxy")

#: A chain that went stale is deleted at least this much later.
_STALE_AGE = 1.0


class NftError(Exception):
    """nft is missing or refused a transaction."""


def nft_binary() -> str:
    """The `nft` command; NftError naming the Debian package when it is missing."""
    path = shutil.which("nft") or next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.access(p, os.X_OK)), None)
    if not path:
        raise NftError('nft not found: the nftables proxy mode needs the "nft" command (Debian package "nftables")')
    return path


def run_nft(text: str, *, check: bool = False) -> None:
    """One `nft -f -` transaction (all or nothing); NftError with nft's own message."""
    argv = [nft_binary(), *(("-c",) if check else ()), "-f", "-"]
    proc = subprocess.run(argv, input=text.encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise NftError(proc.stderr.decode(errors="replace").strip() or f"nft exited with {proc.returncode}")


def cleanup() -> bool:
    """Delete `ip kube-proxy` and `ip6 kube-proxy` (kube-proxy --cleanup); True when an error was encountered."""
    try:
        binary = nft_binary()
    except NftError:
        return False  # no nft, no table of ours to remove
    failed = False
    for fam in ("ip", "ip6"):
        text = f"add table {fam} {KUBE_PROXY_TABLE}\ndelete table {fam} {KUBE_PROXY_TABLE}\n"
        proc = subprocess.run([binary, "-f", "-"], input=text.encode(), capture_output=True, check=False)
        if proc.returncode != 0:
            log.error("Error cleaning up nftables rules: %s", proc.stderr.decode(errors="replace").strip())
            failed = True
    return failed


class NftablesProxier:
    """Programs the kernel for one node through `nft`, one IP family table each."""

    name = "nftables"

    def __init__(
        self,
        node_name: str,
        node_ips: Sequence[str],
        *,
        masquerade_bit: int = 14,
        masquerade_all: bool = False,
        cluster_cidrs: Sequence[str] = (),
        families: Sequence[int] = (4, 6),
    ):
        nft_binary()
        self.node_name = node_name
        self.node_ips = list(node_ips)
        self.masquerade_bit = masquerade_bit
        self.masquerade_all = masquerade_all
        self.cluster_cidrs = list(cluster_cidrs)
        self.families = list(families)
        self._state: dict[int, Ruleset] = {}
        self._stale: dict[int, dict[str, float]] = {}  # chain → when it went stale
        self._lock = asyncio.Lock()

    def sync_blocking(self, table: ProxyTable, *, full: bool = False) -> None:
        """One transaction per family: a rebuild first (and after a failure), else what changed (all with `full`)."""
        now = time.monotonic()
        for fam in self.families:
            prev = self._state.pop(fam, None)  # unknown until this transaction succeeds
            stale = self._stale.setdefault(fam, {})
            ripe = sorted(c for c, since in stale.items() if now - since >= _STALE_AGE) if prev else []
            ruleset = build_ruleset(
                table,
                family=fam,
                node_name=self.node_name,
                node_ips=self.node_ips,
                masquerade_bit=self.masquerade_bit,
                masquerade_all=self.masquerade_all,
                cluster_cidrs=self.cluster_cidrs,
                previous=prev,
                full=full,
                stale_chains=ripe,
            )
            run_nft(ruleset.text)
            if prev is None:
                stale.clear()  # the table was rebuilt
            for chain in ripe:
                stale.pop(chain, None)
            live = ruleset.chains
            for chain in live:
                stale.pop(chain, None)
            for chain in (prev.chains if prev else set()) - live:
                stale.setdefault(chain, now)
            self._state[fam] = ruleset

    @property
    def has_stale_chains(self) -> bool:
        return any(self._stale.values())

    def delete_stale_blocking(self) -> None:
        """Delete the chains stale for long enough, in their own small transaction (no full sync needed)."""
        now = time.monotonic()
        for fam, stale in self._stale.items():
            ripe = sorted(c for c, since in stale.items() if now - since >= _STALE_AGE)
            if not ripe:
                continue
            if fam not in self._state:
                continue  # the next sync rebuilds the table anyway
            prefix = f"{'ip' if fam == 4 else 'ip6'} {KUBE_PROXY_TABLE}"
            run_nft("".join(f"delete chain {prefix} {chain}\n" for chain in ripe))
            for chain in ripe:
                del stale[chain]

    async def sync(self, table: ProxyTable, *, full: bool = False) -> None:
        async with self._lock:
            await asyncio.to_thread(lambda: self.sync_blocking(table, full=full))

    async def delete_stale(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self.delete_stale_blocking)

    async def close(self) -> None:
        """kube-proxy leaves its rules in place when it stops (only --cleanup removes them)."""
