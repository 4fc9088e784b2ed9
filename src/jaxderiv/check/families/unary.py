"""Checker inputs of the unary elementwise ops: domains away from poles and branch cuts, complex."""

from __future__ import annotations

import numpy as np

from .. import symbolic_math
from ..opdb import (
    Equivalent,
    complex_ok,
    definition,
    domain,
    kinks,
    known_failure,
    parity_differs,
    samples,
    torch_equivalent,
    without_meaning,
)
from ..samples import Sample, default_samples, draw
from ..symbolic import sp
from . import matrix, vector

domain(-0.9, 0.9, "acos", "asin", "atanh")
domain(1.1, 3.0, "acosh")
domain(0.1, 3.0, "log", "log10", "log2", "sqrt", "rsqrt")
domain(-0.5, 2.0, "log1p")
domain(-1.2, 1.2, "tan")  # inside (-pi/2, pi/2)
domain(0.5, 2.0, "polar")  # abs > 0: polar_backward's sgn(result) has a kink at abs == 0

# Ops whose spec formulas are written for complex inputs (conjugate Wirtinger form). Left out
# though ATen 2.13 differentiates them on complex: reciprocal, rsqrt, sqrt, tan (1.7) and
# exp2, expm1 (1.10), whose formulas lack the .conj() of the complex form. angle is checked on
# complex inputs (on real ones its derivative is 0 and judges nothing), but its 1.10 `result:`
# formula, angle_backward(self_t, self_p), is wrong off the real line: a declared failure.
# tests/ops/test_unary.py asserts the complex values of those left out, and that their complex
# derivatives are refused (1.7: RealOnlyDerivative) or differ from torch's (1.10).
complex_ok(
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "exp",
    "log",
    "log10",
    "log1p",
    "log2",
    "neg",
    "sgn",
    "sin",
    "sinh",
    "_conj_physical",
    "conj_physical_",
    "_neg_view",
    "clone",
    "alias",
    "_to_copy",
    "fill_.Scalar",
    "fill_.Tensor",
    "fill.Scalar",
    "fill.Tensor",
    "zero_",
    "angle",
)
# angle's spec bug, stated once: the checker's known failure and the parity run's known difference.
ANGLE_SPEC_BUG = (
    "spec bug: the 1.10 result formula angle_backward(self_t, self_p) applies the backward helper "
    "to a tangent, which is right for real inputs only (later PyTorch fixed it)"
)
known_failure(ANGLE_SPEC_BUG, "angle", modes=("jvp",))

_SHAPES = ((2, 3), (3,), ())


@samples("view_as_real", "_conj")
def _complex_only(op, rng, dtype=np.float64):
    """Complex inputs only, whichever dtype is asked for."""
    return [Sample((draw(rng, s, -2.0, 2.0, np.complex128),), label="x".join(map(str, s))) for s in _SHAPES]


@samples("view_as_complex")
def _view_as_complex(op, rng, dtype=np.float64):
    """Real inputs whose last dimension is 2."""
    return [Sample((draw(rng, s + (2,), -2.0, 2.0),), label="x".join(map(str, s + (2,)))) for s in _SHAPES]


@samples("fill_.Tensor", "fill.Tensor")
def _fill_tensor(op, rng, dtype=np.float64):
    """`value` must be 0-d."""
    return [
        Sample((draw(rng, s, -2.0, 2.0, dtype), draw(rng, (), -2.0, 2.0, dtype)), label="x".join(map(str, s)))
        for s in _SHAPES
    ]


@samples("_to_copy")
def _to_copy(op, rng, dtype=np.float64):
    """A plain copy, and a copy across real and complex (complex to real keeps the real part)."""
    other = np.dtype(np.float64 if np.issubdtype(dtype, np.complexfloating) else np.complex128)
    out = default_samples(op, rng, dtype)
    return out + [Sample((draw(rng, (2, 3), -2.0, 2.0, dtype),), {"dtype": other}, label=f"2x3 to {other}")]


@samples("nan_to_num")
def _nan_to_num(op, rng, dtype=np.float64):
    """Finite values, then NaN and infinities, whose gradient the formula masks to 0."""
    x = draw(rng, (2, 3), -2.0, 2.0, dtype)
    x[0, :] = [np.nan, np.inf, -np.inf]
    return default_samples(op, rng, dtype) + [Sample((x, 1.0, 2.0, -2.0), label="2x3 non-finite")]


