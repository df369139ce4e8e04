"""The serviceaccount controller (kube's pkg/controller/serviceaccount): controller.py."""

from pykubeadm.controllers.serviceaccount.controller import ServiceAccountsController

__all__ = ["ServiceAccountsController"]
