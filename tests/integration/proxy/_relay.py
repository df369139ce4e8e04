"""A byte relay between a TCP address and a Unix socket, so a process in a test's network namespace reaches the
apiserver on the host's loopback: `python _relay.py tcp-to-unix HOST PORT SOCKET` (inside the namespace) and
`python _relay.py unix-to-tcp SOCKET HOST PORT` (on the host). A Unix socket is a file, not bound to a namespace."""

from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.transport.abort()


async def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "tcp-to-unix":
        host, port, path = argv[1], int(argv[2]), argv[3]

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            ur, uw = await asyncio.open_unix_connection(path)
            await asyncio.gather(_pipe(r, uw), _pipe(ur, w))
            w.close()
            uw.close()

        server = await asyncio.start_server(handle, host, port)
    else:
        path, host, port = argv[1], argv[2], int(argv[3])

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            ur, uw = await asyncio.open_connection(host, port)
            await asyncio.gather(_pipe(r, uw), _pipe(ur, w))
            w.close()
            uw.close()

        server = await asyncio.start_unix_server(handle, path)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
