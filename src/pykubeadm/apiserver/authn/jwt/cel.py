"""CEL in an AuthenticationConfiguration's JWT issuer, as kube-apiserver compiles and evaluates it.

Expressions over `claims` (claimValidationRules, claimMappings username/groups/uid/extra) and over `user`
(userValidationRules) are compiled once, at start-up; a compile error names the field path. At request time a
validation rule that evaluates to false rejects the token with kube's `validation expression '…' failed: <message>`;
an evaluation error (a missing claim, a wrong type) rejects it too. Nothing here logs a claim or a token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykubeadm.cel import CompileError, Environment, EvalError, Program

__all__ = [
    "CLAIMS_ENV",
    "USER_ENV",
    "CELConfigError",
    "ExtraMapping",
    "ValidationRule",
    "check_rules",
    "compile_expression",
    "evaluate",
    "string_list",
    "uses_claim",
]

CLAIMS_ENV = Environment(("claims",))
USER_ENV = Environment(("user",))


class CELConfigError(ValueError):
    """An expression that does not compile; the message is kube's field error (path, value, detail)."""


@dataclass(frozen=True)
class ValidationRule:
    program: Program
    message: str = ""


@dataclass(frozen=True)
class ExtraMapping:
    key: str
    program: Program


def compile_expression(env: Environment, path: str, expression: str, boolean: bool = False) -> Program:
    """`expression` compiled in `env`; `boolean`: a validation rule, whose type must be bool when it is known.
    Raises CELConfigError naming `path`."""
    try:
        program = env.compile(expression)
    except CompileError as e:
        raise CELConfigError(f'{path}: Invalid value: "{expression}": {e}') from None
    if boolean and program.result_type() not in ("bool", "dyn"):
        raise CELConfigError(f'{path}: Invalid value: "{expression}": must evaluate to bool')
    return program


_STRING_LITERAL = re.compile(r"(?s)('{3}|\"{3}|'|\")(?:\\.|(?!\1).)*\1")


def uses_claim(expression: str, claim: str) -> bool:
    """Whether `expression` selects `claims.<claim>` (or `claims.?<claim>`) outside its string literals, as kube's
    check of the email claim does on the parsed expression."""
    code = _STRING_LITERAL.sub('""', expression)
    return re.search(rf"\bclaims\s*\.\s*\??\s*{re.escape(claim)}\b", code) is not None


def evaluate(program: Program, variables: Mapping[str, Any], what: str) -> Any:
    """The value of `program`; an evaluation error becomes ValueError(`oidc: error evaluating <what>: …`)."""
    try:
        return program.evaluate(variables)
    except EvalError as e:
        raise ValueError(f"oidc: error evaluating {what}: {e}") from None


def check_rules(rules: tuple[ValidationRule, ...], variables: Mapping[str, Any], what: str) -> None:
    """Raise ValueError for the first rule that is not true (kube's checkValidationRulesEvaluation)."""
    for rule in rules:
        value = evaluate(rule.program, variables, what)
        if not isinstance(value, bool):
            raise ValueError(f"oidc: error evaluating {what}: validation expression must return a boolean")
        if not value:
            raise ValueError(
                f"oidc: error evaluating {what}: validation expression '{rule.program.expression}' failed: "
                f"{rule.message}"
            )


def string_list(value: Any) -> list[str]:
    """A groups or extra expression's value as kube takes it: a string or a list of strings, empty ones dropped;
    null is no value."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v]
    raise ValueError("expression must return a string or a list of strings")
