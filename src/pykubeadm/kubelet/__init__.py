"""The built-in kubelet (`pykubeadm component kubelet`): one module per job, wired together by `kubelet.Kubelet`.

    cli          flags (+ KubeletConfiguration via config) → KubeletSettings → Kubelet.run()
    config       KubeletConfiguration file + flags → KubeletSettings (bind addresses of built-in nodes)
    kubeconfig   load kubeconfigs under the node's root dir; write the bootstrapped kubelet.conf
    api          thin async REST client (httpx, dicts) with swappable credentials
    csr          keys, CSRs, CSR objects and names, waiting for issuance by watch
    certstore    kubelet-client/-server-<ts>.pem + -current.pem; self-signed kubelet.crt/key
    certmanager  TLS bootstrap (first rotation) and rotation at 70–90 % of the lifetime
    node         Node registration, status, Lease heartbeat
    runtime      image → program, container path → host path, process groups
    probes       httpGet / tcpSocket probes
    podworker    one static Pod's processes: probes, restart back-off, status
    staticpods   watch staticPodPath, one PodWorker per manifest
    mirror       mirror Pods in the API
    server       healthz and the :10250 API (x509 / TokenReview authn, SubjectAccessReview authz)

Submodules are imported on use (the CLI dispatcher imports only `cli`), so this package re-exports nothing.
"""
