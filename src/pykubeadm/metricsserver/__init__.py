"""The built-in metrics server: what the image registry.k8s.io/metrics-server/metrics-server (v0.7) runs here.

scrape.py reads every node's kubelet /metrics/resource, storage.py keeps the last two points per node and container
and turns them into usage, api.py serves metrics.k8s.io/v1beta1 (NodeMetrics, PodMetrics) behind the aggregation
layer with auth.py's delegated authentication (front-proxy headers) and authorization, cli.py is the program and
manifest.py the objects of upstream's components.yaml.
"""
