"""Tests for the rule mechanism (rules.py, op.py, literal.py): every JAX transform, and which
formula each mode evaluates."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative, Registry, jvp_op, load_spec, vjp_op
from jaxderiv.check.samples import samples_for
from jaxderiv.namespace import HELPERS

# The seed files' ops (PyTorch 1.7's and 1.10's): the table below names their formulas.
SEEDS = jaxderiv.seed_registry()

# -- one table of transforms, applied to several ops -------------------------------------------


# JAX's own function for each op of the table: away from kinks, every transform must match it.
REFERENCES = {"acos": jnp.arccos, "sin": jnp.sin, "abs": jnp.abs, "add.Tensor": jnp.add}


def _rng(seed):
    return np.random.default_rng(seed)


def _inputs(name: str) -> tuple:
    """The op's arrays from its op record's checker samples (domain, away from kinks): the
    broadcasting sample where the op has one ((2, 3) + (3,) for add.Tensor), else the first;
    only samples that pass nothing but arrays, as the references take nothing else."""
    op = SEEDS.op(name)
    bound = [op.bind(s.args, s.kwargs) for s in samples_for(op, _rng(0))]
    plain = [b for b in bound if all(a.is_tensor or b[a.name] == a.default_value() for a in op.schema.arguments)]
    arrays = [tuple(jnp.asarray(b[a.name]) for a in op.schema.arguments if a.is_tensor) for b in plain]
    return next((x for x in arrays if len({a.shape for a in x}) > 1), arrays[0])


CASES = [(name, _inputs(name)) for name in REFERENCES]


def _argnums(args):
    return tuple(range(len(args)))


def _weights(args):
    shape = jnp.broadcast_shapes(*(a.shape for a in args))
    return jnp.asarray(_rng(9).normal(size=shape))


def _weighted(f, w):
    """A scalar function of f's inputs that weighs each output element differently."""
    return lambda *a: jnp.sum(f(*a) * w)


def _in_axes(args):
    return (0,) + (None,) * (len(args) - 1)


def _tangents(args):
    return tuple(jnp.asarray(_rng(10 + i).normal(size=a.shape)) for i, a in enumerate(args))


TRANSFORMS = {
    "plain": lambda f, a: f(*a),
    "jit": lambda f, a: jax.jit(f)(*a),
    "vmap": lambda f, a: jax.vmap(f, in_axes=_in_axes(a))(*a),
    "grad": lambda f, a: jax.grad(_weighted(f, _weights(a)), argnums=_argnums(a))(*a),
    "jvp": lambda f, a: jax.jvp(f, a, _tangents(a)),
    "vjp": lambda f, a: jax.vjp(f, *a)[1](_weights(a)),
    # second order runs under jit: one compilation instead of many eager ones (see the eager test below)
    "hessian": lambda f, a: jax.jit(jax.hessian(_weighted(f, _weights(a)), argnums=_argnums(a)))(*a),
    "jit(grad)": lambda f, a: jax.jit(jax.grad(_weighted(f, _weights(a)), argnums=_argnums(a)))(*a),
    "vmap(grad)": lambda f, a: jax.vmap(
        jax.grad(_weighted(f, _weights(a)[0]), argnums=_argnums(a)), in_axes=_in_axes(a)
    )(*a),
    "grad(vmap)": lambda f, a: jax.grad(_weighted(jax.vmap(f, in_axes=_in_axes(a)), _weights(a)), argnums=_argnums(a))(
        *a
    ),
    "jacfwd(jacfwd)": lambda f, a: jax.jit(jax.jacfwd(jax.jacfwd(f, argnums=_argnums(a)), argnums=_argnums(a)))(*a),
    "jacrev(jacrev)": lambda f, a: jax.jit(jax.jacrev(jax.jacrev(f, argnums=_argnums(a)), argnums=_argnums(a)))(*a),
}


