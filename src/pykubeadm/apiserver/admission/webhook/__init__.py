"""Admission webhooks (admissionregistration.k8s.io/v1): matching, calling, and the two plugins."""

from pykubeadm.apiserver.admission.webhook.plugin import MutatingWebhooks, ValidatingWebhooks

__all__ = ["MutatingWebhooks", "ValidatingWebhooks"]
