"""Reductions, scans, sorting and selection against PyTorch 2.13: values, indices, vjp, jvp.

Kinks are included: ties of full max/min split the gradient evenly, the selection ops send it
to the index ATen returns, prod and cumprod take their zero paths, NaN and -inf entries follow
ATen. For complex inputs jax_vjp(ct) == conj(torch_grad(conj(ct))).

torch's own entries (the spec torch 2.13 ships) for stable sort, any/all over dims,
_is_all_true/_is_any_true, and the unique family with counts, dims and consecutive runs: values
and dtypes, vjp and jvp, on ties, NaN, empty, 0-d, integer and bool inputs.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative
from jaxderiv.check import opdb
from jaxderiv.records import Sample
from jaxderiv.check.samples import samples_for

torch = pytest.importorskip("torch")
from jaxderiv.check import parity as P  # noqa: E402
from torch_oracle import assert_close, assert_same, check_against_torch, random_like, to_numpy, to_torch  # noqa: E402

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

aten = torch.ops.aten

NAN, INF = math.nan, math.inf
RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, (3, 4))
XC = X + 1j * RNG.uniform(-2, 2, (3, 4))
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.5, 2.0], [-1.0, 0.0, -1.0, 4.0]])
ZEROS = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 1.2, 0.0, 3.0], [0.7, -1.1, 2.0, 1.3]])
ONE_ZERO = np.array([1.5, 0.0, -2.0, 0.5])
WITH_NAN = np.array([[1.0, NAN, 3.0, 0.5], [2.0, -1.0, 0.5, 4.0], [NAN, NAN, 1.0, -2.0]])
NEG_INF = np.array([[-INF, 1.0, 0.5, -INF], [-INF, -INF, -INF, -INF], [0.3, 2.0, -1.0, 0.1]])
ZERO_D = np.array(1.7)


TORCH_NAMES = {"nansum.dim_IntList": "nansum"}  # renamed overloads in torch 2.13


def _torch_op(name):
    base, _, overload = TORCH_NAMES.get(name, name).partition(".")
    return getattr(getattr(aten, base), overload or "default")


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _kw(kwargs):
    return {k: to_torch(v) for k, v in kwargs.items()}


# -- values, indices and dtypes ------------------------------------------------------------------

I32 = np.array([[1, 2, -3], [7, 0, 2]], np.int32)
B = np.array([[True, False], [True, True]])
U8 = np.array([0, 3, 1], np.uint8)
F32 = X.astype(np.float32)

FORWARD = [
    ("sum", (I32,), {}),
    ("sum", (B,), {}),
    ("sum", (F32,), {"dtype": np.dtype(np.float64)}),
    ("sum", (XC,), {}),
    ("sum.dim_IntList", (X, [1, -2], True), {}),
    ("sum.dim_IntList", (I32, [], False), {}),
    ("sum.dim_IntList", (ZERO_D, [0], False), {}),
    ("nansum", (WITH_NAN,), {}),
    ("nansum.dim_IntList", (WITH_NAN, [1], False), {}),
    ("nansum", (I32,), {}),
    ("mean", (F32,), {}),
    ("mean", (I32,), {"dtype": np.dtype(np.float64)}),
    ("mean.dim", (XC, [-1], True), {}),
    ("mean.dim", (X, [0, 1], False), {}),
    ("prod", (I32,), {}),
    ("prod", (ZEROS,), {}),
    ("prod.dim_int", (ZEROS, -1, True), {}),
    ("prod.dim_int", (B, 0), {}),
    ("var", (X,), {}),
    ("var", (X, False), {}),
    ("var", (XC,), {}),
    ("var", (np.array([2.0]),), {}),
    ("var.dim", (X, [1], False, True), {}),
    ("std", (XC, False), {}),
    ("std.dim", (X, [-1, 0], True), {}),
    ("var_mean", (X,), {}),
    ("var_mean.dim", (XC, [1], False, True), {}),
    ("std_mean", (X, False), {}),
    ("std_mean.dim", (X, [0], True, False), {}),
    *[("norm.Scalar", (X, p), {}) for p in (2, 1, 0, 3.5, 0.5, INF, -INF)],
    ("norm.Scalar", (XC, 2), {}),
    ("norm.ScalarOpt_dim", (X, None, [1], True), {}),
    ("norm.ScalarOpt_dim", (XC, 3, [0], False), {}),
    ("norm.ScalarOpt_dtype", (F32, 2), {"dtype": np.dtype(np.float64)}),
    ("norm.ScalarOpt_dim_dtype", (F32, 1, [1], False), {"dtype": np.dtype(np.float64)}),
    ("dist", (X, X[0], 2), {}),
    ("dist", (X, X[1], INF), {}),
    ("dist", (X, X[1], 0), {}),
    ("renorm", (X, 2, 0, 2.0), {}),
    ("renorm", (X, 1, -1, 1.5), {}),
    ("logsumexp", (X, [1], False), {}),
    ("logsumexp", (NEG_INF, [1], True), {}),
    ("logsumexp", (I32, [0], False), {}),
    ("max", (TIES,), {}),
    ("min", (WITH_NAN,), {}),
    ("max", (I32,), {}),
    ("max.dim", (TIES, 1), {}),
    ("min.dim", (TIES, 0, True), {}),
    ("max.dim", (WITH_NAN, 1), {}),
    ("max.dim", (ZERO_D, 0), {}),
    ("min.dim", (B, 1), {}),
    ("amax", (TIES,), {}),
    ("amin", (TIES, [1], True), {}),
    ("amax", (WITH_NAN, [-1, 0]), {}),
    ("median", (TIES,), {}),
    ("median", (WITH_NAN,), {}),
    ("nanmedian", (WITH_NAN,), {}),
    ("nanmedian", (np.array([NAN, NAN]),), {}),
    ("median", (np.zeros(0),), {}),
    ("nanmedian", (np.zeros((0, 2)),), {}),
    ("median", (np.zeros((2, 0), np.int64),), {}),  # empty: NaN
    ("median.dim", (X, 1), {}),
    ("median.dim", (WITH_NAN, 1, True), {}),
    ("nanmedian.dim", (WITH_NAN, 1), {}),
    ("median.dim", (I32, 0), {}),
    ("mode", (TIES, 1), {}),
    ("mode", (TIES, 0, True), {}),
    ("mode", (np.array([[3, 1, 3, 1, 2]]),), {}),
    ("kthvalue", (X, 2, 1), {}),
    ("kthvalue", (X, 3, 0, True), {}),
    ("topk", (X, 2), {}),
    ("topk", (X, 2, 0, False), {}),
    ("topk", (np.array([1.0, NAN, 3.0, 0.5]), 2), {}),
    ("sort", (X,), {}),
    ("sort", (X, 0, True), {}),
    ("sort", (WITH_NAN, 1, True), {}),
    ("sort", (ZERO_D,), {}),
    ("sort", (I32, 1, True), {}),
    ("cumsum", (I32, 1), {}),
    ("cumsum", (X, -1), {"dtype": np.dtype(np.float32)}),
    ("cumsum", (ZERO_D, 0), {}),
    ("cumprod", (ZEROS, 1), {}),
    ("cumprod", (B, 0), {}),
    ("cumprod", (XC, 0), {}),
    ("cummax", (TIES, 1), {}),
    ("cummin", (TIES, 1), {}),
    ("cummax", (WITH_NAN, 1), {}),
    ("cummin", (WITH_NAN, 0), {}),
    ("cummax", (I32, 0), {}),
    ("logcumsumexp", (X, 1), {}),
    ("logcumsumexp", (NEG_INF, 1), {}),
    ("count_nonzero", (ZEROS,), {}),
    ("count_nonzero", (ZEROS, 1), {}),
    ("count_nonzero.dim_IntList", (ZEROS, [0, 1]), {}),
    ("any", (ZEROS,), {}),
    ("any", (U8,), {}),
    ("any.dim", (ZEROS, 1), {}),
    ("all", (ZEROS,), {}),
    ("all.dim", (ZEROS, 0, True), {}),
    ("all", (U8,), {}),
    ("histc", (X,), {}),
    ("histc", (X, 5, -1, 1), {}),
    ("histc", (np.full(3, 2.0),), {"bins": 4}),
    ("_unique", (np.array([3.0, 1.0, 3.0, 2.0]),), {}),
    ("_unique", (np.array([[3, 1], [1, 2]]), True, True), {}),
]


@pytest.mark.parametrize("name,args,kwargs", FORWARD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FORWARD)])
def test_values_indices_and_dtypes_follow_aten(name, args, kwargs):
    ours = _outputs(SEEDS.op(name)(*args, **kwargs))
    theirs = _outputs(_torch_op(name)(*[to_torch(a) for a in args], **_kw(kwargs)))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_same(o, to_numpy(t), rtol=1e-6, atol=1e-12)


# -- derivatives against torch ---------------------------------------------------------------------

# (name, args, kwargs): args[0] is differentiated (and args[1] for dist)
GRADS = [
    ("sum", (XC,), {}),
    ("sum.dim_IntList", (X, [-1], False), {}),
    ("nansum", (WITH_NAN,), {}),
    ("nansum.dim_IntList", (WITH_NAN, [0], True), {}),
    ("mean", (XC,), {}),
    ("mean.dim", (X, [1, 0], True), {}),
    ("prod", (X,), {}),
    ("prod", (ZEROS,), {}),
    ("prod", (ONE_ZERO,), {}),
    ("prod.dim_int", (ZEROS, 1), {}),
    ("prod.dim_int", (XC, 0, True), {}),
    ("var", (XC,), {}),
    ("var.dim", (X, [1], False, True), {}),
    ("std", (X,), {}),
    ("std.dim", (XC, [0], True, False), {}),
    ("var_mean", (X,), {}),
    ("std_mean.dim", (X, [1], True, True), {}),
    ("std_mean", (XC, False), {}),
    ("var_mean.dim", (X, [-1], False, False), {}),
    *[("norm.Scalar", (X, p), {}) for p in (2, 1, 3, 1.5, 0.5, INF, 0)],
    ("norm.Scalar", (XC, 2), {}),
    ("norm.ScalarOpt_dim", (X, 3, [1], True), {}),
    ("norm.ScalarOpt_dim", (TIES, INF, [1], False), {}),
    ("norm.ScalarOpt_dim", (ZEROS, 2, [0], False), {}),
    ("norm.ScalarOpt_dtype", (X, 2), {"dtype": np.dtype(np.float64)}),
    ("norm.ScalarOpt_dim_dtype", (X, 1.5, [0], True), {"dtype": np.dtype(np.float64)}),
    ("dist", (X, X[1] + 0.5, 2), {}),
    ("dist", (X, X[1] + 0.5, 3), {}),
    ("renorm", (X, 2, 0, 2.0), {}),
    ("renorm", (X, 1, 1, 1.5), {}),
    ("logsumexp", (X, [1], False), {}),
    ("logsumexp", (NEG_INF, [1], True), {}),
    ("max", (TIES,), {}),
    ("min", (TIES,), {}),
    ("max.dim", (TIES, 1), {}),
    ("min.dim", (TIES, 0, True), {}),
    ("amax", (TIES,), {}),
    ("amin", (TIES, [1], True), {}),
    ("amax", (TIES, [0], False), {}),
    ("median", (TIES,), {}),
    ("nanmedian", (WITH_NAN,), {}),
    ("median.dim", (X, 1), {}),
    ("nanmedian.dim", (WITH_NAN, 1, True), {}),
    ("mode", (TIES, 1), {}),
    ("kthvalue", (X, 2, 0), {}),
    ("topk", (X, 3), {}),
    ("topk", (X, 2, 0, False), {}),
    ("sort", (X, 1, True), {}),
    ("sort", (ZERO_D,), {}),
    ("cumsum", (XC, 1), {}),
    ("cumprod", (X, 1), {}),
    ("cumprod", (ZEROS, 1), {}),
    ("cumprod", (ZEROS, 0), {}),
    ("cumprod", (XC, -1), {}),
    ("cummax", (TIES, 1), {}),
    ("cummin", (X, 0), {}),
    ("logcumsumexp", (X, 1), {}),
]
TORCH_NORM_JVP = "torch 2.13's forward AD of a full norm raises: tangent of size [1, 1] for a 0-d result"
JVP_XFAIL = {
    i: TORCH_NORM_JVP for i, (n, a, _) in enumerate(GRADS) if n in ("norm.Scalar", "norm.ScalarOpt_dtype") and a[1] != 0
}


def _params(xfails):
    return [
        pytest.param(
            n, a, k, id=f"{n}-{i}", marks=[pytest.mark.xfail(strict=True, reason=xfails[i])] if i in xfails else []
        )
        for i, (n, a, k) in enumerate(GRADS)
    ]


def _diff(name, args):
    return (0, 1) if name == "dist" else (0,)


def _fns(name, args, kwargs):
    op, t_op = SEEDS.op(name), _torch_op(name)
    diff = _diff(name, args)
    targs = [to_torch(a) for a in args]

    def sub(base, xs):
        full = list(base)
        for i, x in zip(diff, xs):
            full[i] = x
        return full

    mask = op.output_differentiable(*args, **kwargs)
    ours = lambda *xs: [y for y, m in zip(_outputs(op(*sub(args, xs), **kwargs)), mask) if m]  # noqa: E731
    theirs = lambda *xs: tuple(y for y, m in zip(_outputs(t_op(*sub(targs, xs), **_kw(kwargs))), mask) if m)  # noqa: E731
    return ours, theirs, [jnp.asarray(args[i]) for i in diff], [targs[i] for i in diff]


@pytest.mark.parametrize("name,args,kwargs", _params({}))
def test_vjp_matches_torch(name, args, kwargs):
    rng = np.random.default_rng(1)
    fn, tfn, xs, txs = _fns(name, args, kwargs)
    ys, vjp = jax.vjp(fn, *xs)
    cts = [random_like(rng, y) for y in ys]
    ours = vjp([jnp.asarray(c) for c in cts])
    txs = [x.clone().requires_grad_() for x in txs]
    theirs = torch.autograd.grad(tfn(*txs), txs, [to_torch(np.asarray(np.conj(c))) for c in cts], allow_unused=True)
    for o, x, t in zip(ours, txs, theirs, strict=True):  # unused (norm p=0): a zero gradient
        assert_same(o, np.conj(to_numpy(t)) if t is not None else np.zeros_like(to_numpy(x)))


@pytest.mark.parametrize("name,args,kwargs", _params(JVP_XFAIL))
def test_jvp_matches_torch(name, args, kwargs):
    rng = np.random.default_rng(2)
    fn, tfn, xs, txs = _fns(name, args, kwargs)
    ts = [random_like(rng, x) for x in xs]
    _, ours = jax.jvp(fn, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    _, theirs = torch.func.jvp(tfn, tuple(txs), tuple(to_torch(t) for t in ts))
    for o, t in zip(ours, theirs, strict=True):
        assert_same(o, to_numpy(t))


# -- complex log-sum-exp: both spec files -----------------------------------------------------------

# imaginary parts up to 3: where ATen's logcumsumexp (an unwrapped sequential _log_add_exp_helper)
# and log(cumsum(exp(x))) differ by 2 pi
XC_WIDE = np.random.default_rng(11).uniform(-2, 2, (3, 4)) + 1j * np.random.default_rng(12).uniform(-3, 3, (3, 4))
TORCH_REGISTRY = None


def _torch_registry():
    global TORCH_REGISTRY
    if TORCH_REGISTRY is None:
        TORCH_REGISTRY = jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))
    return TORCH_REGISTRY


@pytest.fixture(scope="module")
def torch_registry():
    return _torch_registry()


COMPLEX_LSE = [
    ("logsumexp", ([1], False)),
    ("logsumexp", ([0, 1], True)),
    ("logcumsumexp", (1,)),
    ("logcumsumexp", (-2,)),
]


@pytest.mark.parametrize("spec", ["seed", "torch"])
@pytest.mark.parametrize("name,rest", COMPLEX_LSE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(COMPLEX_LSE)])
def test_complex_log_sum_exp_values_vjp_and_jvp_are_torchs(name, rest, spec):
    op = SEEDS.op(name) if spec == "seed" else _torch_registry().op(name)
    t_op = _torch_op(name)
    x = jnp.asarray(XC_WIDE)
    assert_same(op(x, *rest), to_numpy(t_op(to_torch(XC_WIDE), *rest)))
    rng = np.random.default_rng(3)
    y, vjp = jax.vjp(lambda x: op(x, *rest), x)
    ct = random_like(rng, y)
    tx = to_torch(XC_WIDE).clone().requires_grad_()
    (theirs,) = torch.autograd.grad(t_op(tx, *rest), tx, to_torch(np.asarray(np.conj(ct))))
    assert_same(vjp(jnp.asarray(ct))[0], np.conj(to_numpy(theirs)))
    t = random_like(rng, XC_WIDE)
    _, ours = jax.jvp(lambda x: op(x, *rest), (x,), (jnp.asarray(t),))
    _, expected = torch.func.jvp(lambda x: t_op(x, *rest), (to_torch(XC_WIDE),), (to_torch(t),))
    assert_same(ours, to_numpy(expected))


@pytest.mark.parametrize("x", [I32, B, np.array([3, 1], np.int64)], ids=["int32", "bool", "int64"])
def test_logcumsumexp_rejects_integer_and_bool_inputs_as_aten(x):
    with pytest.raises(RuntimeError, match="not implemented"):
        aten.logcumsumexp(to_torch(x), 0)
    with pytest.raises(RuntimeError, match="not implemented"):
        SEEDS.op("logcumsumexp")(jnp.asarray(x), 0)


# -- semantics of the gradients ---------------------------------------------------------------------


def test_full_max_splits_ties_evenly_and_max_dim_routes_to_the_first_index():
    x = jnp.array([[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]])
    assert jax.grad(lambda x: SEEDS.op("max")(x))(x).tolist() == [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]]
    assert jax.grad(lambda x: SEEDS.op("max.dim")(x, 1)[0].sum())(x).tolist() == [[0, 1, 0], [1, 0, 0]]


def test_prod_with_zeros_is_the_product_of_the_others():
    x = jnp.array([2.0, 0.0, 3.0])
    assert jax.grad(SEEDS.op("prod"))(x).tolist() == [0.0, 6.0, 0.0]
    assert jax.grad(SEEDS.op("prod"))(jnp.array([0.0, 0.0, 3.0])).tolist() == [0.0, 0.0, 0.0]
    second = jax.hessian(SEEDS.op("prod"))(x)  # differentiable a second time through the zero path
    np.testing.assert_allclose(second, [[0, 3, 0], [3, 0, 2], [0, 2, 0]])


def test_indices_are_int64_and_not_differentiable():
    x = jnp.asarray(X)
    for name, args in (
        ("max.dim", (1,)),
        ("sort", ()),
        ("topk", (2,)),
        ("cummax", (0,)),
        ("kthvalue", (1,)),
        ("mode", ()),
        ("median.dim", (0,)),
    ):
        op = SEEDS.op(name)
        assert op(x, *args)[1].dtype == jnp.int64
        assert op.output_differentiable(x, *args) == (True, False)


@pytest.mark.parametrize("name", ["histc", "_unique"])
def test_no_derivative_where_the_spec_says_not_implemented(name):
    with pytest.raises(NotImplementedDerivative):
        jax.grad(lambda x: jnp.sum(_outputs(SEEDS.op(name)(x))[0]))(jnp.asarray(X))


@pytest.mark.parametrize("name", ["any", "all"])
def test_logical_reductions_have_no_differentiable_output(name):
    assert SEEDS.op(name).output_differentiable(X) == (False,)


def test_count_nonzero_has_no_differentiable_output():
    assert SEEDS.op("count_nonzero").output_differentiable(X) == (False,)


# -- transformations: one representative per sub-group -----------------------------------------------

REPRESENTATIVES = [
    ("sum.dim_IntList", lambda x: SEEDS.op("sum.dim_IntList")(x, [1]).sum()),
    ("cumprod", lambda x: (SEEDS.op("cumprod")(x, 1) ** 2).sum()),
    ("max.dim", lambda x: SEEDS.op("max.dim")(x, 0)[0].sum()),
    ("sort", lambda x: (SEEDS.op("sort")(x, 1, True)[0] * jnp.arange(4.0)).sum()),
]


@pytest.mark.parametrize("name,f", REPRESENTATIVES, ids=[n for n, _ in REPRESENTATIVES])
def test_jit_and_vmap_give_the_same_gradients(name, f):
    xs = jnp.asarray(np.stack([ZEROS, X]))
    eager = np.stack([jax.grad(f)(x) for x in xs])
    assert_same(jax.jit(jax.grad(f))(xs[1]), eager[1])
    assert_same(jax.vmap(jax.grad(f))(xs), eager)
    assert_same(jax.jit(jax.vmap(jax.grad(f)))(xs), eager)


def test_var_with_no_degrees_of_freedom_has_torch_nan_gradient():
    """correction equal to the count: ATen's backward divides by zero in doubles (inf, and nan
    where x is its mean); a Python division raised ZeroDivisionError instead."""
    import torch

    op = _torch_registry().op("var_mean.correction")
    with jax.enable_x64(True):
        x = jnp.array([1.5, -0.5, 0.5])
        ours = jax.grad(lambda x: sum(op(x, [0], correction=3)))(x)
    t = torch.tensor([1.5, -0.5, 0.5], dtype=torch.float64, requires_grad=True)
    sum(torch.var_mean(t, dim=[0], correction=3)).backward()
    assert np.isnan(t.grad.numpy()[2]) and np.isinf(t.grad.numpy()[0])
    np.testing.assert_array_equal(np.asarray(ours), t.grad.numpy())


# -- torch's own entries: stable sort, boolean reductions over dims ----------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stable": True},
        {"stable": None, "dim": 0, "descending": True},
        {"stable": False, "dim": -1, "descending": True},
    ],
)
def test_sort_stable_ties_and_nan(torch_registry, kwargs):
    x = np.array([[2.0, 1.0, 2.0, np.nan, 1.0], [0.5, 0.5, -1.0, 3.0, 0.5]])
    check_against_torch(torch_registry.op("sort.stable"), aten.sort.stable, [x], kwargs=kwargs)
    check_against_torch(torch_registry.op("sort.stable"), aten.sort.stable, [np.array(1.5)], kwargs={"stable": True})
    check_against_torch(
        torch_registry.op("sort.stable"),
        aten.sort.stable,
        [np.array([3, 1, 3, 2], np.int32)],
        diff=(),
        kwargs=kwargs if "dim" not in kwargs else {"stable": True},
    )


@pytest.mark.parametrize("dim,keepdim", [(None, False), ([1], True), ([-1, 0], False), ([], False), (None, True)])
def test_any_all_dims(torch_registry, dim, keepdim):
    x = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    for name, fn in (("any.dims", aten.any.dims), ("all.dims", aten.all.dims)):
        check_against_torch(torch_registry.op(name), fn, [x, dim, keepdim], diff=())
        check_against_torch(torch_registry.op(name), fn, [x.astype(np.uint8), dim, keepdim], diff=())
        check_against_torch(torch_registry.op(name), fn, [np.zeros((0, 3), bool), dim, keepdim], diff=())


# -- torch's own entries: the unique family (counts, dims, consecutive runs) -------------------------


def test_is_all_true_is_any_true(torch_registry):
    for x in (np.array([True, False]), np.ones((2, 2), bool), np.zeros((0,), bool), np.array(False)):
        check_against_torch(torch_registry.op("_is_all_true"), aten._is_all_true, [x], diff=())
        check_against_torch(torch_registry.op("_is_any_true"), aten._is_any_true, [x], diff=())
    with pytest.raises(TypeError):
        torch_registry.op("_is_all_true")(jnp.ones(2))


UNIQUE_X = np.array([[3.0, 1.0, 3.0], [3.0, 1.0, 3.0], [2.0, -1.0, 2.0], [3.0, 1.0, 3.0]])
UNIQUE_INPUTS = [
    UNIQUE_X,
    UNIQUE_X.astype(np.int64),
    np.array([2, 2, 7, 2, -1, -1]),
    np.array(4.0),
    np.zeros((0,)),
    np.array([[True, False], [True, False]]),
]


def _outputs_match(ours, theirs):
    for a, b in zip(ours, theirs):
        assert np.asarray(a).dtype == b.numpy().dtype
        assert_same(a, b)


@pytest.mark.parametrize("x", UNIQUE_INPUTS, ids=lambda x: f"{x.dtype}{x.shape}")
@pytest.mark.parametrize("flags", [(False, False), (True, False), (True, True)])
def test_unique2_and_unique_consecutive(torch_registry, x, flags):
    _outputs_match(torch_registry.op("_unique2")(x, True, *flags), aten._unique2(to_torch(x), True, *flags))
    _outputs_match(
        torch_registry.op("unique_consecutive")(x, *flags, None), aten.unique_consecutive(to_torch(x), *flags, None)
    )


@pytest.mark.parametrize(
    "x", [UNIQUE_X, UNIQUE_X.astype(np.int64), UNIQUE_X.reshape(2, 2, 3)], ids=["float", "int", "3d"]
)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("flags", [(False, False), (True, True)])
def test_unique_along_a_dim(torch_registry, x, dim, flags):
    _outputs_match(
        torch_registry.op("unique_dim")(x, dim, True, *flags), aten.unique_dim(to_torch(x), dim, True, *flags)
    )
    _outputs_match(
        torch_registry.op("unique_dim_consecutive")(x, dim, *flags),
        aten.unique_dim_consecutive(to_torch(x), dim, *flags),
    )
    _outputs_match(
        torch_registry.op("unique_consecutive")(x, *flags, dim), aten.unique_consecutive(to_torch(x), *flags, dim)
    )


def test_unique_refuses_jit(torch_registry):
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda x: torch_registry.op("unique_dim")(x, 0)[0])(jnp.asarray(UNIQUE_X))


# ==================================================================================================
# torch's own entries for aminmax, segment_reduce and norm.Scalar (torch_registry above: the spec
# torch 2.13 ships). The op database and tests/check/test_parity.py compare them with torch
# (values, dtypes, vjp, jvp) on their records' samples and kinks (aminmax's ties, in
# forward/reductions.py). These tests add what a kink tuple cannot pass, keyword-only
# arguments: aminmax's ties over a dim, segment_reduce's ties, zeros and empty segments; the jvp of
# segment_reduce (torch has no forward-mode derivative of it to compare with) against the Jacobian of torch's
# backward; and norm.Scalar's jvp where torch.func.jvp is wrong (its record's known difference for
# torch's file): the jvp of torch's backward formula, which jaxderiv's equals.
# ==================================================================================================


def _agrees_with_torch(op, samples):
    """test_parity's comparison (values, dtypes, vjp, jvp)
    on `samples`, which may pass keyword arguments."""
    row = P.compare_op(op, samples, [], [])
    assert row.ok and row.forward, row.note


def _jvp_is_the_jacobian_of_torchs_backward(op, sample, seed=1):
    """jax.jvp (the transposed backward formula) of the first output against the Jacobian of torch's
    backward applied to the same tangents, for an entry torch.func.jvp has no formula for."""
    call = P._Call(op, sample.args, sample.kwargs)
    xs, rng = call.xs(), np.random.default_rng(seed)
    ts = [rng.normal(size=np.shape(x)) for x in xs]
    _, ours = jax.jvp(lambda *a: call.jax(*a)[0], tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, ts)))
    jac = torch.autograd.functional.jacobian(lambda *a: call.torch(*a)[0], tuple(map(P._to_torch, xs)))
    theirs = sum(torch.tensordot(j, P._to_torch(t), dims=t.ndim) for j, t in zip(jac, ts))
    assert_close(ours, theirs, 1e-9)


@pytest.mark.parametrize("kwargs", [{"dim": 1}, {"dim": -2, "keepdim": True}, {"keepdim": True}])
def test_aminmax_ties_over_a_dim(torch_registry, kwargs):
    """The record's tie kink (test_parity compares it over all elements) with dim and keepdim."""
    (args,) = opdb.record("aminmax").kinks
    _agrees_with_torch(torch_registry.op("aminmax"), [Sample(args, kwargs)])


