"""Forward implementations of ATen's elementwise binary and ternary ops.

Dtypes follow ATen's type promotion (c10's ResultTypeState), not JAX's: a dimensioned tensor
outranks a 0-d tensor, which outranks a wrapped number (a Python scalar, or a weakly typed 0-d
array, JAX's nearest equivalent), unless the lower-ranked operand is of a higher category
(bool < integer < floating < complex). So `float32 tensor * 2.5` stays float32,
`int32 tensor + 2.5` is float32 (the default dtype) and `float32 tensor + float64 0-d tensor`
stays float32.
"""

from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..cxx import is_number, is_tensor
from ..records import (
    DEFAULT_SHAPES,
    Equivalent,
    Sample,
    complex_ok,
    definition,
    draw,
    kinks,
    matrix,
    parity_differs,
    samples,
    symbolic_math,
    torch_equivalent,
    vector,
)
from ..records.symbolic import sp
from . import impl


_BOOL, _INT, _FLOAT, _COMPLEX = range(4)
# The dtype ATen gives a wrapped number of each category: the default dtypes.
_WRAPPED = {
    _BOOL: np.dtype(bool),
    _INT: np.dtype(np.int64),
    _FLOAT: np.dtype(np.float32),
    _COMPLEX: np.dtype(np.complex64),
}


def _category(dtype) -> int:
    if jnp.issubdtype(dtype, jnp.bool_):
        return _BOOL
    if jnp.issubdtype(dtype, jnp.integer):
        return _INT
    return _COMPLEX if jnp.issubdtype(dtype, jnp.complexfloating) else _FLOAT


def _promote(a, b):
    return b if a is None else np.dtype(jnp.promote_types(a, b))


def _combine(higher, lower):
    """c10's combine_categories: the lower-ranked dtype wins only with a higher category."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if _category(lower) <= _category(higher):
        return higher
    if _category(higher) == _FLOAT:  # a complex lower keeps the higher one's precision
        return np.dtype(jnp.promote_types(higher, jnp.complex64))
    return lower


def result_type(*values) -> np.dtype:
    """ATen's result dtype of tensors and Scalars (None, an absent optional, is skipped)."""
    dim = zero = wrapped = None
    for v in values:
        if v is None:
            continue
        if is_number(v) or isinstance(v, bool):
            wrapped = _promote(wrapped, _WRAPPED[_category(np.result_type(v))])
        elif jnp.ndim(v) == 0 and getattr(v, "weak_type", False):
            wrapped = _promote(wrapped, _WRAPPED[_category(v.dtype)])
        elif jnp.ndim(v) == 0:
            zero = _promote(zero, jnp.result_type(v))
        else:
            dim = _promote(dim, jnp.result_type(v))
    return np.dtype(jax.dtypes.canonicalize_dtype(_combine(dim, _combine(zero, wrapped))))


def _floating(dtype) -> np.dtype:
    """Ops defined on floating types compute integers and bools in the default dtype."""
    return dtype if _category(dtype) >= _FLOAT else _WRAPPED[_FLOAT]


def _cast(dtype, *values):
    return [None if v is None else jnp.asarray(v, dtype) for v in values]


def _real_only(name: str, dtype) -> None:
    if _category(dtype) == _COMPLEX:
        raise TypeError(f"aten::{name} is not implemented for complex tensors")


def _real_binary(name: str, fn, floating: bool = False, doc: str | None = None):
    """The forward of `name`(self, other): fn of both cast to their result dtype, which must be
    real; `floating`: integers and bools computed in the default floating dtype."""

    def op(self, other):
        dt = _floating(result_type(self, other)) if floating else result_type(self, other)
        _real_only(name, dt)
        return fn(*_cast(dt, self, other))

    op.__name__ = name
    op.__doc__ = doc
    return op


def _scaled(x, alpha, dtype):
    """`alpha * x`, alpha cast to the op's dtype as ATen does (so bool stays bool)."""
    return x if not is_tensor(alpha) and alpha == 1 else x * jnp.asarray(alpha, dtype)


# -- arithmetic -------------------------------------------------------------------------------


@impl("add.Tensor", "add.Scalar")
def add(self, other, alpha=1):
    dt = result_type(self, other)
    self, other = _cast(dt, self, other)
    return self + _scaled(other, alpha, dt)


