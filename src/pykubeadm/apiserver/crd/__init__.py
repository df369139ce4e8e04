"""CustomResourceDefinitions: the CRD kind and custom resource strategies (strategy.py), their schemas (schema.py)
and the controller that serves them (controller.py)."""
