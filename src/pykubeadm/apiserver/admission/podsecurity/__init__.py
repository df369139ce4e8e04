"""Pod Security admission: the Pod Security Standards checks, namespace policies and the PodSecurity plugin."""

from pykubeadm.apiserver.admission.podsecurity.plugin import PodSecurity, PodSecurityConfig, parse_pod_security_config

__all__ = ["PodSecurity", "PodSecurityConfig", "parse_pod_security_config"]