@impl("sub.Tensor", "sub.Scalar")
def sub(self, other, alpha=1):
    dt = result_type(self, other)
    self, other = _cast(dt, self, other)
    return self - _scaled(other, alpha, dt)


@impl("rsub.Tensor", "rsub.Scalar")
def rsub(self, other, alpha=1):
    dt = result_type(self, other)
    self, other = _cast(dt, self, other)
    return other - _scaled(self, alpha, dt)


@impl("mul.Tensor", "mul.Scalar")
def mul(self, other):
    self, other = _cast(result_type(self, other), self, other)
    return self * other


@impl("div.Tensor", "div.Scalar")
def div(self, other):
    """True division: integers divide in the default floating dtype."""
    self, other = _cast(_floating(result_type(self, other)), self, other)
    return self / other


def _div_floor_floating(a, b):
    """ATen's div_floor_floating, Python's float //: built on fmod, so a rounded a / b cannot
    cross an integer; division by zero gives a / b."""
    mod = jnp.fmod(a, b)
    div = (a - mod) / b
    div = jnp.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floor = jnp.floor(div)
    floor = jnp.where(div - floor > 0.5, floor + 1, floor)
    floor = jnp.where(div == 0, jnp.copysign(jnp.zeros_like(div), a / b), floor)
    return jnp.where(b == 0, a / b, floor)


@impl("div.Tensor_mode", "div.Scalar_mode")
def div_mode(self, other, rounding_mode):
    """rounding_mode None is true division; 'trunc' and 'floor' keep integer dtypes."""
    if rounding_mode is None:
        return div(self, other)
    dt = result_type(self, other)
    self, other = _cast(dt, self, other)
    floating = _category(dt) >= _FLOAT
    if rounding_mode == "trunc":
        return jnp.trunc(self / other) if floating else jax.lax.div(*jnp.broadcast_arrays(self, other))
    if rounding_mode == "floor":
        return _div_floor_floating(self, other) if floating else jnp.floor_divide(self, other)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


def _int_pow(base, exponent):
    """ATen's integer pow: a negative exponent gives 0, except for the bases 1 and -1."""
    positive = jnp.power(base, jnp.maximum(exponent, 0))
    negative = jnp.where(
        jnp.abs(base) == 1, jnp.where(exponent % 2 == 0, jnp.ones_like(base), base), jnp.zeros_like(base)
    )
    return jnp.where(exponent >= 0, positive, negative)


@impl("pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar")
def pow(self, exponent):
    dt = result_type(self, exponent)
    if _category(dt) <= _INT and is_number(exponent) and exponent < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    base, exponent = _cast(dt, self, exponent)
    return jnp.power(base, exponent) if _category(dt) >= _FLOAT else _int_pow(base, exponent)


atan2 = impl("atan2")(_real_binary("atan2", jnp.arctan2, floating=True))
hypot = impl("hypot")(_real_binary("hypot", jnp.hypot, floating=True))
copysign = impl("copysign.Tensor", "copysign.Scalar")(_real_binary("copysign", jnp.copysign, floating=True))
fmod = impl("fmod.Tensor", "fmod.Scalar")(
    _real_binary("fmod", jnp.fmod, doc="C's fmod: the result has the sign of self.")
)
remainder = impl("remainder.Tensor", "remainder.Scalar")(
    _real_binary("remainder", jnp.remainder, doc="Python's %: the result has the sign of other.")
)


@impl("lerp.Scalar", "lerp.Tensor")
def lerp(self, end, weight):
    """ATen's two-sided form, exact at both ends: weight 0 gives self, weight 1 gives end."""
    self, end, weight = _cast(result_type(self, end, weight), self, end, weight)
    return jnp.where(jnp.abs(weight) < 0.5, self + weight * (end - self), end - (end - self) * (1 - weight))


@impl("addcmul")
def addcmul(self, tensor1, tensor2, value=1):
    dt = result_type(self, tensor1, tensor2)
    self, tensor1, tensor2 = _cast(dt, self, tensor1, tensor2)
    return self + _scaled(tensor1, value, dt) * tensor2


@impl("addcdiv")
def addcdiv(self, tensor1, tensor2, value=1):
    if _category(jnp.result_type(tensor1)) <= _INT and _category(jnp.result_type(tensor2)) <= _INT:
        raise TypeError("Integer division with addcdiv is no longer supported; use torch.div with a rounding mode")
    dt = result_type(self, tensor1, tensor2)
    self, tensor1, tensor2 = _cast(dt, self, tensor1, tensor2)
    return self + _scaled(tensor1, value, dt) / tensor2


