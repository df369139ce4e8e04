"""The CEL engine: compile once, evaluate many times, errors worded as cel-go words them.

Built on cel-expr-python (Google's cel-cpp runtime): the CEL standard library, the strings, optional and math
extensions Kubernetes enables, and Kubernetes' own libraries (`pykubeadm.cel.k8slib`). Variables are declared as
`dyn`, so compilation checks syntax and the functions' existence; values are plain JSON-like Python data.

    env = Environment(("object", "oldObject", "params"))
    program = env.compile("object.spec.replicas <= 2")     # CompileError
    program.evaluate({"object": obj, ...})                  # EvalError

Usable outside admission (authentication's claim rules take the same engine).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel  # type: ignore[import-untyped,unused-ignore]
from cel_expr_python.ext import ext_math, ext_optional, ext_strings  # type: ignore[import-untyped,unused-ignore]

from pykubeadm.cel import k8slib

__all__ = ["Activation", "CompileError", "Environment", "EvalError", "Program"]

#: kube's limit on one expression's length (apiextensions' and admissionregistration's validation).
MAX_EXPRESSION_LENGTH = 5 * 1024

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")


class CompileError(ValueError):
    """The expression does not parse or names unknown functions; str() is cel-go's `compilation failed: …` text."""


class EvalError(RuntimeError):
    """Evaluation failed (no such key, no such overload, division by zero, …)."""


def _go_wording(message: str) -> str:
    """cel-cpp's error texts as cel-go words the common ones."""
    m = re.search(r'Key not found in map : "(.*)"', message)
    if m:
        return f"no such key: {m.group(1)}"
    if "No matching overloads found" in message:
        return "no such overload"
    if "divide by zero" in message:
        return "division by zero"
    if "modulus by zero" in message:
        return "modulus by zero"
    return _STATUS_PREFIX.sub("", message).strip()


@dataclass(frozen=True)
class Activation:
    """Variables converted to CEL values once, for evaluating several programs over the same input."""

    bound: Any


@dataclass(frozen=True)
class Program:
    expression: str
    _compiled: Any

    def result_type(self) -> str:
        """The type the checker gives the expression's value, lower case (`bool`, `string`, `dyn`, …)."""
        return str(self._compiled.return_type()).lower()

    def evaluate(self, data: Mapping[str, Any] | Activation) -> Any:
        """The value for `data` (the variables as a mapping, or an Activation of them bound once for several
        programs of the same environment)."""
        try:
            if isinstance(data, Activation):
                value = self._compiled.eval(data.bound)
            else:
                value = self._compiled.eval(data=dict(data))
        except Exception as e:  # conversion of an unsupported input value
            raise EvalError(_go_wording(str(e))) from None
        if value.type() == cel.Type.ERROR:
            raise EvalError(_go_wording(str(value.value())))
        return value.plain_value()


class Environment:
    """Declared variables (all `dyn`) plus the standard, extension and Kubernetes libraries; compiled programs are
    cached by expression."""

    def __init__(self, variables: Sequence[str]):
        self.variables = tuple(variables)
        self._env = cel.NewEnv(
            variables={name: cel.Type.DYN for name in self.variables},
            extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_math.ExtMath()],
            functions=k8slib.declarations(),
        )
        self._cache: dict[str, Program] = {}

    def activation(self, data: Mapping[str, Any]) -> Activation:
        try:
            return Activation(self._env.Activation(dict(data)))
        except Exception as e:
            raise EvalError(_go_wording(str(e))) from None

    def compile(self, expression: str) -> Program:
        program = self._cache.get(expression)
        if program is not None:
            return program
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise CompileError(f"compilation failed: expression is longer than {MAX_EXPRESSION_LENGTH} characters")
        try:
            compiled = self._env.compile(expression)
        except Exception as e:
            text = _STATUS_PREFIX.sub("", str(e)).replace(" [INVALID_ARGUMENT]", "").strip()
            raise CompileError(f"compilation failed: {text}") from None
        program = Program(expression, compiled)
        if len(self._cache) < 4096:
            self._cache[expression] = program
        return program
