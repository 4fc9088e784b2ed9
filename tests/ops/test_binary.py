"""The binary and ternary elementwise family against PyTorch 2.13: values and dtypes, vjp, jvp.

Kinks are included: at a clamp bound the gradient is 1 (JAX's own autodiff says 0.5), ties of
maximum and minimum split it in halves, fmax and fmin send it to self on ties and away from NaN,
rounded division has none. Dtypes follow ATen's promotion with wrapped numbers and 0-d tensors.
For complex inputs jax_vjp(ct) == conj(torch_grad(conj(ct))).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative
from jaxderiv.forward.binary import result_type

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, random_like, to_numpy, to_torch  # noqa: E402

aten = torch.ops.aten

F64, C128 = np.dtype(np.float64), np.dtype(np.complex128)
REAL, BOTH = (F64,), (F64, C128)
NAN, INF = math.nan, math.inf


def _torch_op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the jaxderiv op, also the torch op unless torch_fn says otherwise
    args: Callable[[np.random.Generator, np.dtype], tuple]  # arrays and scalars in schema order
    dtypes: tuple = REAL  # input dtypes on which the spec's formulas are checked
    kwargs: dict = dataclasses.field(default_factory=dict)
    torch_fn: Callable | None = None
    complex_differs: tuple[str, ...] = ()  # modes where the spec's complex formula is not torch's
    jvp_differs: str = ""  # why forward mode differs from torch's, whose result formula the spec lacks

    def call_torch(self, *args):
        return (self.torch_fn or _torch_op(self.name))(*args, **self.kwargs)

    def diff(self, args) -> tuple[int, ...]:
        """Positions of the inexact arrays whose argument the spec differentiates."""
        op = jaxderiv.op(self.name)
        names = [a.name for a in op.schema.arguments]
        return tuple(
            i
            for i, a in enumerate(args)
            if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.inexact) and names[i] in op.differentiable_inputs
        )


def _x(*kinks, lo=-2.0, hi=2.0, shape=(2, 3)):
    """Random values of `shape` in [lo, hi] (complex: both parts), the kink points placed first."""

    def make(rng, dtype):
        x = rng.uniform(lo, hi, shape)
        if np.issubdtype(dtype, np.complexfloating):
            x = x + 1j * rng.uniform(lo, hi, shape)
        x.flat[: len(kinks)] = kinks
        return x.astype(dtype)

    return make


def _case(name, *makers, dtypes=REAL, **kw):
    """op(*args): an argument is a maker (rng, dtype) -> array, or a Scalar as it is."""
    return Case(name, lambda rng, dt: tuple(m(rng, dt) if callable(m) else m for m in makers), dtypes, **kw)


def _fixed(*values):
    """A maker giving these values whatever the dtype: kink points on real inputs."""
    return lambda rng, dt: np.asarray(values, dt)


def _inplace(name):
    """An in-place op; torch runs it on a copy, so that its input stays a leaf."""
    return lambda self, other: _torch_op(name)(self.clone(), other)


def _equal_branches(rng, dtype):
    x = _x()(rng, dtype)
    return rng.random((2, 3)) < 0.5, x, x.copy()


# Where the spec has no result formula (clamp.Tensor, atan2) forward mode transposes the backward
# formula; at a kink torch 2.13's own result formula may choose otherwise.
CLAMP_JVP = "at a tie with a lone bound, torch 2.13's clamp_jvp picks the bound's tangent"
X, ROW, POS, BCAST = _x(), _x(shape=(3,)), _x(lo=0.5, hi=2.0), _x(lo=0.5, hi=2.0, shape=(3,))
CMP = [f"{c}_.{o}" for c in ("eq", "ne", "lt", "le", "gt", "ge") for o in ("Tensor", "Scalar")]

CASES = [
    _case("add.Tensor", X, ROW, dtypes=BOTH, kwargs={"alpha": 2.0}),
    _case("add.Scalar", X, 0.7, 2.0, dtypes=BOTH),
    _case("sub.Tensor", X, ROW, dtypes=BOTH, kwargs={"alpha": 2.0}),
    _case("sub.Scalar", X, 0.7, 2.0, dtypes=BOTH),
    _case("rsub.Tensor", X, ROW, dtypes=BOTH, kwargs={"alpha": 2.0}),
    _case("rsub.Scalar", X, 0.7, 2.0, dtypes=BOTH),
    _case("mul.Tensor", X, ROW, dtypes=BOTH),
    _case("mul.Scalar", X, 1.5, dtypes=BOTH),
    _case("div.Tensor", X, BCAST, dtypes=BOTH),
    _case("div.Scalar", X, 1.5, dtypes=BOTH),
    _case("div.Tensor_mode", X, BCAST, dtypes=BOTH, kwargs={"rounding_mode": None}),
    # rounded quotients are piecewise constant: zero gradients, also on the integers
    _case(
        "div.Tensor_mode", _fixed(3.0, -3.0, 2.5, 0.7), _fixed(1.5, 1.5, -0.5, 0.3), kwargs={"rounding_mode": "trunc"}
    ),
    _case(
        "div.Tensor_mode", _fixed(3.0, -3.0, 2.5, 0.7), _fixed(1.5, 1.5, -0.5, 0.3), kwargs={"rounding_mode": "floor"}
    ),
    _case("div.Scalar_mode", _fixed(3.0, -3.0, 2.5, 0.7), 1.5, kwargs={"rounding_mode": "floor"}),
    _case("div.Scalar_mode", X, 1.5, dtypes=BOTH, kwargs={"rounding_mode": None}),
    _case("pow.Tensor_Scalar", POS, 2.5, dtypes=BOTH),
    _case("pow.Tensor_Scalar", _fixed(0.0, 1.0, -2.0), 0),  # x^0: zero gradient, also at 0
    _case("pow.Tensor_Scalar", _fixed(0.0, 1.0, -2.0), 3),
    _case("pow.Tensor_Scalar", _fixed(0.0, 1.0, 2.0), 0.5),  # infinite slope at 0
    _case("pow.Tensor_Tensor", POS, _x(shape=(3,)), dtypes=BOTH),
    # base 0: d/db is 0 for b >= 0 and -inf for b < 0; d/da is 0 for b = 0
    _case("pow.Tensor_Tensor", _fixed(0.0, 0.0, 0.0, 0.0, 2.0), _fixed(0.0, 1.0, 2.0, -1.0, 0.0)),
    _case("pow.Scalar", 2.5, X, dtypes=BOTH),
    _case("pow.Scalar", 0.0, _fixed(0.0, 1.0, -1.0, 2.0)),
    _case("atan2", X, ROW),
    _case(
        "atan2",
        _fixed(0.0, 1.0),
        _fixed(0.0, 0.0),
        jvp_differs="at the origin torch 2.13's atan2 result formula gives 0/0",
    ),
    _case("hypot", X, ROW),
    _case("hypot", _fixed(0.0, 3.0), _fixed(0.0, 4.0)),
    _case("copysign.Tensor", _fixed(0.0, -0.0, 1.5, -2.0), _fixed(-1.0, 1.0, -0.0, 3.0)),  # self = 0: gradient 0
    _case("copysign.Scalar", _fixed(0.0, -1.0, 2.0), -0.5),
    _case("fmod.Scalar", _fixed(-2.0, 1.5, 0.75, 1.0), 0.75),  # on the jumps too: gradient 1
    _case("fmod.Tensor", _fixed(-2.0, 1.5, 3.0, 1.0), np.array([2, 3, 1, 1])),
    _case("remainder.Scalar", _fixed(-2.0, 1.5, 0.75, 1.0), 0.75),
    _case("remainder.Tensor", _fixed(-2.0, 1.5, 3.0, 1.0), _fixed(0.5, -1.0, 1.5, 0.3)),
    _case("lerp.Scalar", X, ROW, 0.5, dtypes=BOTH),  # 0.5: where ATen switches formulas
    _case("lerp.Scalar", X, X, 0.3 - 0.2j, dtypes=(C128,)),
    _case("lerp.Tensor", X, ROW, _x(0.5, -0.5, 1.0, lo=-1.0, hi=2.0), dtypes=BOTH),
    _case("addcmul", X, ROW, X, dtypes=BOTH, kwargs={"value": 0.5}),
    _case("addcdiv", X, ROW, POS, dtypes=BOTH, kwargs={"value": 0.5}),
    _case("addcdiv", X, ROW, BCAST, dtypes=BOTH),
    # clamp at its bounds: gradient 1, JAX's own autodiff gives 0.5
    _case("clamp", _x(-1.0, 1.0), -1.0, 1.0),
    _case("clamp", _x(-0.5), -0.5, None),
    _case("clamp", _x(0.5), None, 0.5),
    _case("clamp", _x(0.5, -0.5), 0.5, -0.5),  # min > max: max everywhere
    _case("clamp.Tensor", _x(-1.0, 1.0, 0.0, 0.5), _fixed(-1.0, -1.0, 0.0), _fixed(1.0, 1.0, 1.0)),
    _case("clamp.Tensor", _x(-1.0, 1.0, 0.0), _x(-1.0, lo=-1.5, hi=-0.5, shape=(3,)), None, jvp_differs=CLAMP_JVP),
    _case("clamp.Tensor", _x(1.0, -1.0, 0.0), None, _x(1.0, lo=0.5, hi=1.5, shape=(3,)), jvp_differs=CLAMP_JVP),
    _case("clamp.Tensor", _x(-1.1, 1.0, 0.0), _x(-1.0, lo=-1.5, hi=-0.5, shape=(3,)), None),  # no tie
    _case("clamp.Tensor", _x(0.5, -0.5), _fixed(0.5, 0.5, 0.5), _fixed(-0.5, -0.5, -0.5)),
    _case("clamp_min", _x(0.3, 0.3), 0.3),
    _case("clamp_min.Tensor", _x(0.3, -1.0, 2.0), _fixed(0.3, -1.0, 2.0)),
    _case("clamp_max", _x(0.3, 0.3), 0.3),
    _case("clamp_max.Tensor", _x(0.3, -1.0, 2.0), _fixed(0.3, -1.0, 2.0)),
    # where with equal branches: the condition alone routes the gradient
    Case("_s_where", _equal_branches, BOTH, torch_fn=aten.where.self),
    _case("_s_where", lambda rng, dt: rng.random((3,)) < 0.5, X, ROW, dtypes=BOTH, torch_fn=aten.where.self),
    _case("logaddexp", X, ROW, dtypes=BOTH, complex_differs=("vjp",)),
    _case("logaddexp", _fixed(1.0, -INF, INF), _fixed(1.0, -INF, 0.0)),
    _case("logaddexp2", X, ROW),
    # ties: maximum and minimum give half to each side; fmax and fmin all to self
    _case("maximum", _fixed(1.0, 2.0, -1.0, 0.5), _fixed(1.0, 0.0, 3.0, 0.5)),
    _case("minimum", _fixed(1.0, 2.0, -1.0, 0.5), _fixed(1.0, 0.0, 3.0, 0.5)),
    _case("maximum", X, ROW),
    _case("fmax", _fixed(1.0, NAN, 2.0, 0.0, -1.0), _fixed(1.0, 1.0, NAN, 3.0, -2.0)),
    _case("fmin", _fixed(1.0, NAN, 2.0, 0.0, -1.0), _fixed(1.0, 1.0, NAN, 3.0, -2.0)),
    *[
        _case(
            n,
            X,
            ROW if n.endswith("Tensor") else 0.5,
            dtypes=BOTH if n[:2] in ("eq", "ne") else REAL,
            torch_fn=_inplace(n),
        )
        for n in CMP
    ],
]


def _params(mode):
    """(case, dtype) pairs; those where the spec's formula is known not to be torch's must fail."""
    out = []
    for i, c in enumerate(CASES):
        for dt in c.dtypes:
            why = c.jvp_differs if mode == "jvp" else ""
            if dt == C128 and mode in c.complex_differs:
                why = "the spec's formula predates complex support (no .conj())"
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            out.append(pytest.param(c, dt, marks=marks, id=f"{c.name}-{i}-{dt}"))
    return out


# -- running a case in both libraries -----------------------------------------------------------


def _functions(case, args, diff):
    """Ours and torch's op as functions of the arrays at positions `diff`."""
    op = jaxderiv.op(case.name)

    def substitute(base, xs):
        full = list(base)
        for i, x in zip(diff, xs):
            full[i] = x
        return full

    targs = [to_torch(a) for a in args]
    ours = lambda *xs: op(*substitute(args, xs), **case.kwargs)  # noqa: E731
    theirs = lambda *xs: case.call_torch(*substitute(targs, xs))  # noqa: E731
    return ours, theirs, [jnp.asarray(args[i]) for i in diff], [targs[i] for i in diff]


