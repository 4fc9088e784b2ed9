"""Forward implementations of ATen's elementwise unary ops, and the copies and views like them."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from . import impl


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
