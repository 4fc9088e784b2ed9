"""Forward implementations of ATen's upsampling (nearest, linear, bilinear, trilinear, bicubic) and their backwards.

Upsampling is separable and linear: along each spatial dim the output is a fixed
(out x in) matrix times the input. The matrices are built in NumPy from ATen's exact
source-index formulas (area_pixel_compute_source_index, nearest_idx in float32, the cubic
convolution with A = -0.75 and clamped taps); the backward applies their transposes.
The default overloads also take a `.vec` call's arguments (output_size None, a list of
scale factors), as the `.vec` entries' formulas pass them.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from . import impl


def _scales(scales, n):
    """A per-dim list of the optional scale arguments."""
    if isinstance(scales, (tuple, list)):
        return list(scales) if len(scales) == n else [scales[0]] * n
    return [scales] * n


def _sizes(input_size, output_size, scales, n):
    """output_size as given, else ATen's compute_output_size: floor(input * scale)."""
    if output_size is not None and len(output_size):
        return tuple(output_size)
    return tuple(int(math.floor(i * s)) for i, s in zip(input_size[-n:], scales))


def _linear_scale(i, o, align_corners, scale):
    """area_pixel_compute_scale."""
    if align_corners:
        return (i - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else i / o


def _source(scale, dst, align_corners, cubic):
    """area_pixel_compute_source_index."""
    if align_corners:
        return scale * dst
    src = scale * (dst + 0.5) - 0.5
    return np.maximum(src, 0.0) if not cubic else src


def _nearest_matrix(i, o, scale):
    if o == i:
        src = np.arange(o)
    elif o == 2 * i:
        src = np.arange(o) >> 1
    else:
        s = np.float32(1.0 / scale if scale is not None and scale > 0 else i / o)
        src = np.minimum(np.floor(np.arange(o, dtype=np.float32) * s).astype(np.int64), i - 1)
    m = np.zeros((o, i))
    m[np.arange(o), src] = 1.0
    return m


def _linear_matrix(i, o, align_corners, scale):
    src = _source(_linear_scale(i, o, align_corners, scale), np.arange(o, dtype=np.float64), align_corners, False)
    i0 = src.astype(np.int64)
    lam = src - i0
    i1 = i0 + (i0 < i - 1)
    m = np.zeros((o, i))
    np.add.at(m, (np.arange(o), i0), 1.0 - lam)
    np.add.at(m, (np.arange(o), i1), lam)
    return m


def _cubic_coefficients(t, a=-0.75):
    """upsample_get_cubic_coefficients: the Keys kernel at distances 1+t, t, 1-t, 2-t."""

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _cubic_matrix(i, o, align_corners, scale):
    src = _source(_linear_scale(i, o, align_corners, scale), np.arange(o, dtype=np.float64), align_corners, True)
    base = np.floor(src).astype(np.int64)
    coeffs = _cubic_coefficients(src - base)
    m = np.zeros((o, i))
    for k in range(4):
        np.add.at(m, (np.arange(o), np.clip(base - 1 + k, 0, i - 1)), coeffs[k])
    return m


def _matrices(mode, input_size, output_size, align_corners, scales):
    n = len(output_size)
    ins = tuple(input_size[-n:])
    if mode == "nearest":
        return [_nearest_matrix(i, o, s) for i, o, s in zip(ins, output_size, scales)]
    build = _cubic_matrix if mode == "cubic" else _linear_matrix
    return [build(i, o, align_corners, s) for i, o, s in zip(ins, output_size, scales)]


def _apply(x, matrices):
    """Multiply each of the last len(matrices) dims of x by its matrix."""
    n = len(matrices)
    for d, m in enumerate(matrices):
        axis = x.ndim - n + d
        x = jnp.moveaxis(jnp.tensordot(x, jnp.asarray(m, x.dtype), axes=([axis], [1])), -1, axis)
    return x


def upsample(x, n, mode, output_size, align_corners, scales):
    scales = _scales(scales, n)
    size = _sizes(x.shape, output_size, scales, n)
    return _apply(x, _matrices(mode, x.shape, size, align_corners, scales))


def upsample_backward(grad, n, mode, output_size, input_size, align_corners, scales):
    scales = _scales(scales, n)
    size = _sizes(input_size, output_size, scales, n)
    return _apply(grad, [m.T for m in _matrices(mode, tuple(input_size), size, align_corners, scales)])


@impl("upsample_nearest1d", "upsample_nearest1d.vec")
def upsample_nearest1d(self, output_size, scales=None):
    return upsample(self, 1, "nearest", output_size, False, scales)


@impl("upsample_nearest2d", "upsample_nearest2d.vec")
def upsample_nearest2d(self, output_size, scales_h=None, scales_w=None):
    return upsample(self, 2, "nearest", output_size, False, scales_h if isinstance(scales_h, (tuple, list)) else [scales_h, scales_w])


@impl("upsample_nearest3d", "upsample_nearest3d.vec")
def upsample_nearest3d(self, output_size, scales_d=None, scales_h=None, scales_w=None):
    return upsample(self, 3, "nearest", output_size, False, scales_d if isinstance(scales_d, (tuple, list)) else [scales_d, scales_h, scales_w])


@impl("upsample_linear1d", "upsample_linear1d.vec")
def upsample_linear1d(self, output_size, align_corners, scales=None):
    return upsample(self, 1, "linear", output_size, align_corners, scales)


@impl("upsample_bilinear2d", "upsample_bilinear2d.vec")
def upsample_bilinear2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    return upsample(self, 2, "linear", output_size, align_corners, scales_h if isinstance(scales_h, (tuple, list)) else [scales_h, scales_w])


@impl("upsample_bicubic2d", "upsample_bicubic2d.vec")
def upsample_bicubic2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    return upsample(self, 2, "cubic", output_size, align_corners, scales_h if isinstance(scales_h, (tuple, list)) else [scales_h, scales_w])


@impl("upsample_trilinear3d", "upsample_trilinear3d.vec")
def upsample_trilinear3d(self, output_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
    return upsample(self, 3, "linear", output_size, align_corners, scales_d if isinstance(scales_d, (tuple, list)) else [scales_d, scales_h, scales_w])


@impl("upsample_nearest1d_backward", "upsample_nearest1d_backward.vec")
def upsample_nearest1d_backward(grad_output, output_size, input_size, scales=None):
    return upsample_backward(grad_output, 1, "nearest", output_size, input_size, False, scales)


@impl("upsample_nearest2d_backward", "upsample_nearest2d_backward.vec")
def upsample_nearest2d_backward(grad_output, output_size, input_size, scales_h=None, scales_w=None):
    return upsample_backward(grad_output, 2, "nearest", output_size, input_size, False, scales_h if isinstance(scales_h, (tuple, list)) else [scales_h, scales_w])


@impl("upsample_nearest3d_backward", "upsample_nearest3d_backward.vec")
def upsample_nearest3d_backward(grad_output, output_size, input_size, scales_d=None, scales_h=None, scales_w=None):
    return upsample_backward(grad_output, 3, "nearest", output_size, input_size, False, scales_d if isinstance(scales_d, (tuple, list)) else [scales_d, scales_h, scales_w])


@impl("upsample_linear1d_backward", "upsample_linear1d_backward.vec")
def upsample_linear1d_backward(grad_output, output_size, input_size, align_corners, scales=None):
    return upsample_backward(grad_output, 1, "linear", output_size, input_size, align_corners, scales)


@impl("upsample_bilinear2d_backward", "upsample_bilinear2d_backward.vec")
def upsample_bilinear2d_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return upsample_backward(grad_output, 2, "linear", output_size, input_size, align_corners, scales_h if isinstance(scales_h, (tuple, list)) else [scales_h, scales_w])


@impl("upsample_bicubic2d_backward", "upsample_bicubic2d_backward.vec")
def upsample_bicubic2d_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return upsample_backward(grad_output, 2, "cubic", output_size, input_size, align_corners, scales_h if isinstance(scales_h, (tuple, list)) else [scales_h, scales_w])


@impl("upsample_trilinear3d_backward", "upsample_trilinear3d_backward.vec")
def upsample_trilinear3d_backward(grad_output, output_size, input_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
    return upsample_backward(grad_output, 3, "linear", output_size, input_size, align_corners, scales_d if isinstance(scales_d, (tuple, list)) else [scales_d, scales_h, scales_w])
