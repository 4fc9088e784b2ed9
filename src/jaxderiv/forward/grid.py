"""Forward implementations of ATen's grid sampling and affine grids, and their backwards.

A grid sampler reads the input at the pixel coordinates a grid gives, in [-1, 1] per spatial
dim (x along W first). Per dim each output point has a few taps (bilinear 2, nearest 1,
bicubic 4) with a weight that is a polynomial of the coordinate's fractional part; in several
dims the taps are the product of the per-dim ones. `Taps` holds, for every tap, its flat
input index, whether it lies inside the input, its weight and the weight's first and second
derivatives in the pixel coordinates, and per dim d(pixel coordinate)/d(grid value). The
forward sums weighted gathers; both backwards scatter-add or contract the same quantities.

Coordinates follow ATen's grid_sampler_compute_source_index: unnormalize, then clip (border)
or reflect and clip (reflection); a point on a clip bound has a zero coordinate gradient.
Bicubic unnormalizes only and applies the padding to each integer tap.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..records import CUDA_ONLY, Equivalent, Sample, compiled_apart, parity_in_float32, samples, torch_equivalent
from . import impl

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
CUBIC_A = -0.75  # the Keys kernel's parameter ATen uses


# -- coordinates -----------------------------------------------------------------------------


def _unnormalize(coord, size, align_corners):
    """Pixel coordinate of a grid value in [-1, 1], and its derivative."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), (size - 1) / 2
    return ((coord + 1) * size - 1) / 2, size / 2


def _clip(x, size):
    """clip_coordinates into [0, size - 1], and its derivative: 0 outside and on the bounds."""
    hi = size - 1
    return jnp.clip(x, 0, hi), ((x > 0) & (x < hi)).astype(x.dtype)


def _reflect(x, twice_low, twice_high):
    """reflect_coordinates: x mirrored into [low, high], and its derivative (+1 or -1)."""
    if twice_low == twice_high:
        return jnp.zeros_like(x), jnp.zeros_like(x)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = x - low
    sign = jnp.where(x < 0, -1.0, 1.0).astype(x.dtype)
    x = jnp.abs(x)
    extra = jnp.fmod(x, span)
    even = jnp.fmod(jnp.floor(x / span), 2) == 0
    return jnp.where(even, extra + low, span - extra + low), jnp.where(even, sign, -sign)


def _padded(x, size, padding_mode, align_corners):
    """grid_sampler_compute_source_index's padding step on pixel coordinates, and its derivative."""
    if padding_mode == BORDER:
        return _clip(x, size)
    if padding_mode == REFLECTION:
        x, flip = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x, inside = _clip(x, size)
        return x, flip * inside
    return x, jnp.ones_like(x)


def _cubic(t):
    """Weights of the four taps at distances 1+t, t, 1-t, 2-t, and their first and second t-derivatives."""
    a = CUBIC_A
    near = (
        lambda x: ((a + 2) * x - (a + 3)) * x * x + 1,
        lambda x: (3 * (a + 2) * x - 2 * (a + 3)) * x,
        lambda x: 6 * (a + 2) * x - 2 * (a + 3),
    )
    far = (
        lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a,
        lambda x: (3 * a * x - 10 * a) * x + 8 * a,
        lambda x: 6 * a * x - 10 * a,
    )
    kernels = (
        (far, t + 1, 1),
        (near, t, 1),
        (near, 1 - t, -1),
        (far, 2 - t, -1),
    )  # (kernel, distance, d distance / dt)
    return [(k[0](x), s * k[1](x), k[2](x)) for k, x, s in kernels]


def _axis_taps(coord, size, mode, padding_mode, align_corners):
    """One spatial dim: d(pixel)/d(grid) and the taps (index, inside, w, dw, d2w)."""
    x, scale = _unnormalize(coord, size, align_corners)
    if mode == BICUBIC:  # the padding applies to each integer tap, not to the coordinate
        base = jnp.floor(x)
        taps = []
        for k, (w, dw, d2w) in enumerate(_cubic(x - base)):
            index, _ = _padded(base + (k - 1), size, padding_mode, align_corners)
            taps.append((index, w, dw, d2w))
        mult = jnp.full_like(x, scale)
    else:
        x, mult = _padded(x, size, padding_mode, align_corners)
        mult = mult * scale
        if mode == NEAREST:
            zero = jnp.zeros_like(x)
            taps = [(jnp.round(x), jnp.ones_like(x), zero, zero)]
        else:
            base = jnp.floor(x)
            t = x - base
            one, zero = jnp.ones_like(x), jnp.zeros_like(x)
            taps = [(base, 1 - t, -one, zero), (base + 1, t, one, zero)]
    index, w, dw, d2w = (jnp.stack(v) for v in zip(*taps))
    inside = (index >= 0) & (index <= size - 1)
    return mult, (jnp.clip(jnp.nan_to_num(index), 0, size - 1).astype(jnp.int32), inside, w, dw, d2w)


