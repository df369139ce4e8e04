"""The request filter chain as aiohttp middleware factories, in kube-apiserver's order:
recovery → request info → authentication → max in flight → impersonation → audit → authorization (then the verb
handlers)."""

from pykubeadm.apiserver.middleware.admissionrecord import admission_record_middleware
from pykubeadm.apiserver.middleware.audit import audit_middleware
from pykubeadm.apiserver.middleware.authentication import authentication_middleware
from pykubeadm.apiserver.middleware.authorization import authorization_middleware
from pykubeadm.apiserver.middleware.impersonation import impersonation_middleware
from pykubeadm.apiserver.middleware.maxinflight import InflightLimits, max_in_flight_middleware
from pykubeadm.apiserver.middleware.recovery import recovery_middleware
from pykubeadm.apiserver.middleware.requestinfo import request_info_middleware

__all__ = [
    "InflightLimits",
    "admission_record_middleware",
    "audit_middleware",
    "authentication_middleware",
    "authorization_middleware",
    "impersonation_middleware",
    "max_in_flight_middleware",
    "recovery_middleware",
    "request_info_middleware",
]
