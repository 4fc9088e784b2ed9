"""Tests for the public API: jaxderiv.op, jaxderiv.aten, Registry, calling conventions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative, Op, Registry, load_spec
from jaxderiv.forward import implementation

X = jnp.array([[0.3, -0.7, 1.1], [0.2, 0.5, -1.4]])
Y = jnp.array([1.5, -2.0, 0.25])


def test_public_names_exist():
    for name in jaxderiv.__all__:
        assert getattr(jaxderiv, name) is not None, name


def test_op_by_name():
    add = jaxderiv.op("add.Tensor")
    assert isinstance(add, Op)
    assert add.name == "add.Tensor" and str(add.schema).startswith("add.Tensor(Tensor self, Tensor other")
    np.testing.assert_allclose(add(X, Y), X + Y)
    np.testing.assert_allclose(add(X, Y, alpha=3), X + 3 * Y)
    np.testing.assert_allclose(add(X, other=Y), X + Y)
    assert jaxderiv.op("add.Tensor") is add  # built once
    assert repr(add) == "<jaxderiv op aten::add.Tensor>"
    assert "add.Tensor(Tensor self" in add.__doc__


def test_aten_namespace():
    assert jaxderiv.aten.add.Tensor is jaxderiv.op("add.Tensor")
    assert jaxderiv.aten.abs.default is jaxderiv.op("abs")
    assert jaxderiv.op("abs.default") is jaxderiv.op("abs")
    np.testing.assert_allclose(jaxderiv.aten.abs.default(X), jnp.abs(X))
    np.testing.assert_allclose(jaxderiv.aten.abs(X), jnp.abs(X))  # a packet calls its default overload
    np.testing.assert_allclose(jaxderiv.aten.add.Tensor(X, Y, alpha=2), X + 2 * Y)
    assert "add" in dir(jaxderiv.aten) and "abs" in dir(jaxderiv.aten)
    g = jax.grad(lambda x: jaxderiv.aten.sin.default(x).sum())(X)
    np.testing.assert_allclose(g, jnp.cos(X))


def test_aten_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no_such_op_xyz"):
        jaxderiv.aten.no_such_op_xyz
    with pytest.raises(AttributeError, match="NoSuchOverload"):
        jaxderiv.aten.add.NoSuchOverload
    assert not hasattr(jaxderiv.aten, "__wrapped__")
    with pytest.raises(AttributeError):
        jaxderiv.no_such_module_attribute


def test_unknown_op_is_a_key_error_with_close_names():
    with pytest.raises(KeyError) as e:
        jaxderiv.op("add")
    assert "add.Tensor" in str(e.value)


def test_default_registry_is_shared():
    reg = jaxderiv.default_registry()
    assert reg is jaxderiv.default_registry()
    assert jaxderiv.aten.sin.default is reg.op("sin")
    assert len(reg.names()) == len(load_spec())
    assert "entries" in repr(reg)


_SPEC = """
    - name: sin(Tensor self) -> Tensor
      self: grad * 2
    - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
      self: grad
      other: not_implemented("other of add")
    - name: acos_(Tensor(a!) self) -> Tensor(a!)
      self: grad * -((-self * self + 1).rsqrt())
    - name: frobnicate(Tensor self) -> Tensor
      self: grad
