"""The built-in kube-apiserver (`pykubeadm component kube-apiserver`), run by the kubelet from kubeadm's manifest.

Request path (DESIGN.md "The apiserver request path"):
    server.py        TLS (client certs requested, not required), store, built-in objects, graceful shutdown
    app.py           aiohttp Application: middleware/ in order recovery → request info → authentication → audit →
                     authorization, then handlers/dispatch.py (one catch-all route)
    handlers/        thin verb handlers (read, watch, write, patch, delete, scale, review) and codec (JSON, YAML,
                     protobuf bodies via proto/, Table responses)
    registry/        one Strategy per kind + the generic Store (the only code that fills metadata)
    authn/ authz/ admission/   the security layers (their own package owners), wired by wiring.py
    objectsource.py  ObjectSource over the stores with watch-fed caches, for the security layers
    discovery.py, health.py, bootstrap.py (built-in namespaces, PriorityClasses, RBAC policy, namespace finalizer)

This package's __init__ imports nothing, so `pykubeadm.apiserver.authn.user` stays cheap to import.
"""