complex_ok("sinc")  # torch 2.13's sinc_backward has the conjugate Wirtinger form
kinks("sinc", (vector(0.0, -0.0, 1.0, -2.0, 0.5),))  # 0 and -0 (the formula is 0/0 there), integers (sinc's zeros)


@samples("round.decimals")
def _round_decimals(op, rng, dtype=np.float64):
    """Positive, zero and negative `decimals` (zero gradient almost everywhere)."""
    x = draw(rng, (2, 3), -20.0, 20.0, dtype)
    return [Sample((x,), {"decimals": d}, label=f"decimals={d}") for d in (2, 0, -1)]


@samples("view.dtype")
def _view_dtype(op, rng, dtype=np.float64):
    """Same, smaller and larger element sizes (the last dim rescales), real to complex."""
    x = draw(rng, (2, 4), -2.0, 2.0, np.float64)
    return [Sample((x, np.dtype(d)), label=f"float64 as {d}") for d in ("int64", "int32", "float16", "complex128")]


# -- parity with torch ------------------------------------------------------------------------


def _complex(*values: complex) -> np.ndarray:
    """A complex128 vector: a complex kink input of the parity run."""
    return np.asarray(values, np.complex128)


# Kinks: where the derivative is the subgradient torch's formula picks (abs, sgn at 0 and 0j; the
# rounding ops at integers and ties; sign at +-0 and NaN; nan_to_num at NaN and infinities, its
# default replacements and given ones; polar at abs == 0, where polar_backward takes sgn(0) = 0),
# or infinite (the inverse trig and hyperbolic ops at the ends of their domains, the logs at 0,
# log1p at -1, sqrt, rsqrt and reciprocal at 0): both sides must give the same values, infinities
# and NaNs included.
ROUNDING_KINKS = vector(-1.5, -1.0, 0.0, 0.5, 2.5)  # integers and ties
kinks("abs", (vector(0.0, -0.0, 1.5, -2.0),), (_complex(0j, 1 + 2j, -1.5j),))
kinks("sgn", (vector(0.0, -0.0, 1.5, -2.0),), (_complex(0j, 1 + 2j, -1.5j),))
kinks("sign", (vector(0.0, -0.0, np.nan, 1.5, -2.0),))
# angle at complex 0 only: off the real line its jvp is the spec bug above (ANGLE_SPEC_BUG)
kinks("angle", (vector(0.0, -0.0, -1.0, 1.5),), (_complex(0j),))
kinks("acos", (vector(-1.0, 1.0, 0.5),))
kinks("asin", (vector(-1.0, 1.0, 0.5),))
kinks("atanh", (vector(-1.0, 1.0, 0.5),))
kinks("acosh", (vector(1.0, 2.0),))
kinks("log", (vector(0.0, 1.0),))
kinks("log10", (vector(0.0, 1.0),))
kinks("log2", (vector(0.0, 1.0),))
kinks("log1p", (vector(-1.0, 0.0, 1.0),))
kinks("sqrt", (vector(0.0, 1.0, 4.0),))
kinks("rsqrt", (vector(0.0, 1.0, 4.0),))
kinks("reciprocal", (vector(0.0, -0.0, 2.0),))
kinks("ceil", (ROUNDING_KINKS,))
kinks("floor", (ROUNDING_KINKS,))
kinks("round", (ROUNDING_KINKS,))
kinks("trunc", (ROUNDING_KINKS,))
kinks("frac", (vector(-1.0, 0.0, 1.0, 1.5),))
kinks(
    "nan_to_num",
    (vector(np.nan, np.inf, -np.inf, 1.5),),
    (vector(np.nan, np.inf, -np.inf, 1.5), 1.0, 3.0, -3.0),
)
# abs == 0 at [0, 0]: torch's vjp takes sgn(0) = 0 there, its own result formula e^(i angle).
kinks("polar", (matrix([[0.0, 1.0, 1.5, 0.7], [2.0, 0.5, 1.2, 0.9]]), vector(0.3, -2.0, 2.5, 1.0)))
parity_differs(
    ("kinks",),
    "at abs == 0 the seed's polar_backward takes sgn(0) = 0, as torch's backward does; the seed has no result "
    "formula, so jaxderiv's jvp transposes that choice (tangent 0 there), while torch 2.13's own result formula "
    "gives e^(i angle) (-0.25-0.08j on the kink input): torch's two modes disagree at this kink",
    "polar",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.clone(a["self"]),
        "torch's _lazy_clone needs storage torch allocated itself (not torch.from_numpy's): aten.clone",
    ),
    "_lazy_clone",
)
parity_differs(("complex",), ANGLE_SPEC_BUG + ": complex jvp differs from torch 2.13's, which conjugates", "angle")