SECOND_ORDER = ("hessian", "jacfwd(jacfwd)", "jacrev(jacrev)")


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("name,args", CASES, ids=[name for name, _ in CASES])
def test_transform_matches_jax_numpy(name, args, transform):
    op = SEEDS.op(name)
    apply = TRANSFORMS[transform]
    ours = apply(op, args)
    ref = apply(REFERENCES[name], args)
    chex.assert_trees_all_close(ours, ref, rtol=1e-9, atol=1e-12)
    # not vacuous: the derivative transforms give something non-zero somewhere
    leaves = jax.tree_util.tree_leaves(ref)
    if name not in ("add.Tensor", "abs") or transform not in SECOND_ORDER:
        assert any(np.any(np.asarray(leaf) != 0) for leaf in leaves)


def test_the_table_broadcasts_and_stays_away_from_kinks():
    """The inputs the op records give: add.Tensor's broadcast, abs away from its kink at 0."""
    shapes = dict((name, [a.shape for a in args]) for name, args in CASES)
    assert shapes["add.Tensor"] == [(2, 3), (3,)]
    assert np.min(np.abs(dict(CASES)["abs"][0])) > 1e-3


def test_eager_second_order():
    name, args = CASES[0]
    op = SEEDS.op(name)
    chex.assert_trees_all_close(
        jax.hessian(_weighted(op, _weights(args)))(*args),
        jax.hessian(_weighted(REFERENCES[name], _weights(args)))(*args),
        rtol=1e-9,
        atol=1e-12,
    )


def test_the_table_exercises_each_mechanism():
    # The ops in the table reach their derivatives by every route the Op class has.
    modes = {name: SEEDS.op(name).formulas for name in REFERENCES}
    jvp_kinds = {m["jvp"].split(" (")[0].split(":")[0] for m in modes.values()}
    assert {"result formula", "auto_element_wise", "transpose of the backward formula"} <= jvp_kinds
    assert all(m["vjp"].startswith("backward formula") for m in modes.values())


def _primitives(jaxpr) -> list[str]:
    return [e.primitive.name for e in jaxpr.jaxpr.eqns]


def test_modes_run_through_the_linear_primitive_and_the_formula():
    op = SEEDS.op("acos")
    x = CASES[0][1][0]
    # forward mode: the tangent is the linear primitive, whose evaluation is the tangent formula
    jvp = jax.make_jaxpr(lambda x, t: jax.jvp(op, (x,), (t,)))(x, x)
    assert "jaxderiv_linear" in _primitives(jvp)
    # under vmap, one batching level; over tangents only, the primals stay unbatched
    assert "levels=((2, (True, True, True)),)" in str(
        jax.make_jaxpr(jax.vmap(lambda x, t: jax.jvp(op, (x,), (t,))))(x, x)
    )
    over_tangents = jax.make_jaxpr(jax.vmap(lambda t: jax.jvp(op, (x,), (t,))))(jnp.stack([x, x]))
    assert "levels=((2, (True, False, False)),)" in str(over_tangents)
    # reverse mode: the primitive is transposed into the backward formula's own operations,
    # `grad * -((-self * self + 1).rsqrt())`, not JAX's derivative of arccos (`1 - square(x)`)
    grad = _primitives(jax.make_jaxpr(jax.grad(lambda x: op(x).sum()))(x))
    assert "jaxderiv_linear" not in grad
    assert {"neg", "mul", "add", "rsqrt"} <= set(grad)
    assert "square" not in grad and "sub" not in grad
    native = _primitives(jax.make_jaxpr(jax.grad(lambda x: jnp.arccos(x).sum()))(x))
    assert "square" in native or "sub" in native or "integer_pow" in native


# -- which formula each mode evaluates ---------------------------------------------------------

_DIFFERENT = """
    - name: sin(Tensor self) -> Tensor
      self: grad * 2
      result: self_t * 3
"""


