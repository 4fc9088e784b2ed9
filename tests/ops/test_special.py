"""The special functions against PyTorch 2.13: values and dtypes, vjp and jvp, edges included.

Each case is one call; its inputs are drawn once, in float64 unless the case is about dtypes.
Edge rows hold the points the checker avoids: poles (digamma, trigamma and zeta at 0 and the
negative integers), the x = 0 branches of xlogy, xlog1py and the Bessel helpers, logit's clamp
boundaries and its ends 0 and 1, infinities, and integer inputs ATen promotes to float32.

Where PyTorch changed a formula after 1.10 (xlogy and xlog1py at x = 0), the expected values
are the spec's 1.10 formula evaluated with torch ops. Reverse mode is compared with
`create_graph=True`, which makes PyTorch take the `GradMode::is_enabled()` branch of a formula
(logit), the branch jaxderiv always takes.
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

torch = pytest.importorskip("torch")
aten = torch.ops.aten

INF, NAN = math.inf, math.nan
_rng = np.random.default_rng(1234)


def u(lo, hi, shape=(2, 3)):
    return _rng.uniform(lo, hi, shape)


def pts(*values):
    return np.asarray(values, np.float64)


def to_torch(a):
    return torch.from_numpy(a) if isinstance(a, np.ndarray) else a


def to_jax(a):
    return jnp.asarray(a) if isinstance(a, np.ndarray) else a


def aten_op(name: str) -> Callable:
    """torch.ops.aten's overload for a jaxderiv name: `xlogy.Tensor`, `erf` (its default)."""
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


@dataclasses.dataclass(frozen=True)
class Spec110:
    """The partial derivatives the spec's 1.10 formulas give, as functions of the torch arguments."""

    backward: Callable  # (*args) -> one partial per differentiated argument
    result: Callable | None = None  # the same for the result formula, if it differs


def _xlogy_backward(x, y):
    return torch.xlogy(x != 0, y), torch.where(y.isnan() | (x != 0), x / y, 0.0)


XLOGY_110 = Spec110(_xlogy_backward, lambda x, y: (torch.xlogy(x != 0, y), x / y))
XLOGY_SELF_110 = Spec110(lambda x, y: (torch.where(y.isnan() | (x != 0), x / y, 0.0),))
XLOGY_OTHER_110 = Spec110(lambda x, y: (torch.xlogy(x != 0, y),))  # float32: xlogy(bool tensor, Scalar)
XLOG1PY_110 = Spec110(lambda x, y: (y.log1p(), x / (y + 1)))

# Ops PyTorch 2.13 has no forward-mode formula for: their jvp is compared with its double-backward jvp.
TORCH_NO_FORWARD_AD = {"igamma", "igammac", "special_zeta", "special_zeta.self_scalar"}


@dataclasses.dataclass
class Case:
    """One call of an op, compared with the same call in torch."""

    name: str  # the jaxderiv op, which is also the torch.ops.aten overload
    args: tuple  # schema order: numpy arrays for Tensors, Python values for the rest
    wrt: tuple[int, ...] = (0,)  # argument positions differentiated (the spec's formulas)
    label: str = ""
    inplace: bool = False  # torch runs an in-place op on a copy, so that its input stays a leaf
    spec110: Spec110 | None = None  # where torch 2.13's formula differs from the spec's at these inputs
    tol: float | None = None  # default: by the expected dtype, 1e-9 for float64 and 2e-5 for float32

    @property
    def id(self) -> str:
        return f"{self.name}-{self.label}" if self.label else self.name

    def torch_fn(self) -> Callable:
        fn = aten_op(self.name)
        return (lambda x, *rest: fn(x.clone(), *rest)) if self.inplace else fn


BESSEL_EDGES = pts(0.0, -0.0, 1e-17, -1e-17, 30.0, -30.0, INF, -INF)

