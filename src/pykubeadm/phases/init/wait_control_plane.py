"""init phase `wait-control-plane`: the kubelet's healthz, then each control-plane component's health endpoint.

While it waits for the components, a thread imports what the API phases after it run (the Kubernetes client, ~0.2 s
of CPU), so that `upload-config` does not spend that once the API server answers."""

from __future__ import annotations

import contextlib
import importlib
import threading
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

__all__ = ["PHASE"]

#: What init's phases after this one import when they run (upload-config, mark-control-plane, bootstrap-token, the
#: addons): each phase imports its own, as a `kubeadm init phase ...` run of it alone would.
API_PHASE_MODULES = (
    "pykubeadm.client",
    "lightkube.resources.core_v1",
    "pykubeadm.phases.apply",
    "pykubeadm.phases.uploadconfig",
    "pykubeadm.phases.patchnode",
    "pykubeadm.phases.markcontrolplane",
    "pykubeadm.phases.bootstraptoken",
    "pykubeadm.phases.addons.dns",
    "pykubeadm.phases.addons.proxy",
)

_CONTROL_PLANE_HELP = """A control plane component may have crashed or exited when started by the kubelet.
With the built-in kubelet, each static Pod's log is under {logs}"""


def _import_api_phase_modules() -> None:
    for name in API_PHASE_MODULES:
        with contextlib.suppress(Exception):  # a failing import fails again, and says why, in the phase that uses it
            importlib.import_module(name)


def run(data: InitData) -> None:
    # The health checks (and their YAML and HTTP clients) are imported only by a run that waits.
    from pykubeadm.api import format_duration
    from pykubeadm.phases.waitcontrolplane import (
        KUBELET_TROUBLESHOOTING,
        component_checks,
        kubelet_healthz_url,
        wait_healthy,
        wait_kubelet_healthy,
    )

    manifests = c.KUBERNETES_DIR + "/" + c.MANIFESTS_SUBDIR
    timeouts = data.cfg.init.timeouts
    cp_timeout = (timeouts.control_plane_component_health_check if timeouts else None) or (
        c.CONTROL_PLANE_COMPONENT_HEALTH_CHECK_TIMEOUT
    )
    kubelet_timeout = (timeouts.kubelet_health_check if timeouts else None) or c.KUBELET_HEALTH_CHECK_TIMEOUT
    if data.dry_run:
        data.out("[dryrun] Would wait for the kubelet and the control plane to become healthy")
        return
    data.out(
        f"[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory "
        f'"{manifests}"'
    )
    url = kubelet_healthz_url(data.layout.kubelet_config, data.cfg.kubelet)
    try:
        wait_kubelet_healthy(url, kubelet_timeout, data.out)
    except KubeadmError as err:
        kubelet_help = "Unfortunately, an error has occurred, likely caused by:\n" + KUBELET_TROUBLESHOOTING
        raise KubeadmError(f"{err}\n\n{kubelet_help.format(log=data.real_layout.kubelet_log_file)}") from err
    names = {n: data.layout.manifest(n) for n in c.CONTROL_PLANE_COMPONENTS if data.layout.manifest(n).exists()}
    checks = component_checks(names)
    data.out(
        "[control-plane-check] Waiting for healthy control plane components. This can take up to "
        f"{format_duration(cp_timeout)}"
    )
    for check in checks:
        data.out(f"[control-plane-check] Checking {check.name} at {check.url}")
    importing = threading.Thread(target=_import_api_phase_modules, name="import-api-phases", daemon=True)
    importing.start()
    try:
        wait_healthy(checks, cp_timeout.total_seconds(), data.out)
    except KubeadmError as err:
        help_text = _CONTROL_PLANE_HELP.format(logs=data.real_layout.pod_log_dir)
        raise KubeadmError(f"{err}\n\n{help_text}") from err
    importing.join()


PHASE: Phase[InitData] = Phase(
    name="wait-control-plane",
    short="Wait for the control plane to start",
    run=run,
    inherit_flags=("config", "dry-run"),
)