def test_grad_evaluates_backward_and_jvp_evaluates_result(write_spec):
    reg = Registry(load_spec(write_spec(_DIFFERENT)))
    sin = reg.op("sin")
    x = jnp.array([0.1, 0.7, -1.3])
    np.testing.assert_array_equal(sin(x), jnp.sin(x))  # the forward is the op itself
    np.testing.assert_allclose(jax.grad(lambda x: sin(x).sum())(x), [2.0, 2.0, 2.0])
    primal, tangent = jax.jvp(sin, (x,), (jnp.ones(3),))
    np.testing.assert_allclose(primal, jnp.sin(x))
    np.testing.assert_allclose(tangent, [3.0, 3.0, 3.0])
    # vjp with a cotangent other than ones, and jvp with other tangents: linear in both
    ct = jnp.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(jax.vjp(sin, x)[1](ct)[0], 2 * ct)
    np.testing.assert_allclose(jax.jvp(sin, (x,), (ct,))[1], 3 * ct)
    # the same holds under jit and vmap
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: sin(x).sum()))(x), [2.0] * 3)
    np.testing.assert_allclose(jax.vmap(jax.grad(sin))(x), [2.0] * 3)
    np.testing.assert_allclose(jax.grad(lambda x: jax.vmap(sin)(x).sum())(x), [2.0] * 3)
    np.testing.assert_allclose(jax.jacfwd(sin)(x), 3 * np.eye(3))
    np.testing.assert_allclose(jax.jacrev(sin)(x), 2 * np.eye(3))
    assert sin.formulas == {"vjp": "backward formula (self: line 2)", "jvp": "result formula (line 3)"}


def test_editing_a_formula_changes_the_gradient(write_spec):
    path = write_spec(_DIFFERENT)
    x = jnp.array([0.1, 0.7])
    g = lambda: jax.grad(lambda x: Registry(load_spec(path)).op("sin")(x).sum())(x)
    np.testing.assert_allclose(g(), [2.0, 2.0])
    path.write_text(path.read_text().replace("grad * 2", "grad * self.cos() * 5"))
    np.testing.assert_allclose(g(), 5 * jnp.cos(x))
    path.write_text(path.read_text().replace("grad * self.cos() * 5", "grad * self"))
    np.testing.assert_allclose(g(), x)


# -- grad_input_mask --------------------------------------------------------------------------


def test_grad_input_mask_in_a_formula(write_spec):
    reg = Registry(
        load_spec(
            write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self, other: "std::make_tuple(grad_input_mask[0] ? grad * 2 : Tensor(), grad_input_mask[1] ? not_implemented(\\"other of add\\") : Tensor())"
    """)
        )
    )
    add = reg.op("add.Tensor")
    x, y = jnp.ones(3), jnp.arange(3.0)
    # only self's gradient requested: the mask spares the not_implemented branch
    np.testing.assert_allclose(jax.grad(lambda x: add(x, y).sum())(x), [2.0] * 3)
    with pytest.raises(NotImplementedDerivative) as info:
        jax.grad(lambda y: add(x, y).sum())(y)
    assert "add.Tensor" in str(info.value) and "other of add" in str(info.value)
    with pytest.raises(NotImplementedDerivative):
        jax.grad(lambda x, y: add(x, y).sum(), argnums=(0, 1))(x, y)


def test_grad_input_mask_reaches_helpers(write_spec, monkeypatch):
    seen = []

    def masked(grad, mask):
        seen.append(tuple(mask))
        return (grad * 2 if mask[0] else None, grad * 3 if mask[1] else None)

    monkeypatch.setitem(HELPERS, "_test_masked_backward", masked)
    reg = Registry(
        load_spec(
            write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self, other: _test_masked_backward(grad, grad_input_mask)
    """)
        )
    )
    add = reg.op("add.Tensor")
    x, y = jnp.ones((2, 3)), jnp.arange(3.0)
    f = lambda x, y: add(x, y).sum()
    np.testing.assert_allclose(jax.grad(f, argnums=0)(x, y), 2 * np.ones((2, 3)))
    np.testing.assert_allclose(jax.grad(f, argnums=1)(x, y), [6.0] * 3)  # broadcast: summed over 2 rows
    gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * np.ones((2, 3)))
    np.testing.assert_allclose(gy, [6.0] * 3)
    assert seen == [(True, False), (False, True), (True, True)]