# -- derivatives ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case,dtype", _params("forward"))
def test_forward_matches_torch(case, dtype):
    args = case.args(np.random.default_rng(0), dtype)
    assert_same(
        jaxderiv.op(case.name)(*args, **case.kwargs),
        to_numpy(case.call_torch(*[to_torch(a) for a in args])),
        rtol=1e-13,
        atol=1e-15,
    )


@pytest.mark.parametrize("case,dtype", _params("vjp"))
def test_vjp_matches_torch(case, dtype):
    rng = np.random.default_rng(1)
    args = case.args(rng, dtype)
    fn, tfn, xs, txs = _functions(case, args, case.diff(args))
    y, vjp = jax.vjp(fn, *xs)
    ct = random_like(rng, y)
    ours = vjp(jnp.asarray(ct))
    txs = [x.clone().requires_grad_() for x in txs]
    theirs = torch.autograd.grad(tfn(*txs), txs, to_torch(np.conj(ct)))
    for o, t in zip(ours, theirs, strict=True):
        assert_same(o, np.conj(to_numpy(t)))


@pytest.mark.parametrize("case,dtype", _params("jvp"))
def test_jvp_matches_torch(case, dtype):
    rng = np.random.default_rng(2)
    args = case.args(rng, dtype)
    fn, tfn, xs, txs = _functions(case, args, case.diff(args))
    ts = [random_like(rng, x) for x in xs]
    _, ours = jax.jvp(fn, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    _, theirs = torch.func.jvp(tfn, tuple(txs), tuple(to_torch(t) for t in ts))
    assert_same(ours, to_numpy(theirs))


def test_clamp_at_its_bounds_is_torchs_subgradient_not_jaxs():
    x = jnp.array([-1.0, 0.0, 1.0, 2.0])
    assert jax.grad(lambda x: jaxderiv.op("clamp")(x, -1.0, 1.0).sum())(x).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert jax.grad(lambda x: jnp.clip(x, -1.0, 1.0).sum())(x).tolist() == [0.5, 1.0, 0.5, 0.0]


@pytest.mark.parametrize(
    "name,other", [("fmod.Tensor", "not implemented"), ("remainder.Tensor", "not given by the spec")]
)
def test_gradient_of_other_is_not_in_the_spec(name, other):
    """Only self's gradient is given (torch 2.13 has other's, the spec does not)."""
    op = jaxderiv.op(name)
    x, y = jnp.array([1.5, -2.0]), jnp.array([0.7, 0.9])
    assert_same(jax.grad(lambda x: op(x, y).sum())(x), np.ones(2))
    with pytest.raises(NotImplementedDerivative, match=other):
        jax.grad(lambda y: op(x, y).sum())(y)


def test_comparisons_have_no_differentiable_output():
    for c in ("eq", "ne", "lt", "le", "gt", "ge"):
        for overload, other in (("Tensor", np.array([0.5, 1.0])), ("Scalar", 0.5)):
            op = jaxderiv.op(f"{c}.{overload}")
            assert op.differentiable_inputs == ()
            assert op.output_differentiable(np.array([0.5, 2.0]), other) == (False,)


# -- values and dtypes: integers, bools, mixed dtypes, wrapped numbers ----------------------------

I32, I64, I8 = (np.array([1, 2, -3, 7], d) for d in (np.int32, np.int64, np.int8))
U8 = np.array([1, 2, 200, 7], np.uint8)
B = np.array([True, False, True, False])
F32, F64A = np.array([1.5, -2.0, 0.0, 3.25], np.float32), np.array([1.5, -2.0, 0.0, 3.25])
F64_0, C128_0 = np.array(2.0), np.array(1 - 2j)
NEG = np.array([7.0, -7.0, 7.5, -7.5, 0.0, -0.0, 1.0, -1.0])
DIVISORS = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0])

