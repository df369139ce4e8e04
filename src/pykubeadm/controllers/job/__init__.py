"""The job controller (kube's pkg/controller/job): the reconcile loop (controller.py) and its pure parts: indexes,
failure accounting, conditions (status.py)."""

from pykubeadm.controllers.job.controller import JobController

__all__ = ["JobController"]
