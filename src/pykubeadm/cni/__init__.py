"""The Container Network Interface, as a container runtime drives it: the node's network configuration
(`confdir`: the lowest-sorting .conflist/.conf/.json of a directory, as containerd and the kubelet pick it) and the
plugin protocol (`plugins`: ADD, CHECK and DEL over a network configuration list, with the result cache that lets a
restarted runtime tear down what an earlier one set up).
"""

from pykubeadm.cni.confdir import ConfigError, NetworkConfigList, load_conf_dir, parse_network_config
from pykubeadm.cni.plugins import CacheEntry, CNIError, CNIRuntime, RuntimeConf, pod_ips

__all__ = [
    "CNIError",
    "CNIRuntime",
    "CacheEntry",
    "ConfigError",
    "NetworkConfigList",
    "RuntimeConf",
    "load_conf_dir",
    "parse_network_config",
    "pod_ips",
]