def test_not_implemented_key_raises_naming_the_op(write_spec):
    reg = Registry(
        load_spec(
            write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: not_implemented("x")
    """)
        )
    )
    add = reg.op("add.Tensor")
    x, y = jnp.ones(3), jnp.arange(3.0)
    np.testing.assert_allclose(add(x, y), x + y)  # calling never evaluates a derivative
    np.testing.assert_allclose(jax.grad(lambda x: add(x, y).sum())(x), [1.0] * 3)
    with pytest.raises(NotImplementedDerivative, match="add.Tensor"):
        jax.grad(lambda y: add(x, y).sum())(y)


def test_input_without_formula_raises_when_requested(write_spec):
    reg = Registry(
        load_spec(
            write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad * 4
    """)
        )
    )
    add = reg.op("add.Tensor")
    x, y = jnp.ones(3), jnp.arange(3.0)
    np.testing.assert_allclose(jax.grad(lambda x: add(x, y).sum())(x), [4.0] * 3)
    assert add.differentiable_inputs == ("self",)


# -- a mode from the other mode's formula --------------------------------------------------------


def test_only_backward_formula_gives_jvp_by_transposition(write_spec):
    reg = Registry(
        load_spec(
            write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad * 2
          other: grad.sum(0) * 3
    """)
        )
    )
    add = reg.op("add.Tensor")
    assert add.formulas["jvp"] == "transpose of the backward formula"
    x, y = jnp.ones((2, 3)), jnp.arange(3.0)
    tx, ty = jnp.asarray(_rng(0).normal(size=(2, 3))), jnp.asarray(_rng(1).normal(size=(3,)))
    # the transpose of (g -> (2g, 3 sum_0 g)) is (tx, ty) -> 2 tx + 3 ty (broadcast)
    _, t = jax.jvp(add, (x, y), (tx, ty))
    np.testing.assert_allclose(t, 2 * tx + 3 * ty)
    _, t = jax.jvp(lambda x: add(x, y), (x,), (tx,))
    np.testing.assert_allclose(t, 2 * tx)


def test_only_backward_formula_in_shipped_spec():
    sin = SEEDS.op("sin")  # 1.7 entry: no result formula
    assert sin.formulas["jvp"] == "transpose of the backward formula"
    x = jnp.array([0.3, -2.0])
    np.testing.assert_allclose(jax.jvp(sin, (x,), (jnp.array([1.0, 2.0]),))[1], jnp.cos(x) * jnp.array([1.0, 2.0]))


@pytest.mark.parametrize("name, reference", [("_softmax", jax.nn.softmax), ("_log_softmax", jax.nn.log_softmax)])
def test_gradient_of_a_transposed_jvp_reaches_the_called_entrys_formulas(name, reference):
    # 1.7's softmax has no result formula: its jvp is `_softmax_backward_data(grad, result, dim,
    # self)` transposed. Differentiating that jvp again must run the called entry's own
    # formulas (`self: softmax_double_backward(...)`, and `grad_output:` read with `output`
    # differentiable as formula code), not the called op's forward (whose `output` argument the
    # entry gives no formula, so it would carry no derivative: the gradient was 0).
    op = SEEDS.op(name)
    x, t, w = (jnp.asarray(_rng(i).normal(size=(2, 3))) for i in range(3))

    def grad_of_jvp(f):
        return jax.grad(lambda x: jnp.sum(w * jax.jvp(f, (x,), (t,))[1]))(x)

    expected = grad_of_jvp(lambda x: reference(x, axis=1))
    assert float(jnp.max(jnp.abs(expected))) > 0.05
    np.testing.assert_allclose(grad_of_jvp(lambda x: op(x, 1, False)), expected, rtol=1e-10, atol=1e-12)


def test_gradient_of_a_transposed_jvp_follows_the_called_entrys_formula(write_spec):
    spec = """
        - name: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor
          self: _softmax_backward_data(grad, result, dim, self)

        - name: _softmax_backward_data(Tensor grad_output, Tensor output, int dim, Tensor self) -> Tensor
          grad_output: _softmax_backward_data(grad, output, dim, self)
          self: {factor}softmax_double_backward(grad, grad_output, dim, output)
    """
    x, t, w = (jnp.asarray(_rng(i).normal(size=(2, 3))) for i in range(3))

    def grad_of_jvp(factor):
        op = Registry(load_spec(write_spec(spec.format(factor=factor)))).op("_softmax")
        return jax.grad(lambda x: jnp.sum(w * jax.jvp(lambda x: op(x, 1, False), (x,), (t,))[1]))(x)

    plain = grad_of_jvp("")
    assert float(jnp.max(jnp.abs(plain))) > 0.05
    np.testing.assert_allclose(grad_of_jvp("2 * "), 2 * plain, rtol=1e-12)


def test_only_result_formula_gives_grad_by_transposition(write_spec):
    reg = Registry(
        load_spec(
            write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          result: self_t * 2 + other_t * 3
    """)
        )
    )
    add = reg.op("add.Tensor")
    assert add.formulas["vjp"] == "transpose of the result formula"
    x, y = jnp.ones((2, 3)), jnp.arange(3.0)
    gx, gy = jax.grad(lambda x, y: add(x, y).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * np.ones((2, 3)))
    np.testing.assert_allclose(gy, [6.0] * 3)
    _, t = jax.jvp(add, (x, y), (jnp.ones((2, 3)), jnp.ones(3)))
    np.testing.assert_allclose(t, 5 * np.ones((2, 3)))