CASES = [
    # erf family
    Case("erf", (u(-2, 2),)),
    Case("erf", (pts(0.0, -0.0, 6.0, -6.0, INF, -INF, NAN),), label="edges"),
    Case("erfc", (u(-2, 2),)),
    Case("erfc", (pts(0.0, 10.0, -10.0, INF, -INF),), label="edges"),
    Case("erfinv", (u(-0.95, 0.95),)),
    Case("erfinv", (pts(0.0, -0.0, 1.0, -1.0, 0.999999),), label="edges"),
    Case("special_erfcx", (u(-2, 5),)),
    Case("special_erfcx", (pts(0.0, 30.0, 1e5, -5.0),), label="edges"),
    # Bessel functions: 0 is where i1_backward and i1e_backward take their limit 1/2
    Case("i0", (u(-3, 3),)),
    Case("i0", (BESSEL_EDGES[:6],), label="edges"),
    Case("special_i0e", (u(-3, 3),)),
    Case("special_i0e", (BESSEL_EDGES,), label="edges"),
    Case("special_i1", (u(-3, 3),)),
    Case("special_i1", (BESSEL_EDGES[:6],), label="edges"),
    Case("special_i1e", (u(-3, 3),)),
    Case("special_i1e", (BESSEL_EDGES,), label="edges"),
    # gamma family
    Case("lgamma", (u(0.1, 5),)),
    Case("lgamma", (u(-4, -0.1),), label="negative"),
    Case("lgamma", (pts(0.0, -1.0, -2.0, INF, 1.0, 2.0),), label="poles"),
    Case("digamma", (u(0.1, 5),)),
    Case("digamma", (pts(-0.5, -1.5, -2.7),), label="negative"),
    Case("digamma", (pts(0.0, -0.0, -1.0, INF, 1e10),), label="poles"),
    *[Case("polygamma", (n, u(0.2, 5)), wrt=(1,), label=f"n={n}") for n in (0, 1, 2, 3, 5)],
    *[Case("polygamma", (n, pts(-0.5, -1.5, -2.25)), wrt=(1,), label=f"n={n} negative") for n in (1, 2, 3)],
    *[Case("polygamma", (n, pts(0.0, -1.0, -2.0, INF)), wrt=(1,), label=f"n={n} poles") for n in (1, 2, 3)],
    # below about -7 JAX's Hurwitz zeta (a fixed 8 or 16 terms before Euler-Maclaurin) was wrong:
    # polygamma(4, -8.3157) gave 8100.5 for torch's 7497.7; the recurrence to positive q fixes it
    *[
        Case("polygamma", (n, pts(-8.3157, -12.6, -30.2, -7.5)), wrt=(1,), label=f"n={n} far negative")
        for n in (1, 2, 4)
    ],
    *[Case("polygamma_", (u(0.2, 5), n), inplace=True, label=f"n={n}") for n in (0, 1, 2)],
    *[Case("mvlgamma", (u((p - 1) / 2 + 0.1, 6), p), label=f"p={p}") for p in (1, 2, 3, 5)],
    Case("mvlgamma", (pts(1.0, 1.5, 3.0), 3), label="p=3 edge"),
    # incomplete gamma: the spec differentiates x (other) only
    Case("igamma", (u(0.2, 4), u(0.1, 5)), wrt=(1,)),
    Case("igamma", (u(0.2, 4), u(0.1, 5, (3,))), wrt=(1,), label="bcast"),
    Case("igamma", (pts(INF, INF, 0.0, 2.0, 2.0, 1.0), pts(2.0, INF, 1.0, 0.0, INF, 1.0)), wrt=(1,), label="edges"),
    Case("igammac", (u(0.2, 4), u(0.1, 5)), wrt=(1,)),
    Case("igammac", (pts(INF, 0.0, 2.0, 2.0), pts(2.0, 1.0, 0.0, INF)), wrt=(1,), label="edges"),
    # xlogy and xlog1py: x = 0 gives 0 and its own derivatives; y = NaN gives NaN
    Case("xlogy.Tensor", (u(-2, 2), u(0.1, 3)), wrt=(0, 1)),
    Case("xlogy.Tensor", (u(-2, 2), u(0.1, 3, (3,))), wrt=(0, 1), label="bcast"),
    Case(
        "xlogy.Tensor",
        (pts(0.0, 0.0, 0.0, 1.0, 2.0, -1.0), pts(0.0, NAN, 2.0, 0.0, NAN, INF)),
        wrt=(0, 1),
        label="x=0",
        spec110=XLOGY_110,
    ),
    Case("xlogy.Tensor", (np.arange(6).reshape(2, 3), np.arange(1, 7).reshape(2, 3)), wrt=(), label="int"),
    # float32 result: the gradient of the 0-d float64 input is summed in float32
    Case(
        "xlogy.Tensor",
        (u(-2, 2).astype(np.float32), np.asarray(2.5)),
        wrt=(0, 1),
        label="float32 with 0-d float64",
        tol=2e-5,
    ),
    Case("xlogy.Scalar_Self", (1.5, u(0.1, 3)), wrt=(1,)),
    Case("xlogy.Scalar_Self", (0, pts(0.0, 1.0, NAN)), wrt=(1,), label="x=0", spec110=XLOGY_SELF_110),
    # the spec's formula takes log(other) in float32: at::xlogy(bool tensor, Scalar) is float32
    Case("xlogy.Scalar_Other", (u(-2, 2), 2.5), tol=1e-7),
    Case("xlogy.Scalar_Other", (pts(0.0, 0.0, 1.0), 2.5), label="x=0", spec110=XLOGY_OTHER_110),
    Case("xlogy.Scalar_Other", (pts(0.0, 1.0), 0.0), label="y=0"),
    Case("xlogy.Scalar_Other", (u(-2, 2).astype(np.float32), 2.5), label="float32"),
    Case("xlogy.Scalar_Other", (np.arange(4), 3.0), wrt=(), label="int"),
    Case("special_xlog1py", (u(-2, 2), u(-0.9, 3)), wrt=(0, 1)),
    Case(
        "special_xlog1py",
        (pts(0.0, 0.0, 0.0, 1.0, 2.0), pts(-1.0, NAN, 2.0, -1.0, NAN)),
        wrt=(0, 1),
        label="x=0",
        spec110=XLOG1PY_110,
    ),
    Case("special_xlog1py.self_scalar", (1.5, u(-0.9, 3)), wrt=(1,)),
    Case("special_xlog1py.other_scalar", (u(-2, 2), 1.5)),
    Case("special_xlog1py.other_scalar", (np.arange(3), 1.5), wrt=(), label="int"),
    # Hurwitz zeta: the spec differentiates q (other) only
    Case("special_zeta", (u(1.2, 5), u(0.2, 4)), wrt=(1,)),
    Case("special_zeta", (np.array([2, 3, 4]), u(0.2, 4, (3,))), wrt=(1,), label="integer x"),
    Case(
        "special_zeta",
        (pts(2.0, 2.0, 2.0, 3.0, 2.0, 0.5, 1.0), pts(0.0, -1.0, -INF, -1.5, INF, 2.0, 2.0)),
        wrt=(1,),
        label="edges",
    ),
    Case("special_zeta.self_scalar", (3.0, u(0.2, 4)), wrt=(1,)),
    Case(
        "special_zeta",
        (pts(3.0, 4.0, 2.0, 5.0, 2.5), pts(-8.3157, -12.25, -0.5, -20.7, -9.5)),
        wrt=(1,),
        label="negative q",
    ),
    Case("special_zeta.other_scalar", (u(1.2, 5), 1.5), wrt=()),
    # logit: eps clamps to [eps, 1 - eps]; without it, the ends 0 and 1 are poles
    Case("logit", (u(0.01, 0.99), None)),
    Case("logit", (pts(0.0, 1.0, 0.5, -0.5, 1.5), None), label="ends"),
    Case("logit", (pts(0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.0, 1.0), 0.1), label="eps boundaries"),
    Case("logit", (pts(0.0, 0.3, 1.0), 0.0), label="eps=0"),
    Case("logit", (pts(0.3, 0.6, -0.5), -1.0), label="negative eps"),
    Case("logit", (np.array([0, 1, 2]), None), wrt=(), label="int"),
    # frexp: the gradient of the mantissa only
    Case("frexp.Tensor", (u(-8, 8),)),
    Case("frexp.Tensor", (pts(0.0, -0.0, 1.0, 0.5, -4.0, INF, NAN),), label="edges"),
    Case("nextafter", (u(-2, 2), u(-2, 2)), wrt=()),
    Case("nextafter", (pts(0.0, 1.0, 1.0, NAN), pts(1.0, 0.0, 1.0, 0.0)), wrt=(), label="edges"),
    # integer and bool inputs compute in float32
    Case("erf", (np.arange(-2, 3),), wrt=(), label="int"),
    Case("lgamma", (np.array([True, False]),), wrt=(), label="bool"),
    Case("digamma", (np.arange(0, 4),), wrt=(), label="int"),
    Case("polygamma", (2, np.arange(1, 4)), wrt=(), label="int"),
    Case("mvlgamma", (np.arange(2, 5), 2), wrt=(), label="int"),
    Case("special_i1", (np.arange(-2, 3),), wrt=(), label="int"),
]
DIFF_CASES = [c for c in CASES if c.wrt]