# The sympy proofs are over the reals: entries with no real-valued meaning there.
without_meaning("complex-valued: the proofs are over the reals", "complex", "polar", "view_as_real", "view_as_complex")
without_meaning("boolean-valued: no derivative", "isnan")


# -- the sympy proofs: the op's definition ----------------------------------------------------
# Each op as a sympy function of its arguments' symbols: the reference whose derivative its
# formulas must equal (check/proofs.py). `sp` imports sympy only when a proof calls one.

definition("abs", lambda x: sp.Abs(x), "self")
definition("acos", lambda x: sp.acos(x), "self", lo=-0.9, hi=0.9)
definition("asin", lambda x: sp.asin(x), "self", lo=-0.9, hi=0.9)
definition("atan", lambda x: sp.atan(x), "self")
definition("acosh", lambda x: sp.acosh(x), "self", lo=1.1, hi=3.0)
definition("asinh", lambda x: sp.asinh(x), "self")
definition("atanh", lambda x: sp.atanh(x), "self", lo=-0.9, hi=0.9)
definition("cos", lambda x: sp.cos(x), "self")
definition("sin", lambda x: sp.sin(x), "self")
definition("tan", lambda x: sp.tan(x), "self", lo=-1.2, hi=1.2)
definition("cosh", lambda x: sp.cosh(x), "self")
definition("sinh", lambda x: sp.sinh(x), "self")
definition("exp", lambda x: sp.exp(x), "self")
definition("exp2", lambda x: 2**x, "self")
definition("expm1", lambda x: sp.exp(x) - 1, "self")
definition("log", lambda x: sp.log(x), "self", lo=0.1, hi=3.0)
definition("log2", lambda x: sp.log(x, 2), "self", lo=0.1, hi=3.0)
definition("log10", lambda x: sp.log(x, 10), "self", lo=0.1, hi=3.0)
definition("log1p", lambda x: sp.log(1 + x), "self", lo=-0.9, hi=3.0)
definition("sqrt", lambda x: sp.sqrt(x), "self", lo=0.1, hi=3.0)
definition("rsqrt", lambda x: 1 / sp.sqrt(x), "self", lo=0.1, hi=3.0)
definition("reciprocal", lambda x: 1 / x, "self")
definition("neg", lambda x: -x, "self")
definition("_neg_view", lambda x: -x, "self")
definition("alias", lambda x: x, "self")
definition("clone", lambda x: x, "self")
definition("_to_copy", lambda x: x, "self")
definition("_conj", lambda x: x, "self")
definition("_conj_physical", lambda x: x, "self")
definition("conj_physical_", lambda x: x, "self")
definition("fill_.Scalar", lambda x, v: v, "self", "value")
definition("fill_.Tensor", lambda x, v: v, "self", "value")
definition("zero_", lambda x: sp.Integer(0), "self")
definition("angle", lambda x: sp.Piecewise((sp.pi, x < 0), (0, True)), "self")
definition("sgn", lambda x: sp.sign(x), "self")
definition("sign", lambda x: sp.sign(x), "self")
definition("ceil", lambda x: sp.ceiling(x), "self")
definition("floor", lambda x: sp.floor(x), "self")
definition("round", symbolic_math.round_half_up, "self")
definition("trunc", symbolic_math.trunc, "self")
definition("frac", lambda x: x - symbolic_math.trunc(x), "self")
definition("nan_to_num", lambda x: x, "self")
definition("deg2rad", lambda x: x * sp.pi / 180, "self")
definition("rad2deg", lambda x: x * 180 / sp.pi, "self")
definition("sinc", lambda x: sp.sin(sp.pi * x) / (sp.pi * x), "self")
