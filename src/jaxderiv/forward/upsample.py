"""Forward implementations of ATen's upsampling (nearest, nearest-exact, linear, bilinear, trilinear, bicubic, antialiased bilinear/bicubic/Lanczos) and their backwards.

Upsampling is separable and linear, one spatial dim at a time, from ATen's exact
source-index formulas computed in NumPy. Nearest reads one input position per output
(nearest_idx in float32): a repeat for an integer factor, a strided slice for an integer
downsampling, a gather otherwise, and its backward the adjoint sum. The interpolating modes
multiply by a fixed (out x in) matrix (area_pixel_compute_source_index, the cubic convolution
with A = -0.75 and clamped taps; the antialiased modes' normalized, scale-stretched filters);
their backward applies its transpose.
The `.vec` overloads have forwards of their own arguments (scale_factors, a list); the default
overloads also take a `.vec` call's arguments (output_size None, the list where the first scale
stands), as the `.vec` entries' formulas call them.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import impl
from ._spatial_samples import standard_normal, register_spatial_samples


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


def _nearest_source(i, o, scale):
    """nearest_idx: the input position each output reads, floor(dst * scale) in float32 with
    scale = 1/scales when given, else in/out (ATen's exact shortcuts for o == i and o == 2i)."""
    if o == i:
        return np.arange(o)
    if o == 2 * i:
        return np.arange(o) >> 1
    s = np.float32(1.0 / scale if scale is not None and scale > 0 else i / o)
    return np.minimum(np.floor(np.arange(o, dtype=np.float32) * s).astype(np.int64), i - 1)


def _nearest_exact_source(i, o, scale):
    """nearest_exact_idx: floor((dst + 0.5) * scale) with the float32 scale of nearest_idx (the
    product rounded to float32), at most i - 1: the input pixel whose centre is nearest."""
    s = np.float32(1.0 / scale if scale is not None and scale > 0 else i / o)
    product = ((np.arange(o) + 0.5) * np.float64(s)).astype(np.float32)
    return np.minimum(np.floor(product).astype(np.int64), i - 1)


def _nearest_pattern(src, i):
    """("repeat", f) where the positions are each input f times in order (an integer factor),
    ("stride", f) where they are every f-th input, else ("gather", None)."""
    o = len(src)
    if o % i == 0 and np.array_equal(src, np.arange(o) // (o // i)):
        return "repeat", o // i
    f = int(src[1]) if o > 1 else 1
    if f > 0 and np.array_equal(src, np.arange(o) * f):
        return "stride", f
    return "gather", None


def _nearest_axis(x, axis, src, i):
    """x read at the source positions along axis."""
    kind, f = _nearest_pattern(src, i)
    if kind == "repeat":
        if f == 1:
            return x
        wide = jnp.broadcast_to(jnp.expand_dims(x, axis + 1), x.shape[: axis + 1] + (f,) + x.shape[axis + 1 :])
        return jnp.reshape(wide, x.shape[:axis] + (i * f,) + x.shape[axis + 1 :])
    if kind == "stride":
        return lax.slice_in_dim(x, 0, (len(src) - 1) * f + 1, f, axis)
    return jnp.take(x, jnp.asarray(src), axis=axis)


def _nearest_axis_backward(g, axis, src, i):
    """The adjoint: each output's grad added into its source position along axis."""
    kind, f = _nearest_pattern(src, i)
    if kind == "repeat":
        return g if f == 1 else jnp.sum(jnp.reshape(g, g.shape[:axis] + (i, f) + g.shape[axis + 1 :]), axis=axis + 1)
    if kind == "stride":
        pads = [(0, 0, 0)] * g.ndim
        pads[axis] = (0, i - ((len(src) - 1) * f + 1), f - 1)
        return lax.pad(g, np.zeros((), g.dtype), pads)
    moved = jnp.moveaxis(g, axis, 0)
    return jnp.moveaxis(jax.ops.segment_sum(moved, jnp.asarray(src), num_segments=i, indices_are_sorted=True), 0, axis)


def _nearest(x, input_size, output_size, scales, adjoint, exact=False):
    """Nearest upsampling (or its adjoint) one spatial dim at a time, by index; `exact`: the
    nearest-exact mode's source positions (pixel centres) instead of nearest's (corners)."""
    n = len(output_size)
    source = _nearest_exact_source if exact else _nearest_source
    for d, (i, o, s) in enumerate(zip(tuple(input_size)[-n:], output_size, scales)):
        axis = x.ndim - n + d
        step = _nearest_axis_backward if adjoint else _nearest_axis
        x = step(x, axis, source(i, o, s), i)
    return x


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


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _keys(x, a=-0.5):
    """The antialiasing cubic filter: Keys' kernel with a = -0.5 (plain bicubic takes -0.75)."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _lanczos(x, a=3.0):
    """The Lanczos window of 3 lobes: sinc(x) sinc(x / 3) inside |x| < 3."""
    return np.where(np.abs(x) < a, np.sinc(x) * np.sinc(x / a), 0.0)


def _antialiased_matrix(i, o, align_corners, scale, interp_size, kernel):
    """ATen's antialiased weights (_compute_indices_min_size_weights_aa): output o_ reads the
    inputs within `support` of its centre scale * (o_ + 0.5), the filter stretched by the scale
    when downsampling (so it averages every input it covers), the weights normalized to sum 1."""
    s = _linear_scale(i, o, align_corners, scale)
    support = interp_size * 0.5 * s if s >= 1.0 else interp_size * 0.5
    invscale = 1.0 / s if s >= 1.0 else 1.0
    m = np.zeros((o, i))
    for row in range(o):
        center = s * (row + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), i)
        w = kernel((np.arange(lo, hi) - center + 0.5) * invscale)
        total = w.sum()
        m[row, lo:hi] = w / total if total != 0 else w
    return m


def _matrices(mode, input_size, output_size, align_corners, scales):
    n = len(output_size)
    ins = tuple(input_size[-n:])
    build = {
        "cubic": _cubic_matrix,
        "linear": _linear_matrix,
        "linear-aa": lambda i, o, a, s: _antialiased_matrix(i, o, a, s, 2, _triangle),
        "cubic-aa": lambda i, o, a, s: _antialiased_matrix(i, o, a, s, 4, _keys),
        "lanczos-aa": lambda i, o, a, s: _antialiased_matrix(i, o, a, s, 6, _lanczos),
    }[mode]
    return [build(i, o, align_corners, s) for i, o, s in zip(ins, output_size, scales)]


def _apply(x, matrices):
    """Multiply each of the last len(matrices) dims of x by its matrix."""
    n = len(matrices)
    for d, m in enumerate(matrices):
        axis = x.ndim - n + d
        x = jnp.moveaxis(jnp.tensordot(x, jnp.asarray(m, x.dtype), axes=([axis], [1])), -1, axis)
    return x


def upsample(x, n, mode, output_size, align_corners, scales):
    if mode.endswith("-aa") and not jnp.issubdtype(x.dtype, jnp.inexact):
        # ATen's uint8 path rounds each separable pass in fixed point: not reproduced here
        raise NotImplementedError(
            f"antialiased upsampling ({mode}) is implemented for floating-point inputs only, not {x.dtype}"
        )
    scales = _scales(scales, n)
    size = _sizes(x.shape, output_size, scales, n)
    if mode in ("nearest", "nearest-exact"):
        return _nearest(x, x.shape, size, scales, adjoint=False, exact=mode == "nearest-exact")
    return _apply(x, _matrices(mode, x.shape, size, align_corners, scales))


def upsample_backward(grad, n, mode, output_size, input_size, align_corners, scales):
    scales = _scales(scales, n)
    size = _sizes(input_size, output_size, scales, n)
    if mode in ("nearest", "nearest-exact"):
        return _nearest(grad, input_size, size, scales, adjoint=True, exact=mode == "nearest-exact")
    return _apply(grad, [m.T for m in _matrices(mode, tuple(input_size), size, align_corners, scales)])


def _scale_list(scales, *rest):
    """A default overload's scale arguments (scales; scales_h, scales_w; or scales_d, scales_h,
    scales_w) as one list. A `.vec` entry's formula calls the default overload with its
    scale_factors (a list) where the first scale stands: that list is taken as it is."""
    return scales if isinstance(scales, (tuple, list)) else [scales, *rest]


def _nearest_forwards(mode):
    """The forwards of a nearest mode's ops on 1, 2 and 3 spatial dims, then of their backwards."""

    def forward1d(self, output_size, scales=None):
        return upsample(self, 1, mode, output_size, False, _scale_list(scales))

    def forward2d(self, output_size, scales_h=None, scales_w=None):
        return upsample(self, 2, mode, output_size, False, _scale_list(scales_h, scales_w))

    def forward3d(self, output_size, scales_d=None, scales_h=None, scales_w=None):
        return upsample(self, 3, mode, output_size, False, _scale_list(scales_d, scales_h, scales_w))

    def backward1d(grad_output, output_size, input_size, scales=None):
        return upsample_backward(grad_output, 1, mode, output_size, input_size, False, _scale_list(scales))

    def backward2d(grad_output, output_size, input_size, scales_h=None, scales_w=None):
        scales = _scale_list(scales_h, scales_w)
        return upsample_backward(grad_output, 2, mode, output_size, input_size, False, scales)

    def backward3d(grad_output, output_size, input_size, scales_d=None, scales_h=None, scales_w=None):
        scales = _scale_list(scales_d, scales_h, scales_w)
        return upsample_backward(grad_output, 3, mode, output_size, input_size, False, scales)

    return (forward1d, forward2d, forward3d), (backward1d, backward2d, backward3d)


def _interpolating_forwards(mode):
    """The forwards of an interpolating mode's ops on 1, 2 and 3 spatial dims, then of their
    backwards: the nearest modes' arguments and align_corners."""

    def forward1d(self, output_size, align_corners, scales=None):
        return upsample(self, 1, mode, output_size, align_corners, _scale_list(scales))

    def forward2d(self, output_size, align_corners, scales_h=None, scales_w=None):
        return upsample(self, 2, mode, output_size, align_corners, _scale_list(scales_h, scales_w))

    def forward3d(self, output_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
        return upsample(self, 3, mode, output_size, align_corners, _scale_list(scales_d, scales_h, scales_w))

    def backward1d(grad_output, output_size, input_size, align_corners, scales=None):
        return upsample_backward(grad_output, 1, mode, output_size, input_size, align_corners, _scale_list(scales))

    def backward2d(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
        scales = _scale_list(scales_h, scales_w)
        return upsample_backward(grad_output, 2, mode, output_size, input_size, align_corners, scales)

    def backward3d(grad_output, output_size, input_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
        scales = _scale_list(scales_d, scales_h, scales_w)
        return upsample_backward(grad_output, 3, mode, output_size, input_size, align_corners, scales)

    return (forward1d, forward2d, forward3d), (backward1d, backward2d, backward3d)


def _nearest_vec_forwards(n):
    """The forwards of the `.vec` overloads of nearest's op on n spatial dims and of its backward:
    one list of scale_factors (or None, with an output_size) for the scale arguments."""

    def forward(input, output_size, scale_factors):
        return upsample(input, n, "nearest", output_size, False, scale_factors)

    def backward(grad_output, output_size, input_size, scale_factors):
        return upsample_backward(grad_output, n, "nearest", output_size, input_size, False, scale_factors)

    return forward, backward


def _interpolating_vec_forwards(n, mode):
    """The forwards of the `.vec` overloads of an interpolating mode's op on n spatial dims and of
    its backward: the nearest `.vec` overloads' arguments and align_corners."""

    def forward(input, output_size, align_corners, scale_factors):
        return upsample(input, n, mode, output_size, align_corners, scale_factors)

    def backward(grad_output, output_size, input_size, align_corners, scale_factors):
        return upsample_backward(grad_output, n, mode, output_size, input_size, align_corners, scale_factors)

    return forward, backward


# Each mode's ops on 1, 2 and 3 spatial dims (None: no such op), registered with their backwards
# (`<op>_backward`) and, for torch's public `upsample_*` ops, both's `.vec` overloads. The
# nearest-exact and antialiased modes are torch 2.13's.
_OPS = {
    "nearest": ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d"),
    "linear": ("upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d"),
    "cubic": (None, "upsample_bicubic2d", None),
    "nearest-exact": ("_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"),
    "linear-aa": (None, "_upsample_bilinear2d_aa", None),
    "cubic-aa": (None, "_upsample_bicubic2d_aa", None),
    "lanczos-aa": (None, "_upsample_lanczos2d_aa", None),
}
for _mode, _names in _OPS.items():
    _is_nearest = _mode.startswith("nearest")
    _forwards, _backwards = (_nearest_forwards if _is_nearest else _interpolating_forwards)(_mode)
    for _n, (_name, _forward, _backward) in enumerate(zip(_names, _forwards, _backwards), start=1):
        if _name is None:
            continue
        _overloads = {_name: _forward, f"{_name}_backward": _backward}
        if _name.startswith("upsample_"):
            _vec, _vec_backward = _nearest_vec_forwards(_n) if _is_nearest else _interpolating_vec_forwards(_n, _mode)
            _overloads.update({f"{_name}.vec": _vec, f"{_name}_backward.vec": _vec_backward})
        for _overload, _fn in _overloads.items():
            _fn.__name__ = _fn.__qualname__ = _overload
            impl(_overload)(_fn)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the upsampling ops (forward/upsample.py): nearest, linear, bilinear, bicubic
# and trilinear (each with its .vec overload), torch 2.13's nearest-exact and antialiased
# bilinear/bicubic/Lanczos modes, and their backward ops.
#
# All are linear in their input, so no kinks: what matters are the sizes. Output sizes are no
# multiples of the input's (the .vec overloads scale by 1.7), so source positions are neither a
# repeat nor a stride; the interpolating modes are sampled with align_corners False and True,
# nearest-exact also downsampling, and the antialiased modes also downsample, where the filter
# spans several inputs. A backward entry's grad_output has the output's shape.
_UP = {
    "nearest1d": (1, False),
    "linear1d": (1, True),
    "nearest2d": (2, False),
    "bilinear2d": (2, True),
    "bicubic2d": (2, True),
    "nearest3d": (3, False),
    "trilinear3d": (3, True),
}
_UP_IN = {1: (2, 2, 5), 2: (1, 2, 4, 5), 3: (1, 2, 3, 3, 4)}
_UP_OUT = {1: (8,), 2: (7, 9), 3: (5, 4, 6)}
for _mode, (_n, _corners) in _UP.items():
    _in, _out = _UP_IN[_n], _UP_OUT[_n]
    _ac = [{"align_corners": a} for a in ((False, True) if _corners else (False,))]
    register_spatial_samples(
        f"upsample_{_mode}",
        *[lambda rng, _i=_in, _o=_out, _a=a: {"self": standard_normal(rng, *_i), "output_size": _o, **_a} for a in _ac],
    )
    register_spatial_samples(
        f"upsample_{_mode}.vec",
        *[
            lambda rng, _i=_in, _a=a, _n=_n: {
                "input": standard_normal(rng, *_i),
                "output_size": None,
                "scale_factors": (1.7,) * _n,
                **_a,
            }
            for a in _ac
        ],
    )
    for _suffix, _vec in (("_backward", {}), ("_backward.vec", {"scale_factors": None})):
        register_spatial_samples(
            f"upsample_{_mode}{_suffix}",
            *[
                lambda rng, _i=_in, _o=_out, _a=a, _v=_vec: {
                    "grad_output": standard_normal(rng, *_i[:2], *_o),
                    "output_size": _o,
                    "input_size": _i,
                    **_v,
                    **_a,
                }
                for a in _ac
            ],
        )

# torch 2.13's nearest-exact mode: sizes whose source positions are neither a repeat nor a stride
for _n in (1, 2, 3):
    _in, _out = _UP_IN[_n], _UP_OUT[_n]
    register_spatial_samples(
        f"_upsample_nearest_exact{_n}d",
        lambda rng, _i=_in, _o=_out: {"self": standard_normal(rng, *_i), "output_size": _o},
        lambda rng, _i=_in, _o=_out: {
            "self": standard_normal(rng, *_i),
            "output_size": tuple(max(o // 3, 1) for o in _o),
        },
    )
    register_spatial_samples(
        f"_upsample_nearest_exact{_n}d_backward",
        lambda rng, _i=_in, _o=_out: {
            "grad_output": standard_normal(rng, *_i[:2], *_o),
            "output_size": _o,
            "input_size": _i,
        },
    )

# torch 2.13's antialiased modes: upsampling, and downsampling where the filter spans several inputs
_AA = [((1, 2, 4, 5), (7, 9), False), ((1, 2, 9, 11), (4, 5), False), ((1, 2, 9, 11), (4, 5), True)]
for _mode in ("bilinear2d_aa", "bicubic2d_aa", "lanczos2d_aa"):
    register_spatial_samples(
        f"_upsample_{_mode}",
        *[
            lambda rng, _i=i, _o=o, _a=a: {"self": standard_normal(rng, *_i), "output_size": _o, "align_corners": _a}
            for i, o, a in _AA
        ],
    )
    register_spatial_samples(
        f"_upsample_{_mode}_backward",
        *[
            lambda rng, _i=i, _o=o, _a=a: {
                "grad_output": standard_normal(rng, *_i[:2], *_o),
                "output_size": _o,
                "input_size": _i,
                "align_corners": _a,
            }
            for i, o, a in _AA
        ],
    )
