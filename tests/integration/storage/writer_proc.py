"""A writer process for the kill -9 tests: `python writer_proc.py URL PREFIX`.

Opens the store, prints READY, then runs 8 concurrent writers forever: writers 0-3 create new keys, writers 4-7 CAS-
update one counter key each. After every acknowledged write it prints `ACK <revision> <key> <value>` (flushed), so
the parent knows exactly which writes were acknowledged when it kills this process.
"""

from __future__ import annotations

import asyncio
import sys

from pykubeadm.storage import open_store


async def main(url: str, prefix: str) -> None:
    store = await open_store(url)
    out = sys.stdout

    def ack(rev: int, key: str, value: bytes) -> None:
        out.write(f"ACK {rev} {key} {value.decode()}\n")
        out.flush()

    async def creator(w: int) -> None:
        i = 0
        while True:
            kv = await store.create(f"{prefix}new/{w}-{i}", f"{w}-{i}".encode())
            ack(kv.mod_revision, kv.key, kv.value)
            i += 1

    async def updater(w: int) -> None:
        kv = await store.create(f"{prefix}counter/{w}", b"0")
        ack(kv.mod_revision, kv.key, kv.value)
        n = 0
        while True:
            n += 1
            kv = await store.update(kv.key, str(n).encode(), kv.mod_revision)
            ack(kv.mod_revision, kv.key, kv.value)

    print("READY", flush=True)
    await asyncio.gather(*(creator(w) for w in range(4)), *(updater(w) for w in range(4, 8)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
