"""The built-in kube-scheduler (`pykubeadm component kube-scheduler`, see `cli.py`): binder.py decides, scheduler.py binds."""

__all__: list[str] = []
