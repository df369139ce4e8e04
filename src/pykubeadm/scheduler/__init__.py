"""The built-in kube-scheduler (`pykubeadm component kube-scheduler`, see `cli.py`): scheduler.py watches and binds,
binder.py decides with the default profile's plugins (plugins.py) over the cache (nodeinfo.py); matching.py holds the
selector, node-affinity and toleration rules the controllers share."""

__all__: list[str] = []
