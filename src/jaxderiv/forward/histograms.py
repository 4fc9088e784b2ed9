"""torch.histogram's and torch.histogramdd's ATen ops: `histogram.bin_ct`, `histogram.bins_tensor`,
`_histogramdd_bin_edges`, `_histogramdd_from_bin_cts`, `_histogramdd_from_bin_tensors`.
derivatives.yaml lists none of them (autograd raises, for the weights too): differentiating
them raises here too (`without_derivative`).

As ATen's CPU kernel: the input is M points of N coordinates (its last dim; histogram's: one).
Bin edges from a count are `linspace` over the range: the given one, else the data's min and
max (widened by 0.5 each way when equal), [0, 1] without data. A NaN point or one outside the
edges is skipped; a point falls in the bin whose edges bracket it (`upper_bound` - 1, the last
bin including its right edge), found from a count's edges by ATen's interpolation and a search
of the neighbouring bins, from given edges by bisection (so unsorted edges bin as ATen's do).
density divides by the total, then by each dim's bin widths.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .nondifferentiable import without_derivative
from .queries import bisect
from .ranges import linspace_points


def _require_floating(x) -> None:
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f'"histogramdd" not implemented for {x.dtype}')


def _points(self):
    """histogramdd's input as (M, N)."""
    x = jnp.asarray(self)
    if x.ndim < 2:
        raise ValueError(f"torch.histogramdd: input tensor should have at least 2 dimensions, but got {x.ndim}")
    _require_floating(x)
    return x.reshape(-1, x.shape[-1])


def _known(v):
    """A float where the value is known, the array under tracing."""
    try:
        return float(v)
    except jax.errors.ConcretizationTypeError:
        return jnp.asarray(v, jnp.float64)


def _edges_from_counts(x2d, bins, range_):
    """ATen's select_outer_bin_edges, then `linspace(left, right, bins + 1)` in the input's dtype."""
    m, n = x2d.shape
    if len(bins) != n:
        raise ValueError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range_ is not None:
        if len(range_) != 2 * n:
            raise ValueError(
                f"torch.histogramdd: for a {n}-dimensional histogram range should have {2 * n} elements, "
                f"but got {len(range_)}"
            )
        left, right = [float(r) for r in range_[0::2]], [float(r) for r in range_[1::2]]
    elif m > 0:
        if x2d.dtype not in (jnp.float32, jnp.float64):  # ATen's min and max here take no half types
            raise TypeError(f'"histogramdd" not implemented for {x2d.dtype}')
        lo, hi = jnp.min(x2d, axis=0), jnp.max(x2d, axis=0)
        left, right = [_known(v) for v in lo], [_known(v) for v in hi]
    else:
        left, right = [0.0] * n, [1.0] * n
    edges = []
    for d, (lo, hi) in enumerate(zip(left, right)):
        if isinstance(lo, float) and isinstance(hi, float):
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"torch.histogramdd: dimension {d}'s range [{lo}, {hi}] is not finite")
            if lo > hi:
                raise ValueError(
                    f"torch.histogramdd: min should not exceed max, but got min {lo} max {hi} for dimension {d}"
                )
            if lo == hi:  # widened, as NumPy does, so that no bin is empty
                lo, hi = lo - 0.5, hi + 0.5
        else:
            same = jnp.asarray(lo) == jnp.asarray(hi)
            lo, hi = jnp.where(same, lo - 0.5, lo), jnp.where(same, hi + 0.5, hi)
        edges.append(linspace_points(lo, hi, bins[d] + 1, x2d.dtype))
    return edges


def _check(x2d, edges, weight):
    """ATen's histogramdd_check_inputs and prepare_out (one 1-d edge tensor per dim, of the
    input's dtype, with at least one bin), and the weight's: one per point."""
    m, n = x2d.shape
    if len(edges) != n:
        raise ValueError(
            f"torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram but got {len(edges)}"
        )
    for d, e in enumerate(edges):
        if e.dtype != x2d.dtype:
            raise TypeError(
                "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input "
                f"with dtype {x2d.dtype} and bins for dimension {d} with dtype {e.dtype}"
            )
        if e.ndim != 1:
            raise ValueError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.ndim} dimensions")
        if e.size == 0:
            raise ValueError(f"torch.histogramdd: bins tensor should have at least 1 element for dimension {d}")
    for d, e in enumerate(edges):
        if e.size < 2:
            raise ValueError(f"torch.histogram(): bins must be > 0, but got {e.size - 1} for dimension {d}")
    if weight is not None and weight.dtype != x2d.dtype:
        raise TypeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same "
            f"dtype, but got input({x2d.dtype}), and weight({weight.dtype})"
        )


