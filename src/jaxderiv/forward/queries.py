"""Queries on values whose results carry no gradient (bool or integer, or a Python bool): `isinf`,
`isposinf`, `isneginf`, `isin`, `bucketize`, `allclose`. derivatives.yaml lists none of them.

Each follows ATen's CPU kernel where it differs from NumPy's function: isin compares in ATen's
promoted dtype and, with many test elements, by ATen's sort (whose result `assume_unique=True`
changes when the elements repeat); bucketize bisects as ATen's searchsorted does, so NaN
elements and boundaries land where ATen puts them; allclose measures integers in the default
float dtype.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..cxx import is_number
from .binary import result_type
from .nondifferentiable import impl

_DEFAULT_FLOAT = np.dtype(np.float32)


def _integral(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_


@impl("isinf")
def isinf(self):
    x = jnp.asarray(self)
    if _integral(x):
        return jnp.zeros(x.shape, jnp.bool_)
    if jnp.iscomplexobj(x):  # either part infinite
        return jnp.isinf(x.real) | jnp.isinf(x.imag)
    return jnp.isinf(x)


def _signed_inf(name: str, self, value: float):
    x = jnp.asarray(self)
    if jnp.iscomplexobj(x):
        raise TypeError(f"{name} does not support complex inputs.")
    return jnp.zeros(x.shape, jnp.bool_) if _integral(x) else x == value


@impl("isposinf")
def isposinf(self):
    return _signed_inf("isposinf", self, np.inf)


@impl("isneginf")
def isneginf(self):
    return _signed_inf("isneginf", self, -np.inf)


# -- isin -------------------------------------------------------------------------------------


def _isin_dtype_check(dtype) -> None:
    if dtype == jnp.bool_ or jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"Unsupported input type encountered for isin(): {np.dtype(dtype)}")


def _isin(elements, test_elements, assume_unique, invert, elements_dtype=None):
    """ATen's isin_Tensor_Tensor_out. `elements` may be a Python number (isin.Scalar_Tensor: a
    wrapped number, a 0-d tensor of `elements_dtype` once flattened)."""
    e = jnp.asarray(elements, elements_dtype)
    t = jnp.asarray(test_elements)
    _isin_dtype_check(e.dtype)
    _isin_dtype_check(t.dtype)
    if e.size == 0:
        return jnp.zeros(e.shape, jnp.bool_)
    if t.size < int(10.0 * float(e.size) ** 0.145):
        # the element-by-element kernel: both in result_type(elements, test_elements), where a
        # 0-d tensor (or a wrapped number) gives way to a dimensioned one of its category
        dt = result_type(elements, t)
        hit = (e.astype(dt).reshape(-1, 1) == t.astype(dt).reshape(1, -1)).any(axis=1)
    else:
        # the sorting kernel: flattened elements and test elements concatenated (so promoted as
        # tensors of equal rank), stable-sorted; an element is in when the next value equals it
        dt = jnp.promote_types(e.dtype, t.dtype)
        flat_e, flat_t = e.reshape(-1).astype(dt), t.reshape(-1).astype(dt)
        if not assume_unique:  # ATen first takes unique values: plain membership
            ordered = jnp.sort(flat_t)  # NaN last, as ATen's sort
            at = jnp.minimum(bisect(ordered, flat_e, right=False), flat_t.size - 1)
            hit = ordered[at] == flat_e
        else:  # as ATen computes it, which is not membership when the elements repeat
            both = jnp.concatenate([flat_e, flat_t])
            order = jnp.argsort(both, stable=True)
            ordered = both[order]
            nxt = ordered[1:] == ordered[:-1] if not invert else ordered[1:] != ordered[:-1]
            mask = jnp.concatenate([nxt, jnp.asarray([invert])])
            hit = jnp.zeros(both.shape, jnp.bool_).at[order].set(mask)[: flat_e.size]
            return hit.reshape(e.shape)
    return (hit != invert).reshape(e.shape)


@impl("isin.Tensor_Tensor")
def isin(elements, test_elements, assume_unique=False, invert=False):
    return _isin(elements, test_elements, assume_unique, invert)


@impl("isin.Scalar_Tensor")
def isin_scalar_tensor(element, test_elements, assume_unique=False, invert=False):
    kind = np.result_type(element)  # a Python int flattens to int64, a float to float64
    return _isin(element, test_elements, assume_unique, invert, elements_dtype=kind)


@impl("isin.Tensor_Scalar")
def isin_tensor_scalar(elements, test_element, assume_unique=False, invert=False):
    """`elements == test_element` (`!=` with invert), in ATen's promoted dtype."""
    e = jnp.asarray(elements)
    _isin_dtype_check(e.dtype)
    _isin_dtype_check(np.result_type(test_element))
    dt = result_type(e, test_element)
    same = e.astype(dt) == jnp.asarray(test_element).astype(dt)
    return ~same if invert else same


