"""CEL (Common Expression Language) for the control plane: the engine and Kubernetes' CEL libraries."""

from pykubeadm.cel.engine import Activation, CompileError, Environment, EvalError, Program

__all__ = ["Activation", "CompileError", "Environment", "EvalError", "Program"]
