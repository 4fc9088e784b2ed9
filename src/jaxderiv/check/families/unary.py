"""Checker inputs of the unary elementwise ops: domains away from poles and branch cuts, complex."""

from __future__ import annotations

import numpy as np

from ..opdb import (
    Equivalent,
    complex_ok,
    domain,
    kinks,
    known_failure,
    parity_differs,
    samples,
    torch_equivalent,
    without_meaning,
)
from ..samples import Sample, default_samples, draw
from . import vector

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

kinks("abs", (vector(0.0, -0.0, 1.5, -2.0),))
kinks("sgn", (vector(0.0, -0.0, 1.5, -2.0),))
kinks("sign", (vector(0.0, 1.5, -2.0),))
kinks("sqrt", (vector(0.0, 1.0, 4.0),))
kinks("rsqrt", (vector(0.0, 1.0, 4.0),))
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
