"""The CRI `runtime.v1` API: k8s.io/cri-api's api.proto and the Python modules grpcio-tools generates from it.

Never edit api_pb2*.py* by hand: change api.proto and run `scripts/generate_cri.py` (a unit test checks they agree).
"""
