"""Forward implementations of ATen's pooling ops (avg, max, adaptive, fractional, unpool) and their `*_backward` ops.

Average pooling is a padded, strided windowed sum (`lax.reduce_window`) over ATen's divide
factor, and its backward the adjoint sum: what XLA compiles best. The other poolings read
windows of the input by index: per spatial dim, each output position o reads input positions
idx[o, k] (valid where `valid[o, k]`). Gathering those windows gives the forwards; adding
values back at the same indices gives the backwards, linear and exactly ATen's arithmetic.
Max pooling returns ATen's indices: flat positions within each (N, C) plane, the first
maximum of a window in scan order.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..records import Equivalent, Sample, kinks, known_failure, matrix, parity_differs, parity_samples, torch_equivalent
from . import impl, implementation
from ._spatial_samples import standard_normal, register_spatial_samples
from .conv import spatial_tuple


def _long():
    """ATen's int64 indices: int64 under x64, else JAX's int32 (no truncation warning)."""
    return jax.dtypes.canonicalize_dtype(jnp.int64)


def _output_size(size, k, s, p, d, ceil_mode):
    """ATen's pooling_output_shape: a last window must start inside the input or left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _strided(size, k, s, p, d, ceil_mode):
    """(idx, valid) of max/avg pooling along one dim: window o starts at o*s - p."""
    o = jnp.arange(_output_size(size, k, s, p, d, ceil_mode))[:, None]
    idx = o * s - p + jnp.arange(k)[None, :] * d
    return idx, (idx >= 0) & (idx < size)


