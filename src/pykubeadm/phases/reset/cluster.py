"""What `reset` reads from the cluster: the ClusterConfiguration in kube-system/kubeadm-config, with a short retry.

kubeadm's reset loads it through `--kubeconfig` (admin.conf) before anything else and carries on with defaults when
the cluster cannot be read (a warning, never an error). The retry is short on purpose: a node being reset often has
its apiserver already gone, and waiting a minute for it helps nobody.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.phases.clusterconfig import announce_config_read, cluster_configuration_of

if TYPE_CHECKING:
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.api import ClusterConfiguration

__all__ = ["FETCH_TIMEOUT", "fetch_cluster_configuration"]

log = logging.getLogger(__name__)

#: Total time spent trying to read kubeadm-config (kubeadm's GetConfigMapWithShortRetry is a few seconds too).
FETCH_TIMEOUT = 3.0
_REQUEST_TIMEOUT = 2.0
_INTERVAL = 0.25


def _get_configmap(kubeconfig: Path, deadline: float) -> ConfigMap:
    # the Kubernetes client (~0.2 s of imports) only on a node that has admin.conf
    import httpx2
    from lightkube import ApiError
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.client import sync_client

    with sync_client(kubeconfig, timeout=_REQUEST_TIMEOUT) as client:
        while True:
            try:
                return client.get(ConfigMap, c.KUBEADM_CONFIG_CONFIGMAP, namespace=c.NAMESPACE_SYSTEM)
            except ApiError as err:
                code = err.status.code or 0
                if (code < 500 and code != 429) or time.monotonic() >= deadline:
                    raise KubeadmError(err.status.message or str(err)) from err
            except (httpx2.HTTPError, OSError) as err:
                if time.monotonic() >= deadline:
                    raise KubeadmError(str(err) or type(err).__name__) from err
            time.sleep(_INTERVAL)


def fetch_cluster_configuration(
    kubeconfig: Path, out: Callable[[str], None], *, timeout: float = FETCH_TIMEOUT
) -> ClusterConfiguration | None:
    """The cluster's ClusterConfiguration, or None (with kubeadm's warning) when it cannot be read.

    Nothing is printed when the kubeconfig file does not exist (a worker has no admin.conf): kubeadm then has no
    client and skips the read silently."""
    if not kubeconfig.is_file():
        log.info("[reset] Could not obtain a client set from the kubeconfig file: %s", kubeconfig)
        return None
    announce_config_read(out, "[reset]")
    try:
        cluster = cluster_configuration_of(_get_configmap(kubeconfig, time.monotonic() + timeout).data)
    except Exception as err:
        log.warning(
            "[reset] Unable to fetch the kubeadm-config ConfigMap from cluster: failed to get config map: %s", err
        )
        return None
    return cluster
