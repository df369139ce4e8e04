"""The built-in kube-controller-manager (`pykubeadm component kube-controller-manager`, see `app/cli.py`).

Laid out as kube's pkg/controller: one package per controller, holding the controller (`controller.py`) and the
helpers only it uses — bootstrap/, certificates/ (approver/, signer/, cleaner/, rootcacertpublisher/,
csrservingapproving/), cronjob/, daemon/, deployment/, disruption/, endpoint/, endpointslice/, ephemeral/,
garbagecollector/, job/, namespace/, nodeipam/, nodelifecycle/, persistentvolume/, podautoscaler/, podgc/,
replicaset/, serviceaccount/, statefulset/, tainteviction/, ttlafterfinished/. Each package's `__init__` names its
controller class.

At this root, what several controllers (and the scheduler) run on: runtime.py (work queue, shared informers, worker
loop, PermanentError/TemporaryError) with its metrics (metrics.py), controllerutil.py / controllerutil_api.py /
controllerutil_history.py (kube's controller_utils, Pod control, events, ControllerRevision history), dictview.py
(shared dict copies of informer objects), batchutil.py (raw REST calls and discovery) and endpointsutil.py (what
endpoint and endpointslice share). The process itself (kube's cmd/kube-controller-manager/app) is app/.
Controllers reach the API only through `pykubeadm.client`.
"""
