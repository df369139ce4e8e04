"""The kubelet's `builtin` runtime: Pods as processes on the node, for the images only pykubeadm can run (its
control-plane components, etcd, kube-proxy, CoreDNS and the lab's addons) and for nodes without a CRI runtime.
Containers are named `pykubeadm://<id>`.

    runtime          image → program, container paths → host paths, process start and stop
    images           image → program: the built-in map, the node's image map file, shell images
    podworker        one Pod (static or API): volumes, init containers, restarts, deadline, termination, status
    containerworker  one container's process: start, probes, preStop, stop, its ContainerStatus and record
    shim             per-container shim: containers that outlive the kubelet, adopted by a restarted one
    sandbox          the native launcher: a container in its own mount, PID and UTS namespaces
    native/          C sources of pause, pod-sandbox and cri-log, built on first use
    containment      what confines an API Pod's containers: root layer, securityContext, cgroups
    confinement      a container's securityContext as the sandbox launcher's options
    cgroups          the cgroupfs layout of the kubelet: QoS classes, Pods, containers
    podnetwork       a Pod's own network namespace on the node's CNI network; netns: its file
    forkserver       control-plane containers forked from an interpreter that imported them
    zygote           a lab's warm kubelets and joins, forked from one interpreter

Reached only from the kubelet's selection points (see `pykubeadm.kubelet`). Submodules are imported on use, so
this package re-exports nothing.
"""
