"""The persistent-volume controllers: the binder (binder.py), the protection finalizers (protection.py) and the
claim/volume matching they and the scheduler's volume-binding step share (matching.py)."""

from pykubeadm.controllers.persistentvolume.binder import PersistentVolumeController
from pykubeadm.controllers.persistentvolume.protection import PVCProtectionController, PVProtectionController

__all__ = ["PVCProtectionController", "PVProtectionController", "PersistentVolumeController"]
