"""The clusterrole-aggregation controller (kube's pkg/controller/clusterroleaggregation)."""

from pykubeadm.controllers.clusterroleaggregation.controller import ClusterRoleAggregationController, aggregated_rules

__all__ = ["ClusterRoleAggregationController", "aggregated_rules"]