def _combine(factors, op):
    """Per-axis (T_a, N, P) arrays -> op over every combination of one tap per axis, (K, N, P)."""
    n = len(factors)
    out = None
    for a, f in enumerate(factors):
        f = jnp.reshape(f, (1,) * a + (f.shape[0],) + (1,) * (n - 1 - a) + f.shape[1:])
        out = f if out is None else op(out, f)
    return jnp.reshape(out, (-1,) + factors[0].shape[1:])


def _outer(factors):
    return _combine(factors, jnp.multiply)


class Taps:
    """Every tap of every output point of a grid sampling: K taps at (N, P) points.

    `index`, `inside`, `w`: (K, N, P); `dw(a)`, `d2w(a, b)`: the weights' derivatives in the
    pixel coordinates of spatial axes a, b (axis 0 is the input's first spatial dim);
    `mult[a]`: d(pixel coordinate of axis a)/d(grid value of axis a), (N, P).
    """

    def __init__(self, input_shape, grid, mode, padding_mode, align_corners):
        n = grid.shape[-1]
        sizes = tuple(input_shape[2:])
        self.n, self.points, self.size = n, grid.shape[1:-1], math.prod(sizes)
        points = jnp.reshape(grid, (grid.shape[0], -1, n))
        axes = [_axis_taps(points[..., n - 1 - a], sizes[a], mode, padding_mode, align_corners) for a in range(n)]
        self.mult = [m for m, _ in axes]
        self.axes = [t for _, t in axes]  # per axis: (index, inside, w, dw, d2w), each (T_a, N, P)
        self.index = _combine([t[0] * math.prod(sizes[a + 1 :]) for a, t in enumerate(self.axes)], jnp.add)
        self.inside = _combine([t[1] for t in self.axes], jnp.logical_and)
        self.w = _outer([t[2] for t in self.axes])
        self.rows = jnp.arange(grid.shape[0])[:, None]

    def dw(self, a):
        return _outer([t[3] if b == a else t[2] for b, t in enumerate(self.axes)])

    def d2w(self, a, b):
        if a == b:
            return _outer([t[4] if c == a else t[2] for c, t in enumerate(self.axes)])
        return _outer([t[3] if c in (a, b) else t[2] for c, t in enumerate(self.axes)])

    def flat(self, x):
        """(N, C, S...) -> (N, prod S, C): the layout taps gather from and scatter into."""
        return jnp.reshape(jnp.moveaxis(x, 1, -1), (x.shape[0], -1, x.shape[1]))

    def unflat(self, x, spatial):
        """(N, M, C) -> (N, C, *spatial)."""
        return jnp.moveaxis(jnp.reshape(x, (x.shape[0], *spatial, x.shape[-1])), -1, 1)

    def gather(self, x):
        """x (N, C, S...) under every tap at every point, 0 outside: (K, N, P, C)."""
        return jnp.where(self.inside[..., None], self.flat(x)[self.rows, self.index], 0)

    def scatter(self, values, spatial):
        """Sum of values (K, N, P, C) into the input's layout (N, C, *spatial)."""
        out = jnp.zeros((values.shape[1], self.size, values.shape[-1]), values.dtype)
        out = out.at[self.rows, self.index].add(jnp.where(self.inside[..., None], values, 0))
        return self.unflat(out, spatial)

    def to_grid(self, per_axis, grid_shape):
        """Per-axis (N, P) gradients in pixel coordinates -> the grid's (N, P..., n), x first."""
        n = len(per_axis)
        return jnp.reshape(jnp.stack([per_axis[n - 1 - c] * self.mult[n - 1 - c] for c in range(n)], -1), grid_shape)


# -- sampling and its backward ---------------------------------------------------------------


def grid_sample(input, grid, interpolation_mode, padding_mode, align_corners):
    taps = Taps(input.shape, grid, interpolation_mode, padding_mode, align_corners)
    out = jnp.sum(taps.w[..., None] * taps.gather(input), 0)
    return taps.unflat(out, taps.points)


def grid_sample_backward(
    grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask=(True, True)
):
    """(grad_input, grad_grid), each None where the mask says no."""
    taps = Taps(input.shape, grid, interpolation_mode, padding_mode, align_corners)
    g = taps.flat(grad_output)
    grad_input = grad_grid = None
    if output_mask[0]:
        grad_input = taps.scatter(taps.w[..., None] * g, input.shape[2:])
    if output_mask[1]:
        seen = jnp.sum(g * taps.gather(input), -1)  # (K, N, P): <grad, input under each tap>
        grad_grid = taps.to_grid([jnp.sum(taps.dw(a) * seen, 0) for a in range(taps.n)], grid.shape)
    return grad_input, grad_grid


