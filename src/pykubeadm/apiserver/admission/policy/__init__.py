"""ValidatingAdmissionPolicy: CEL policies and their bindings."""

from pykubeadm.apiserver.admission.policy.plugin import ValidatingAdmissionPolicy, kinds_from_registry

__all__ = ["ValidatingAdmissionPolicy", "kinds_from_registry"]