def ours(case: Case, *values):
    """The jaxderiv op with the arrays at `case.wrt` replaced by `values`; output 0 of a tuple."""
    args = [to_jax(a) for a in case.args]
    for i, v in zip(case.wrt, values):
        args[i] = v
    out = jaxderiv.op(case.name)(*args)
    return out[0] if isinstance(out, tuple) else out


def torch_args(case: Case, *values) -> list:
    """The case's arguments for torch, with the tensors at `case.wrt` replaced by `values`."""
    args = [to_torch(a) for a in case.args]
    for i, v in zip(case.wrt, values):
        args[i] = v
    return args


def theirs(case: Case, *values):
    out = case.torch_fn()(*torch_args(case, *values))
    return out[0] if isinstance(out, tuple) else out


def assert_matches(actual, expected, tol: float | None = None):
    """Same shape and dtype, and values within tol (NaN and inf in the same places)."""
    expected = expected.detach().numpy()
    actual = np.asarray(actual)
    tol = tol or (1e-9 if expected.dtype == np.float64 else 2e-5)
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True)


def like(value, rng):
    return rng.normal(size=np.shape(value)).astype(np.asarray(value).dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_matches_torch(case):
    expected = case.torch_fn()(*torch_args(case))
    actual = jaxderiv.op(case.name)(*map(to_jax, case.args))
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_matches(a, e, case.tol)
    else:
        assert_matches(actual, expected, case.tol)


@pytest.mark.parametrize("case", DIFF_CASES, ids=lambda c: c.id)
def test_vjp_matches_torch_autograd(case):
    primals = [case.args[i] for i in case.wrt]
    out, pullback = jax.vjp(lambda *xs: ours(case, *xs), *map(jnp.asarray, primals))
    ct = like(out, np.random.default_rng(0))
    leaves = [torch.from_numpy(p).requires_grad_() for p in primals]
    if case.spec110 is None:
        expected = torch.autograd.grad(theirs(case, *leaves), leaves, torch.from_numpy(ct), create_graph=True)
    else:
        expected = [torch.from_numpy(ct) * d for d in case.spec110.backward(*torch_args(case))]
    for g, e in zip(pullback(jnp.asarray(ct)), expected):
        assert_matches(g, e, case.tol)


@pytest.mark.parametrize("case", DIFF_CASES, ids=lambda c: c.id)
def test_jvp_matches_torch_forward_ad(case):
    primals = [case.args[i] for i in case.wrt]
    rng = np.random.default_rng(1)
    tangents = [like(p, rng) for p in primals]
    _, actual = jax.jvp(
        lambda *xs: ours(case, *xs), tuple(map(jnp.asarray, primals)), tuple(map(jnp.asarray, tangents))
    )
    tps, tts = tuple(map(torch.from_numpy, primals)), tuple(map(torch.from_numpy, tangents))
    if case.spec110 is not None:
        spec = case.spec110
        expected = sum(t * d for t, d in zip(tts, (spec.result or spec.backward)(*torch_args(case))))
    elif case.name in TORCH_NO_FORWARD_AD:
        _, expected = torch.autograd.functional.jvp(lambda *xs: theirs(case, *xs), tps, tts)
    else:
        _, expected = torch.func.jvp(lambda *xs: theirs(case, *xs), tps, tts)
    assert_matches(actual, expected, case.tol)


def test_cases_cover_every_entry_of_the_family():
    family = {
        "erf",
        "erfc",
        "erfinv",
        "special_erfcx",
        "i0",
        "special_i0e",
        "special_i1",
        "special_i1e",
        "lgamma",
        "digamma",
        "polygamma",
        "polygamma_",
        "mvlgamma",
        "igamma",
        "igammac",
        "xlogy.Tensor",
        "xlogy.Scalar_Self",
        "xlogy.Scalar_Other",
        "special_xlog1py",
        "special_xlog1py.self_scalar",
        "special_xlog1py.other_scalar",
        "special_zeta",
        "special_zeta.self_scalar",
        "special_zeta.other_scalar",
        "logit",
        "nextafter",
        "frexp.Tensor",
    }
    assert {c.name for c in CASES} == family
    assert {c.name for c in DIFF_CASES} == family - {"nextafter", "special_zeta.other_scalar"}


# -- derivatives the spec does not give, and dtypes ATen rejects ---------------------------------


def _grad_of(name: str, args: tuple, argnum: int):
    """jax.grad of the op's sum in argument `argnum`, the others fixed (Scalars stay numbers)."""

    def f(x):
        full = list(args)
        full[argnum] = x
        return jnp.sum(jaxderiv.op(name)(*full))

    return jax.grad(f)(args[argnum])


@pytest.mark.parametrize("name", ["igamma", "igammac", "special_zeta", "special_zeta.other_scalar"])
def test_derivative_in_self_is_not_implemented_as_in_torch(name):
    x, other = np.array([2.0, 3.0]), 1.5 if name.endswith("other_scalar") else np.array([1.5, 0.5])
    leaf = torch.from_numpy(x).requires_grad_()
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.autograd.grad(aten_op(name)(leaf, to_torch(other)).sum(), leaf)
    with pytest.raises(NotImplementedDerivative):
        _grad_of(name, (jnp.asarray(x), to_jax(other)), 0)


@pytest.mark.parametrize("argnum", [0, 1])
def test_nextafter_has_no_derivative_in_the_spec(argnum):
    """The spec (1.7) says not_implemented("nextafter"); PyTorch gained formulas later."""
    with pytest.raises(NotImplementedDerivative):
        _grad_of("nextafter", (jnp.asarray([1.0, 2.0]), jnp.asarray([2.0, 0.0])), argnum)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("igamma", (np.array([1, 2]), np.array([1, 2]))),
        ("igammac", (np.array([1, 2]), np.array([True, False]))),
        ("nextafter", (np.array([1, 2]), np.array([1, 2]))),
        ("frexp.Tensor", (np.array([1, 2]),)),
    ],
)
def test_floating_only_ops_reject_integers_like_torch(name, args):
    with pytest.raises(RuntimeError):
        aten_op(name)(*map(torch.from_numpy, args))
    with pytest.raises(TypeError):
        jaxderiv.op(name)(*map(jnp.asarray, args))