"""


@pytest.fixture
def reg(registry_from_text) -> Registry:
    return registry_from_text(_SPEC)


def test_registry_of_a_spec_has_its_own_aten(reg):
    sin = reg.aten.sin.default
    assert sin is reg.op("sin") and sin is not jaxderiv.op("sin")
    assert reg.aten.sin is not None
    np.testing.assert_allclose(jax.grad(lambda x: sin(x).sum())(X), 2 * np.ones(X.shape))
    np.testing.assert_allclose(jax.grad(lambda x: jaxderiv.aten.sin.default(x).sum())(X), jnp.cos(X))
    assert reg.names() == ["sin", "add.Tensor", "acos_", "frobnicate"]
    with pytest.raises(AttributeError):
        reg.aten.abs  # not in this spec
    assert sorted(dir(reg.aten)) == ["acos_", "add", "frobnicate", "sin"]


def test_inplace_entry_returns_the_new_value(reg):
    acos_ = reg.aten.acos_.default
    x = jnp.array([0.1, -0.5, 0.8])
    before = np.asarray(x).copy()
    out = acos_(x)
    np.testing.assert_allclose(out, np.arccos(before))
    np.testing.assert_array_equal(x, before)  # functional: the input is not changed
    np.testing.assert_allclose(jax.grad(lambda x: acos_(x).sum())(x), -1 / np.sqrt(1 - before**2))


def test_shipped_inplace_entry():
    if "acosh_" not in jaxderiv.default_registry().spec or implementation("acosh") is None:
        pytest.skip("acosh_ or acosh's forward is not available")
    acosh_ = jaxderiv.aten.acosh_.default
    x = jnp.array([1.5, 2.0, 3.0])
    np.testing.assert_allclose(acosh_(x), np.arccosh([1.5, 2.0, 3.0]))
    # The 1.10 entry is `self: not_implemented("inplace version of acosh")`: calling is fine,
    # differentiating raises.
    with pytest.raises(NotImplementedDerivative, match="inplace version of acosh"):
        jax.grad(lambda x: acosh_(x).sum())(x)


def test_not_implemented_raises_only_when_requested(reg):
    add = reg.op("add.Tensor")
    np.testing.assert_allclose(add(X, Y), X + Y)
    np.testing.assert_allclose(jax.jit(add)(X, Y), X + Y)
    np.testing.assert_allclose(jax.grad(lambda x: add(x, Y).sum())(X), np.ones(X.shape))
    with pytest.raises(NotImplementedDerivative) as e:
        jax.grad(lambda y: add(X, y).sum())(Y)
    assert "other of add" in str(e.value) and "add.Tensor" in str(e.value)
    assert isinstance(e.value, NotImplementedError)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda add: add(X), "missing required argument 'other'"),
        (lambda add: add(X, Y, bogus=1), "unexpected keyword argument 'bogus'"),
        (lambda add: add(X, Y, 2), "positional arguments"),
        (lambda add: add(X, Y, self=X), "multiple values for argument 'self'"),
    ],
)
def test_bind_errors_are_type_errors_naming_the_schema(call, message):
    add = jaxderiv.op("add.Tensor")
    with pytest.raises(TypeError) as e:
        call(add)
    text = str(e.value)
    assert message in text
    assert "add.Tensor" in text
    if "multiple" not in message:
        assert str(add.schema) in text


def test_every_argument_can_be_passed_by_keyword():
    # ATen's first argument is usually named `self`: it must not collide with Python's.
    add = jaxderiv.op("add.Tensor")
    np.testing.assert_allclose(add(self=X, other=Y, alpha=2), X + 2 * Y)
    np.testing.assert_allclose(jaxderiv.aten.abs(self=X), jnp.abs(X))
    assert add.output_differentiable(self=X, other=Y) == (True,)
    g = jax.grad(lambda x: add(other=Y, self=x).sum())(X)
    np.testing.assert_allclose(g, np.ones(X.shape))


def test_bind_fills_defaults():
    add = jaxderiv.op("add.Tensor")
    bound = add.bind((X, Y), {})
    assert list(bound) == ["self", "other", "alpha"] and bound["alpha"] == 1


def test_op_without_forward_implementation(reg):
    op = reg.op("frobnicate")
    assert op.impl is None
    with pytest.raises(NotImplementedError, match="frobnicate"):
        op(X)


def test_output_differentiable():
    add = jaxderiv.op("add.Tensor")
    assert add.output_differentiable(X, Y) == (True,)
    assert add.output_differentiable(jnp.array([1, 2]), jnp.array([3, 4])) == (False,)


def test_ops_compose_with_jax():
    f = lambda x, y: jaxderiv.aten.sin.default(jaxderiv.aten.add.Tensor(x, y, alpha=0.5)).sum()
    ref = lambda x, y: jnp.sin(x + 0.5 * y).sum()
    for a, b in zip(jax.grad(f, argnums=(0, 1))(X, Y), jax.grad(ref, argnums=(0, 1))(X, Y)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(f)(X, Y), ref(X, Y), rtol=1e-12)