@impl("grid_sampler_2d")
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    return grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


@impl("grid_sampler_3d")
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


@impl("_grid_sampler_2d_cpu_fallback")
def _grid_sampler_2d_cpu_fallback(input, grid, interpolation_mode, padding_mode, align_corners):
    return grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


@impl("cudnn_grid_sampler")
def cudnn_grid_sampler(self, grid):
    """cuDNN's sampler: bilinear, zero padding, corners aligned."""
    return grid_sample(self, grid, BILINEAR, ZEROS, True)


@impl("grid_sampler_2d_backward")
def grid_sampler_2d_backward(
    grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask=(True, True)
):
    return grid_sample_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)


@impl("grid_sampler_3d_backward")
def grid_sampler_3d_backward(
    grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask=(True, True)
):
    return grid_sample_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)


@impl("_grid_sampler_2d_cpu_fallback_backward")
def _grid_sampler_2d_cpu_fallback_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners):
    return grid_sample_backward(grad_output, input, grid, interpolation_mode, padding_mode, align_corners)


@impl("cudnn_grid_sampler_backward")
def cudnn_grid_sampler_backward(self, grid, grad_output):
    return grid_sample_backward(grad_output, self, grid, BILINEAR, ZEROS, True)


# -- affine grids ----------------------------------------------------------------------------


def _steps(n, align_corners):
    """linspace_from_neg_one: n points over [-1, 1], shrunk by (n - 1) / n unless corners align."""
    if n <= 1:
        return np.zeros(n)
    s = np.linspace(-1.0, 1.0, n)
    return s if align_corners else s * (n - 1) / n


def _base_grid(spatial, align_corners):
    """(prod spatial, n + 1): the normalized coordinates of every output pixel (x first) and a 1."""
    axes = np.meshgrid(*[_steps(s, align_corners) for s in spatial], indexing="ij")
    columns = [axes[a].ravel() for a in reversed(range(len(spatial)))]
    return np.stack(columns + [np.ones(math.prod(spatial))], -1)


def affine_grid(theta, spatial, align_corners):
    base = jnp.asarray(_base_grid(spatial, align_corners), theta.dtype)
    return jnp.reshape(jnp.einsum("mk,njk->nmj", base, theta), (theta.shape[0], *spatial, theta.shape[1]))


def affine_grid_backward(grad, spatial, align_corners):
    base = jnp.asarray(_base_grid(spatial, align_corners), grad.dtype)
    return jnp.einsum("mk,nmj->njk", base, jnp.reshape(grad, (grad.shape[0], -1, grad.shape[-1])))


@impl("affine_grid_generator")
def affine_grid_generator(theta, size, align_corners):
    return affine_grid(theta, tuple(size[2:]), align_corners)


@impl("affine_grid_generator_backward")
def affine_grid_generator_backward(grad, size, align_corners):
    return affine_grid_backward(grad, tuple(size[2:]), align_corners)


@impl("cudnn_affine_grid_generator")
def cudnn_affine_grid_generator(theta, N, C, H, W):
    """cuDNN's grid generator: corners aligned."""
    return affine_grid(theta, (H, W), True)


@impl("cudnn_affine_grid_generator_backward")
def cudnn_affine_grid_generator_backward(grad, N, C, H, W):
    return affine_grid_backward(grad, (H, W), True)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of grid sampling and affine grids.
#
# Grid points are drawn in pixel coordinates with a fractional part in [0.15, 0.4] or
# [0.6, 0.85], then normalized: away from the integers, where bilinear and bicubic weights have
# kinks and zero padding and clipping switch taps, and from the half-integers, where nearest
# rounding jumps and reflection (corners not aligned) folds. Reflection of such a point keeps
# its fractional part in the same set.
# every (interpolation, padding) pair, corners aligned in turn; reflection both ways
MODES_2D = [(m, p, (m + p) % 2 == 1) for m in (0, 1, 2) for p in (0, 1, 2)] + [(0, 2, True), (2, 2, True)]
MODES_3D = [(m, p, (m + p) % 2 == 1) for m in (0, 1) for p in (0, 1, 2)] + [(0, 2, True)]
# the CPU fallback shares grid_sampler_2d's implementation: one sample per interpolation mode
MODES_FALLBACK = [(0, 2, False), (1, 1, True), (2, 0, False)]


