"""Forward implementations of ATen's elementwise unary ops, and the copies and views like them."""

from __future__ import annotations

import builtins
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..records import (
    Equivalent,
    Sample,
    complex_ok,
    default_samples,
    definition,
    domain,
    draw,
    kinks,
    known_failure,
    matrix,
    parity_differs,
    samples,
    symbolic_math,
    torch_equivalent,
    vector,
    without_meaning,
)
from ..records.symbolic import sp
from . import impl, variant


def _kind(x) -> str:
    dt = jnp.result_type(x)
    if jnp.issubdtype(dt, jnp.bool_):
        return "bool"
    if jnp.issubdtype(dt, jnp.integer):
        return "integer"
    return "complex" if jnp.issubdtype(dt, jnp.complexfloating) else "floating"


def _reject(name: str, x, *kinds: str):
    """Raise as ATen does for a dtype the op has no kernel for."""
    if _kind(x) in kinds:
        raise TypeError(f"aten::{name} is not implemented for {_kind(x)} tensors")


def _float(x):
    """ATen's floating ops compute integer and bool inputs in the default dtype, float32."""
    return x if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else jnp.asarray(x, jnp.float32)


def _floating(fn):
    """An op defined on floating and complex inputs, promoting integers to float32."""

    def op(self):
        return fn(_float(self))

    return op


# -- floating functions: integers promote to float32 ------------------------------------------
_FLOATING = {
    "acos": jnp.arccos,
    "acosh": jnp.arccosh,
    "asin": jnp.arcsin,
    "asinh": jnp.arcsinh,
    "atan": jnp.arctan,
    "atanh": jnp.arctanh,
    "cos": jnp.cos,
    "cosh": jnp.cosh,
    "exp": jnp.exp,
    "exp2": jnp.exp2,
    "expm1": jnp.expm1,
    "log": jnp.log,
    "log10": jnp.log10,
    "log1p": jnp.log1p,
    "log2": jnp.log2,
    "reciprocal": jnp.reciprocal,
    "rsqrt": jax.lax.rsqrt,
    "sin": jnp.sin,
    "sinh": jnp.sinh,
    "sqrt": jnp.sqrt,
    "tan": jnp.tan,
}
for _name, _fn in _FLOATING.items():
    impl(_name)(_floating(_fn))


@impl("sinc")
def sinc(self):
    """sin(pi x) / (pi x), and 1 at x == 0; integers compute in float32."""
    return jnp.sinc(_float(self))


@impl("deg2rad")
def deg2rad(self):
    _reject("deg2rad", self, "complex")
    return _float(self) * (math.pi / 180)


@impl("rad2deg")
def rad2deg(self):
    _reject("rad2deg", self, "complex")
    return _float(self) * (180 / math.pi)


@impl("angle")
def angle(self):
    """Real inputs: pi below zero, else 0 (also at -0.0), NaN kept; complex: the argument."""
    if _kind(self) == "complex":
        return jnp.angle(self)
    x = _float(self)
    return jnp.where(jnp.isnan(x), x, jnp.where(x < 0, jnp.asarray(math.pi, x.dtype), jnp.zeros_like(x)))


# -- functions that keep the dtype ------------------------------------------------------------


@impl("abs")
def abs(self):
    _reject("abs", self, "bool")
    return jnp.abs(self)


@impl("neg", "_neg_view")
def neg(self):
    _reject("neg", self, "bool")
    return jnp.negative(self)


def _rounding(name: str, fn):
    """Rounding ops: integers come back unchanged; no complex kernel."""

    def op(self):
        _reject(name, self, "bool", "complex")
        return fn(self) if _kind(self) == "floating" else self

    return op


impl("ceil")(_rounding("ceil", jnp.ceil))
impl("floor")(_rounding("floor", jnp.floor))
impl("round")(_rounding("round", jnp.round))  # half to even, as ATen's nearbyint
impl("trunc")(_rounding("trunc", jnp.trunc))