def test_floating_only_ops_promote_mixed_integer_inputs_like_torch():
    a, x = np.array([1, 2]), np.array([0.5, 3.0])
    assert_matches(
        jaxderiv.op("igamma")(jnp.asarray(a), jnp.asarray(x)), torch.igamma(torch.from_numpy(a), torch.from_numpy(x))
    )


SECOND_ORDER = [
    Case("lgamma", (u(0.3, 4),)),
    Case("special_i1", (u(-3, 3),)),
    Case("igamma", (u(0.5, 3), u(0.5, 3)), wrt=(1,)),
    Case("special_zeta", (u(1.5, 4), u(0.5, 3)), wrt=(1,)),
    Case("logit", (u(0.05, 0.95), 0.1)),
    Case("xlogy.Tensor", (u(-2, 2), u(0.2, 3)), wrt=(1,)),
]


@pytest.mark.parametrize("case", SECOND_ORDER, ids=lambda c: c.id)
def test_second_order_matches_torch_double_backward(case):
    """JAX differentiates the backward formula's own code (e.g. digamma in lgamma's), torch its
    formulas' formulas: for lgamma the two trigamma algorithms agree to about 1e-9."""
    (i,) = case.wrt
    x = case.args[i]
    w = np.random.default_rng(2).normal(size=x.shape)

    def grad_dot_w(x):
        return jnp.sum(jax.grad(lambda y: jnp.sum(ours(case, y)))(x) * w)

    actual = jax.grad(grad_dot_w)(jnp.asarray(x))
    leaf = torch.from_numpy(x).requires_grad_()
    (g,) = torch.autograd.grad(theirs(case, leaf).sum(), leaf, create_graph=True)
    (expected,) = torch.autograd.grad((g * torch.from_numpy(w)).sum(), leaf)
    assert_matches(actual, expected, 1e-8)
