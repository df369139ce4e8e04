"""The lab's network addon, a built-in kindnetd: run as a hostNetwork DaemonSet (`manifests`), each instance
(`agent`) writes its node's CNI configuration list from the node's podCIDR (`conflist`) and routes the other
nodes' pod CIDRs through their InternalIPs (`routes`), masquerading only what leaves the cluster's Pod network
(`masq`). `pykubeadm component kindnetd` (`cli`) is its program, run by
the built-in runtime for kind's image `docker.io/kindest/kindnetd`.
"""
