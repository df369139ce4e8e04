"""Speaking CRI (the Container Runtime Interface, `runtime.v1`) to a container runtime over its unix socket.

`v1` holds the generated API; `client` the typed async client of RuntimeService and ImageService that kubeadm
(preflight, `config images pull`, `reset`) and the kubelet use; `endpoints` the `unix://` endpoint format and kubeadm's
detection among its known sockets.
"""
