"""The kubernetes plugin: `index` (records from Services/EndpointSlices), `lookup` (answers), `credentials` (API
access: kubeconfig or in-cluster), `plugin` (setup, watches, serving)."""
