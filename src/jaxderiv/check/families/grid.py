"""Checker inputs of grid sampling and affine grids.

Grid points are drawn in pixel coordinates with a fractional part in [0.15, 0.4] or
[0.6, 0.85], then normalized: away from the integers, where bilinear and bicubic weights have
kinks and zero padding and clipping switch taps, and from the half-integers, where nearest
rounding jumps and reflection (corners not aligned) folds. Reflection of such a point keeps
its fractional part in the same set.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, compiled_apart, parity_in_float32, samples, torch_equivalent
from ..samples import Sample
from . import CUDA_ONLY

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
