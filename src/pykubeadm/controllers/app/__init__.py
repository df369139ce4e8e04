"""kube-controller-manager's process (kube's cmd/kube-controller-manager/app): the command (cli.py), which
controllers run (manager.py), per-controller credentials (credentials.py), and the process shell the scheduler, proxy
and addons share: logging, signals and leader election (daemon.py), Go-style flags (flags.py), the secure health and
metrics server (serving.py) with delegated authentication and authorization (delegatedauth.py)."""
