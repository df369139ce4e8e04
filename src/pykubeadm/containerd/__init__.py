"""A node's own containerd (Debian's 1.6 with runc): its config (`config`), the daemon as a child process (`daemon`),
and images put into it offline (`ociimage` writes OCI archives, `images` builds kubeadm's pause image and imports).
The kubelet and kubeadm speak to it only through CRI (`pykubeadm.cri`).
"""