@impl("round.decimals")
def round_decimals(self, decimals):
    """ATen scales by 10**|decimals| in self's dtype, rounds half to even, and scales back."""
    _reject("round", self, "bool", "complex", "integer")
    if decimals == 0:
        return jnp.round(self)
    scale = jnp.asarray(10.0 ** abs(decimals), self.dtype)
    return jnp.round(self * scale) / scale if decimals > 0 else jnp.round(self / scale) * scale


@impl("frac")
def frac(self):
    _reject("frac", self, "bool", "integer", "complex")
    return self - jnp.trunc(self)


@impl("sign")
def sign(self):
    """(0 < x) - (x < 0): 0 at NaN and at -0.0, unlike jnp.sign; bool stays bool."""
    _reject("sign", self, "complex")
    return sgn(self)


@impl("sgn")
def sgn(self):
    """z / |z| for complex (0 at 0); sign for real."""
    if _kind(self) == "complex":
        a = jnp.abs(self)
        return jnp.where(a == 0, jnp.zeros_like(self), self / jnp.where(a == 0, 1, a))
    if _kind(self) == "bool":
        return self
    return (self > 0).astype(self.dtype) - (self < 0).astype(self.dtype)


@impl("_conj_physical", "conj_physical")
def conj_physical(self):
    return jnp.conj(self) if _kind(self) == "complex" else self


@impl("_conj")
def _conj(self):
    """ATen's internal conjugate view exists for complex tensors only (`conj()` skips reals)."""
    if _kind(self) != "complex":
        raise TypeError("aten::_conj is only defined for complex tensors")
    return jnp.conj(self)