def _histogram(x2d, edges, weight, density: bool, interpolate: bool):
    """The counts (weights) per bin, shaped by the edges; ATen's histogramdd_cpu_contiguous."""
    m, n = x2d.shape
    dt = x2d.dtype
    shape = tuple(e.shape[0] - 1 for e in edges)
    keep = jnp.ones((m,), jnp.bool_)
    flat = jnp.zeros((m,), jnp.int64)
    for d, e in enumerate(edges):
        v, count = x2d[:, d], e.shape[0]
        left, right = e[0], e[-1]
        keep = keep & (v >= left) & (v <= right)  # NaN is neither
        if interpolate:  # the bin by division, then upper_bound among its neighbours
            guess = ((v - left) * jnp.asarray(count - 1, dt) / (right - left)).astype(jnp.int64)
            start, end = jnp.maximum(guess - 1, 0), jnp.minimum(guess + 2, count)
            pos = bisect(e, v, right=True, start=start, end=end) - 1
        else:
            pos = bisect(e, v, right=True) - 1
        pos = jnp.where(pos == count - 1, pos - 1, pos)  # the last bin includes its right edge
        flat = flat * shape[d] + pos
    size = math.prod(shape)
    w = jnp.ones((m,), dt) if weight is None else jnp.asarray(weight).reshape(m)
    hist = jnp.zeros((size,), dt).at[jnp.where(keep, flat, size)].add(w, mode="drop").reshape(shape)
    if density:
        hist = hist / jnp.sum(hist)
        for d, e in enumerate(edges):
            hist = hist / jnp.diff(e).reshape([-1 if k == d else 1 for k in range(n)])
    return hist


def _weights(weight, x, expected_shape):
    if weight is None:
        return None
    w = jnp.asarray(weight)
    if (tuple(w.shape) or (1,)) != tuple(expected_shape):
        raise ValueError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor "
            f"excluding its innermost dimension, but got input with shape {x.shape} and weight with shape {w.shape}"
        )
    return w


def _flat(self, weight):
    """histogram's input as one coordinate per element, its weight one per element."""
    x = jnp.asarray(self)
    _require_floating(x)
    if weight is not None and jnp.size(weight) != x.size:
        raise ValueError(f"shape '[{x.size}]' is invalid for input of size {jnp.size(weight)}")
    return x.reshape(-1, 1), None if weight is None else jnp.asarray(weight).reshape(-1)


@without_derivative("histogram.bin_ct")
def histogram_bin_ct(self, bins=100, range=None, weight=None, density=False):
    x2d, w = _flat(self, weight)
    if bins <= 0:
        raise ValueError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    edges = _edges_from_counts(x2d, [bins], range)
    _check(x2d, edges, w)
    return _histogram(x2d, edges, w, density, interpolate=True), edges[0]


@without_derivative("histogram.bins_tensor")
def histogram_bins_tensor(self, bins, weight=None, density=False):
    x2d, w = _flat(self, weight)
    edges = [jnp.asarray(bins)]
    _check(x2d, edges, w)
    return _histogram(x2d, edges, w, density, interpolate=False), edges[0]


@without_derivative("_histogramdd_bin_edges")
def _histogramdd_bin_edges(self, bins, range=None, weight=None, density=False):
    return _edges_from_counts(_points(self), list(bins), range)


@without_derivative("_histogramdd_from_bin_cts")
def _histogramdd_from_bin_cts(self, bins, range=None, weight=None, density=False):
    x2d = _points(self)
    w = _weights(weight, jnp.asarray(self), jnp.shape(self)[:-1])
    edges = _edges_from_counts(x2d, list(bins), range)
    _check(x2d, edges, w)
    return _histogram(x2d, edges, w, density, interpolate=True)


@without_derivative("_histogramdd_from_bin_tensors")
def _histogramdd_from_bin_tensors(self, bins, weight=None, density=False):
    x2d = _points(self)
    w = _weights(weight, jnp.asarray(self), jnp.shape(self)[:-1])
    edges = [jnp.asarray(b) for b in bins]
    _check(x2d, edges, w)
    return _histogram(x2d, edges, w, density, interpolate=False)
