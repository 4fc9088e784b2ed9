"""Forward implementations of ATen's reductions, scans, sorting and selection ops.

ATen semantics: negative and empty dims (empty = all), keepdim, integer inputs summed in
int64, NaN propagating (max, median) or ignored (nansum, nanmedian), and the index ATen
returns on ties (first for max/min, last for cummax/cummin and mode, stable sorts).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..records import (
    Equivalent,
    Sample,
    complex_ok,
    draw,
    kinks,
    known_failure,
    matrix,
    parity_differs,
    samples,
    torch_equivalent,
    vector,
)
from ..tensor_utils import long_dtype, wrap_dim
from . import impl


def reduced_dims(dim, ndim: int) -> tuple[int, ...]:
    """The dims a reduction runs over: an int, a list, or None / [] for all of them."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    wrapped = {wrap_dim(d, ndim) for d in dims}  # checked on 0-d tensors too, as ATen does
    return tuple(sorted(wrapped)) if ndim > 0 else ()


def _kind(x) -> str:
    dt = jnp.result_type(x)
    if jnp.issubdtype(dt, jnp.complexfloating):
        return "complex"
    return "floating" if jnp.issubdtype(dt, jnp.floating) else "integral"


def _accumulating(x, dtype):
    """Sum-like ops: an explicit dtype converts first; integers and bools accumulate in int64."""
    if dtype is not None:
        return jnp.asarray(x).astype(dtype)
    return x if _kind(x) != "integral" else jnp.asarray(x).astype(long_dtype())


def _require_inexact(name: str, x):
    if _kind(x) == "integral":
        raise TypeError(f"{name}(): input dtype should be floating point or complex, got {jnp.result_type(x)}")


def _keep(x, ndim: int, dims, keepdim: bool):
    return x if not keepdim or ndim == 0 else jnp.expand_dims(x, dims)


# -- sums, means, products ---------------------------------------------------------------------


@impl("sum")
def sum_full(self, dtype=None):
    return jnp.sum(_accumulating(self, dtype))


@impl("sum.dim_IntList")
def sum_dim(self, dim, keepdim=False, dtype=None):
    x = _accumulating(self, dtype)
    return jnp.sum(x, axis=reduced_dims(dim, x.ndim), keepdims=keepdim)


@impl("nansum")
def nansum(self, *args):
    """1.7's nansum(self, *, dtype) sums everything; later files' nansum(self, dim=None,
    keepdim=False, *, dtype=None) is nansum.dim_IntList with an optional dim."""
    if len(args) <= 1:
        return jnp.nansum(_accumulating(self, args[0] if args else None))
    dim, keepdim, dtype = (tuple(args) + (False, None))[:3]
    return nansum_dim(self, dim, keepdim, dtype)


@impl("nansum.dim_IntList")
def nansum_dim(self, dim, keepdim=False, dtype=None):
    x = _accumulating(self, dtype)
    return jnp.nansum(x, axis=reduced_dims(dim, x.ndim), keepdims=keepdim)


@impl("mean")
def mean(self, dtype=None):
    x = self if dtype is None else jnp.asarray(self).astype(dtype)
    _require_inexact("mean", x)
    return jnp.mean(x)


@impl("mean.dim")
def mean_dim(self, dim, keepdim=False, dtype=None):
    x = self if dtype is None else jnp.asarray(self).astype(dtype)
    _require_inexact("mean", x)
    return jnp.mean(x, axis=reduced_dims(dim, x.ndim), keepdims=keepdim)


@impl("prod")
def prod(self, dtype=None):
    return jnp.prod(_accumulating(self, dtype))


@impl("prod.dim_int")
def prod_dim(self, dim, keepdim=False, dtype=None):
    x = _accumulating(self, dtype)
    return jnp.prod(x, axis=reduced_dims(dim, x.ndim), keepdims=keepdim)


# -- variance and standard deviation -----------------------------------------------------------


def _var(x, dim, unbiased, keepdim):
    """`unbiased` is a bool, or newer schemas' `correction` (None meaning 1)."""
    _require_inexact("var", x)
    dims = reduced_dims(dim, x.ndim)
    n = math.prod(x.shape[d] for d in dims)
    centred = x - jnp.mean(x, axis=dims, keepdims=True)
    sq = jnp.real(centred * jnp.conj(centred))
    dof = n - (1 if unbiased is None else float(unbiased))
    # ATen divides by max(dof, 0): a single element with unbiased=True gives nan (0/0)
    return jnp.sum(sq, axis=dims, keepdims=keepdim) / max(dof, 0)


@impl("var")
def var(self, unbiased=True):
    return _var(self, None, unbiased, False)


@impl("var.dim")
def var_dim(self, dim, unbiased=True, keepdim=False):
    return _var(self, dim, unbiased, keepdim)


@impl("std")
def std(self, unbiased=True):
    return jnp.sqrt(_var(self, None, unbiased, False))


@impl("std.dim")
def std_dim(self, dim, unbiased=True, keepdim=False):
    return jnp.sqrt(_var(self, dim, unbiased, keepdim))


@impl("var_mean")
def var_mean(self, unbiased=True):
    return _var(self, None, unbiased, False), jnp.mean(self)


@impl("var_mean.dim")
def var_mean_dim(self, dim, unbiased=True, keepdim=False):
    return _var(self, dim, unbiased, keepdim), mean_dim(self, dim, keepdim)


@impl("std_mean")
def std_mean(self, unbiased=True):
    return jnp.sqrt(_var(self, None, unbiased, False)), jnp.mean(self)


@impl("std_mean.dim")
def std_mean_dim(self, dim, unbiased=True, keepdim=False):
    return jnp.sqrt(_var(self, dim, unbiased, keepdim)), mean_dim(self, dim, keepdim)


@impl("var.correction")
def var_correction(self, dim=None, correction=None, keepdim=False):
    return _var(self, dim, correction, keepdim)


@impl("std.correction")
def std_correction(self, dim=None, correction=None, keepdim=False):
    return jnp.sqrt(_var(self, dim, correction, keepdim))


@impl("var_mean.correction")
def var_mean_correction(self, dim=None, correction=None, keepdim=False):
    return _var(self, dim, correction, keepdim), mean_dim(self, dim, keepdim)


@impl("std_mean.correction")
def std_mean_correction(self, dim=None, correction=None, keepdim=False):
    return jnp.sqrt(_var(self, dim, correction, keepdim)), mean_dim(self, dim, keepdim)


