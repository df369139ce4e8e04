"""The built-in kubelet (`pykubeadm component kubelet`): one module per job, wired together by `kubelet.Kubelet`.

    cli          flags (+ KubeletConfiguration via config) → KubeletSettings → Kubelet.run()
    config       KubeletConfiguration file + flags → KubeletSettings (bind addresses of built-in nodes)
    kubeconfig   load kubeconfigs under the node's root dir; write the bootstrapped kubelet.conf
    api          thin async REST client (aiohttp, dicts) with swappable credentials
    csr          keys, CSRs, CSR objects and names, waiting for issuance by watch
    certstore    kubelet-client/-server-<ts>.pem + -current.pem; self-signed kubelet.crt/key
    certmanager  TLS bootstrap (first rotation) and rotation at 70–90 % of the lifetime
    node         Node registration, status (capacity, maxPods, pressure), Lease heartbeat
    probes       httpGet / tcpSocket probes (exec probes run in the container worker)
    podstatus    phase, conditions, qosClass as the kubelet computes them
    pods         API Pods bound to the node: watch, admission (maxPods), status writes, confirmed deletion
    events       core/v1 Events from the kubelet
    servicelinks Service environment variables (list+watch of Services)
    containerref find a container for logs, exec, attach and port-forward
    staticpods   watch staticPodPath, one PodWorker per manifest
    mirror       mirror Pods in the API
    server       healthz and the :10250 API (x509 / TokenReview authn, SubjectAccessReview authz)

The runtime boundary, and the two runtimes behind it:

    runtimeapi   the boundary, shaped like CRI (RuntimeService + ImageService, in CRI's messages)
    runtimeroute which runtime runs a Pod (`builtin` or `cri`), and the node's CRI runtime
    cri/         `cri`: containerd over CRI (CRIRuntime) and the pod worker that drives it through the boundary
    builtin/     `builtin`: the process runtime (image map, shim, sandbox launcher, native helpers, cgroups and
                 containment, the Pod network, fork server and zygote) and its pod and container workers

Only the selection points (`kubelet`, `cli`, `service`, `pods`, `staticpods`, `runtimeroute`) import `builtin/`;
`cri/` and `builtin/` never import each other (tests/unit/kubelet/test_boundary.py).

Submodules are imported on use (the CLI dispatcher imports only `cli`), so this package re-exports nothing.
"""
