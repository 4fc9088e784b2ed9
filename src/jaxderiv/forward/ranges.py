"""`linspace` and `logspace`, each with Scalar or 0-d Tensor bounds (four overloads). ATen lists
no derivative for them and their result never requires grad: they register as constructors.

They follow ATen's CPU kernels, not NumPy's functions. The bounds are first converted to the
result dtype (`Scalar.to<T>()`: an integer dtype truncates them). The first half of the points
is `start + step * i`, the second `end - step * (steps - 1 - i)`, so both ends are exact; as a
fused multiply-add, as ATen's AVX2 and AVX512 builds compute it. An integer dtype steps in double
and truncates each point. logspace's real points are `pow(base, x)` in double, its single point
(`steps == 1`) `pow(base, start)` with start not truncated. Where the bounds are known values the
points are computed with NumPy, `pow` the C library's as ATen's (XLA's differs by an ulp now and
then, enough to change a truncated integer). Under tracing they are computed with jax.numpy,
within an ulp or so of the bounds (XLA divides by the constant count through its reciprocal).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .nondifferentiable import impl

_DEFAULT_FLOAT, _DEFAULT_COMPLEX = np.dtype(np.float32), np.dtype(np.complex64)


def _bound(value, which: str, fn: str):
    """A bound as ATen's `.item()` reads a 0-d Tensor: a Python number where the value is known,
    the 0-d array under tracing."""
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return value.item() if isinstance(value, np.generic) else value
    x = jnp.asarray(value)
    if x.ndim:
        raise ValueError(
            f"{fn} only supports 0-dimensional start and end tensors, but got {which} with {x.ndim} dimension(s)."
        )
    return x if isinstance(x, jax.core.Tracer) else x.item()


def _is_complex(value) -> bool:
    return isinstance(value, complex) or (isinstance(value, jax.Array) and jnp.iscomplexobj(value))


def _result_dtype(start, end, steps, dtype, fn: str) -> np.dtype:
    """ATen's linspace_logspace_infer_options: complex bounds need a complex dtype (by default
    complex64), otherwise the given dtype or the default float32; then steps must be >= 0."""
    complex_bounds = _is_complex(start) or _is_complex(end)
    if complex_bounds and dtype is not None and not jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"{fn}: inferred dtype complex64 can't be safely cast to passed dtype {np.dtype(dtype)}")
    if steps < 0:
        raise ValueError("number of steps must be non-negative")
    if dtype is not None:
        return np.dtype(dtype)
    return _DEFAULT_COMPLEX if complex_bounds else _DEFAULT_FLOAT


def _kernel_dtype(dt: np.dtype, fn: str) -> None:
    """The kernels (two points or more) take no bool; an empty result or a fill does."""
    if dt == np.bool_:
        raise TypeError(f"{fn} is not implemented for bool")


def _to(value, dt: np.dtype):
    """`Scalar.to<T>()`: c10's checked conversion (an integer dtype truncates toward zero; a finite
    value out of the dtype's range raises, except a negative integer into an unsigned dtype, which
    wraps)."""
    if isinstance(value, jax.Array):  # traced
        return value.astype(dt)
    if dt == np.bool_:  # any nonzero value is true
        return np.asarray(bool(value))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if isinstance(value, float) and (math.isnan(value) or not info.min <= value <= info.max):
            raise OverflowError(f"value cannot be converted to type {dt} without overflow")
        v = int(value)
        if not info.min <= v <= info.max and not (info.min == 0 and -info.max <= v < 0):
            raise OverflowError(f"value cannot be converted to type {dt} without overflow")
        return np.asarray(v % (int(info.max) + 1) if v < 0 and info.min == 0 else v, dt)
    top, z = float(np.finfo(dt).max), complex(value)
    if dt.itemsize >= 4 and any(math.isfinite(p) and abs(p) > top for p in (z.real, z.imag)):  # not Half, BFloat16
        raise OverflowError(f"value cannot be converted to type {dt} without overflow")
    return np.asarray(value, dt)


def _xp(*values):
    return jnp if any(isinstance(v, jax.Array) for v in values) else np


def _complex(re, im, xp):
    """re + i im from parts, without the products that turn inf * 0 into NaN."""
    if xp is jnp:
        return jax.lax.complex(re, im)
    out = np.empty(np.shape(re), np.result_type(re, 1j))
    out.real, out.imag = re, im
    return out


def _fma(a, b, c, xp):
    """a * b + c rounded once: ATen's AVX2 / AVX512 builds of the linspace kernel (x86 CPUs since
    2013) contract `start + step * i` into a fused multiply-add. float32 computes in double (the
    product is exact there); float64 adds the product's and the sum's rounding errors back
    (Dekker's two-product, Knuth's two-sum)."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * b + c.astype(np.float64)).astype(np.float32)
    p = a * b
    t = a * 134217729.0  # 2**27 + 1: splits a and b into halves whose products are exact
    ah = t - (t - a)
    t = b * 134217729.0
    bh = t - (t - b)
    al, bl = a - ah, b - bh
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    z = s - p
    es = (p - (s - z)) + (c - z)
    r = s + (ep + es)
    return xp.where(xp.isfinite(r), r, p + c)  # inf and NaN as the plain sum gives them