# -- dtypes --------------------------------------------------------------------------------------


def test_integer_inputs_get_no_gradient():
    add = SEEDS.op("add.Tensor")
    x, n = jnp.array([0.5, 1.5]), jnp.array([1, 2], dtype=jnp.int64)
    gx, gn = jax.grad(lambda x, n: add(x, n).sum(), argnums=(0, 1), allow_int=True)(x, n)
    np.testing.assert_allclose(gx, [1.0, 1.0])
    assert gn.dtype == jax.dtypes.float0 and gn.shape == n.shape
    _, vjp = jax.vjp(add, x, n)
    cx, cn = vjp(jnp.array([2.0, 3.0]))
    np.testing.assert_allclose(cx, [2.0, 3.0])
    assert cn.dtype == jax.dtypes.float0
    # all-integer call: an integer result, no derivative machinery needed
    out = add(n, n)
    assert jnp.issubdtype(out.dtype, jnp.integer)
    np.testing.assert_array_equal(out, [2, 4])


def test_gradient_dtype_follows_the_input():
    acos = SEEDS.op("acos")
    x32 = jnp.array([0.1, 0.2], jnp.float32)
    assert jax.grad(lambda x: acos(x).sum())(x32).dtype == jnp.float32
    add = SEEDS.op("add.Tensor")
    g = jax.grad(lambda y: add(jnp.ones(2), y).sum())(x32)
    assert g.dtype == jnp.float32


# -- complex convention --------------------------------------------------------------------------


def _complex_sample():
    rng = _rng(7)
    x = rng.normal(size=(3,)) + 1j * rng.normal(size=(3,))
    ct = rng.normal(size=(3,)) + 1j * rng.normal(size=(3,))
    return x, ct


def test_complex_sin_matches_jax_native_vjp():
    sin = SEEDS.op("sin")
    x, ct = (jnp.asarray(v) for v in _complex_sample())
    (ours,) = jax.vjp(sin, x)[1](ct)
    (native,) = jax.vjp(jnp.sin, x)[1](ct)
    chex.assert_trees_all_close(ours, native, rtol=1e-12)
    # ...and the jvp (transposed from the backward formula) matches too
    chex.assert_trees_all_close(jax.jvp(sin, (x,), (ct,))[1], jax.jvp(jnp.sin, (x,), (ct,))[1], rtol=1e-12)


