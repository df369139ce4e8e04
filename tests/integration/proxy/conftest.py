"""Fixtures of the kube-proxy integration tests (defined in _support, shared with the nftables tests)."""

from tests.integration.proxy._support import admin, api, backends, nodes, service_range

__all__ = ["admin", "api", "backends", "nodes", "service_range"]