def test_aminmax_under_jit_and_vmap(torch_registry):
    """Ties split the gradient evenly under jit and vmap too."""
    ((ties,),) = opdb.record("aminmax").kinks
    op = torch_registry.op("aminmax")
    grad = jax.jit(jax.vmap(jax.grad(lambda r: sum(jnp.sum(o) for o in op(r)))))(jnp.asarray(ties))
    expected = np.array([[0, 0.5, 0.5, 1], [0.5, 0, 0.5, 1], [0.5, 0.5, 0.5, 0.5]])
    t = torch.from_numpy(ties).requires_grad_(True)
    mn, mx = aten.aminmax(t, dim=1)
    (theirs,) = torch.autograd.grad((mn.sum() + mx.sum()), t)
    np.testing.assert_allclose(np.asarray(grad), to_numpy(theirs))
    np.testing.assert_allclose(np.asarray(grad), expected)


# an empty segment, a zero (prod's own path), ties within a segment (max and min split them)
SEGMENTS = [
    Sample((np.array([1.0, 2.0, 0.0, 2.0, -1.0, 3.0]), r), {"lengths": np.array([2, 0, 4])}, f"{r} empty segment")
    for r in ("sum", "prod", "max", "min")
] + [
    Sample((np.array([2.0, 2.0, 0.0, 3.0, -1.0, 3.0]), r), {"lengths": np.array([2, 0, 4])}, f"{r} ties")
    for r in ("prod", "max", "min")
]