def _double_to_int(v, dt: np.dtype, xp):
    """C++'s double -> integer conversion as x86 does it (cvttsd2si): truncated toward zero into 32
    bits (64 for 64-bit types), a value out of that range (or NaN) becoming its minimum; a narrower
    type keeps the low bits."""
    bits = 64 if dt.itemsize == 8 else 32
    lo = -(2.0 ** (bits - 1))
    inside = (v >= lo) & (v < -lo)
    return xp.where(inside, v, lo).astype(np.int64).astype(dt)


def _points(start, end, steps: int, dt: np.dtype, xp):
    """ATen's linspace kernel: bounds already in dt; integer dtypes step in double."""
    step_dt = np.dtype(np.float64) if dt.kind in "iu" else dt
    real_dt = np.dtype(step_dt.char.lower()) if step_dt.kind == "c" else step_dt
    s, e = xp.asarray(start).astype(step_dt), xp.asarray(end).astype(step_dt)
    # (end - start) / (steps - 1): a complex difference divides each part by the real count
    d, n = e - s, xp.asarray(steps - 1, real_dt)
    step = _complex(d.real / n, d.imag / n, xp) if step_dt.kind == "c" else d / n
    i = xp.arange(steps)
    first, last = i.astype(real_dt), (steps - 1 - i).astype(real_dt)
    if real_dt.itemsize <= 2:  # c10's Half and BFloat16 round each operation: no fused form
        lo, hi = s + step * first, e - step * last
    elif step_dt.kind == "c":
        lo = _complex(_fma(step.real, first, s.real, xp), _fma(step.imag, first, s.imag, xp), xp)
        hi = _complex(_fma(-step.real, last, e.real, xp), _fma(-step.imag, last, e.imag, xp), xp)
    else:
        lo, hi = _fma(step, first, s, xp), _fma(-step, last, e, xp)
    out = xp.where(i < steps // 2, lo, hi)
    return _double_to_int(out, dt, xp) if dt.kind in "iu" else out.astype(dt)


def _linspace(start, end, steps, dtype):
    dt = _result_dtype(start, end, steps, dtype, "torch.linspace()")
    if steps == 0:
        return jnp.zeros((0,), dt)
    xp = _xp(start, end)
    if steps == 1:  # fill_(start): end is not converted
        return jnp.full((1,), _to(start, dt), dt)
    _kernel_dtype(dt, "torch.linspace()")
    s, e = _to(start, dt), _to(end, dt)
    with np.errstate(all="ignore"):
        return jnp.asarray(_points(s, e, steps, dt, xp), dt)


def linspace_points(start, end, steps: int, dtype) -> jax.Array:
    """ATen's `linspace(start, end, steps, dtype=dtype)` (histogram's bin edges use it too)."""
    return _linspace(start, end, steps, dtype)


@impl("linspace")
def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    return _linspace(start, end, steps, dtype)


@impl("linspace.Tensor_Tensor", "linspace.Tensor_Scalar", "linspace.Scalar_Tensor")
def linspace_tensor(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    fn = "linspace"
    return _linspace(_bound(start, "start", fn), _bound(end, "end", fn), steps, dtype)


def _c_pow(base: float, x: float) -> float:
    """C's pow (Python's math.pow raises where C returns an infinity or NaN)."""
    try:
        return math.pow(base, x)
    except OverflowError:
        odd = x == int(x) and int(x) % 2 == 1
        return -math.inf if base < 0 and odd else math.inf
    except ValueError:  # 0 to a negative power, or a negative base to a non-integer one
        odd = x == int(x) and int(x) % 2 == 1
        return (math.copysign(math.inf, base) if odd else math.inf) if base == 0 else math.nan


def _pow(base: float, x, xp):
    """pow(base, x) in double: the C library's where the values are known (NumPy's may be a SIMD
    library's), XLA's under tracing."""
    if xp is jnp:
        return jnp.power(np.float64(base), x)
    return np.asarray([_c_pow(base, float(v)) for v in np.ravel(x)], np.float64).reshape(np.shape(x))


def _cpow(base, x, xp):
    """std::pow of complex numbers: exp(x log(base)), 0 at base 0."""
    return xp.where(base == 0, xp.zeros_like(x), xp.exp(x * xp.log(base)))


def _polar(base: float, z, xp):
    """std::pow(double base > 0, complex z): polar(pow(base, re z), im z * log(base))."""
    r = _pow(base, z.real, xp)
    theta = z.imag * np.log(np.float64(base))
    return _complex(r * xp.cos(theta), r * xp.sin(theta), xp)


def _logspace(start, end, steps, base, dtype):
    dt = _result_dtype(start, end, steps, dtype, "torch.logspace()")
    if steps == 0:
        return jnp.zeros((0,), dt)
    xp = _xp(start, end)
    with np.errstate(all="ignore"):
        if steps == 1:  # fill_(pow(base, start)), start taken in double: not truncated first
            if dt.kind == "c":
                z = xp.asarray(start).astype(np.complex128)
                v = _polar(base, z, xp) if base > 0 else _cpow(xp.asarray(complex(base)), z, xp)
            else:
                v = _pow(base, xp.asarray(start).astype(np.float64), xp)
            return jnp.full((1,), _to(v.item() if xp is np else v, dt), dt)
        _kernel_dtype(dt, "torch.logspace()")
        s, e = _to(start, dt), _to(end, dt)
        i = xp.arange(steps)
        if dt.kind == "c":
            b = xp.asarray(complex(base)).astype(dt)
            s, e = xp.asarray(s).astype(dt), xp.asarray(e).astype(dt)
            # c10's complex division by (steps - 1) + 0i: both parts times 1 / (steps - 1)
            scl = np.asarray(1, dt.char.lower()) / np.asarray(steps - 1, dt.char.lower())
            d = e - s
            step = _complex((d.real + d.imag * 0) * scl, (d.imag - d.real * 0) * scl, xp)
            x = xp.where(i < steps // 2, s + step * i.astype(dt), e - step * (steps - 1 - i).astype(dt))
            return jnp.asarray(_cpow(b, x, xp).astype(dt), dt)
        # real dtypes: (end - start) in the dtype (integers without overflow), the rest in double
        diff = (xp.asarray(e).astype(np.int64) - xp.asarray(s).astype(np.int64)) if dt.kind in "iu" else (e - s)
        step = xp.asarray(diff).astype(np.float64) / (steps - 1)
        s64, e64 = xp.asarray(s).astype(np.float64), xp.asarray(e).astype(np.float64)
        v = _pow(base, xp.where(i < steps // 2, s64 + step * i, e64 - step * (steps - 1 - i)), xp)
        return jnp.asarray(_double_to_int(v, dt, xp) if dt.kind in "iu" else v.astype(dt), dt)


@impl("logspace")
def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    return _logspace(start, end, steps, base, dtype)


@impl("logspace.Tensor_Tensor", "logspace.Tensor_Scalar", "logspace.Scalar_Tensor")
def logspace_tensor(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    fn = "logspace"
    return _logspace(_bound(start, "start", fn), _bound(end, "end", fn), steps, base, dtype)