@impl("nan_to_num")
def nan_to_num(self, nan=None, posinf=None, neginf=None):
    """NaN to `nan` (0), +-inf to `posinf`/`neginf` (the dtype's extremes); per part for complex."""
    if _kind(self) == "complex":
        return jax.lax.complex(
            nan_to_num(jnp.real(self), nan, posinf, neginf), nan_to_num(jnp.imag(self), nan, posinf, neginf)
        )
    if _kind(self) != "floating":
        return self
    info = jnp.finfo(self.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    return jnp.nan_to_num(self, nan=0.0 if nan is None else nan, posinf=big, neginf=small)


@impl("isnan")
def isnan(self):
    return jnp.isnan(self) if _kind(self) in ("floating", "complex") else jnp.zeros(jnp.shape(self), bool)


# -- complex numbers as pairs of reals ------------------------------------------------------


@impl("view_as_real")
def view_as_real(self):
    if _kind(self) != "complex":
        raise TypeError("aten::view_as_real is only supported for complex tensors")
    return jnp.stack([jnp.real(self), jnp.imag(self)], axis=-1)


@impl("view_as_complex")
def view_as_complex(self):
    if _kind(self) != "floating" or jnp.shape(self)[-1:] != (2,):
        raise TypeError("aten::view_as_complex needs a floating tensor whose last dimension has size 2")
    return jax.lax.complex(self[..., 0], self[..., 1])


@impl("complex")
def complex(real, imag):
    if _kind(real) != "floating" or jnp.result_type(real) != jnp.result_type(imag):
        raise TypeError("aten::complex needs real and imag of the same floating dtype")
    return jax.lax.complex(*jnp.broadcast_arrays(real, imag))


@impl("polar")
def polar(abs, angle):
    return complex(abs * jnp.cos(angle), abs * jnp.sin(angle))


# -- copies, views and fills -------------------------------------------------------------------


@impl("clone")
def clone(self, memory_format=None):
    return jnp.array(self)


@impl("alias", "lift", "lift_fresh", "_lazy_clone")
def alias(self):
    """Aliases and lifts have self's values: JAX arrays neither alias nor mutate."""
    return self


def _to_bytes(x):
    """x's bytes, little-endian, in a new trailing dim."""
    dt = np.dtype(x.dtype)
    if dt == np.bool_:
        return x.astype(jnp.uint8)[..., None]
    if dt.kind == "c":
        parts = _to_bytes(jnp.stack([jnp.real(x), jnp.imag(x)], -1))
        return jnp.reshape(parts, x.shape + (dt.itemsize,))
    raw = jax.lax.bitcast_convert_type(x, jnp.uint8)
    return raw[..., None] if dt.itemsize == 1 else raw


def _from_bytes(b, dt: np.dtype):
    """The values of `dt` whose bytes fill b's trailing dim."""
    if dt == np.bool_:
        return b[..., 0] != 0
    if dt.kind == "c":
        half = np.dtype(f"float{dt.itemsize * 4}")
        parts = _from_bytes(jnp.reshape(b, b.shape[:-1] + (2, dt.itemsize // 2)), half)
        return jax.lax.complex(parts[..., 0], parts[..., 1])
    return jax.lax.bitcast_convert_type(b[..., 0] if dt.itemsize == 1 else b, dt)


@impl("view.dtype")
def view_dtype(self, dtype):
    """self's bytes read as `dtype`: a different element size rescales the last dim, as in ATen."""
    src, dst = np.dtype(self.dtype), np.dtype(dtype)
    if src == dst:
        return self
    if src.itemsize != dst.itemsize and (self.ndim == 0 or self.shape[-1] * src.itemsize % dst.itemsize):
        raise RuntimeError(
            f"self.size(-1) must be divisible by {dst.itemsize // math.gcd(src.itemsize, dst.itemsize)} to view {src} as {dst} (different element sizes)"
        )
    b = _to_bytes(self)
    if self.ndim:
        b = jnp.reshape(b, self.shape[:-1] + (-1, dst.itemsize))
    return _from_bytes(b, dst)


@impl("_to_copy")
def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    """A copy in `dtype`; complex to real keeps the real part, as ATen does (with a warning)."""
    if dtype is None:
        return jnp.array(self)
    if _kind(self) == "complex" and not jnp.issubdtype(dtype, jnp.complexfloating):
        self = jnp.real(self)
    return self.astype(dtype)


@variant("copy_", "copy", entry="_to_copy", gradient="expand's before them; none for self", inputs=("self", "src"))
def copy_variant(registry, op, self, src, non_blocking=False):
    """`copy_`: `self` overwritten by `src` broadcast to its shape and cast to its dtype. torch
    differentiates it by hand (VariableTypeManual's CopyBackwards: src's gradient summed to
    its shape and cast back to its dtype, the real part for a real src; none for self), which
    is what the formulas of `expand` and `_to_copy`, run here, state."""
    target = jnp.asarray(self)
    return op(registry.op("expand")(src, list(target.shape)), dtype=target.dtype)


@impl("fill_.Scalar", "fill.Scalar")
def fill__Scalar(self, value):
    return jnp.full(jnp.shape(self), value, jnp.result_type(self))


@impl("fill_.Tensor", "fill.Tensor")
def fill__Tensor(self, value):
    if jnp.ndim(value) != 0:
        raise ValueError(
            f"aten::fill_ only supports 0-dimension value tensor but got tensor with {jnp.ndim(value)} dimensions"
        )
    return jnp.full(jnp.shape(self), value, jnp.result_type(self))


@impl("zero_")
def zero_(self):
    return jnp.zeros(jnp.shape(self), jnp.result_type(self))


# --- records: samples, domains and what the parity run against torch needs ------------------

# The family's traits (records.FamilyTraits; jaxderiv.check.opdb.traits reads them):
# elementwise (listed for the sympy proofs), checked in float32 and bfloat16 too.
FAMILY = {"elementwise": True, "low_precision": True}

# Checker inputs of the unary elementwise ops: domains away from poles and branch cuts, complex.
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
def _to_copy_samples(op, rng, dtype=np.float64):
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


def _complex(*values: "builtins.complex") -> np.ndarray:
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