@pytest.mark.parametrize("name", ["sin", "acos", "abs"])
def test_complex_convention_against_torch(name):
    torch = pytest.importorskip("torch")
    x, ct = _complex_sample()
    if name == "acos":
        x = x * 0.3
    xt = torch.tensor(x, requires_grad=True)
    out = getattr(torch, name)(xt)
    if not out.is_complex():  # abs: complex in, real out, real cotangent
        ct = ct.real
    out.backward(torch.tensor(np.conj(ct)))
    torch_grad = xt.grad.numpy()
    (ours,) = jax.vjp(SEEDS.op(name), jnp.asarray(x))[1](jnp.asarray(ct))
    np.testing.assert_allclose(np.asarray(ours), np.conj(torch_grad), rtol=1e-10, atol=1e-12)


# -- the one-mode JAX classes ----------------------------------------------------------------------


def test_vjp_op_and_jvp_op_match_the_op():
    x = CASES[0][1][0]
    op = SEEDS.op("acos")
    v, j = vjp_op("acos"), jvp_op("acos")
    assert isinstance(v, jax.custom_vjp) and isinstance(j, jax.custom_jvp)
    chex.assert_trees_all_close(v(x), op(x))
    chex.assert_trees_all_close(j(x), op(x))
    g = lambda f: jax.grad(lambda x: jnp.sum(f(x) * x))(x)
    chex.assert_trees_all_close(g(v), g(op), rtol=1e-12)
    chex.assert_trees_all_close(g(j), g(op), rtol=1e-12)
    t = jnp.ones_like(x) * 0.5
    chex.assert_trees_all_close(jax.jvp(j, (x,), (t,)), jax.jvp(op, (x,), (t,)), rtol=1e-12)


def test_vjp_op_and_jvp_op_with_static_arguments():
    a, b = dict(CASES)["add.Tensor"]
    v, j = vjp_op("add.Tensor"), jvp_op("add.Tensor")
    chex.assert_trees_all_close(v(a, b, 2.0), a + 2 * b)
    gv = jax.grad(lambda a, b: jnp.sum(v(a, b, 2.0) ** 2), argnums=(0, 1))(a, b)
    gj = jax.grad(lambda a, b: jnp.sum(j(a, b, 2.0) ** 2), argnums=(0, 1))(a, b)
    ref = jax.grad(lambda a, b: jnp.sum((a + 2 * b) ** 2), argnums=(0, 1))(a, b)
    chex.assert_trees_all_close(gv, ref, rtol=1e-12)
    chex.assert_trees_all_close(gj, ref, rtol=1e-12)


def test_vjp_op_uses_backward_and_jvp_op_uses_result(write_spec):
    reg = Registry(load_spec(write_spec(_DIFFERENT)))
    v, j = vjp_op("sin", reg), jvp_op("sin", reg)
    x = jnp.array([0.4, -0.1])
    np.testing.assert_allclose(jax.grad(lambda x: v(x).sum())(x), [2.0, 2.0])
    np.testing.assert_allclose(jax.jvp(j, (x,), (jnp.ones(2),))[1], [3.0, 3.0])
    # jvp_op's reverse mode is JAX's transpose of the result formula
    np.testing.assert_allclose(jax.grad(lambda x: j(x).sum())(x), [3.0, 3.0])
    with pytest.raises(TypeError):
        jax.jvp(v, (x,), (jnp.ones(2),))  # JAX refuses forward mode of a custom_vjp


def test_batching_over_tangents_leaves_the_primals_concrete():
    """vmap over tangents or cotangents only does not batch the primals the formulas read: a
    formula whose shapes depend on their values (masked_select's mask) still runs, eagerly."""
    ms = SEEDS.op("masked_select")
    x = jnp.arange(6.0).reshape(2, 3) - 2.5
    mask = x > 0
    tangents = jnp.stack([x, 2 * x])
    out = jax.vmap(lambda t: jax.jvp(lambda a: ms(a, mask), (x,), (t,))[1])(tangents)
    np.testing.assert_array_equal(out, jnp.stack([x[mask], 2 * x[mask]]))
    grads = jax.vmap(lambda c: jax.vjp(lambda a: ms(a, mask), x)[1](c)[0])(jnp.ones((2, 3)))
    np.testing.assert_array_equal(grads, jnp.broadcast_to(mask.astype(x.dtype), (2, 2, 3)))
