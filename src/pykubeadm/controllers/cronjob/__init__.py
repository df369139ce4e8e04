"""The cronjob controller (kube's pkg/controller/cronjob): controller.py."""

from pykubeadm.controllers.cronjob.controller import CronJobController

__all__ = ["CronJobController"]