def log_add_exp_complex(x, y):
    """ATen's complex _log_add_exp_helper (LogAddExp.h): log1p(exp(min - max)) + max, min and max
    ordered by real part (a tie keeps x as max), so the imaginary part is Im(max) + arg(1 +
    exp(min - max)), not wrapped to (-pi, pi] as log(exp(x) + exp(y)) is. NaN anywhere gives
    NaN + NaN j; equal infinite real parts give min (-inf) or log(exp(min) + exp(max)) (+inf)."""
    x, y = jnp.broadcast_arrays(x, y)
    xr, yr = jnp.real(x), jnp.real(y)
    x_is_min = jnp.isnan(xr) | jnp.isnan(yr) | (xr < yr)
    lo, hi = jnp.where(x_is_min, x, y), jnp.where(x_is_min, y, x)
    lo_r, hi_r = jnp.real(lo), jnp.real(hi)
    both_inf = ~jnp.isfinite(lo_r) & (lo_r == hi_r)
    diff = jnp.where(both_inf, jnp.zeros((), lo.dtype), lo - hi)
    general = jnp.log1p(jnp.exp(diff)) + hi
    pos_inf = jnp.log(jnp.exp(lo) + jnp.exp(hi))
    value = jnp.where(both_inf, jnp.where(lo_r < 0, lo, pos_inf), general)
    nan = jnp.isnan(lo_r) | jnp.isnan(jnp.imag(lo))
    return jnp.where(nan, jnp.asarray(complex(math.nan, math.nan), lo.dtype), value)


@impl("logaddexp")
def logaddexp(self, other):
    """Real: jnp.logaddexp. Complex: ATen's own helper, whose imaginary part is not wrapped."""
    dt = _floating(result_type(self, other))
    a, b = _cast(dt, self, other)
    return log_add_exp_complex(a, b) if _category(dt) == _COMPLEX else jnp.logaddexp(a, b)


logaddexp2 = impl("logaddexp2")(_real_binary("logaddexp2", jnp.logaddexp2, floating=True))


# -- selection --------------------------------------------------------------------------------


@impl("clamp", "clamp.Tensor")
def clamp(self, min=None, max=None):
    """min(max(self, min), max): NaN in any operand propagates, and min > max gives max."""
    if min is None and max is None:
        raise ValueError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dt = result_type(self, min, max)
    _real_only("clamp", dt)
    x, min, max = _cast(dt, self, min, max)
    if min is not None:
        x = jnp.maximum(x, min)
    return x if max is None else jnp.minimum(x, max)


@impl("clamp_min", "clamp_min.Tensor")
def clamp_min(self, min):
    return clamp(self, min, None)


@impl("clamp_max", "clamp_max.Tensor")
def clamp_max(self, max):
    return clamp(self, None, max)


@impl("ldexp.Tensor")
def ldexp(self, other):
    """ATen computes self * 2.0 ** other: integer inputs give the default float dtype."""
    return mul(self, pow(2.0, other))


@impl("_s_where", "where.self")
def where(condition, self, other):
    self, other = _cast(result_type(self, other), self, other)
    return jnp.where(condition, self, other)


# maximum and minimum propagate NaN; fmax and fmin return the other operand.
for _name, _fn in {"maximum": jnp.maximum, "minimum": jnp.minimum, "fmax": jnp.fmax, "fmin": jnp.fmin}.items():
    impl(_name)(_real_binary(_name, _fn))


# -- comparisons: computed in the promoted dtype, bool results ------------------------------

_COMPARISONS = {
    "eq": jnp.equal,
    "ne": jnp.not_equal,
    "lt": jnp.less,
    "le": jnp.less_equal,
    "gt": jnp.greater,
    "ge": jnp.greater_equal,
}


def _comparison(name: str, fn, in_place: bool):
    """`name` out of place gives bool; in place it writes 0 and 1 into self's dtype."""

    def op(self, other):
        dt = result_type(self, other)
        if name not in ("eq", "ne"):
            _real_only(name, dt)
        out = fn(*_cast(dt, self, other))
        return out.astype(jnp.result_type(self)) if in_place else out

    op.__name__ = name + ("_" if in_place else "")
    return op