@pytest.mark.parametrize("sample", SEGMENTS, ids=lambda s: s.label)
def test_segment_reduce_ties_zeros_and_empty_segments(torch_registry, sample):
    op = torch_registry.op("segment_reduce")
    _agrees_with_torch(op, [sample])
    _jvp_is_the_jacobian_of_torchs_backward(op, sample)


def test_segment_reduce_jvp_on_the_record_samples(torch_registry):
    op = torch_registry.op("segment_reduce")
    assert not op.entry.forward  # its jvp is the backward formula transposed
    for sample in samples_for(op, np.random.default_rng(0)):
        _jvp_is_the_jacobian_of_torchs_backward(op, sample)


def test_norm_scalar_jvp_is_the_jvp_of_torchs_backward(torch_registry):
    """Where torch.func.jvp fails (the record's known difference, asserted by test_parity), torch's
    backward formula transposed (torch.autograd.functional.jvp) is the oracle."""
    known = P.known_difference("norm.Scalar", torch_spec=True)
    assert known is not None and "jvp" in known.columns  # else test_parity compares the jvp with torch.func.jvp
    rng = np.random.default_rng(1)
    x, t = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    _, ours = jax.jvp(lambda a: torch_registry.op("norm.Scalar")(a, 3.0), (jnp.asarray(x),), (jnp.asarray(t),))
    _, theirs = torch.autograd.functional.jvp(lambda a: aten.norm.Scalar(a, 3.0), to_torch(x), to_torch(t))
    assert_close(ours, theirs, 1e-9)
