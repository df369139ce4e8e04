"""Scraping a component's secure port the way Prometheus does: HTTPS, a client certificate or a bearer token, the
text format parsed by prometheus_client's own parser."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def get(
    url: str, *, cert: tuple[Path, Path] | None = None, token: str | None = None, timeout: float = 20.0
) -> tuple[int, str, str]:
    """(status, content type, body) of a GET; the component's serving certificate is not verified (self-signed)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


def parse(text: str) -> dict[str, list[Any]]:
    """Metric family name → its samples (prometheus_client's parser: the text must be valid exposition)."""
    return {f.name: list(f.samples) for f in text_string_to_metric_families(text)}


def value(families: dict[str, list[Any]], sample: str, **labels: str) -> float:
    """The sum of the samples named `sample` whose labels include `labels` (0 when there are none)."""
    return sum(
        s.value
        for samples in families.values()
        for s in samples
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    )


def status_json(body: str) -> dict[str, Any]:
    return dict(json.loads(body))


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