for _name, _fn in _COMPARISONS.items():
    impl(f"{_name}.Tensor", f"{_name}.Scalar")(_comparison(_name, _fn, in_place=False))
    impl(f"{_name}_.Tensor", f"{_name}_.Scalar")(_comparison(_name, _fn, in_place=True))


# --- records: samples, domains and what the parity run against torch needs ------------------

# The family's traits (records.FamilyTraits; jaxderiv.check.opdb.traits reads them):
# elementwise (listed for the sympy proofs), checked in float32 and bfloat16 too.
FAMILY = {"elementwise": True, "low_precision": True}

# Checker inputs of the elementwise binary and ternary ops: Scalars, bounds, and gaps from kinks.
#
# Each op's samples are the default shapes (same shape, broadcasting, 0-d) for each variant of
# its non-tensor arguments. Inputs are redrawn until they keep GAP away from the op's kinks
# (clamp bounds, ties of maximum, jumps of fmod), where finite differences cannot judge.
GAP = 0.05  # distance kept from a kink; the finite-difference step is 1e-6
DEFAULT_RANGE = (-2.0, 2.0)


def _bools(rng, shape, dtype):
    return rng.random(shape) < 0.5


def _small_ints(rng, shape, dtype):
    """An integer operand: not differentiable, so the checker judges only the float one."""
    return rng.integers(1, 4, size=shape)


def _sample(op, rng, dtype, spec: dict, shapes, kinks: Callable | None) -> Sample:
    """One call: tensors drawn as `spec` says ((lo, hi), a function, or None), other arguments from `spec`."""
    for _ in range(100):
        values: dict[str, object] = {}
        k = 0
        for a in op.schema.arguments:
            if a.is_tensor:
                how = spec.get(a.name, DEFAULT_RANGE if a.default is None else None)
                shape = shapes[min(k, len(shapes) - 1)]
                k += 1
                if how is None:
                    values[a.name] = None
                elif callable(how):
                    values[a.name] = how(rng, shape, dtype)
                else:
                    lo, hi = how
                    values[a.name] = draw(rng, shape, lo, hi, dtype)
            elif a.name in spec:
                values[a.name] = spec[a.name]
        if kinks is None or np.min(kinks(**values), initial=np.inf) >= GAP:
            break
    else:
        raise ValueError(f"{op.name}: no inputs {GAP} away from its kinks in 100 draws")
    label = ("x".join(map(str, shapes[0])) or "0-d") + (" bcast" if shapes[0] != shapes[1] else "")
    label += "".join(f" {n}={v}" for n, v in spec.items() if not isinstance(v, tuple) and not callable(v))
    return Sample((), values, label)  # by keyword: a Scalar may be given while one before it is not


def _register(
    *names: str,
    variants=({},),
    kinks: Callable | None = None,
    complex_: bool = False,
    complex_variants=(),
    real_variants=(),
    **args,
):
    """Samples of `names`: `args` (ranges or values) updated by each variant, in every default
    shape. `complex_variants` are added on complex inputs only: complex Scalars (alpha, weight),
    without which a formula's complex branch or a Scalar's missing `.conj()` goes unjudged;
    `real_variants` on real inputs only (arguments ATen refuses with complex tensors)."""

    @samples(*names)
    def make(op, rng, dtype=np.float64):
        several = sum(a.is_tensor for a in op.schema.arguments) > 1  # else broadcasting is moot
        shapes = [s for s in DEFAULT_SHAPES if several or s[0] == s[1]]
        complex_input = np.issubdtype(dtype, np.complexfloating)
        chosen = tuple(variants) + (tuple(complex_variants) if complex_input else tuple(real_variants))
        return [_sample(op, rng, dtype, {**args, **v}, s, kinks) for v in chosen for s in shapes]

    if complex_:
        complex_ok(*names)


def _from_other(self, other):
    """Ties of maximum-like ops, and the jumps of comparisons."""
    return np.abs(self - other)


def _from_multiples(self, other, **_):
    """fmod, remainder and rounded division jump where self is a multiple of other."""
    return np.abs(self - other * np.round(self / other))


def _from_bounds(self, min=None, max=None):
    return np.concatenate([np.ravel(np.abs(self - b)) for b in (min, max) if b is not None])


