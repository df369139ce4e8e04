"""Helpers for tests, benchmarks and the lab that start real processes (not used by pykubeadm at run time)."""
