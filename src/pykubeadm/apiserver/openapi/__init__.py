"""OpenAPI: Kubernetes v1.33 schemas (definitions.py), the /openapi documents (documents.py, handler.py) and
schema-driven field checks (fields.py)."""