_COMPLEX_ALPHA = ({"alpha": 0.5 - 1.5j},)
_register("add.Tensor", variants=({}, {"alpha": 2.0}), complex_=True, complex_variants=_COMPLEX_ALPHA)
# The 1.7 formulas of sub/rsub (`-grad * alpha`, no `.conj()`) are written for a real alpha.
_register("sub.Tensor", "rsub.Tensor", variants=({}, {"alpha": 2.0}), complex_=True)
_register(
    "add.Scalar",
    "sub.Scalar",
    other=0.7,
    variants=({}, {"alpha": 2.0}),
    complex_=True,
    complex_variants=_COMPLEX_ALPHA + ({"other": 0.7 + 0.4j},),
)
_register(
    "rsub.Scalar", other=0.7, variants=({}, {"alpha": 2.0}), complex_=True, complex_variants=({"other": 0.7 + 0.4j},)
)
_register("mul.Tensor", complex_=True)
_register("mul.Scalar", other=1.5, complex_=True, complex_variants=({"other": 1.5 - 0.5j},))
_register("div.Tensor", other=(0.5, 2.0), complex_=True)
_register("div.Scalar", other=1.5, complex_=True, complex_variants=({"other": 1.5 - 0.5j},))
# ATen rounds no complex quotient: complex inputs are checked with rounding_mode None only.
_ROUNDED = ({"rounding_mode": "trunc"}, {"rounding_mode": "floor"})
_TRUE_DIV = ({"rounding_mode": None},)
_register(
    "div.Tensor_mode",
    other=(0.5, 2.0),
    variants=_TRUE_DIV,
    real_variants=_ROUNDED,
    kinks=_from_multiples,
    complex_=True,
)
_register(
    "div.Scalar_mode", other=1.5, variants=_TRUE_DIV, real_variants=_ROUNDED, kinks=_from_multiples, complex_=True
)
# pow: positive bases, away from the branch cut of a real power of a negative number
_register("pow.Tensor_Scalar", self=(0.5, 2.0), variants=[{"exponent": e} for e in (2.5, 3, 0, -1.5)], complex_=True)
_register("pow.Tensor_Tensor", self=(0.5, 2.0), complex_=True)
_register("pow.Scalar", self=2.5, complex_=True)
_register("copysign.Scalar", variants=({"other": 0.5}, {"other": -0.5}))
_register("fmod.Scalar", "remainder.Scalar", other=0.75, kinks=_from_multiples)
# fmod.Tensor's `other` is not_implemented in the spec: an integer `other` leaves `self` to check
_register("fmod.Tensor", other=_small_ints, kinks=_from_multiples)
_register("remainder.Tensor", other=(0.5, 2.0), kinks=_from_multiples)
_register(
    "lerp.Scalar",
    variants=({"weight": 0.3}, {"weight": 0.8}),
    complex_=True,
    complex_variants=({"weight": 0.3 + 0.6j},),
)
_register("lerp.Tensor", complex_=True)
_register("addcmul", variants=({}, {"value": 0.5}), complex_=True)
_register("addcdiv", tensor2=(0.5, 2.0), variants=({}, {"value": 0.5}), complex_=True)
_register(
    "clamp",
    variants=({"min": -1.0, "max": 1.0}, {"min": -0.5}, {"max": 0.5}, {"min": 0.5, "max": -0.5}),
    kinks=_from_bounds,
)
_register(
    "clamp.Tensor",
    variants=(
        {"min": (-1.2, -0.2), "max": (0.2, 1.2)},
        {"min": (-1.0, 1.0), "max": None},
        {"max": (-1.0, 1.0)},
        {"min": (0.2, 1.2), "max": (-1.2, -0.2)},
    ),
    kinks=_from_bounds,
)
_register("clamp_min", min=0.3, kinks=_from_bounds)
_register("clamp_max", max=0.3, kinks=_from_bounds)
_register("clamp_min.Tensor", "clamp_max.Tensor", kinks=_from_bounds)
_register("ldexp.Tensor", complex_=True)
_register("_s_where", "where.self", condition=_bools, complex_=True)
_register("maximum", "minimum", "fmax", "fmin", kinks=_from_other)
# In-place comparisons write 0 and 1 into self's dtype: differentiable, with zero gradients.
_COMPARISONS_samples = ("eq", "ne", "lt", "le", "gt", "ge")
_register(*[f"{c}_.Tensor" for c in _COMPARISONS_samples], kinks=_from_other)
_register(*[f"{c}_.Scalar" for c in _COMPARISONS_samples], other=0.5, kinks=_from_other)
complex_ok("eq_.Tensor", "eq_.Scalar", "ne_.Tensor", "ne_.Scalar")