FORWARD = [
    ("add.Tensor", (I32, F64_0), {}),  # a 0-d tensor of a higher category wins
    ("add.Tensor", (F32, F64_0), {}),  # ... and does not promote within one
    ("add.Tensor", (F32, C128_0), {}),  # complex, at the dimensioned tensor's precision
    ("add.Tensor", (U8, I8), {}),
    ("add.Tensor", (B, B), {}),
    ("add.Tensor", (B, B), {"alpha": 2}),
    ("add.Tensor", (I64, I32), {"alpha": 3}),
    ("add.Scalar", (I32, 0.5), {}),
    ("add.Scalar", (B, 1), {}),
    ("add.Scalar", (F32, 1j), {}),
    ("add.Scalar", (I32, 1j), {}),
    ("add.Scalar", (F32, 1e10), {}),
    ("sub.Tensor", (I32, I64), {"alpha": 2}),
    ("sub.Scalar", (U8, 3), {}),
    ("rsub.Tensor", (F32, I32), {"alpha": 2}),
    ("rsub.Scalar", (I32, 2, 3), {}),
    ("mul.Tensor", (B, B), {}),
    ("mul.Tensor", (I32, F32), {}),
    ("mul.Scalar", (B, 2), {}),
    ("mul.Scalar", (B, True), {}),
    ("mul.Scalar", (I8, 2.5), {}),
    ("div.Tensor", (I32, I32), {}),
    ("div.Tensor", (B, B), {}),
    ("div.Tensor", (NEG, DIVISORS), {}),
    ("div.Scalar", (I64, 2), {}),
    ("div.Tensor_mode", (NEG.astype(np.int64), np.array([2, 2, -2, -2, 3, 3, 5, -5])), {"rounding_mode": "trunc"}),
    ("div.Tensor_mode", (NEG.astype(np.int64), np.array([2, 2, -2, -2, 3, 3, 5, -5])), {"rounding_mode": "floor"}),
    ("div.Tensor_mode", (NEG, DIVISORS), {"rounding_mode": "trunc"}),
    ("div.Tensor_mode", (NEG, DIVISORS), {"rounding_mode": "floor"}),
    (
        "div.Tensor_mode",
        (np.array([0.1, -0.1, 1e300, 5.0]), np.array([1e-300, 0.3, 1e-10, -INF])),
        {"rounding_mode": "floor"},
    ),
    ("div.Tensor_mode", (I32, I32), {"rounding_mode": None}),
    ("div.Scalar_mode", (NEG.astype(np.int32), 2.0), {"rounding_mode": "floor"}),
    ("div.Scalar_mode", (NEG.astype(np.int32), -2), {"rounding_mode": "floor"}),
    ("pow.Tensor_Scalar", (I32, 2), {}),
    ("pow.Tensor_Scalar", (I32, 2.5), {}),
    ("pow.Tensor_Scalar", (B, 2), {}),
    ("pow.Tensor_Scalar", (F32, 1j), {}),
    ("pow.Tensor_Tensor", (np.array([-1, 1, 2, 0, -2, 3]), np.array([-3, -2, -1, -1, 3, 0])), {}),
    ("pow.Tensor_Tensor", (F32, F64_0), {}),
    ("pow.Tensor_Tensor", (np.array([0.0, 0.0, -2.0, -8.0]), np.array([0.0, -1.0, 0.5, 1 / 3])), {}),
    ("pow.Scalar", (2, I32), {}),
    ("pow.Scalar", (2.5, I32), {}),
    ("pow.Scalar", (1, np.array([NAN, -INF, 3.0])), {}),
    ("pow.Scalar", (1j, F64A), {}),
    ("atan2", (I32, I32), {}),
    ("atan2", (np.array([0.0, -0.0, 0.0, -0.0]), np.array([0.0, 0.0, -0.0, -0.0])), {}),
    ("hypot", (F32, F32), {}),
    ("copysign.Tensor", (I32, I32), {}),
    ("copysign.Tensor", (np.array([1.0, 1.0, 0.0, NAN]), np.array([-0.0, 0.0, -1.0, -1.0])), {}),
    ("copysign.Scalar", (I32, -1), {}),
    ("fmod.Tensor", (NEG, DIVISORS), {}),
    ("fmod.Tensor", (NEG.astype(np.int32), np.array([2, 2, -2, -2, 3, 3, 5, -5], np.int32)), {}),
    ("fmod.Scalar", (I32, 2.5), {}),
    ("remainder.Tensor", (NEG, DIVISORS), {}),
    ("remainder.Tensor", (NEG.astype(np.int32), np.array([2, 2, -2, -2, 3, 3, 5, -5], np.int32)), {}),
    ("remainder.Scalar", (I32, 2), {}),
    ("remainder.Scalar", (F64A, -1.5), {}),
    ("lerp.Scalar", (F32, np.array([2.0, 1.0, -1.0, 0.0], np.float32), 0.75), {}),
    ("lerp.Tensor", (F32, F32[::-1].copy(), np.array(0.25)), {}),
    ("addcmul", (I32, I32, I32), {"value": 2}),
    ("addcmul", (I32, I32, F64A), {"value": 2}),
    ("addcdiv", (F32, F32, np.array([1.0, 2.0, 4.0, 8.0], np.float32)), {"value": 0.5}),
    ("addcdiv", (I32, F32, I32), {}),
    ("clamp", (I32, 0.5, None), {}),
    ("clamp", (I32, 0, None), {}),
    ("clamp", (B, 0, 1), {}),
    ("clamp", (np.array([NAN, 1.0, -3.0]), 0.0, 0.5), {}),
    ("clamp", (np.array([0.0, 1.0]), NAN, None), {}),
    ("clamp", (F64A, 2.5, 1.5), {}),
    ("clamp.Tensor", (I32, F64A, None), {}),
    ("clamp.Tensor", (F32, F64_0, None), {}),
    ("clamp.Tensor", (np.array([0.0, 1.0]), np.array([NAN, 0.0]), None), {}),
    ("clamp_min", (I32, 0.5), {}),
    ("clamp_max", (U8, 2), {}),
    ("clamp_min.Tensor", (F32, F32[::-1].copy()), {}),
    ("clamp_max.Tensor", (I32, F32), {}),
    ("maximum", (B, B[::-1].copy()), {}),
    ("maximum", (I32, F32), {}),
    ("maximum", (np.array([NAN, 1.0, 2.0]), np.array([1.0, NAN, 1.0])), {}),
    ("minimum", (np.array([NAN, 1.0, -0.0]), np.array([1.0, NAN, 0.0])), {}),
    ("fmax", (np.array([NAN, 1.0, NAN]), np.array([1.0, NAN, NAN])), {}),
    ("fmin", (I32, I64), {}),
    ("logaddexp", (np.array([-INF, INF, NAN, 1.0, -1e300]), np.array([-INF, INF, 1.0, 1.0, 1e300])), {}),
    ("logaddexp2", (F32, F32), {}),
    # complex: ATen's _log_add_exp_helper, imaginary part Im(max) + arg(1 + exp(min - max)), not
    # wrapped to (-pi, pi] (jnp.logaddexp's was, 2 pi off); ties of real parts; -inf and NaN
    (
        "logaddexp",
        (
            np.array([0.5 + 3.0j, 1.0 - 3.1j, 2.0 + 2.5j, -1.0 + 0.1j, 1.0 + 3.0j, -INF + 0.0j, 1.0 + NAN * 1j]),
            np.array([0.2 + 3.0j, 0.8 - 2.9j, 2.0 - 2.5j, -0.5 + 3.1j, 1.0 - 3.0j, -INF + 1.0j, 1.0 + 0.0j]),
        ),
        {},
    ),
    ("eq.Scalar", (I32, 2.5), {}),
    ("eq.Scalar", (I32, 2), {}),
    ("eq.Tensor", (I32, F32), {}),
    ("ne.Scalar", (np.array([NAN, 1.0]), NAN), {}),
    ("lt.Tensor", (U8, I8), {}),
    ("le.Scalar", (B, 0), {}),
    ("gt.Tensor", (F32, F64_0), {}),
    ("ge.Scalar", (F64A, 1.5), {}),
    ("eq_.Scalar", (F32, 1.5), {}),  # in place: 0 and 1 in self's dtype
    ("lt_.Tensor", (I32, F32), {}),
    ("ge_.Tensor", (F32, F64A), {}),
]


