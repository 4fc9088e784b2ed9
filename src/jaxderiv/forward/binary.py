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

import jax
import jax.numpy as jnp
import numpy as np

from ..cxx import is_number, is_tensor
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


@impl("atan2")
def atan2(self, other):
    dt = _floating(result_type(self, other))
    _real_only("atan2", dt)
    return jnp.arctan2(*_cast(dt, self, other))


@impl("hypot")
def hypot(self, other):
    dt = _floating(result_type(self, other))
    _real_only("hypot", dt)
    return jnp.hypot(*_cast(dt, self, other))


@impl("copysign.Tensor", "copysign.Scalar")
def copysign(self, other):
    dt = _floating(result_type(self, other))
    _real_only("copysign", dt)
    return jnp.copysign(*_cast(dt, self, other))


@impl("fmod.Tensor", "fmod.Scalar")
def fmod(self, other):
    """C's fmod: the result has the sign of self."""
    dt = result_type(self, other)
    _real_only("fmod", dt)
    return jnp.fmod(*_cast(dt, self, other))


@impl("remainder.Tensor", "remainder.Scalar")
def remainder(self, other):
    """Python's %: the result has the sign of other."""
    dt = result_type(self, other)
    _real_only("remainder", dt)
    return jnp.remainder(*_cast(dt, self, other))


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


@impl("logaddexp2")
def logaddexp2(self, other):
    dt = _floating(result_type(self, other))
    _real_only("logaddexp2", dt)
    return jnp.logaddexp2(*_cast(dt, self, other))


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


def _minmax(name: str, fn):
    def op(self, other):
        dt = result_type(self, other)
        _real_only(name, dt)
        return fn(*_cast(dt, self, other))

    op.__name__ = name
    return op


# maximum and minimum propagate NaN; fmax and fmin return the other operand.
for _name, _fn in {"maximum": jnp.maximum, "minimum": jnp.minimum, "fmax": jnp.fmax, "fmin": jnp.fmin}.items():
    impl(_name)(_minmax(_name, _fn))


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
