"""Admission for the built-in kube-apiserver: attributes, plugin protocols, the chain and the plugins."""

from pykubeadm.apiserver.admission.chain import AdmissionChain
from pykubeadm.apiserver.admission.interfaces import (
    AdmissionAttributes,
    AdmissionError,
    MutatingPlugin,
    Operation,
    ValidatingPlugin,
    forbidden,
)

__all__ = [
    "AdmissionAttributes",
    "AdmissionChain",
    "AdmissionError",
    "MutatingPlugin",
    "Operation",
    "ValidatingPlugin",
    "forbidden",
]