def _pixels(rng, size, shape):
    """Pixel coordinates in [-2, size + 1], with fractional parts away from 0 and 0.5."""
    whole = rng.integers(-2, size + 1, shape)
    frac = rng.uniform(0.15, 0.4, shape) + 0.45 * rng.integers(0, 2, shape)
    return whole + frac


def _normalized(x, size, align_corners):
    """The grid value that unnormalizes to pixel coordinate x."""
    return 2 * x / (size - 1) - 1 if align_corners else (2 * x + 1) / size - 1


def grid_for(rng, spatial, points, align_corners):
    """(N, *points, n) grid over an input with these spatial sizes; component 0 is x (last dim)."""
    n = len(spatial)
    comps = [_normalized(_pixels(rng, spatial[n - 1 - c], points), spatial[n - 1 - c], align_corners) for c in range(n)]
    return np.stack(comps, -1)


def _sampler(shape, points, modes, backward=False, cudnn=False):
    def make(op, rng, dtype=np.float64):
        out = []
        for mode, padding, corners in modes:
            x = rng.normal(size=shape)
            grid = grid_for(rng, shape[2:], (shape[0],) + points, corners)
            names = ("self", "grid") if cudnn else ("input", "grid")
            kw = {names[0]: x, "grid": grid}
            if not cudnn:
                kw.update(interpolation_mode=mode, padding_mode=padding, align_corners=corners)
            if backward:
                kw["grad_output"] = rng.normal(size=shape[:2] + points)
                if any(a.name == "output_mask" for a in op.schema.arguments):
                    kw["output_mask"] = (True, True)
            out.append(Sample((), kw, f"mode={mode} padding={padding} align_corners={corners}"))
        return out

    return make


_S2, _P2 = (2, 2, 4, 5), (3, 2)
_S3, _P3 = (1, 2, 3, 4, 3), (2, 2, 3)
_CUDNN = [(0, 0, True)]
samples("grid_sampler_2d")(_sampler(_S2, _P2, MODES_2D))
samples("_grid_sampler_2d_cpu_fallback")(_sampler(_S2, _P2, MODES_FALLBACK))
samples("grid_sampler_3d")(_sampler(_S3, _P3, MODES_3D))
samples("cudnn_grid_sampler")(_sampler(_S2, _P2, _CUDNN, cudnn=True))
samples("grid_sampler_2d_backward")(_sampler(_S2, _P2, MODES_2D, backward=True))
samples("_grid_sampler_2d_cpu_fallback_backward")(_sampler(_S2, _P2, MODES_FALLBACK, backward=True))
samples("grid_sampler_3d_backward")(_sampler(_S3, _P3, MODES_3D, backward=True))
samples("cudnn_grid_sampler_backward")(_sampler(_S2, _P2, _CUDNN, backward=True, cudnn=True))


@samples("affine_grid_generator")
def _affine(op, rng, dtype=np.float64):
    return [
        Sample((rng.normal(size=(2, 2, 3)), (2, 3, 4, 5), False), label="2d"),
        Sample((rng.normal(size=(2, 2, 3)), (2, 3, 1, 5), True), label="2d, one row"),
        Sample((rng.normal(size=(2, 3, 4)), (2, 1, 2, 3, 4), True), label="3d"),
    ]


@samples("cudnn_affine_grid_generator")
def _cudnn_affine(op, rng, dtype=np.float64):
    return [Sample((rng.normal(size=(2, 2, 3)), 2, 3, 4, 5), label="2x3x4x5")]


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(
    Equivalent(
        lambda aten, a: aten.grid_sampler_2d(a["self"], a["grid"], 0, 0, True),
        f"{CUDA_ONLY}: grid_sampler_2d bilinear, zeros, align_corners",
    ),
    "cudnn_grid_sampler",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.grid_sampler_2d_backward(a["grad_output"], a["self"], a["grid"], 0, 0, True, [True, True]),
        f"{CUDA_ONLY}: grid_sampler_2d_backward bilinear, zeros, align_corners",
    ),
    "cudnn_grid_sampler_backward",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.affine_grid_generator(a["theta"], [a["N"], a["C"], a["H"], a["W"]], True),
        f"{CUDA_ONLY}: affine_grid_generator, align_corners",
    ),
    "cudnn_affine_grid_generator",
)
parity_in_float32(
    "torch's fallback kernel takes float32 only",
    "_grid_sampler_2d_cpu_fallback",
    "_grid_sampler_2d_cpu_fallback_backward",
)


compiled_apart(
    "11 samples (mode x padding x align_corners) in every mode: one program per (mode, sample) compiles "
    "in 28.3 s against 37.6 s for the entry's one program (one process, no cache, measured 2026-12-06 on "
    "the loaded 2-core machine; grid_sampler_3d 17.6 s against 19.9 s, left as one program)",
    "grid_sampler_2d",
)