# -- bucketize --------------------------------------------------------------------------------


def bisect(boundaries, values, right: bool, start=None, end=None):
    """ATen's searchsorted bisection over the 1-d `boundaries` for each of `values` (between
    `start` and `end` where given): the first index whose boundary is not below the value
    (right: not at or below), tested as `!(b >= v)` / `!(b > v)`, so a NaN value goes past
    every boundary and a NaN boundary sends the search right, as in ATen."""
    n = boundaries.shape[0]
    lo = jnp.zeros(jnp.shape(values), jnp.int64) if start is None else start
    hi = jnp.full(jnp.shape(values), n, jnp.int64) if end is None else end
    for _ in range(max(n, 1).bit_length()):
        active = lo < hi
        mid = lo + (hi - lo) // 2
        b = boundaries[jnp.clip(mid, 0, max(n - 1, 0))] if n else jnp.zeros_like(values)
        go_right = ~(b > values) if right else ~(b >= values)
        lo = jnp.where(active & go_right, mid + 1, lo)
        hi = jnp.where(active & ~go_right, mid, hi)
    return lo


def _bucketize(self, boundaries, out_int32, right):
    b = jnp.asarray(boundaries)
    if b.ndim != 1:
        raise ValueError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    dt = result_type(self, b)  # a Python number is a wrapped scalar
    if dt == jnp.bool_ or jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f'"searchsorted_out_cpu" not implemented for {np.dtype(dt)}')
    # a Python number converts as C++ does (an int wraps into a narrower integer type)
    if is_number(self):
        with np.errstate(over="ignore"):  # beyond a float16's range: inf, as C++ converts
            x = jnp.asarray(np.asarray(self).astype(dt))
    else:
        x = jnp.asarray(self).astype(dt)
    return bisect(b.astype(dt), x, right).astype(jnp.int32 if out_int32 else jnp.int64)


@impl("bucketize.Tensor")
def bucketize(self, boundaries, out_int32=False, right=False):
    return _bucketize(self, boundaries, out_int32, right)


@impl("bucketize.Scalar")
def bucketize_scalar(self, boundaries, out_int32=False, right=False):
    return _bucketize(self, boundaries, out_int32, right)


# -- allclose ---------------------------------------------------------------------------------


def _isclose(self, other, rtol, atol, equal_nan):
    """ATen's isclose: |self - other| <= atol + |rtol * other| where finite, or equal (NaNs too
    with equal_nan); integers and bools measured in the default float dtype."""
    a, b = jnp.asarray(self), jnp.asarray(other)
    if a.dtype != b.dtype:
        raise TypeError(f"{a.dtype} did not match {b.dtype}")
    if rtol < 0:
        raise ValueError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise ValueError(f"atol must be greater than or equal to zero, but got {atol}")
    close = a == b
    if equal_nan and jnp.issubdtype(a.dtype, jnp.inexact):
        close = close | (jnp.isnan(a) & jnp.isnan(b))
    if rtol == 0 and atol == 0:
        return close
    cast_a = a.astype(_DEFAULT_FLOAT) if a.dtype == jnp.bool_ else a
    cast_b = b.astype(_DEFAULT_FLOAT) if _integral(b) else b
    allowed = atol + jnp.abs(rtol * cast_b)
    actual = jnp.abs(cast_a - cast_b)
    return close | (jnp.isfinite(actual) & (actual <= allowed))


@impl("allclose")
def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Every element isclose, as one bool: a Python bool where the values are known, a 0-d bool
    array under tracing (as `equal`)."""
    same = jnp.all(_isclose(self, other, rtol, atol, equal_nan))
    try:
        return bool(same)
    except jax.errors.ConcretizationTypeError:
        return same
