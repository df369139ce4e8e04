"""The ephemeral-volume controller (controller.py)."""

from pykubeadm.controllers.ephemeral.controller import EphemeralVolumeController, ephemeral_claim

__all__ = ["EphemeralVolumeController", "ephemeral_claim"]