def _torch_call(name, args, kwargs):
    targs = [to_torch(a) for a in args]
    if name == "_s_where":
        return aten.where.self(*targs)
    if "_." in name:  # in place: on a copy
        targs[0] = targs[0].clone()
    return _torch_op(name)(*targs, **kwargs)


@pytest.mark.parametrize("name,args,kwargs", FORWARD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FORWARD)])
def test_values_and_dtypes_follow_aten(name, args, kwargs):
    theirs = to_numpy(_torch_call(name, args, kwargs))
    assert_same(jaxderiv.op(name)(*args, **kwargs), theirs, rtol=1e-6, atol=0)


@pytest.mark.parametrize(
    "name,args,kwargs",
    [
        ("sub.Tensor", (B, B), {}),
        ("pow.Tensor_Scalar", (I32, -1), {}),
        ("addcdiv", (F32, I32, I32), {}),
        ("clamp", (F32, None, None), {}),
        ("maximum", (C128_0, C128_0), {}),
        ("lt.Scalar", (C128_0, 1), {}),
        ("div.Tensor_mode", (F32, F32), {"rounding_mode": "round"}),
    ],
)
def test_unsupported_inputs_raise_as_in_aten(name, args, kwargs):
    with pytest.raises((RuntimeError, NotImplementedError)):
        _torch_call(name, args, kwargs)
    with pytest.raises((TypeError, ValueError)):
        jaxderiv.op(name)(*args, **kwargs)


