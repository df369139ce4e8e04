"""The CEL engine: standard and extension libraries, Kubernetes' libraries, cel-go's error wording, compile errors."""

from __future__ import annotations

import pytest

from pykubeadm.cel import CompileError, Environment, EvalError

ENV = Environment(("object", "oldObject"))
OBJ = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 3, "ports": [80, 443]}}


def ev(expr: str, obj=OBJ):
    return ENV.compile(expr).evaluate({"object": obj, "oldObject": None})


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("object.spec.replicas <= 2", False),
        ("has(object.metadata.labels) && object.metadata.labels.app == 'web'", True),
        ("object.spec.ports.all(p, p > 0) && object.spec.ports.exists_one(p, p == 443)", True),
        ("object.?spec.?paused.orValue(false)", False),
        ("'WEB'.lowerAscii() + '-' + ['a', 'b'].join(',')", "web-a,b"),
        ("'%s has %d'.format([object.metadata.name, object.spec.replicas])", "web has 3"),
        ("object.spec.ports.isSorted() && object.spec.ports.sum() == 523", True),
        ("object.spec.ports.min() == 80 && object.spec.ports.max() == 443", True),
        ("'abc123def'.find('[0-9]+')", "123"),
        ("'a1b22'.findAll('[0-9]+')", ["1", "22"]),
        ("url('https://example.com:8443/p?q=1').getHost()", "example.com:8443"),
        ("url('https://example.com:8443/p?q=1').getHostname() + url('https://example.com/').getPort()", "example.com"),
        ("isURL('not a url')", False),
        ("quantity('1Gi').isGreaterThan(quantity('1000Mi'))", True),
        ("quantity('1500m').asApproximateFloat()", 1.5),
        ("quantity('2').add(3).asInteger()", 5),
        ("isQuantity('12zz')", False),
        ("ip('10.0.0.1').family() == 4 && ip('::1').isLoopback()", True),
        ("cidr('10.0.0.0/8').containsIP('10.9.8.7') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))", True),
        ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && cidr('192.168.1.0/24').prefixLength() == 24", True),
        ("isIP('1.2.3.4') && !isIP('1.2.3') && isCIDR('::/0')", True),
    ],
)
def test_expressions(expr, expected):
    assert ev(expr) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("object.spec.missing > 1", "no such key: missing"),
        ("object.spec.replicas + 1u == 4u", "no such overload"),
        ("object.spec.replicas / 0", "division by zero"),
        ("quantity('bad')", "quantities must match the regular expression"),
    ],
)
def test_errors_are_worded_as_cel_go(expr, message):
    with pytest.raises(EvalError) as e:
        ev(expr)
    assert message in str(e.value)


def test_compile_errors_and_caching():
    with pytest.raises(CompileError, match=r"^compilation failed: ERROR: <input>:1:"):
        ENV.compile("object.spec.replicas <=")
    with pytest.raises(CompileError, match="undeclared reference"):
        ENV.compile("nope.x == 1")
    assert ENV.compile("1 == 1") is ENV.compile("1 == 1")
