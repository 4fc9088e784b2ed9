"""Queries on values whose results carry no gradient (bool or integer, or a Python bool): `isinf`,
`isposinf`, `isneginf`, `signbit`, `isin`, `bucketize`, `searchsorted`, `allclose`.
derivatives.yaml lists none of them.

Each follows ATen's CPU kernel where it differs from NumPy's function: isin compares in ATen's
promoted dtype and, with many test elements, by ATen's sort (whose result `assume_unique=True`
changes when the elements repeat); bucketize and searchsorted bisect as ATen's kernel does, so
NaN elements and boundaries land where ATen puts them; allclose measures integers in the default
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


@impl("signbit")
def signbit(self):
    """The sign bit: True for -0.0 and for a NaN whose sign bit is set (std::signbit), `x < 0`
    for integers (never for unsigned ones and bool); complex is refused, as ATen refuses it."""
    x = jnp.asarray(self)
    if jnp.iscomplexobj(x):
        raise TypeError("signbit is not implemented for complex tensors.")
    if x.dtype == jnp.bool_ or jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return jnp.zeros(x.shape, jnp.bool_)
    if jnp.issubdtype(x.dtype, jnp.integer):
        return x < 0
    # the bit itself: comparisons cannot tell -0.0 or -nan apart
    bits = jax.lax.bitcast_convert_type(x, {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[x.dtype.itemsize])
    return bits < 0


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


# -- bucketize, searchsorted -------------------------------------------------------------------


def bisect(boundaries, values, right: bool, start=None, end=None):
    """ATen's searchsorted bisection over the last dim of `boundaries` for each of `values`
    (between `start` and `end` where given): the first index whose boundary is not below the
    value (right: not at or below), tested as `!(b >= v)` / `!(b > v)`, so a NaN value goes past
    every boundary and a NaN boundary sends the search right, as in ATen. 1-d boundaries serve
    values of any shape; (..., M) boundaries serve (..., K) values row by row."""
    n = boundaries.shape[-1]
    lo = jnp.zeros(jnp.shape(values), jnp.int64) if start is None else start
    hi = jnp.full(jnp.shape(values), n, jnp.int64) if end is None else end
    for _ in range(max(n, 1).bit_length()):
        active = lo < hi
        mid = lo + (hi - lo) // 2
        at = jnp.clip(mid, 0, max(n - 1, 0))
        if not n:
            b = jnp.zeros_like(values)
        elif boundaries.ndim == 1:
            b = boundaries[at]
        else:
            b = jnp.take_along_axis(boundaries, at, axis=-1)
        go_right = ~(b > values) if right else ~(b >= values)
        lo = jnp.where(active & go_right, mid + 1, lo)
        hi = jnp.where(active & ~go_right, mid, hi)
    return lo


def _search(boundaries, self, out_int32, right, sorter=None):
    """ATen's searchsorted_out_cpu once its arguments are checked: boundaries and values in
    their promoted dtype (a Python number is a wrapped scalar), boundaries read through
    `sorter` where given."""
    b = jnp.asarray(boundaries)
    dt = result_type(self, b)
    if dt == jnp.bool_ or jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f'"searchsorted_out_cpu" not implemented for {np.dtype(dt)}')
    # a Python number converts as C++ does (an int wraps into a narrower integer type)
    if is_number(self):
        with np.errstate(over="ignore"):  # beyond a float16's range: inf, as C++ converts
            x = jnp.asarray(np.asarray(self).astype(dt))
    else:
        x = jnp.asarray(self).astype(dt)
    b = b.astype(dt)
    if sorter is not None:
        b = jnp.take_along_axis(b, jnp.asarray(sorter), axis=-1)
    return bisect(b, x, right).astype(jnp.int32 if out_int32 else jnp.int64)


def _bucketize(self, boundaries, out_int32, right):
    b = jnp.asarray(boundaries)
    if b.ndim != 1:
        raise ValueError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return _search(b, self, out_int32, right)


@impl("bucketize.Tensor")
def bucketize(self, boundaries, out_int32=False, right=False):
    return _bucketize(self, boundaries, out_int32, right)


@impl("bucketize.Scalar")
def bucketize_scalar(self, boundaries, out_int32=False, right=False):
    return _bucketize(self, boundaries, out_int32, right)


def _searchsorted(sorted_sequence, self, out_int32, right, side, sorter):
    """ATen's searchsorted_pre_check, then the search. `side` ("left" / "right") overrides
    `right` but may not contradict a True one; sorter (int64, the shape of sorted_sequence, its
    entries in range, checked where the values are known) orders each row of the sequence;
    (..., M) sequences need values of shape (..., K) with the same leading dims."""
    seq = jnp.asarray(sorted_sequence)
    scalar = is_number(self)
    shape = () if scalar else jnp.shape(self)
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if side == "left" and right:
            raise ValueError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
            )
        right = side == "right"
    if sorter is not None:
        sorter = jnp.asarray(sorter)
        if sorter.dtype != jnp.int64:
            raise TypeError(
                f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {np.dtype(sorter.dtype)}"
            )
        if sorter.shape != seq.shape:
            raise ValueError(
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                f"{list(seq.shape)}and got sorter tensor {list(sorter.shape)}"
            )
    if seq.ndim == 0:
        raise ValueError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension")
    if scalar and seq.ndim != 1:
        raise ValueError(
            "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we "
            f"got boundaries tensor dim({seq.ndim}) and input value's dim(0) numel(1)"
        )
    if seq.ndim != 1 and (len(shape) != seq.ndim or tuple(shape[:-1]) != seq.shape[:-1]):
        raise ValueError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            "boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq.shape)} and input value tensor {list(shape)}"
        )
    if sorter is not None:
        known = _known(sorter)
        if known is not None and known.size and (known.min() < 0 or known.max() >= seq.shape[-1]):
            raise IndexError("torch.searchsorted(): sorter index out of range")
    return _search(seq, self, out_int32, right, sorter)


def _known(x):
    """`x` as a NumPy array where its values are known, None under tracing."""
    try:
        return np.asarray(x)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


@impl("searchsorted.Tensor")
def searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the index at which inserting it keeps its row of sorted_sequence sorted:
    the first boundary not below it (right: not at or below it). Ties and NaN as ATen's
    bisection (`bisect`); an int32 result with out_int32."""
    return _searchsorted(sorted_sequence, self, out_int32, right, side, sorter)


@impl("searchsorted.Scalar")
def searchsorted_scalar(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted.Tensor of a wrapped number (a 0-d result); the sequence must be 1-d."""
    return _searchsorted(sorted_sequence, self, out_int32, right, side, sorter)


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