def _adaptive(size, out):
    """(idx, valid) of adaptive pooling: window o is [floor(o*I/O), ceil((o+1)*I/O))."""
    o = jnp.arange(out)
    start = (o * size) // out
    end = -((-(o + 1) * size) // out)
    k = max(-(-(i + 1) * size // out) - (i * size) // out for i in range(out))
    idx = start[:, None] + jnp.arange(k)[None, :]
    return idx, idx < end[:, None]


def _flat(windows, spatial):
    """Broadcast per-dim windows to one flat index and mask of shape (..., O_1..O_n, K_1..K_n)."""
    n = len(windows)
    flat, valid, step = 0, True, 1
    for d in reversed(range(n)):
        idx, ok = windows[d]
        lead = idx.ndim - 2  # a fractional window has its own (N, C) batch dims first
        shape = idx.shape[:lead] + tuple(
            idx.shape[lead] if a == d else idx.shape[lead + 1] if a == n + d else 1 for a in range(2 * n)
        )
        flat = flat + jnp.reshape(jnp.clip(idx, 0, spatial[d] - 1), shape) * step
        valid = valid & jnp.reshape(ok, shape)
        step *= spatial[d]
    return flat, valid


def _merge_tail(a, k):
    """a with its dims from k on merged into one, sized explicitly (jnp.reshape's -1 divides by
    the other dims' product, which a 0-size batch makes 0)."""
    return jnp.reshape(a, a.shape[:k] + (math.prod(a.shape[k:]),))


def _gather(x, windows, fill):
    """Windows of x (N, C, S...) -> (N, C, O..., K...), `fill` where a window leaves the input."""
    n = len(windows)
    flat, valid = _flat(windows, x.shape[2:])
    lead = x.shape[:2]
    flat = (
        jnp.broadcast_to(flat, lead + flat.shape[-2 * n :])
        if flat.ndim == 2 * n
        else jnp.broadcast_to(flat, lead + flat.shape[2:])
    )
    planes = _merge_tail(x, 2)  # explicit sizes: reshape's -1 fails on a 0-size batch
    vals = jnp.take_along_axis(planes, _merge_tail(flat, 2), axis=2)
    vals = jnp.reshape(vals, flat.shape)
    return jnp.where(valid, vals, jnp.asarray(fill, x.dtype)), flat


def _scatter(values, flat, shape):
    """Add values (N, C, ...) into a zero (N, C, S...) at their flat in-plane positions."""
    n, c = shape[:2]
    plane = math.prod(shape[2:])
    flat = jnp.broadcast_to(flat, values.shape)
    offset = jnp.reshape(jnp.arange(n * c) * plane, (n, c) + (1,) * (values.ndim - 2))
    out = jnp.zeros(n * c * plane, values.dtype).at[jnp.ravel(flat + offset)].add(jnp.ravel(values))
    return jnp.reshape(out, shape)


def _max(x, windows):
    """(values, indices) of the max over each window; the first maximum wins, NaN over numbers."""
    n = len(windows)
    vals, flat = _gather(x, windows, -jnp.inf)
    out_shape = vals.shape[: vals.ndim - n]
    vals = _merge_tail(vals, len(out_shape))
    flat = _merge_tail(flat, len(out_shape))
    arg = jnp.argmax(jnp.where(jnp.isnan(vals), jnp.inf, vals), axis=-1)[..., None]
    return jnp.take_along_axis(vals, arg, -1)[..., 0], jnp.take_along_axis(flat, arg, -1)[..., 0].astype(_long())


def _at_indices(grad, indices, shape):
    """Max pooling's backward: each output's grad added at its input index (ties accumulate)."""
    return _scatter(grad, indices, shape)


# -- average pooling ----------------------------------------------------------------------------


def _avg_geometry(self, n, kernel_size, stride, padding, ceil_mode):
    """(kernel, stride, padding, output sizes) per spatial dim; the stride defaults to the kernel."""
    k, p = spatial_tuple(kernel_size, n), spatial_tuple(padding, n)
    s = spatial_tuple(stride, n) if stride not in ((), [], None) else k
    out = tuple(_output_size(self.shape[self.ndim - n + d], k[d], s[d], p[d], 1, ceil_mode) for d in range(n))
    return k, s, p, out


def _avg_divisor(sizes, k, s, p, out, count_include_pad, divisor_override):
    """ATen's divide factor per output: the override, else the window clipped to the padded
    input (count_include_pad) or to the input itself, a product over the dims."""
    if divisor_override:
        return divisor_override
    n, divisor = len(sizes), 1
    for d in range(n):
        o = np.arange(out[d]) * s[d] - p[d]
        if count_include_pad:
            count = np.minimum(o + k[d], sizes[d] + p[d]) - o
        else:
            count = np.minimum(o + k[d], sizes[d]) - np.maximum(o, 0)
        divisor = divisor * np.reshape(count, (-1,) + (1,) * (n - 1 - d))
    return jnp.asarray(divisor)


def _window_sum(x, n, pads, window, strides):
    """Sums over windows of the last n dims of x, zero-padded by (low, high, interior) per dim."""
    lead = x.ndim - n
    x = lax.pad(x, np.zeros((), x.dtype), [(0, 0, 0)] * lead + list(pads))
    return lax.reduce_window(
        x, np.zeros((), x.dtype), lax.add, (1,) * lead + tuple(window), (1,) * lead + tuple(strides), "VALID"
    )


def avg_pool(
    self, n, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
):
    """Zero padding (on the high side up to the last window's end, which ceil_mode may place past
    the padding) and a strided windowed sum, over ATen's divide factor."""
    k, s, p, out = _avg_geometry(self, n, kernel_size, stride, padding, ceil_mode)
    sizes = self.shape[self.ndim - n :]
    pads = [(p[d], (out[d] - 1) * s[d] + k[d] - p[d] - sizes[d], 0) for d in range(n)]
    total = _window_sum(self, n, pads, k, s)
    return total / _avg_divisor(sizes, k, s, p, out, count_include_pad, divisor_override)


def avg_pool_backward(
    grad_output, self, n, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    """The adjoint of avg_pool: each output's grad / divisor added into every input position of its
    window. Input position i receives the outputs o with o*s - p <= i < o*s - p + k: spreading the
    shares by the stride (interior padding) and summing k neighbours at stride 1 gathers exactly those."""
    k, s, p, out = _avg_geometry(self, n, kernel_size, stride, padding, ceil_mode)
    sizes = self.shape[self.ndim - n :]
    share = grad_output / _avg_divisor(sizes, k, s, p, out, count_include_pad, divisor_override)
    pads = [(k[d] - 1 - p[d], sizes[d] + p[d] - (out[d] - 1) * s[d] - 1, s[d] - 1) for d in range(n)]
    return _window_sum(share, n, pads, k, (1,) * n)


@impl("avg_pool2d")
def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return avg_pool(self, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


@impl("avg_pool3d")
def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return avg_pool(self, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


@impl("avg_pool2d_backward")
def avg_pool2d_backward(
    grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    return avg_pool_backward(
        grad_output, self, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


@impl("avg_pool3d_backward")
def avg_pool3d_backward(
    grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    return avg_pool_backward(
        grad_output, self, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


# -- adaptive pooling ---------------------------------------------------------------------------


def _batch(self, n):
    return (self, False) if self.ndim == n + 2 else (self[None], True)


def adaptive_avg_pool(self, n, output_size):
    x, squeeze = _batch(self, n)
    windows = [_adaptive(x.shape[2 + d], spatial_tuple(output_size, n)[d]) for d in range(n)]
    vals, _ = _gather(x, windows, 0)
    count = 1
    for d, (_, ok) in enumerate(windows):
        count = count * jnp.reshape(jnp.sum(ok, axis=1), (-1,) + (1,) * (n - 1 - d))
    out = jnp.sum(vals, axis=tuple(range(vals.ndim - n, vals.ndim))) / count
    return out[0] if squeeze else out


def adaptive_avg_pool_backward(grad_output, self, n):
    x, squeeze = _batch(self, n)
    g = grad_output[None] if squeeze else grad_output
    windows = [_adaptive(x.shape[2 + d], g.shape[2 + d]) for d in range(n)]
    flat, valid = _flat(windows, x.shape[2:])
    count = 1
    for d, (_, ok) in enumerate(windows):
        count = count * jnp.reshape(jnp.sum(ok, axis=1), (-1,) + (1,) * (n - 1 - d))
    share = (g / count).reshape(g.shape + (1,) * n)
    out = _scatter(jnp.where(valid, share, 0), flat, x.shape)
    return out[0] if squeeze else out


@impl("_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(self, output_size):
    return adaptive_avg_pool(self, 2, output_size)


@impl("adaptive_avg_pool3d", "_adaptive_avg_pool3d")
def adaptive_avg_pool3d(self, output_size):
    return adaptive_avg_pool(self, 3, output_size)


@impl("_adaptive_avg_pool2d_backward")
def _adaptive_avg_pool2d_backward(grad_output, self):
    return adaptive_avg_pool_backward(grad_output, self, 2)


@impl("adaptive_avg_pool3d_backward", "_adaptive_avg_pool3d_backward")
def adaptive_avg_pool3d_backward(grad_output, self):
    return adaptive_avg_pool_backward(grad_output, self, 3)


def _pool_max(self, n, windows_of):
    x, squeeze = _batch(self, n)
    values, indices = _max(x, windows_of(x))
    return (values[0], indices[0]) if squeeze else (values, indices)


def max_backward(grad_output, self, indices, n):
    x, squeeze = _batch(self, n)
    g, i = (grad_output[None], indices[None]) if squeeze else (grad_output, indices)
    out = _at_indices(g, i, x.shape)
    return out[0] if squeeze else out


@impl("adaptive_max_pool2d", "adaptive_max_pool3d")
def adaptive_max_pool(self, output_size):
    n = len(output_size)
    return _pool_max(self, n, lambda x: [_adaptive(x.shape[2 + d], output_size[d]) for d in range(n)])


@impl("adaptive_max_pool2d_backward")
def adaptive_max_pool2d_backward(grad_output, self, indices):
    return max_backward(grad_output, self, indices, 2)


@impl("adaptive_max_pool3d_backward")
def adaptive_max_pool3d_backward(grad_output, self, indices):
    return max_backward(grad_output, self, indices, 3)


# -- max pooling with indices -------------------------------------------------------------------


def max_pool(self, n, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    k, p, d = spatial_tuple(kernel_size, n), spatial_tuple(padding, n), spatial_tuple(dilation, n)
    s = spatial_tuple(stride, n) if stride not in ((), [], None) else k
    return _pool_max(self, n, lambda x: [_strided(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)])


@impl("max_pool2d_with_indices")
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool(self, 2, kernel_size, stride, padding, dilation, ceil_mode)


@impl("max_pool3d_with_indices")
def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool(self, 3, kernel_size, stride, padding, dilation, ceil_mode)


@impl("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return max_backward(grad_output, self, indices, 2)


@impl("max_pool3d_with_indices_backward")
def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return max_backward(grad_output, self, indices, 3)


# -- fractional max pooling ---------------------------------------------------------------------


def _fractional(sample, size, out, k):
    """ATen's generate_intervals: window starts from one uniform sample per (N, C) plane."""
    alpha = (size - k) / (out - 1) if out > 1 else 0.0
    i = jnp.arange(out)
    # static_cast<int> truncates toward zero (samples outside [0, 1) reach negative products)
    start = jnp.trunc((i + sample[..., None]) * alpha).astype(_long()) - jnp.trunc(sample[..., None] * alpha).astype(
        _long()
    )
    start = jnp.where(i == out - 1, size - k, start)
    idx = start[..., None] + jnp.arange(k)
    return idx, jnp.ones(idx.shape, bool)


def fractional_max_pool(self, n, kernel_size, output_size, random_samples):
    """random_samples (N, C, n): in 2d sample 0 draws the width's windows and 1 the height's, in 3d samples 0, 1, 2 draw T, H, W."""
    k, o = spatial_tuple(kernel_size, n), spatial_tuple(output_size, n)
    x, squeeze = _batch(self, n)
    rs = random_samples if random_samples.ndim == 3 else random_samples[None]
    order = (1, 0) if n == 2 else (0, 1, 2)
    windows = [_fractional(rs[..., order[d]], x.shape[2 + d], o[d], k[d]) for d in range(n)]
    values, indices = _max(x, windows)
    return (values[0], indices[0]) if squeeze else (values, indices)


@impl("fractional_max_pool2d")
def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    return fractional_max_pool(self, 2, kernel_size, output_size, random_samples)


@impl("fractional_max_pool3d")
def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    return fractional_max_pool(self, 3, kernel_size, output_size, random_samples)


@impl("fractional_max_pool2d_backward")
def fractional_max_pool2d_backward(grad_output, self, kernel_size, output_size, indices):
    return max_backward(grad_output, self, indices, 2)


@impl("fractional_max_pool3d_backward")
def fractional_max_pool3d_backward(grad_output, self, kernel_size, output_size, indices):
    return max_backward(grad_output, self, indices, 3)


# -- max unpooling ------------------------------------------------------------------------------


def _unpool(self, indices, output_size):
    """Each value written at its flat index of a zero (N, C, output_size) plane; ATen leaves repeated indices undefined."""
    n = len(output_size)
    x, squeeze = _batch(self, n)
    i = indices[None] if squeeze else indices
    shape = x.shape[:2] + tuple(output_size)
    plane = math.prod(output_size)
    offset = jnp.reshape(jnp.arange(shape[0] * shape[1]) * plane, shape[:2] + (1,) * n)
    out = (
        jnp.zeros(math.prod(shape), x.dtype).at[jnp.ravel(i + offset)].set(jnp.ravel(x), unique_indices=True)
    )  # indices of a pooling: unique, and transposable
    out = jnp.reshape(out, shape)
    return out[0] if squeeze else out


def _unpool_backward(grad_output, indices, n):
    """The grad at each value's index."""
    g, squeeze = _batch(grad_output, n)
    i = indices[None] if squeeze else indices
    planes = _merge_tail(g, 2)
    out = jnp.reshape(jnp.take_along_axis(planes, _merge_tail(i, 2), axis=2), i.shape)
    return out[0] if squeeze else out


@impl("max_unpool2d")
def max_unpool2d(self, indices, output_size):
    return _unpool(self, indices, tuple(output_size))


@impl("max_unpool3d")
def max_unpool3d(self, indices, output_size, stride, padding):
    return _unpool(self, indices, tuple(output_size))


@impl("max_unpool2d_backward")
def max_unpool2d_backward(grad_output, self, indices, output_size):
    return _unpool_backward(grad_output, indices, 2)


@impl("max_unpool3d_backward")
def max_unpool3d_backward(grad_output, self, indices, output_size, stride, padding):
    return _unpool_backward(grad_output, indices, 3)


# -- torch 2.13's max pooling without indices -----------------------------------------------------


@impl("max_pool2d")
def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool2d_with_indices' values."""
    return max_pool(self, 2, kernel_size, stride, padding, dilation, ceil_mode)[0]


@impl("max_pool2d_backward")
def max_pool2d_backward(grad_output, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """grad_output scattered to each window's argmax, the indices found again from self."""
    _, indices = max_pool(self, 2, kernel_size, stride, padding, dilation, ceil_mode)
    return max_backward(grad_output, self, indices, 2)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the pooling ops (forward/pooling.py): average, max, adaptive and fractional
# pooling in 2-D and 3-D, max unpooling, and their backward ops.
#
# Inputs are a shuffled grid of well-separated values: max pooling has no ties and its argmax
# does not move under the finite-difference step. Shapes are small (a few pixels, two
# channels); the variants cover padding, uneven strides, dilation, ceil_mode,
# count_include_pad and divisor_override. A backward entry's grad_output (and indices) come
# from its forward run on the same input; max unpooling's indices from a max pooling with
# stride = kernel, so each output position is written at most once.
#
# The parity run compares max pooling on tied maxima too, which finite differences cannot judge.
def _distinct(rng, *shape):
    """Values 0.1 apart in random order: no ties, and the argmax of a window stays put."""
    return rng.permutation(math.prod(shape)).reshape(shape) * 0.1 + rng.uniform(-0.01, 0.01, shape)


def pool_sample(shape, backward_of=None, indices_arg=None, **kw):
    """A pooling entry's sample; a backward entry's grad_output (and indices) from its forward."""

    def make(rng):
        x = _distinct(rng, *shape)
        values = {"self": x, **kw}
        if backward_of is not None:
            out = implementation(backward_of)(jnp.asarray(x), **{k: v for k, v in kw.items()})
            out, idx = out if isinstance(out, tuple) else (out, None)
            values["grad_output"] = standard_normal(rng, *out.shape)
            if indices_arg:
                values[indices_arg] = np.asarray(idx)
        return values

    return make


P2, P3 = (2, 2, 5, 5), (1, 2, 4, 4, 3)


def _avg(divisor_override=None, **kw):
    """An average pooling variant's arguments: no divisor_override unless one is given."""
    return dict(kw, divisor_override=divisor_override)


_AVG2 = [
    _avg(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=False, count_include_pad=True),
    _avg(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), ceil_mode=True, count_include_pad=False),
    _avg(kernel_size=(2, 2), stride=(), padding=(0, 0), ceil_mode=True, count_include_pad=True, divisor_override=3),
]
_AVG3 = [_avg(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True, count_include_pad=False)]
MAX2 = [
    dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=False),
    dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True),
]
MAX3 = [dict(kernel_size=(2, 2, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(1, 1, 1), ceil_mode=True)]
for _n, _shape, _avg_cases, _max_cases in ((2, P2, _AVG2, MAX2), (3, P3, _AVG3, MAX3)):
    register_spatial_samples(f"avg_pool{_n}d", *[pool_sample(_shape, **v) for v in _avg_cases])
    register_spatial_samples(
        f"avg_pool{_n}d_backward", *[pool_sample(_shape, f"avg_pool{_n}d", **v) for v in _avg_cases]
    )
    register_spatial_samples(f"max_pool{_n}d_with_indices", *[pool_sample(_shape, **v) for v in _max_cases])
    register_spatial_samples(
        f"max_pool{_n}d_with_indices_backward",
        *[pool_sample(_shape, f"max_pool{_n}d_with_indices", "indices", **v) for v in _max_cases],
    )
    _sizes = [dict(output_size=(3, 2)), dict(output_size=(2, 4))] if _n == 2 else [dict(output_size=(3, 2, 2))]
    for _adaptive_avg in ("_adaptive_avg_pool2d",) if _n == 2 else ("adaptive_avg_pool3d", "_adaptive_avg_pool3d"):
        register_spatial_samples(_adaptive_avg, *[pool_sample(_shape, **v) for v in _sizes])
        register_spatial_samples(
            f"{_adaptive_avg}_backward", *[pool_sample(_shape, _adaptive_avg, **v) for v in _sizes]
        )
    register_spatial_samples(f"adaptive_max_pool{_n}d", *[pool_sample(_shape, **v) for v in _sizes])
    register_spatial_samples(
        f"adaptive_max_pool{_n}d_backward",
        *[pool_sample(_shape, f"adaptive_max_pool{_n}d", "indices", **v) for v in _sizes],
    )
    _frac = dict(kernel_size=(2,) * _n, output_size=(3, 2, 2)[:_n])
    _samples = lambda rng, _s=_shape, _k=_n: rng.uniform(0, 1, (_s[0], _s[1], _k))
    register_spatial_samples(
        f"fractional_max_pool{_n}d",
        lambda rng, _s=_shape, _f=_frac, _r=_samples: {**pool_sample(_s, **_f)(rng), "random_samples": _r(rng)},
    )
    register_spatial_samples(
        f"fractional_max_pool{_n}d_backward",
        lambda rng, _s=_shape, _f=_frac, _r=_samples, _k=_n: _fractional_backward(rng, _s, _f, _r(rng), _k),
    )


register_spatial_samples("max_pool2d", *[pool_sample(P2, **v) for v in MAX2])
register_spatial_samples("max_pool2d_backward", *[pool_sample(P2, "max_pool2d", **v) for v in MAX2])


def _fractional_backward(rng, shape, kw, random_samples, n):
    x = _distinct(rng, *shape)
    out, idx = implementation(f"fractional_max_pool{n}d")(
        jnp.asarray(x), kw["kernel_size"], kw["output_size"], jnp.asarray(random_samples)
    )
    return {"self": x, "grad_output": standard_normal(rng, *out.shape), "indices": np.asarray(idx), **kw}


def _unpool_samples(shape, n, backward=False):
    """Indices of a max pooling with stride = kernel: each output position at most once."""

    def make(rng):
        x = _distinct(rng, *shape)
        out, idx = implementation(f"max_pool{n}d_with_indices")(jnp.asarray(x), (2,) * n, (2,) * n)
        values = {
            "self": standard_normal(rng, *out.shape),
            "indices": np.asarray(idx),
            "output_size": shape[2:],
            "stride": (2,) * n,
            "padding": (0,) * n,
        }
        if backward:
            values["grad_output"] = standard_normal(rng, *shape)
        return values

    return make


register_spatial_samples("max_unpool2d", _unpool_samples(P2, 2))
register_spatial_samples("max_unpool3d", _unpool_samples(P3, 3))
register_spatial_samples("max_unpool2d_backward", _unpool_samples(P2, 2, backward=True))


known_failure(
    "spec bug (torch 2.13, an MPS-only entry): max_pool2d_backward's `result: auto_linear` runs the op on "
    "the tangents of both grad_output and self, but the op is linear in grad_output only (self picks "
    "each window's argmax), so the tangent scatters grad_output_t to the argmax of self_t",
    "max_pool2d_backward",
    modes=("jvp",),
)


# -- parity with torch ------------------------------------------------------------------------

# A 1x1x4x4 image whose 2x2 windows each hold a tied maximum, and its 3-D counterpart: max
# pooling with equal elements in a window.
_TIED_IMAGE = np.kron(matrix([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None]
_TIED_VOLUME = np.kron(matrix([[1.0, 2.0], [3.0, 0.5]])[None], np.ones((2, 2, 2)))[None, None]
kinks("max_pool2d_with_indices", (_TIED_IMAGE, [2, 2], [2, 2]))
kinks("max_pool3d_with_indices", (_TIED_VOLUME, [2, 2, 2], [2, 2, 2]))
kinks("adaptive_max_pool2d", (_TIED_IMAGE, [2, 2]))
# the checker's schema-default samples have no torch meaning here (float random_samples)
parity_samples(
    "fractional_max_pool3d",
    Sample(
        (),
        {
            "self": np.linspace(-1, 1, 2 * 5 * 5 * 4).reshape(1, 2, 5, 5, 4),
            "kernel_size": [2, 2, 2],
            "output_size": [3, 2, 2],
            "random_samples": np.full((1, 2, 3), 0.4),
        },
        "5x5x4 to 3x2x2",
    ),
)


# torch calls computing what ops torch cannot run on CPU (or under the seed's schema) compute;
# each gets torch.ops.aten and the sample's arguments by name, as torch values.
def _torch_max_pool2d_backward(aten, a):
    geometry = [a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"]]
    _, indices = aten.max_pool2d_with_indices(a["self"], *geometry)
    return [aten.max_pool2d_with_indices_backward(a["grad_output"], a["self"], *geometry, indices)]


torch_equivalent(
    Equivalent(
        _torch_max_pool2d_backward,
        "torch 2.13 runs max_pool2d_backward only on MPS: "
        "aten.max_pool2d_with_indices, then max_pool2d_with_indices_backward",
    ),
    "max_pool2d_backward",
)
parity_differs(
    ("jvp",),
    "torch 2.13's entry (MPS only) says `result: auto_linear`, which runs the op on the tangents "
    "of grad_output and self, but the op is linear in grad_output only: self_t picks other argmaxes. "
    "jaxderiv evaluates the spec's formula; torch's CPU equivalent differentiates the op",
    "max_pool2d_backward",
    torch_spec=True,
    seed_spec=False,
)
