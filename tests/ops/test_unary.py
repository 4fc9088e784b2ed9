"""The unary elementwise family against PyTorch 2.13: values and dtypes, vjp and jvp, kinks included.

At a kink (abs and sgn at 0, the rounding ops at integers, nan_to_num at NaN and infinities) the
derivative is the subgradient PyTorch's formula picks, which JAX's own autodiff need not pick;
where the derivative is infinite (sqrt at 0, log at 0) both give the same infinity. For complex
inputs PyTorch's gradient is the conjugate of JAX's: jax_vjp(ct) == conj(torch_grad(conj(ct))).
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
from jaxderiv.check import opdb
from jaxderiv.op import RealOnlyDerivative

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, random_like, to_numpy, to_torch  # noqa: E402

aten = torch.ops.aten

F64, C128 = np.dtype(np.float64), np.dtype(np.complex128)
REAL, BOTH = (F64,), (F64, C128)
# The spec's formula has no .conj(): written before PyTorch differentiated the op on complex.
PREDATES_COMPLEX = "the spec's formula predates complex autograd for this op (no .conj())"
# The entry comes from a release before complex autograd (1.7): a complex derivative is refused.
REFUSED = "the default spec takes this entry from PyTorch 1.7, whose formula is for real tensors: RealOnlyDerivative"


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the jaxderiv op
    args: Callable[[np.random.Generator, np.dtype], tuple]  # arrays and scalars in schema order
    torch_fn: Callable  # the same call in torch 2.13
    dtypes: tuple = REAL  # input dtypes on which the spec's formulas are checked
    diff: tuple[int, ...] = (0,)  # positions of the differentiable arrays
    kwargs: dict = dataclasses.field(default_factory=dict)  # keyword arguments of our call only
    complex_differs: tuple[str, ...] = ()  # modes where the spec's complex formula is not torch's
    why: str = PREDATES_COMPLEX  # the reason those expected failures give
    modes: tuple[str, ...] = ("forward", "vjp", "jvp")  # the tests that run this case
    refused: bool = False  # complex derivatives raise RealOnlyDerivative (instead of complex_differs)


def _torch_op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


def _x(kinks=(), lo=-2.0, hi=2.0, complex_kinks=(), n=6):
    """The kink points, then n random values in [lo, hi]; complex: random real and imaginary parts."""

    def make(rng, dtype):
        if np.issubdtype(dtype, np.complexfloating):
            rand = rng.uniform(lo, hi, n) + 1j * rng.uniform(lo, hi, n)
            return np.concatenate([np.asarray(complex_kinks, complex), rand]).astype(dtype)
        return np.concatenate([np.asarray(kinks, float), rng.uniform(lo, hi, n)]).astype(dtype)

    return make


def _unary(
    name,
    kinks=(),
    lo=-2.0,
    hi=2.0,
    dtypes=REAL,
    complex_kinks=(),
    complex_differs=(),
    why=PREDATES_COMPLEX,
    inplace=False,
    refused=False,
):
    """op(x); an in-place op runs on a copy in torch, so that its input stays a leaf."""
    x = _x(kinks, lo, hi, complex_kinks)
    fn = _torch_op(name)
    torch_fn = (lambda t: fn(t.clone())) if inplace else fn
    return Case(
        name, lambda rng, dt: (x(rng, dt),), torch_fn, dtypes, complex_differs=complex_differs, why=why, refused=refused
    )


def _polar_args(kink):
    """abs (2, 4) and a broadcast angle (4,); with `kink`, abs is 0 at [0, 0]."""

    def make(rng, dtype):
        abs_ = rng.uniform(0.5, 2.0, (2, 4))
        abs_[0, 0] = 0.0 if kink else abs_[0, 0]
        return abs_, rng.uniform(-3.0, 3.0, (4,))

    return make


ROUNDING_KINKS = (-1.5, -1.0, 0.0, 0.5, 2.5)

CASES = [
    _unary("abs", kinks=(0.0,), dtypes=BOTH, complex_kinks=(0j,)),
    _unary("acos", kinks=(-1.0, 1.0), lo=-0.9, hi=0.9, dtypes=BOTH),
    _unary("acosh", kinks=(1.0,), lo=1.1, hi=3.0, dtypes=BOTH),
    _unary("asin", kinks=(-1.0, 1.0), lo=-0.9, hi=0.9, dtypes=BOTH),
    _unary("asinh", dtypes=BOTH),
    _unary("atan", dtypes=BOTH),
    _unary("atanh", kinks=(-1.0, 1.0), lo=-0.9, hi=0.9, dtypes=BOTH),
    _unary("ceil", kinks=ROUNDING_KINKS),
    _unary("cos", dtypes=BOTH),
    _unary("cosh", dtypes=BOTH),
    _unary("deg2rad"),
    _unary("rad2deg"),
    _unary("exp", dtypes=BOTH),
    _unary("exp2", dtypes=BOTH, complex_differs=("vjp", "jvp")),
    _unary("expm1", dtypes=BOTH, complex_differs=("vjp", "jvp")),
    _unary("floor", kinks=ROUNDING_KINKS),
    _unary("frac", kinks=(-1.0, 0.0, 1.0)),
    _unary("log", kinks=(0.0,), lo=0.1, hi=3.0, dtypes=BOTH),
    _unary("log10", kinks=(0.0,), lo=0.1, hi=3.0, dtypes=BOTH),
    _unary("log1p", kinks=(-1.0,), lo=-0.5, hi=2.0, dtypes=BOTH),
    _unary("log2", kinks=(0.0,), lo=0.1, hi=3.0, dtypes=BOTH),
    _unary("neg", dtypes=BOTH),
    _unary("reciprocal", kinks=(0.0,), dtypes=BOTH, refused=True),
    _unary("round", kinks=ROUNDING_KINKS),
    _unary("rsqrt", kinks=(0.0,), lo=0.1, hi=3.0, dtypes=BOTH, refused=True),
    _unary("sign", kinks=(0.0, -0.0, math.nan)),
    _unary("sgn", kinks=(0.0, -0.0), dtypes=BOTH, complex_kinks=(0j,)),
    _unary("sin", dtypes=BOTH),
    _unary("sinh", dtypes=BOTH),
    _unary("sqrt", kinks=(0.0,), lo=0.1, hi=3.0, dtypes=BOTH, refused=True),
    _unary("tan", lo=-1.2, hi=1.2, dtypes=BOTH, refused=True),
    _unary("trunc", kinks=ROUNDING_KINKS),
    _unary(
        "angle",
        kinks=(0.0, -0.0, -1.0),
        dtypes=BOTH,
        complex_kinks=(0j,),
        # the spec bug is declared once, in angle's op record: the modes it fails and why
        complex_differs=tuple(opdb.record("angle").known_failures),
        why=opdb.record("angle").known_failure("jvp") or "",
    ),
    _unary("_conj", dtypes=(C128,)),  # ATen's _conj takes complex tensors only
    _unary("_conj_physical", dtypes=BOTH),
    _unary("conj_physical_", dtypes=BOTH, inplace=True),
    _unary("_neg_view", dtypes=BOTH),
    _unary("view_as_real", dtypes=(C128,)),
    Case("view_as_complex", lambda rng, dt: (rng.uniform(-2, 2, (3, 2)).astype(dt),), aten.view_as_complex.default),
    Case(
        "complex", lambda rng, dt: (rng.normal(size=(2, 3)), rng.normal(size=(3,))), aten.complex.default, diff=(0, 1)
    ),
    Case("polar", _polar_args(kink=False), aten.polar.default, diff=(0, 1)),
    # At abs == 0 the spec's polar_backward takes sgn(0) = 0: the gradient of abs is 0, as torch's.
    # The spec has no result formula, so forward mode transposes that choice, while torch 2.13's
    # own result formula gives e^(i angle) there: torch's two modes disagree at this kink.
    Case("polar", _polar_args(kink=True), aten.polar.default, diff=(0, 1), modes=("forward", "vjp")),
    _unary("nan_to_num", kinks=(math.nan, math.inf, -math.inf)),
    Case(
        "nan_to_num",
        lambda rng, dt: (_x((math.nan, math.inf, -math.inf))(rng, dt), 1.0, 3.0, -3.0),
        aten.nan_to_num.default,
    ),
    Case("fill_.Scalar", lambda rng, dt: (_x()(rng, dt), 0.7), lambda x, v: aten.fill_.Scalar(x.clone(), v), BOTH),
    Case(
        "fill_.Tensor",
        lambda rng, dt: (_x()(rng, dt), _x(n=1)(rng, dt).reshape(())),
        lambda x, v: aten.fill_.Tensor(x.clone(), v),
        BOTH,
        diff=(0, 1),
    ),
    _unary("zero_", dtypes=BOTH, inplace=True),
    _unary("clone", dtypes=BOTH),
    _unary("alias", dtypes=BOTH),
    _unary("_to_copy", dtypes=BOTH),
    Case(
        "_to_copy",
        lambda rng, dt: (_x()(rng, dt),),
        lambda x: aten._to_copy.default(x, dtype=torch.complex128),
        kwargs={"dtype": C128},
    ),
    Case(
        "_to_copy",
        lambda rng, dt: (_x()(rng, dt),),
        lambda x: aten._to_copy.default(x, dtype=torch.float64),
        (C128,),
        kwargs={"dtype": F64},
    ),
]


def _params(mode):
    """(case, dtype) pairs; those where the spec's complex formula is not torch's must fail."""
    out = []
    for i, c in enumerate(CASES):
        for dt in c.dtypes if mode in c.modes else ():
            marks = (
                [pytest.mark.xfail(strict=True, raises=AssertionError, reason=c.why)]
                if dt == C128 and mode in c.complex_differs
                else []
            )
            if c.refused and dt == C128 and mode in ("vjp", "jvp"):
                marks = [pytest.mark.xfail(strict=True, raises=RealOnlyDerivative, reason=REFUSED)]
            out.append(pytest.param(c, dt, marks=marks, id=f"{c.name}-{i}-{dt}"))
    return out


# -- running a case in both libraries -----------------------------------------------------------


def _ours_of(case, args):
    """Our op as a function of its differentiable arrays."""
    op = jaxderiv.op(case.name)

    def fn(*xs):
        full = list(args)
        for i, x in zip(case.diff, xs):
            full[i] = x
        return op(*full, **case.kwargs)

    return fn, [jnp.asarray(args[i]) for i in case.diff]


def _torch_of(case, args):
    targs = [to_torch(a) for a in args]

    def fn(*xs):
        full = list(targs)
        for i, x in zip(case.diff, xs):
            full[i] = x
        return case.torch_fn(*full)

    return fn, [targs[i] for i in case.diff]


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case,dtype", _params("forward"))
def test_forward_matches_torch(case, dtype):
    args = case.args(np.random.default_rng(0), dtype)
    ours = jaxderiv.op(case.name)(*args, **case.kwargs)
    assert_same(ours, to_numpy(case.torch_fn(*[to_torch(a) for a in args])), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", [c for c in CASES if F64 in c.dtypes and c.name != "_to_copy"], ids=lambda c: c.name)
def test_float32_stays_float32(case):
    args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in case.args(np.random.default_rng(0), F64)]
    ours = jaxderiv.op(case.name)(*args, **case.kwargs)
    theirs = to_numpy(case.torch_fn(*[to_torch(a) for a in args]))
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case,dtype", _params("vjp"))
def test_vjp_matches_torch(case, dtype):
    rng = np.random.default_rng(1)
    args = case.args(rng, dtype)
    fn, xs = _ours_of(case, args)
    tfn, txs = _torch_of(case, args)
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
    fn, xs = _ours_of(case, args)
    tfn, txs = _torch_of(case, args)
    ts = [random_like(rng, x) for x in xs]
    _, ours = jax.jvp(fn, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    _, theirs = torch.func.jvp(tfn, tuple(txs), tuple(to_torch(t) for t in ts))
    assert_same(ours, to_numpy(theirs))


def test_abs_at_zero_is_torchs_subgradient_not_jaxs():
    x = jnp.array([0.0, -1.0, 2.0])
    assert jax.grad(lambda x: jaxderiv.op("abs")(x).sum())(x).tolist() == [0.0, -1.0, 1.0]
    assert jax.grad(lambda x: jnp.abs(x).sum())(x).tolist() == [1.0, -1.0, 1.0]


@pytest.mark.parametrize("name", ["acosh_", "asinh_", "atanh_"])
def test_inplace_inverse_hyperbolics_are_not_implemented_in_the_spec(name):
    """Their values are the functional op's; both derivative modes raise as the spec says."""
    x = np.array([1.5, 2.0]) * (0.3 if name == "atanh_" else 1.0)
    op = jaxderiv.op(name)
    assert_same(op(x), to_numpy(_torch_op(name)(to_torch(x))))
    with pytest.raises(NotImplementedDerivative, match="inplace version"):
        jax.grad(lambda x: op(x).sum())(jnp.asarray(x))
    with pytest.raises(NotImplementedDerivative, match="inplace version"):
        jax.jvp(op, (jnp.asarray(x),), (jnp.ones(2),))