OPERANDS = [
    *(
        np.ones(2, d)
        for d in (
            np.bool_,
            np.uint8,
            np.int8,
            np.int32,
            np.int64,
            np.float16,
            np.float32,
            np.float64,
            np.complex64,
            np.complex128,
        )
    ),
    *(np.ones((), d) for d in (np.bool_, np.int32, np.float32, np.float64, np.complex64, np.complex128)),
    True,
    2,
    2.5,
    1j,
]


def test_result_type_is_atens():
    """Every pair of dim tensors, 0-d tensors and Python scalars, against torch.result_type."""
    for a in OPERANDS:
        for b in OPERANDS:
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                theirs = str(torch.result_type(to_torch(a), to_torch(b))).removeprefix("torch.")
                if theirs != "complex32":  # ComplexHalf has no JAX dtype
                    assert result_type(a, b) == np.dtype(theirs), (a, b)


def test_weakly_typed_zero_d_arrays_are_wrapped_numbers():
    """A Python scalar that became a weak 0-d array still promotes as a Python scalar."""
    ints = jnp.ones(2, jnp.int32)
    assert result_type(ints, jnp.asarray(2.5)) == result_type(ints, 2.5) == np.float32
    assert result_type(ints, jnp.asarray(2.5, jnp.float64)) == np.float64  # a 0-d tensor
