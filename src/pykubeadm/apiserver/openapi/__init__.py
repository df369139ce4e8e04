"""OpenAPI: Kubernetes v1.33 schemas (definitions.py), the /openapi documents (documents.py, handler.py), the protobuf
form of /openapi/v2 (gnostic.py's message shapes, protov2.py's conversion and cache) and schema-driven field checks
(fields.py)."""