# -- parity with torch ------------------------------------------------------------------------

kinks(
    "clamp",
    (vector(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0),
    (vector(-0.5, 0.3), -0.5, None),
    (vector(0.5, -0.3), None, 0.5),
    (vector(0.5, -0.5, 0.0), 0.5, -0.5),  # min > max: max everywhere
)
kinks("clamp_min", (vector(0.5, 0.4, 0.6), 0.5))
kinks("clamp_max", (vector(0.5, 0.4, 0.6), 0.5))
kinks(
    "clamp.Tensor",
    (vector(-1.0, 1.0, 0.0), vector(-1.0, -1.0, -1.0), vector(1.0, 1.0, 1.0)),
    (matrix([[-1.0, 1.0, 0.0], [0.5, -1.5, 1.7]]), vector(-1.0, -1.0, 0.0), vector(1.0, 1.0, 1.0)),  # broadcast bounds
    (vector(-1.0, 1.0, 0.0), vector(-1.0, -0.8, -1.2), None),  # a tie with a lone bound
    (vector(1.0, -1.0, 0.0), None, vector(1.0, 0.7, 1.3)),
    (vector(-1.1, 1.0, 0.0), vector(-1.0, -0.8, -1.2), None),  # near the bound, no tie
    (vector(0.5, -0.5, 0.0), vector(0.5, 0.5, 0.5), vector(-0.5, -0.5, -0.5)),  # min > max
)
kinks("clamp_min.Tensor", (vector(0.5, 0.4, 0.6), vector(0.5, 0.5, 0.5)))
kinks("clamp_max.Tensor", (vector(0.5, 0.4, 0.6), vector(0.5, 0.5, 0.5)))
kinks("maximum", (vector(1.0, 2.0, -1.0), vector(1.0, 3.0, -1.0)))
kinks("minimum", (vector(1.0, 2.0, -1.0), vector(1.0, 3.0, -1.0)))
kinks("fmax", (vector(1.0, 2.0, np.nan), vector(1.0, np.nan, 3.0)))
kinks("fmin", (vector(1.0, 2.0, np.nan), vector(1.0, np.nan, 3.0)))
# x^0 has a zero gradient also at 0; x^0.5 an infinite slope there
kinks("pow.Tensor_Scalar", (vector(0.0, 1.0, -2.0), 0), (vector(0.0, 1.0, -2.0), 3), (vector(0.0, 1.0, 2.0), 0.5))
# base 0: d/dexponent is 0 for exponent >= 0 and -inf below; d/dbase is 0 for exponent 0
kinks("pow.Tensor_Tensor", (vector(0.0, 0.0, 0.0, 0.0, 2.0), vector(0.0, 1.0, 2.0, -1.0, 0.0)))
kinks("pow.Scalar", (0.0, vector(0.0, 1.0, -1.0, 2.0)))
kinks("atan2", (vector(0.0, 1.0), vector(0.0, 0.0)))  # the origin
kinks("hypot", (vector(0.0, 3.0), vector(0.0, 4.0)))
kinks("copysign.Tensor", (vector(0.0, -0.0, 1.5, -2.0), vector(-1.0, 1.0, -0.0, 3.0)))  # self = 0: gradient 0
kinks("copysign.Scalar", (vector(0.0, -1.0, 2.0), -0.5))
# on the jumps too (self a multiple of other): gradient 1
kinks("fmod.Scalar", (vector(-2.0, 1.5, 0.75, 1.0), 0.75))
kinks(
    "fmod.Tensor",
    (vector(-2.0, 1.5, 3.0, 1.0), np.array([2, 3, 1, 1])),
    # a float `other`: torch's formula for other, -grad * self.div(other, "trunc"); the samples' other is int
    (vector(-3.5, -2.0, -0.4, 0.9, 2.2, 3.7), vector(1.3, 1.3, 1.3, 1.3, 1.3, 1.3)),
)
kinks("remainder.Scalar", (vector(-2.0, 1.5, 0.75, 1.0), 0.75))
kinks("remainder.Tensor", (vector(-2.0, 1.5, 3.0, 1.0), vector(0.5, -1.0, 1.5, 0.3)))
# weight 0.5 (and |weight| 0.5 for lerp.Tensor): where ATen switches between its two formulas
_LERP_SELF, _LERP_END = vector(-1.0, 0.3, 1.7), vector(0.5, 2.0, -1.2)
_LERP_SELF_C, _LERP_END_C = _LERP_SELF + 1j * vector(0.4, -1.1, 0.2), _LERP_END + 1j * vector(1.0, 0.3, -0.6)
kinks("lerp.Scalar", (_LERP_SELF, _LERP_END, 0.5), (_LERP_SELF_C, _LERP_END_C, 0.5))
kinks(
    "lerp.Tensor",
    (_LERP_SELF, _LERP_END, vector(0.5, -0.5, 1.0)),
    (_LERP_SELF_C, _LERP_END_C, vector(0.5, -0.5, 1.0).astype(np.complex128)),
)
kinks("logaddexp", (vector(1.0, -np.inf, np.inf), vector(1.0, -np.inf, 0.0)))  # ties, -inf and inf
# where with equal branches: the gradient goes to the branch the condition selects
kinks(
    "_s_where",
    (np.array([True, False, True]), vector(1.0, 2.0, 3.0), vector(1.0, 2.0, 3.0)),
    (np.array([True, False, True]), vector(1.0, 2.0, 3.0) + 0.5j, vector(1.0, 2.0, 3.0) + 0.5j),
)
# Where the seed has no result: formula, forward mode transposes the backward formula; at these
# kinks torch 2.13's own result formula (which its own file gives jaxderiv too: that run agrees)
# picks another subgradient. Forward values and vjp agree there (tests/ops/test_binary.py).
parity_differs(
    ("kinks",),
    "jvp at a tie with a lone bound (self = min, max None): the transposed clamp_backward gives self's "
    "tangent (1 for self_t = 1, min_t = 0), torch 2.13's clamp_jvp the bound's (0; 1 for min_t = 1)",
    "clamp.Tensor",
)
parity_differs(
    ("kinks",),
    "jvp at the origin: the transposed atan2_backward gives 0, torch 2.13's result formula "
    "(-self_p * other_t + other_p * self_t) / (self_p^2 + other_p^2) 0/0 = NaN",
    "atan2",
)
torch_equivalent(
    Equivalent(lambda aten, a: aten.where.self(*a.values()), "torch 2.13 has no _s_where: aten.where.self"), "_s_where"
)  # torch 2.14.1 changed these kink conventions (the default registry's formulas); torch 2.13, the
# oracle, keeps the old ones. Measured by `python -m jaxderiv parity` on the default spec.
parity_differs(
    ("kinks",),
    "torch 2.14.1's formula gives 0 at self == bound (`where(self > min, grad, 0)`); torch 2.13's gives grad "
    "(`self >= min`): vjp 0 vs -1.25 on the kink sample",
    "clamp_min",
    "clamp_max",
    seed_spec=False,
    newest_spec=True,
)
parity_differs(
    ("kinks",),
    "torch 2.14.1's formula splits a tie half and half (`where(self == other, grad / 2, grad)`, masked); torch 2.13's "
    "gives it all to one side: vjp -0.327 vs -0.654 on the tie (fmax/fmin: also a NaN input gets the gradient in "
    "2.14.1, 0 in 2.13)",
    "clamp_min.Tensor",
    "clamp_max.Tensor",
    "fmax",
    "fmin",
    seed_spec=False,
    newest_spec=True,
)


# -- the sympy proofs: the op's definition ----------------------------------------------------
# Each op as a sympy function of its arguments' symbols: the reference whose derivative its
# formulas must equal (check/proofs.py). `sp` imports sympy only when a proof calls one.

# Symbols other than the Tensor inputs are sampled in 0.5 .. 1.5 unless `ranges` says otherwise.
_CLAMP_RANGES = (("min", -1.5, -0.5), ("max", 0.5, 1.5))

definition("add.Tensor", lambda x, y, a: x + a * y, "self", "other", "alpha")
definition("add.Scalar", lambda x, y, a: x + a * y, "self", "other", "alpha")
definition("sub.Tensor", lambda x, y, a: x - a * y, "self", "other", "alpha")
definition("sub.Scalar", lambda x, y, a: x - a * y, "self", "other", "alpha")
definition("rsub.Tensor", lambda x, y, a: y - a * x, "self", "other", "alpha")
definition("rsub.Scalar", lambda x, y, a: y - a * x, "self", "other", "alpha")
definition("mul.Tensor", lambda x, y: x * y, "self", "other")
definition("mul.Scalar", lambda x, y: x * y, "self", "other")
definition("div.Tensor", lambda x, y: x / y, "self", "other")
definition("div.Scalar", lambda x, y: x / y, "self", "other")
definition("div.Tensor_mode", lambda x, y: x / y, "self", "other", fixed=(("rounding_mode", None),))
definition("div.Scalar_mode", lambda x, y: x / y, "self", "other", fixed=(("rounding_mode", None),))
definition("atan2", lambda x, y: sp.atan2(x, y), "self", "other")
definition("hypot", lambda x, y: sp.sqrt(x**2 + y**2), "self", "other")
definition("pow.Tensor_Tensor", lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0)
definition("pow.Tensor_Scalar", lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0)
definition("pow.Scalar", lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0)
definition("logaddexp", lambda x, y: sp.log(sp.exp(x) + sp.exp(y)), "self", "other")
definition("logaddexp2", lambda x, y: sp.log(2**x + 2**y, 2), "self", "other")
definition("lerp.Tensor", lambda x, e, w: x + w * (e - x), "self", "end", "weight")
definition("lerp.Scalar", lambda x, e, w: x + w * (e - x), "self", "end", "weight")
definition("addcmul", lambda x, a, b, v: x + v * a * b, "self", "tensor1", "tensor2", "value")
definition("addcdiv", lambda x, a, b, v: x + v * a / b, "self", "tensor1", "tensor2", "value", lo=0.5, hi=2.0)
definition("maximum", lambda x, y: sp.Piecewise((x, x > y), (y, True)), "self", "other")
definition("minimum", lambda x, y: sp.Piecewise((x, x < y), (y, True)), "self", "other")
definition("fmax", lambda x, y: sp.Piecewise((x, x > y), (y, True)), "self", "other")
definition("fmin", lambda x, y: sp.Piecewise((x, x < y), (y, True)), "self", "other")
definition("clamp", symbolic_math.clamp, "self", "min", "max", ranges=_CLAMP_RANGES)
definition("clamp.Tensor", symbolic_math.clamp, "self", "min", "max", ranges=_CLAMP_RANGES)
definition("clamp_min", lambda x, lo: symbolic_math.clamp(x, lo, None), "self", "min", ranges=_CLAMP_RANGES)
definition("clamp_min.Tensor", lambda x, lo: symbolic_math.clamp(x, lo, None), "self", "min", ranges=_CLAMP_RANGES)
definition("clamp_max", lambda x, hi: symbolic_math.clamp(x, None, hi), "self", "max", ranges=_CLAMP_RANGES)
definition("clamp_max.Tensor", lambda x, hi: symbolic_math.clamp(x, None, hi), "self", "max", ranges=_CLAMP_RANGES)
definition("copysign.Tensor", symbolic_math.copysign, "self", "other", ranges=(("other", -2.0, 2.0),))
definition("copysign.Scalar", symbolic_math.copysign, "self", "other", ranges=(("other", -2.0, 2.0),))
definition("fmod.Tensor", symbolic_math.fmod, "self", "other", lo=-5.0, hi=5.0)
definition("fmod.Scalar", symbolic_math.fmod, "self", "other", lo=-5.0, hi=5.0)
definition("remainder.Tensor", lambda x, y: x - y * sp.floor(x / y), "self", "other", lo=-5.0, hi=5.0)
definition("remainder.Scalar", lambda x, y: x - y * sp.floor(x / y), "self", "other", lo=-5.0, hi=5.0)
definition(
    "_s_where", lambda c, x, y: sp.Piecewise((x, c), (y, True)), "condition", "self", "other", booleans=("condition",)
)


def _indicator(relation: str):
    """1 where sympy's `relation` (Eq, Ne, ...) holds of (x, y), else 0."""
    return lambda x, y: sp.Piecewise((1, getattr(sp, relation)(x, y)), (0, True))


# In-place comparisons write 0 or 1 into self: piecewise constant, so zero derivatives.
for _entry_name, _relation in {"eq": "Eq", "ne": "Ne", "ge": "Ge", "gt": "Gt", "le": "Le", "lt": "Lt"}.items():
    for _overload in ("Scalar", "Tensor"):
        definition(f"{_entry_name}_.{_overload}", _indicator(_relation), "self", "other")