# -- norms ----------------------------------------------------------------------------------------


def vector_norm(x, p, dim=None, keepdim=False):
    """sum(|x|^p)^(1/p) over `dim` (all if None/[]); p = 0 counts non-zeros, ±inf is max/min |x|."""
    p = 2.0 if p is None else float(p)
    dims = reduced_dims(dim, jnp.ndim(x))
    a = jnp.abs(x)
    if p == 0:
        return jnp.sum((a != 0).astype(a.dtype), axis=dims, keepdims=keepdim)
    if p == math.inf:
        return jnp.max(a, axis=dims, keepdims=keepdim)
    if p == -math.inf:
        return jnp.min(a, axis=dims, keepdims=keepdim)
    if p == 1:
        return jnp.sum(a, axis=dims, keepdims=keepdim)
    if p == 2:
        return jnp.sqrt(jnp.sum(a * a, axis=dims, keepdims=keepdim))
    return jnp.sum(a**p, axis=dims, keepdims=keepdim) ** (1.0 / p)


def _norm_input(self, dtype):
    x = self if dtype is None else jnp.asarray(self).astype(dtype)
    _require_inexact("norm", x)
    return x


@impl("norm.Scalar")
def norm_scalar(self, p=2):
    return vector_norm(_norm_input(self, None), p)


@impl("norm.ScalarOpt_dim")
def norm_dim(self, p, dim, keepdim=False):
    return vector_norm(_norm_input(self, None), p, dim, keepdim)


@impl("norm.ScalarOpt_dtype")
def norm_dtype(self, p, dtype):
    return vector_norm(_norm_input(self, dtype), p)


@impl("norm.ScalarOpt_dim_dtype")
def norm_dim_dtype(self, p, dim, keepdim, dtype):
    return vector_norm(_norm_input(self, dtype), p, dim, keepdim)


@impl("dist")
def dist(self, other, p=2):
    diff = jnp.asarray(self) - jnp.asarray(other)
    _require_inexact("dist", diff)
    return vector_norm(diff, p)


@impl("renorm")
def renorm(self, p, dim, maxnorm):
    """Each slice along `dim` whose p-norm exceeds maxnorm is scaled to norm maxnorm (ATen's 1e-7)."""
    _require_inexact("renorm", self)
    d = wrap_dim(dim, self.ndim)
    others = tuple(i for i in range(self.ndim) if i != d)
    norm = vector_norm(self, p, others or None, keepdim=True) if others else jnp.abs(self)
    return jnp.where(norm > maxnorm, self * (maxnorm / (norm + 1e-7)), self)


@impl("logsumexp")
def logsumexp(self, dim, keepdim=False):
    x = self if _kind(self) != "integral" else jnp.asarray(self, jnp.float32)
    dims = reduced_dims(dim, x.ndim)
    m = jnp.max(jnp.real(x), axis=dims, keepdims=True) if x.size else jnp.zeros((1,) * x.ndim, x.dtype)
    m = jnp.where(jnp.isinf(m), 0, m)  # all -inf (or an inf) would give inf - inf
    out = jnp.log(jnp.sum(jnp.exp(x - m), axis=dims, keepdims=True)) + m
    return out if keepdim or x.ndim == 0 else jnp.squeeze(out, dims)


# -- extremes -------------------------------------------------------------------------------------


def _extreme(x, largest: bool, dims, keepdim: bool):
    """max/min propagating NaN."""
    fn = jnp.max if largest else jnp.min
    return fn(x, axis=dims, keepdims=keepdim)


def _arg_extreme(x, dim, largest: bool):
    """ATen's index of max/min along dim: the first one, or the first NaN."""
    key = (
        jnp.where(jnp.isnan(x), jnp.inf, x if largest else -x)
        if _kind(x) == "floating"
        else (x if largest else -x.astype(long_dtype()))
    )
    if jnp.issubdtype(x.dtype, jnp.bool_):
        key = x if largest else ~x
    return jnp.argmax(key, axis=dim).astype(long_dtype())


def _values_indices(self, dim, keepdim, index_fn):
    """(values, indices) of a selection along `dim`: values read where `index_fn` points."""
    x = jnp.atleast_1d(self)
    d = wrap_dim(dim, self.ndim)
    idx = index_fn(x, d)
    values = jnp.take_along_axis(x, jnp.expand_dims(idx, d), axis=d)
    if self.ndim == 0:
        return jnp.reshape(values, ()), jnp.reshape(idx, ())
    return (values, jnp.expand_dims(idx, d)) if keepdim else (jnp.squeeze(values, d), idx)


def _nonempty(name, self):
    if self.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")


@impl("max")
def max_full(self):
    _nonempty("max", self)
    return jnp.max(self)


@impl("min")
def min_full(self):
    _nonempty("min", self)
    return jnp.min(self)


@impl("max.dim")
def max_dim(self, dim, keepdim=False):
    return _values_indices(self, dim, keepdim, lambda x, d: _arg_extreme(x, d, True))


@impl("min.dim")
def min_dim(self, dim, keepdim=False):
    return _values_indices(self, dim, keepdim, lambda x, d: _arg_extreme(x, d, False))


@impl("amax")
def amax(self, dim=(), keepdim=False):
    return jnp.max(self, axis=reduced_dims(dim, self.ndim), keepdims=keepdim)


@impl("amin")
def amin(self, dim=(), keepdim=False):
    return jnp.min(self, axis=reduced_dims(dim, self.ndim), keepdims=keepdim)


@impl("aminmax")
def aminmax(self, dim=None, keepdim=False):
    """(amin, amax) over one dim, or over all (dim None; keepdim keeps them as size 1)."""
    dims = () if dim is None else dim
    return amin(self, dims, keepdim), amax(self, dims, keepdim)


# -- order statistics -----------------------------------------------------------------------------


def _argsort(x, d: int, descending: bool = False):
    """ATen's stable sort order: NaN counts as the largest value, equal values keep their order."""
    keys: tuple[jax.Array, ...]
    if _kind(x) == "floating":
        nan = jnp.isnan(x)
        key = jnp.where(nan, 0, x)
        major = nan if not descending else ~nan
        keys = (major, -key if descending else key)
    else:
        keys = (
            (-x.astype(long_dtype()) if descending else x,)
            if not jnp.issubdtype(x.dtype, jnp.bool_)
            else ((~x if descending else x),)
        )
    pos = jnp.broadcast_to(jnp.arange(x.shape[d]).reshape((-1,) + (1,) * (x.ndim - d - 1)), x.shape)
    *_, order = jax.lax.sort((*keys, pos), dimension=d, num_keys=len(keys), is_stable=True)
    return order.astype(long_dtype())


