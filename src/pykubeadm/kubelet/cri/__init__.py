"""The kubelet's `cri` runtime: a container runtime (containerd) reached over CRI, behind `kubelet.runtimeapi`."""

from pykubeadm.kubelet.cri.runtime import CRIRuntime, connect

__all__ = ["CRIRuntime", "connect"]
