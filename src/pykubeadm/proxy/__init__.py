"""The built-in kube-proxy (`pykubeadm component kube-proxy`): Services' ClusterIPs and NodePorts to ready endpoints.

Modules: `config` (KubeProxyConfiguration v1alpha1), `servicemap` (Services + EndpointSlices → service ports and
endpoints), `balancer` (round robin, session affinity), `userspace` (the asyncio proxier), `nftables` (the
`ip kube-proxy` table), `health` and `metrics` (10256, 10249), `server` (the process), `cli` (flags).
"""

from pykubeadm.proxy.config import ConfigError, ProxyConfig, load_config, parse_config
from pykubeadm.proxy.nftables import cleanup

__all__ = ["ConfigError", "ProxyConfig", "cleanup", "load_config", "parse_config"]