@impl("sort")
def sort(self, dim=-1, descending=False):
    x = jnp.atleast_1d(self)
    d = wrap_dim(dim, self.ndim)
    idx = _argsort(x, d, descending)
    values = jnp.take_along_axis(x, idx, axis=d)
    return (values, idx) if self.ndim else (jnp.reshape(values, ()), jnp.reshape(idx, ()))


@impl("sort.stable")
def sort_stable(self, stable, dim=-1, descending=False):
    """ATen's sort is stable whatever `stable` says, as this one."""
    return sort(self, dim, descending)


@impl("topk")
def topk(self, k, dim=-1, largest=True, sorted=True):
    x = jnp.atleast_1d(self)
    d = wrap_dim(dim, self.ndim)
    if not 0 <= k <= x.shape[d]:
        raise IndexError("selected index k out of range")
    idx = jax.lax.slice_in_dim(_argsort(x, d, descending=largest), 0, k, axis=d)
    values = jnp.take_along_axis(x, idx, axis=d)
    return (values, idx) if self.ndim else (jnp.reshape(values, ()), jnp.reshape(idx, ()))


def _kth(k_of_slice):
    """Selection of the sorted position `k_of_slice(sorted_values, d)` along d."""

    def index(x, d):
        order = _argsort(x, d)
        k = k_of_slice(jnp.take_along_axis(x, order, axis=d), d)
        return jnp.squeeze(jnp.take_along_axis(order, k, axis=d), d)

    return index


@impl("kthvalue")
def kthvalue(self, k, dim=-1, keepdim=False):
    n = jnp.atleast_1d(self).shape[wrap_dim(dim, self.ndim)]
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return _values_indices(
        self, dim, keepdim, _kth(lambda s, d: jnp.full(s.shape[:d] + (1,) + s.shape[d + 1 :], k - 1))
    )