# -- integer and bool inputs --------------------------------------------------------------------

ONE_TENSOR = sorted({c.name for c in CASES if c.diff == (0,) and not c.kwargs} - {"view_as_complex"}) + ["isnan"]


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
@pytest.mark.parametrize("name", ONE_TENSOR)
def test_integer_and_bool_inputs_follow_aten(name, dtype):
    """Where ATen has a kernel the values and dtype agree (floating ops give float32); else both raise."""
    x = np.array([-3, -1, 0, 2, 5]).astype(dtype)
    extra = (0.7,) if name == "fill_.Scalar" else ()
    try:
        theirs = to_numpy(_torch_op(name)(to_torch(x), *extra))
    except (RuntimeError, NotImplementedError):
        with pytest.raises((TypeError, ValueError)):
            jaxderiv.op(name)(x, *extra)
        return
    ours = jaxderiv.op(name)(x, *extra)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)
    if np.issubdtype(np.asarray(ours).dtype, np.inexact):
        assert (
            jax.grad(lambda x: jnp.sum(jaxderiv.op(name)(x)).real, allow_int=True)(jnp.asarray(x)).dtype
            == jax.dtypes.float0
        )


def test_isnan_is_not_differentiable():
    op = jaxderiv.op("isnan")
    assert op.differentiable_inputs == ()
    x = np.array([np.nan, 1.0, np.inf, -np.inf])
    assert_same(op(x), aten.isnan.default(to_torch(x)).numpy())
    x = np.array([complex(np.nan, 0), complex(0, np.nan), 1j])
    assert_same(op(x), aten.isnan.default(to_torch(x)).numpy())
