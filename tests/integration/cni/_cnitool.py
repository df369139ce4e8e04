"""A cnitool of pykubeadm.cni for the integration tests: run inside a node's namespace, one command per process.

    _cnitool.py add|check|del '{"conflist": PATH, "cache": DIR, "id": ID, "netns": PATH, "caps": {...}}'

Prints {"result": ...} or {"error": message, "code": N, "msg": ...}; never keeps state between runs (the cache does).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pykubeadm.cni import CNIError, CNIRuntime, RuntimeConf, parse_network_config


def main() -> None:
    command, opts = sys.argv[1], json.loads(sys.argv[2])
    runtime = CNIRuntime(opts.get("bin", ["/usr/lib/cni"]), Path(opts["cache"]))
    net = parse_network_config(Path(opts["conflist"]).read_bytes(), opts["conflist"]) if opts.get("conflist") else None
    rt = RuntimeConf(
        opts["id"],
        opts["netns"],
        opts.get("ifname", "eth0"),
        tuple((k, v) for k, v in opts.get("args", [])),
        opts.get("caps", {}),
    )
    try:
        if command == "add":
            assert net is not None
            out: dict[str, object] = {"result": runtime.add(net, rt)}
        elif command == "check":
            assert net is not None
            runtime.check(net, rt)
            out = {"result": "ok"}
        else:
            out = {"result": runtime.delete(net, rt, name=opts.get("name"))}
    except CNIError as e:
        out = {"error": str(e), "code": e.code, "msg": e.msg}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