def _median_position(ignore_nan: bool):
    """Lower median of a sorted slice; with NaN: the first NaN (median) or the non-NaN ones' (nanmedian)."""

    def position(s, d):
        n = s.shape[d]
        nans = (
            jnp.sum(jnp.isnan(s), axis=d, keepdims=True)
            if _kind(s) == "floating"
            else jnp.zeros(s.shape[:d] + (1,) + s.shape[d + 1 :], long_dtype())
        )
        if ignore_nan:
            return jnp.maximum((n - nans - 1) // 2, 0)
        return jnp.where(nans > 0, n - nans, (n - 1) // 2)

    return position


def _empty_median(self):
    """ATen's median/nanmedian of an empty tensor: a 0-d NaN (integers: NaN cast, the dtype's minimum)."""
    if jnp.issubdtype(self.dtype, jnp.inexact):
        return jnp.full((), jnp.nan, self.dtype)
    return jnp.full((), jnp.iinfo(self.dtype).min if jnp.issubdtype(self.dtype, jnp.integer) else True, self.dtype)


@impl("median")
def median(self):
    if self.size == 0:
        return _empty_median(self)
    return median_dim(jnp.ravel(self), 0)[0]


@impl("nanmedian")
def nanmedian(self):
    if self.size == 0:
        return _empty_median(self)
    return nanmedian_dim(jnp.ravel(self), 0)[0]


@impl("median.dim")
def median_dim(self, dim, keepdim=False):
    return _values_indices(self, dim, keepdim, _kth(_median_position(False)))


@impl("nanmedian.dim")
def nanmedian_dim(self, dim, keepdim=False):
    return _values_indices(self, dim, keepdim, _kth(_median_position(True)))


def _mode_index(x, d):
    """ATen's mode: the smallest of the most frequent values, at its last occurrence."""
    x = jnp.moveaxis(x, d, -1)
    order = _argsort(x, x.ndim - 1)
    s = jnp.take_along_axis(x, order, axis=-1)
    n = s.shape[-1]
    same = (s[..., :, None] == s[..., None, :]) | (jnp.isnan(s[..., :, None]) & jnp.isnan(s[..., None, :]))
    count = jnp.sum(same, axis=-1)
    last = jnp.concatenate([s[..., 1:] != s[..., :-1], jnp.ones(s.shape[:-1] + (1,), bool)], axis=-1)
    if _kind(s) == "floating":
        last = last & ~(
            jnp.isnan(s)
            & jnp.isnan(jnp.concatenate([s[..., 1:], jnp.zeros(s.shape[:-1] + (1,), s.dtype)], -1))
            & (jnp.arange(n) < n - 1)
        )
    score = jnp.where(last, count * (n + 1) - jnp.arange(n), -1)  # most frequent, then smallest
    pos = jnp.argmax(score, axis=-1)
    return jnp.take_along_axis(order, pos[..., None], axis=-1)[..., 0]


@impl("mode")
def mode(self, dim=-1, keepdim=False):
    return _values_indices(self, dim, keepdim, _mode_index)


# -- scans ----------------------------------------------------------------------------------------


@impl("cumsum")
def cumsum(self, dim, dtype=None):
    x = jnp.atleast_1d(_accumulating(self, dtype))
    return jnp.reshape(jnp.cumsum(x, axis=wrap_dim(dim, self.ndim)), jnp.shape(self))


@impl("cumprod")
def cumprod(self, dim, dtype=None):
    x = jnp.atleast_1d(_accumulating(self, dtype))
    return jnp.reshape(jnp.cumprod(x, axis=wrap_dim(dim, self.ndim)), jnp.shape(self))


def _cum_extreme(self, dim, largest: bool):
    """Running max/min with ATen's index: the latest on ties; a NaN stays until the next NaN."""
    x = jnp.atleast_1d(self)
    d = wrap_dim(dim, self.ndim)
    pos = jnp.broadcast_to(jnp.arange(x.shape[d], dtype=long_dtype()).reshape((-1,) + (1,) * (x.ndim - d - 1)), x.shape)

    def combine(a, b):
        (va, ia), (vb, ib) = a, b
        better = vb >= va if largest else vb <= va
        if _kind(x) == "floating":
            better = jnp.isnan(vb) | (~jnp.isnan(va) & better)
        return jnp.where(better, vb, va), jnp.where(better, ib, ia)

    values, idx = jax.lax.associative_scan(combine, (x, pos), axis=d)
    return jnp.reshape(values, self.shape), jnp.reshape(idx, self.shape)


@impl("cummax")
def cummax(self, dim):
    return _cum_extreme(self, dim, True)


@impl("cummin")
def cummin(self, dim):
    return _cum_extreme(self, dim, False)


@impl("logcumsumexp")
def logcumsumexp(self, dim):
    """Real: lax.cumlogsumexp. Complex: ATen's sequential scan, cum = _log_add_exp_helper(x_i, cum)
    from -inf, whose imaginary part is not wrapped to (-pi, pi] (it may differ from the wrapped
    log(cumsum(exp(x))) by 2 pi)."""
    if _kind(self) in ("integral", "bool"):  # ATen: "logcumsumexp_out_cpu" not implemented for 'Long'
        raise RuntimeError(f"\"logcumsumexp_out_cpu\" not implemented for '{jnp.result_type(self)}'")
    x = jnp.atleast_1d(self)
    d = wrap_dim(dim, self.ndim)
    if jnp.iscomplexobj(x):
        from .binary import log_add_exp_complex

        def step(cum, xi):
            cum = log_add_exp_complex(xi, cum)
            return cum, cum

        xm = jnp.moveaxis(x, d, 0)
        init = jnp.full(xm.shape[1:], complex(-math.inf, 0.0), xm.dtype)
        out = jnp.moveaxis(jax.lax.scan(step, init, xm)[1], 0, d) if xm.shape[0] else x
        return jnp.reshape(out, jnp.shape(self))
    return jnp.reshape(jax.lax.cumlogsumexp(x, axis=d), jnp.shape(self))


# -- counting and logic ---------------------------------------------------------------------------


@impl("count_nonzero")
def count_nonzero(self, dim=None):
    return jnp.sum(self != 0, axis=reduced_dims(dim, self.ndim), dtype=long_dtype())


@impl("count_nonzero.dim_IntList")
def count_nonzero_dim(self, dim):
    return jnp.sum(self != 0, axis=reduced_dims(dim, self.ndim), dtype=long_dtype())


@impl("any")
def any_full(self):
    out = jnp.any(self != 0)
    return out.astype(jnp.uint8) if self.dtype == jnp.uint8 else out


@impl("any.dim")
def any_dim(self, dim, keepdim=False):
    out = jnp.any(self != 0, axis=reduced_dims(dim, self.ndim), keepdims=keepdim)
    return out.astype(jnp.uint8) if self.dtype == jnp.uint8 else out


@impl("all")
def all_full(self):
    out = jnp.all(self != 0)
    return out.astype(jnp.uint8) if self.dtype == jnp.uint8 else out


@impl("all.dim")
def all_dim(self, dim, keepdim=False):
    out = jnp.all(self != 0, axis=reduced_dims(dim, self.ndim), keepdims=keepdim)
    return out.astype(jnp.uint8) if self.dtype == jnp.uint8 else out


def _listed_dims(dim, ndim: int) -> tuple[int, ...]:
    """any.dims / all.dims: None reduces every dim, an empty list none of them."""
    if dim is None:
        return tuple(range(ndim))
    wrapped = {wrap_dim(d, ndim) for d in dim}
    return tuple(sorted(wrapped)) if ndim > 0 else ()


@impl("any.dims")
def any_dims(self, dim=None, keepdim=False):
    out = jnp.any(self != 0, axis=_listed_dims(dim, self.ndim), keepdims=keepdim)
    return out.astype(jnp.uint8) if self.dtype == jnp.uint8 else out


@impl("all.dims")
def all_dims(self, dim=None, keepdim=False):
    out = jnp.all(self != 0, axis=_listed_dims(dim, self.ndim), keepdims=keepdim)
    return out.astype(jnp.uint8) if self.dtype == jnp.uint8 else out


def _require_bool(op: str, x) -> None:
    if x.dtype != jnp.bool_:
        raise TypeError(f"aten::{op} expects a bool tensor, got {x.dtype}")


@impl("_is_all_true")
def _is_all_true(self):
    _require_bool("_is_all_true", self)
    return jnp.all(self)


@impl("_is_any_true")
def _is_any_true(self):
    _require_bool("_is_any_true", self)
    return jnp.any(self)


@impl("histc")
def histc(self, bins=100, min=0, max=0):
    """Counts in `bins` equal bins over [min, max] (the data's range when equal); max is in the last bin."""
    _require_inexact("histc", self)
    x = jnp.ravel(self)
    lo, hi = jnp.asarray(min, x.dtype), jnp.asarray(max, x.dtype)
    if x.size:
        data = lo == hi
        lo, hi = jnp.where(data, jnp.min(x), lo), jnp.where(data, jnp.max(x), hi)
    same = lo == hi
    lo, hi = jnp.where(same, lo - 1, lo), jnp.where(same, hi + 1, hi)
    inside = (x >= lo) & (x <= hi)
    b = jnp.clip(jnp.floor((x - lo) * bins / (hi - lo)).astype(long_dtype()), 0, bins - 1)
    return jnp.zeros(bins, self.dtype).at[jnp.where(inside, b, bins)].add(1, mode="drop")


@impl("hash_tensor")
def hash_tensor(self, dim=(), keepdim=False, mode=0):
    """XOR of the elements' 64-bit patterns, as uint64 (mode 0, ATen's only one): floating
    elements widened to float64, integers and bools to int64 first. Its entry declares the
    result non-differentiable."""
    if mode != 0:
        raise ValueError(f"Unknown hash_tensor mode: {mode}")
    x = jnp.asarray(self)
    if jnp.iscomplexobj(x):
        raise TypeError(f'"xor_sum_cpu" not implemented for {x.dtype}')
    everything = dim is None or (not isinstance(dim, (int, np.integer)) and not tuple(dim))
    if everything and x.size == 0:
        raise ValueError(
            "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    wide = x.astype(jnp.float64) if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(long_dtype())
    bits = jax.lax.bitcast_convert_type(wide, jnp.uint64)
    dims = reduced_dims(dim, x.ndim)
    for given in (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim or ()):
        if x.ndim and x.shape[wrap_dim(given, x.ndim)] == 0:  # as amax: ATen refuses an empty reduced dim
            raise IndexError(f"hash_tensor: Expected reduction dim {given} to have non-zero size.")
    out = jax.lax.reduce(bits, np.uint64(0), jax.lax.bitwise_xor, dims)
    return _keep(out, x.ndim, dims, keepdim)


@impl("_unique")
def _unique(self, sorted=True, return_inverse=False):
    """Sorted unique values; the inverse indices only when asked (else an empty int64 tensor)."""
    values, inverse = jnp.unique(jnp.ravel(self), return_inverse=True)
    inverse = jnp.reshape(inverse, self.shape).astype(long_dtype()) if return_inverse else jnp.zeros((0,), long_dtype())
    return values, inverse


# -- segment reductions ---------------------------------------------------------------------------


def segment_mask(data, lengths, offsets, axis: int):
    """(mask, counts, ax): mask[..., s, n, 1...] marks the positions n along `axis` that segment s
    covers (segments from lengths, or offsets[s]..offsets[s + 1]), shaped to broadcast against
    data with a segment dim inserted before `axis`; counts are the segments' lengths."""
    ax = wrap_dim(axis, data.ndim)
    if offsets is None:
        ends = jnp.cumsum(lengths, axis=-1)
        offsets = jnp.concatenate([jnp.zeros(jnp.shape(ends)[:-1] + (1,), ends.dtype), ends], axis=-1)
    pos = jnp.arange(data.shape[ax])
    mask = (offsets[..., :-1, None] <= pos) & (pos < offsets[..., 1:, None])
    rest = (1,) * (data.ndim - ax - 1)
    counts = (offsets[..., 1:] - offsets[..., :-1]).astype(data.dtype)
    return jnp.reshape(mask, mask.shape + rest), jnp.reshape(counts, counts.shape + rest), ax


@impl("segment_reduce")
def segment_reduce(data, reduce, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Each segment along `axis` reduced (sum, mean, max, min, prod); `initial` joins every
    segment as one more element (mean still divides by the length); an empty segment gives
    `initial`, else the reduction's identity (mean: NaN)."""
    if reduce not in ("sum", "mean", "max", "min", "prod"):
        raise RuntimeError(f"segment_reduce: reduction {reduce!r} is not supported")
    mask, counts, ax = segment_mask(data, lengths, offsets, axis)
    x = jnp.expand_dims(data, ax)
    fill = {"sum": 0, "mean": 0, "prod": 1, "max": -jnp.inf, "min": jnp.inf}[reduce]
    masked = jnp.where(mask, x, jnp.asarray(fill, data.dtype))
    out = {"sum": jnp.sum, "mean": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min}[reduce](
        masked, axis=ax + 1
    )
    if initial is not None:
        out = {
            "sum": out + initial,
            "mean": out + initial,
            "prod": out * initial,
            "max": jnp.maximum(out, initial),
            "min": jnp.minimum(out, initial),
        }[reduce]
    if reduce == "mean":
        empty = jnp.nan if initial is None else initial
        out = jnp.where(counts == 0, jnp.asarray(empty, data.dtype), out / jnp.where(counts == 0, 1, counts))
    return out


# -- unique along a dim, of consecutive runs, and with counts (data-dependent shapes: eager only) ----


def _unique_rows(op, self, dim):
    """self as (n, rest) rows along `dim` (concrete), and how to put rows back in self's layout."""
    from .shapes import concrete

    x = concrete(self, op, "call it outside jit")
    d = wrap_dim(dim, x.ndim)
    if x.size == 0 and x.shape[d] != 0:  # ATen's message, word for word
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    moved = np.moveaxis(x, d, 0)
    rows = moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))  # explicit: -1 is ambiguous at size 0
    return rows, lambda r: jnp.asarray(np.moveaxis(r.reshape((r.shape[0],) + moved.shape[1:]), 0, d))


def _runs(rows):
    """(first row of each run of equal consecutive rows, each row's run, each run's length)."""
    change = np.any(rows[1:] != rows[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate([[rows.shape[0] > 0], change]))
    inverse = np.cumsum(np.concatenate([[0], change]))[: rows.shape[0]]
    counts = np.diff(np.append(starts, rows.shape[0]))
    return starts, inverse.astype(np.int64), counts.astype(np.int64)


def _empty_unless(flag, a):
    return jnp.asarray(a, long_dtype()) if flag else jnp.zeros((0,), long_dtype())


@impl("_unique2")
def _unique2(self, sorted=True, return_inverse=False, return_counts=False):
    """(sorted unique values, inverse in self's shape, counts); the last two empty unless asked
    (ATen's CPU kernel sorts even when `sorted` is False)."""
    from .shapes import concrete

    x = concrete(self, "_unique2", "call it outside jit")
    values, inverse, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True)
    return (
        jnp.asarray(values),
        _empty_unless(return_inverse, inverse.reshape(x.shape)),
        _empty_unless(return_counts, counts),
    )


@impl("unique_dim")
def unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):
    """The distinct slices along `dim`, in lexicographic order; inverse and counts are always
    returned, as ATen does."""
    rows, back = _unique_rows("unique_dim", self, dim)
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(rows.shape[0])
    starts, run, counts = _runs(rows[order])
    inverse = np.empty_like(run)
    inverse[order] = run
    return back(rows[order][starts]), jnp.asarray(inverse, long_dtype()), jnp.asarray(counts, long_dtype())


@impl("unique_dim_consecutive")
def unique_dim_consecutive(self, dim, return_inverse=False, return_counts=False):
    """Each run of equal consecutive slices along `dim` kept once; inverse and counts always returned."""
    rows, back = _unique_rows("unique_dim_consecutive", self, dim)
    starts, inverse, counts = _runs(rows)
    return back(rows[starts]), jnp.asarray(inverse, long_dtype()), jnp.asarray(counts, long_dtype())


@impl("unique_consecutive")
def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """Runs of equal consecutive elements (of the flattened tensor) kept once, inverse in self's
    shape and counts only when asked; with `dim`, unique_dim_consecutive."""
    # ATen takes the flat path for dim 0 of a 1-d tensor too (inverse and counts only when asked);
    # any other dim is unique_dim_consecutive's (both always)
    if dim is not None and not (jnp.ndim(self) == 1 and dim == 0):
        return unique_dim_consecutive(self, dim, return_inverse, return_counts)
    from .shapes import concrete

    x = concrete(self, "unique_consecutive", "call it outside jit")
    flat = x.reshape(-1, 1)
    starts, inverse, counts = _runs(flat)
    return (
        jnp.asarray(flat[starts, 0]),
        _empty_unless(return_inverse, inverse.reshape(x.shape)),
        _empty_unless(return_counts, counts),
    )


# --- records: samples, domains and what the parity run against torch needs ------------------

# The family's traits (records.FamilyTraits; jaxderiv.check.opdb.traits reads them): checked in float32 and bfloat16 too.
FAMILY = {"low_precision": True}

# Checker inputs of the reductions, scans, sorting and selection ops.
#
# Each op is called on a few small tensors with its argument variants: dims as int, list and
# negative, keepdim, 0-d and one-element inputs, zeros for prod and cumprod (their helpers'
# special paths), a NaN for nansum and nanmedian, -inf for logsumexp. Values are drawn apart
# (no ties, no zeros unless placed): ties are kinks, which the torch tests cover instead.
SHAPE = (3, 4)


def _x(rng, dtype, shape=SHAPE, lo=-2.0, hi=2.0):
    """Values at least 0.1 from zero and, on real inputs, 0.05 from each other."""
    for _ in range(100):
        x = draw(rng, shape, lo, hi, dtype)
        flat = np.sort(np.real(x).ravel())
        if flat.size < 2 or np.min(np.diff(flat)) > 0.05:
            return x
    raise ValueError("no well separated values in 100 draws")


def _with(x, values):
    """x with its first entries replaced (zeros, NaN, -inf at chosen places)."""
    x = x.copy()
    x.flat[: len(values)] = values
    return x


def _register(*names, complex_=False):
    """Samples `fn(rng, dtype) -> [(args, kwargs, label)]` for `names`."""

    def deco(fn):
        @samples(*names)
        def make(op, rng, dtype=np.float64):
            return [Sample(tuple(a), dict(k), label) for a, k, label in fn(rng, dtype)]

        if complex_:
            complex_ok(*names)
        return fn

    return deco


_DIMS = (((1,), False), ((-1, 0), True), ((0,), True))


@_register("sum", "mean", "prod", complex_=True)
def _full_reductions(rng, dtype):
    return [((_x(rng, dtype),), {}, "3x4"), ((_x(rng, dtype, ()),), {}, "0-d"), ((_x(rng, dtype, (1,)),), {}, "1")]


@_register("sum.dim_IntList", "mean.dim", complex_=True)
def _dim_reductions(rng, dtype):
    out = [((_x(rng, dtype), list(d), k), {}, f"dim={d} keepdim={k}") for d, k in _DIMS]
    return out + [((_x(rng, dtype, ()), [0], False), {}, "0-d")]


@_register("nansum")
def _nansum(rng, dtype):
    return [((_with(_x(rng, dtype), [np.nan]),), {}, "NaN"), ((_x(rng, dtype, ()),), {}, "0-d")]


@_register("nansum.dim_IntList")
def _nansum_dim(rng, dtype):
    return [((_with(_x(rng, dtype), [np.nan]), list(d), k), {}, f"NaN dim={d} keepdim={k}") for d, k in _DIMS]


def _zeros(rng, dtype, shape=SHAPE):
    """One zero in one row, two in another: prod's and cumprod's special paths."""
    x = _x(rng, dtype, shape)
    x[0, 1] = 0
    x[1, 0] = x[1, 2] = 0
    return x


@_register("prod.dim_int", complex_=True)
def _prod_dim(rng, dtype):
    return [
        ((_x(rng, dtype), 1), {}, "dim=1"),
        ((_zeros(rng, dtype), 1, True), {}, "zeros dim=1 keepdim"),
        ((_zeros(rng, dtype), -2), {}, "zeros dim=-2"),
        ((_x(rng, dtype, ()), 0), {}, "0-d"),
    ]


@_register("cumsum", complex_=True)
def _cumsum(rng, dtype):
    return [((_x(rng, dtype), 1), {}, "dim=1"), ((_x(rng, dtype, ()), 0), {}, "0-d")]


@_register("cumprod", complex_=True)
def _cumprod(rng, dtype):
    return [
        ((_x(rng, dtype), 0), {}, "dim=0"),
        ((_zeros(rng, dtype), -1), {}, "zeros dim=-1"),
        ((_x(rng, dtype, ()), 0), {}, "0-d"),
    ]


known_failure(
    "spec (PyTorch 1.10's cumprod_jvp, as FunctionsManual writes it): past the first zero the tangent is "
    "cumprod(where(first_zero, self_t, self_p)), right at the point but not around it, so its derivative in "
    "the zero's coordinate drops the other factors' terms (measured: 0 where JAX gives -2.34, sample 'zeros dim=-1')",
    "cumprod",
    modes=("vjp_jvp",),
)


@_register("cummax", "cummin")
def _scans(rng, dtype):
    return [
        ((_x(rng, dtype), 1), {}, "dim=1"),
        ((_x(rng, dtype), -2), {}, "dim=-2"),
        ((_x(rng, dtype, ()), 0), {}, "0-d"),
    ]


@_register("logcumsumexp", complex_=True)
def _logcumsumexp(rng, dtype):
    """ATen takes complex inputs too: its backward's complex branch conjugates."""
    return _scans(rng, dtype)


_UNBIASED = (True, False)


@_register("var", "std", "var_mean", "std_mean", complex_=True)
def _moments(rng, dtype):
    return [((_x(rng, dtype), u), {}, f"unbiased={u}") for u in _UNBIASED]


@_register("var.dim", "std.dim", "var_mean.dim", "std_mean.dim", complex_=True)
def _moments_dim(rng, dtype):
    return [
        ((_x(rng, dtype), list(d), u, k), {}, f"dim={d} unbiased={u} keepdim={k}")
        for (d, k), u in zip(_DIMS, (True, False, True))
    ]


@_register("var.correction", "std.correction", "var_mean.correction", "std_mean.correction", complex_=True)
def _moments_correction(rng, dtype):
    """Newer files' overloads: a correction (None meaning 1) instead of `unbiased`."""
    cases = [(None, None, False), ([1], 0, True), ([0, 1], 2.5, False)]
    return [
        ((_x(rng, dtype), d), {"correction": c, "keepdim": k}, f"dim={d} correction={c} keepdim={k}")
        for d, c, k in cases
    ]


_P = (2, 1, 3, 1.5, 0.5, np.inf, -np.inf, 0)


@_register("norm.Scalar", complex_=True)
def _norms(rng, dtype):
    return [((_x(rng, dtype), p), {}, f"p={p}") for p in _P]


@_register("dist", complex_=True)
def _dists(rng, dtype):
    """other broadcast against self; the difference kept from zero and ties by drawing it."""
    out = []
    for p in _P:
        other = _x(rng, dtype, (4,))
        out.append(((other + _x(rng, dtype), other, p), {}, f"p={p}"))
    return out


parity_differs(
    ("vjp", "complex"),
    "torch 2.13 cannot differentiate dist at p=0 with respect to `other`: its norm_backward gives an "
    "undefined tensor for p=0, which the formula negates (RuntimeError: Expected a proper Tensor but got "
    "None); jaxderiv gives the zero gradient, the derivative of the count of nonzero differences",
    "dist",
    torch_spec=True,
)


@_register("norm.ScalarOpt_dim", complex_=True)
def _norms_dim(rng, dtype):
    variants = [(None, [1], False), (1, [-1, 0], True), (np.inf, [0], False), (3, [1], True), (0.5, [0], False)]
    return [((_x(rng, dtype), p, d, k), {}, f"p={p} dim={d} keepdim={k}") for p, d, k in variants]


# The dtype overloads' formulas convert self to grad's (real) dtype: real inputs only.
@_register("norm.ScalarOpt_dtype")
def _norms_dtype(rng, dtype):
    return [((_x(rng, dtype), p), {"dtype": np.dtype(dtype)}, f"p={p}") for p in (2, 1.5, np.inf)]


@_register("norm.ScalarOpt_dim_dtype")
def _norms_dim_dtype(rng, dtype):
    return [
        ((_x(rng, dtype), p, [1], k), {"dtype": np.dtype(dtype)}, f"p={p} keepdim={k}")
        for p, k in ((2, False), (3, True))
    ]


@_register("renorm")
def _renorm(rng, dtype):
    """maxnorm between the slices' norms (one scaled, one not), kept apart from each."""
    out = []
    for p, dim in ((2, 0), (1, 1), (3, -1)):
        x = _x(rng, dtype)
        d = dim % 2
        norms = np.sort(np.sum(np.abs(x) ** p, axis=1 - d) ** (1 / p))
        out.append(((x, p, dim, float(norms[0] + norms[1]) / 2), {}, f"p={p} dim={dim}"))
    return out


@_register("logsumexp", complex_=True)
def _logsumexp(rng, dtype):
    return [
        ((_x(rng, dtype), [1], False), {}, "dim=1"),
        ((_with(_x(rng, dtype), [-np.inf]), [-1, 0], True), {}, "-inf dims=-1,0 keepdim"),
        ((_x(rng, dtype, ()), [0], False), {}, "0-d"),
    ]


@_register("max", "min", "median")
def _extremes(rng, dtype):
    return [((_x(rng, dtype),), {}, "3x4"), ((_x(rng, dtype, ()),), {}, "0-d")]


@_register("nanmedian")
def _nanmedian(rng, dtype):
    return [((_with(_x(rng, dtype), [np.nan, np.nan]),), {}, "NaN"), ((_x(rng, dtype, (5,)),), {}, "5")]


@_register("amax", "amin")
def _amax(rng, dtype):
    return [
        ((_x(rng, dtype), [], False), {}, "all"),
        ((_x(rng, dtype), [1], True), {}, "dim=1 keepdim"),
        ((_x(rng, dtype), [-1, 0], False), {}, "dims=-1,0"),
    ]


@_register("max.dim", "min.dim", "median.dim")
def _selections(rng, dtype):
    return [
        ((_x(rng, dtype), 1, False), {}, "dim=1"),
        ((_x(rng, dtype), -2, True), {}, "dim=-2 keepdim"),
        ((_x(rng, dtype, ()), 0, False), {}, "0-d"),
    ]


@_register("mode")
def _mode(rng, dtype):
    """Distinct values: the mode is each slice's smallest (repeated values are kinks)."""
    return [((_x(rng, dtype), 1, False), {}, "dim=1"), ((_x(rng, dtype), -2, True), {}, "dim=-2 keepdim")]


@_register("nanmedian.dim")
def _nanmedian_dim(rng, dtype):
    return [
        ((_with(_x(rng, dtype), [np.nan]), 1, False), {}, "NaN dim=1"),
        ((_x(rng, dtype), -2, True), {}, "dim=-2 keepdim"),
    ]


@_register("kthvalue")
def _kthvalue(rng, dtype):
    return [((_x(rng, dtype), 2, 1, False), {}, "k=2 dim=1"), ((_x(rng, dtype), 3, -2, True), {}, "k=3 dim=-2 keepdim")]


@_register("topk")
def _topk(rng, dtype):
    return [((_x(rng, dtype), 2), {}, "k=2"), ((_x(rng, dtype), 2, 0, False), {}, "k=2 dim=0 smallest")]


@_register("sort")
def _sort(rng, dtype):
    return [
        ((_x(rng, dtype),), {}, "dim=-1"),
        ((_x(rng, dtype), 0, True), {}, "dim=0 descending"),
        ((_x(rng, dtype, ()),), {}, "0-d"),
    ]


@_register("sort.stable")
def _sort_stable(rng, dtype):
    return [
        ((_x(rng, dtype),), {"stable": True}, "stable dim=-1"),
        ((_x(rng, dtype),), {"stable": None, "dim": 0, "descending": True}, "dim=0 descending"),
        ((_x(rng, dtype, ()),), {"stable": False}, "0-d"),
    ]


@_register("any.dims", "all.dims")
def _any_all_dims(rng, dtype):
    """Zeros among the values; None reduces every dim, an empty list none."""
    x = _x(rng, dtype) * (rng.random((3, 4)) < 0.7)
    return [
        ((x, None, False), {}, "dim=None"),
        ((x, [1], True), {}, "dim=1 keepdim"),
        ((x, [-1, 0], False), {}, "dims=-1,0"),
        ((x, [], False), {}, "dims=[]"),
    ]


@_register("_is_all_true", "_is_any_true")
def _is_true(rng, dtype):
    """Bool inputs only, as ATen requires."""
    return [
        ((rng.random((3, 4)) < 0.5,), {}, "bool 3x4"),
        ((np.ones((2,), bool),), {}, "all True"),
        ((np.zeros((0,), bool),), {}, "empty"),
    ]


@_register("aminmax")
def _aminmax(rng, dtype):
    """Over all elements (keepdim or not), one dim (negative), a 0-d input."""
    return [
        ((_x(rng, dtype),), {}, "3x4 all"),
        ((_x(rng, dtype),), {"keepdim": True}, "3x4 all keepdim"),
        ((_x(rng, dtype),), {"dim": 1}, "dim=1"),
        ((_x(rng, dtype),), {"dim": -2, "keepdim": True}, "dim=-2 keepdim"),
        ((_x(rng, dtype, ()),), {"dim": 0}, "0-d dim=0"),
    ]


@_register("segment_reduce")
def _segment_reduce(rng, dtype):
    """Every reduction by lengths along axis 0, by batched offsets along axis 1, with `initial`;
    an empty segment where its value is finite (sum's 0, prod's 1; not NaN or infinities)."""
    out = []
    for reduce in ("sum", "mean", "max", "min", "prod"):
        lengths = np.array([2, 0, 3] if reduce in ("sum", "prod") else [2, 3], np.int64)
        out.append(((_x(rng, dtype, (5, 2)), reduce), {"lengths": lengths}, f"{reduce} lengths={lengths.tolist()}"))
        out.append(
            (
                (_x(rng, dtype, (2, 5)), reduce),
                {"offsets": np.array([[0, 2, 5], [0, 1, 5]], np.int64), "axis": 1},
                f"{reduce} offsets axis=1",
            )
        )
    for reduce in ("sum", "mean", "prod"):
        out.append(
            (
                (_x(rng, dtype, (5,)), reduce),
                {"lengths": np.array([4, 1], np.int64), "initial": 1.5},
                f"{reduce} initial=1.5",
            )
        )
    return out


def _repeated(rng, dtype):
    """A 4x3 tensor with repeated values, rows and consecutive runs (rows 0 and 1 equal, row 3 = row 0)."""
    x = rng.choice(np.array([-1.5, 0.5, 2.0]), size=(4, 3)).astype(dtype)
    x[1], x[3] = x[0], x[0]
    return x


@_register("_unique2")
def _unique2_samples(rng, dtype):
    x = _repeated(rng, dtype)
    return [
        ((x, True, True, True), {}, "4x3 ties, inverse and counts"),
        ((x, False, False, False), {}, "4x3 ties, values only"),
    ]


@_register("unique_dim", "unique_dim_consecutive")
def _unique_dim(rng, dtype):
    x = _repeated(rng, dtype)
    return [
        ((x, 0), {}, "4x3 dim=0 repeated rows"),
        ((x, -1), {"return_inverse": True, "return_counts": True}, "4x3 dim=-1"),
    ]


@_register("unique_consecutive")
def _unique_consecutive(rng, dtype):
    x = _repeated(rng, dtype)
    return [((x, True, True), {}, "4x3 flattened runs"), ((x,), {"dim": 0}, "4x3 dim=0 runs of rows")]


# -- parity with torch ------------------------------------------------------------------------
# Ties: torch splits the gradient among equal extremes, or picks one index.
kinks("max", (vector(1.0, 3.0, 3.0, -1.0),))
kinks("min", (vector(1.0, -3.0, 2.0, -3.0),))
kinks("max.dim", (matrix([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), 1))
kinks("min.dim", (matrix([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), 1))
kinks("amax", (matrix([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), [1]), (matrix([[1.0, 3.0], [3.0, -1.0]]),))
kinks(
    "amin",
    (matrix([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), [1]),
    (matrix([[1.0, -3.0], [-3.0, 1.0]]),),
    (matrix([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), [1], True),
)
# ties within rows and across the whole input, for both outputs (torch splits the gradient evenly);
# over a dim (keyword-only, which a kink tuple cannot pass) in tests/ops/test_reductions.py
kinks("aminmax", (matrix([[1.0, 3.0, 3.0, -2.0], [-2.0, 0.5, -2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]),))
kinks("median", (vector(1.0, 2.0, 2.0, 3.0, 2.0),))
kinks("nanmedian", (vector(1.0, 2.0, 2.0, np.nan, 2.0),))
kinks("median.dim", (matrix([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]]), 1))
kinks("nanmedian.dim", (matrix([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]]), 1))
# the norm's kink: the zero vector
kinks("norm.Scalar", (np.zeros(3), 2), (np.zeros(3), 1), (vector(0.0, 1.0, -2.0), 1))
kinks("norm.ScalarOpt_dim", (np.zeros((2, 3)), 2, [1]), (matrix([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]), float("inf"), [1]))
# prod's special paths: one zero, two zeros
kinks("prod", (vector(2.0, 0.0, 3.0),), (vector(2.0, 0.0, 0.0, 3.0),))
kinks("prod.dim_int", (matrix([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, 3.0]]), 1))
kinks("cumprod", (vector(2.0, 0.0, 3.0, 0.0, 1.5), 0))
# sorting and selection with equal values: which index torch picks carries the gradient
kinks("sort", (vector(2.0, 1.0, 2.0, 1.0, 3.0),), (vector(2.0, 1.0, 2.0, 1.0, 3.0), -1, True))
kinks("topk", (vector(2.0, 1.0, 3.0, 3.0, 1.0), 2), (vector(2.0, 1.0, 3.0, 3.0, 1.0), 2, -1, False))
kinks("kthvalue", (vector(2.0, 1.0, 2.0, 1.0, 3.0), 2))
kinks("mode", (vector(2.0, 1.0, 2.0, 1.0, 3.0),))
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.nansum(a["self"], a["dim"], a["keepdim"], dtype=a.get("dtype")),
        "torch 2.13 merged the overload into nansum",
        True,
    ),
    "nansum.dim_IntList",
)
parity_differs(
    ("jvp", "kinks", "complex"),
    "torch.func.jvp of aten.norm.Scalar raises in torch 2.13 (its forward gradient "
    "has the input's shape, not the 0-d result's); jaxderiv evaluates the result formula (seed files: "
    "transposes the backward formula)",
    "norm.Scalar",
    torch_spec=True,
)
parity_differs(
    ("jvp",),
    "torch.func.jvp of aten.norm.ScalarOpt_dtype raises in torch 2.13, as for norm.Scalar",
    "norm.ScalarOpt_dtype",
    torch_spec=True,
)
