"""The statefulset controller (controller.py), its ordering decisions (ordering.py) and the identities of its Pods and
claims (identity.py)."""

from pykubeadm.controllers.statefulset.controller import StatefulSetController

__all__ = ["StatefulSetController"]
