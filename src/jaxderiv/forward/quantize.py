"""Forward implementations of ATen's fake-quantize ops and of their `*_backward` ops.

Fake quantization is a dense float op: q = round_half_even(x / scale) + zero_point, clamped
to [quant_min, quant_max], then mapped back as (q - zero_point) * scale. The mask marks the
elements whose q was not clamped. As ATen's kernels do, the scale is a float32 value and the
division is a multiplication by the float32 `1.0f / scale`; the rest runs in x's dtype.

The `*_backward` ops are PyTorch's straight-through estimator: rounding counts as the
identity, so x's gradient is the incoming one where the mask is set; the learnable variants
also give scale's and zero_point's gradients, summed over the elements each one scales.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import impl


def _float32(v):
    return jnp.asarray(v).astype(jnp.float32)


def _qparams(x, scale):
    """(scale, 1 / scale) as ATen computes them in float32, then in x's dtype."""
    s = _float32(scale)
    return s.astype(x.dtype), (jnp.float32(1.0) / s).astype(x.dtype)


def _quantized(x, scale, zero_point):
    """(q before clamping, scale in x's dtype): q = nearbyint(x * inv_scale) + zero_point."""
    s, inv = _qparams(x, scale)
    z = jnp.asarray(zero_point)
    if jnp.issubdtype(z.dtype, jnp.floating):  # a float zero point is added before rounding
        return jnp.round(x * inv + z.astype(x.dtype)), s
    return jnp.round(x * inv) + z.astype(x.dtype), s


def _fake_quantize(x, scale, zero_point, quant_min, quant_max, float32_product=False):
    """(output, mask) of fake quantization with scale/zero_point broadcast against x.

    `float32_product`: the per-tensor kernel multiplies (q - zero_point) by the scale in float32.
    """
    q, s = _quantized(x, scale, zero_point)
    z = jnp.asarray(zero_point).astype(x.dtype)
    steps = jnp.clip(q, quant_min, quant_max) - z
    out = (steps.astype(jnp.float32) * _float32(scale)).astype(x.dtype) if float32_product else steps * s
    return out, (q >= quant_min) & (q <= quant_max)


def _along(v, axis, ndim):
    """A per-channel vector shaped to broadcast along `axis` of an ndim-dim tensor."""
    axis = axis % ndim
    return jnp.reshape(v, (-1,) + (1,) * (ndim - 1 - axis))


def _check_range(quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")


# -- fixed quantization parameters ------------------------------------------------------------


@impl("fake_quantize_per_tensor_affine_cachemask")
def fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min, quant_max):
    _check_range(quant_min, quant_max)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    return _fake_quantize(self, scale, int(zero_point), quant_min, quant_max, float32_product=True)


@impl("fake_quantize_per_tensor_affine")
def fake_quantize_per_tensor_affine(self, scale, zero_point, quant_min, quant_max):
    return fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min, quant_max)[0]


@impl("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams")
def _fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
    self, scale, zero_point, fake_quant_enabled, quant_min, quant_max
):
    """Scale and zero point as one-element tensors; when fake_quant_enabled is 0, x and a full mask."""
    _check_range(quant_min, quant_max)
    out, mask = _fake_quantize(
        self, jnp.reshape(scale, ()), jnp.reshape(zero_point, ()).astype(jnp.int64), quant_min, quant_max, True
    )
    on = jnp.reshape(fake_quant_enabled, ()) != 0
    return jnp.where(on, out, self), jnp.where(on, mask, True)


@impl("fake_quantize_per_channel_affine_cachemask")
def fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis, quant_min, quant_max):
    _check_range(quant_min, quant_max)
    if (
        scale.ndim != 1
        or zero_point.ndim != 1
        or scale.shape[0] != self.shape[axis]
        or zero_point.shape[0] != self.shape[axis]
    ):
        raise RuntimeError("scale and zero_point must be 1-D with one entry per channel of `axis`")
    return _fake_quantize(
        self, _along(scale, axis, self.ndim), _along(zero_point, axis, self.ndim), quant_min, quant_max
    )


@impl("fake_quantize_per_channel_affine")
def fake_quantize_per_channel_affine(self, scale, zero_point, axis, quant_min, quant_max):
    return fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis, quant_min, quant_max)[0]


@impl("fake_quantize_per_tensor_affine_cachemask_backward", "fake_quantize_per_channel_affine_cachemask_backward")
def fake_quantize_cachemask_backward(grad, mask):
    return grad * mask


@impl("fake_quantize_per_tensor_affine_backward")
def fake_quantize_per_tensor_affine_backward(grad, self, scale, zero_point, quant_min, quant_max):
    """PyTorch <= 1.7: the mask recomputed from the input."""
    return grad * fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min, quant_max)[1]


@impl("fake_quantize_per_channel_affine_backward")
def fake_quantize_per_channel_affine_backward(grad, self, scale, zero_point, axis, quant_min, quant_max):
    return grad * fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis, quant_min, quant_max)[1]


# -- learnable quantization parameters ----------------------------------------------------------


def _rounded_zero_point(zero_point, quant_min, quant_max):
    """The forward's zero point: nearbyint of the float32 value, clamped, as an integer."""
    return jnp.clip(jnp.round(_float32(zero_point)), quant_min, quant_max).astype(jnp.int64)


@impl("_fake_quantize_learnable_per_tensor_affine")
def _fake_quantize_learnable_per_tensor_affine(self, scale, zero_point, quant_min, quant_max, grad_factor=1.0):
    _check_range(quant_min, quant_max)
    z = _rounded_zero_point(jnp.reshape(zero_point, (-1,))[0], quant_min, quant_max)
    return _fake_quantize(self, jnp.reshape(scale, (-1,))[0], z, quant_min, quant_max, True)[0]


@impl("_fake_quantize_learnable_per_channel_affine")
def _fake_quantize_learnable_per_channel_affine(self, scale, zero_point, axis, quant_min, quant_max, grad_factor=1.0):
    _check_range(quant_min, quant_max)
    z = _rounded_zero_point(zero_point, quant_min, quant_max)
    return fake_quantize_per_channel_affine(self, scale, z, axis, quant_min, quant_max)


def _learnable_grads(grad, x, scale, zero_point, quant_min, quant_max, grad_factor):
    """ATen's per-element (dx, dscale, dzero_point) with scale and zero_point broadcast to x.

    Where q is clamped: dscale = grad * (bound - zero_point), dzero_point = -grad * scale;
    elsewhere: dscale = grad * (x_fq - x) / scale (rounding as the identity), dzero_point = 0.
    ATen's kernels run in float32 and take no other dtype; a float64 x runs in float64.
    """
    out_dtype, dtype = x.dtype, jnp.promote_types(x.dtype, jnp.float32)
    x, grad = x.astype(dtype), grad.astype(dtype)
    s = jnp.asarray(scale).astype(dtype)
    inv = 1 / s
    z = zero_point.astype(dtype)
    q = jnp.round(z + x * inv)
    inside = (q >= quant_min) & (q <= quant_max)
    fq = (jnp.clip(q, quant_min, quant_max) - z) * s
    bound = jnp.where(q < quant_min, quant_min - z, quant_max - z)
    dx = (grad * inside).astype(out_dtype)
    dscale = jnp.where(inside, grad * (fq - x) * inv, grad * bound) * grad_factor
    dzero = jnp.where(inside, 0.0, -grad * s) * grad_factor
    return dx, dscale, dzero


@impl("_fake_quantize_learnable_per_tensor_affine_backward")
def _fake_quantize_learnable_per_tensor_affine_backward(
    grad, self, scale, zero_point, quant_min, quant_max, grad_factor=1.0
):
    """The backward's zero point is the float32 value plus 0.5, clamped, truncated (ATen's)."""
    z = jnp.trunc(jnp.clip(_float32(jnp.reshape(zero_point, (-1,))[0]) + 0.5, quant_min, quant_max))
    dx, ds, dz = _learnable_grads(grad, self, jnp.reshape(scale, (-1,))[0], z, quant_min, quant_max, grad_factor)
    return (
        dx,
        jnp.reshape(jnp.sum(ds), scale.shape).astype(scale.dtype),
        jnp.reshape(jnp.sum(dz), zero_point.shape).astype(zero_point.dtype),
    )


@impl("_fake_quantize_learnable_per_channel_affine_backward")
def _fake_quantize_learnable_per_channel_affine_backward(
    grad, self, scale, zero_point, axis, quant_min, quant_max, grad_factor=1.0
):
    """Per-element grads as per tensor, with the forward's rounded zero points; summed per channel."""
    z = jnp.clip(jnp.round(zero_point), quant_min, quant_max)
    n = self.ndim
    dx, ds, dz = _learnable_grads(
        grad, self, _along(scale, axis, n), _along(z, axis, n), quant_min, quant_max, grad_factor
    )
    others = tuple(d for d in range(n) if d != axis % n)
    return dx, jnp.sum(ds, axis=others).astype(scale.dtype), jnp.sum(dz, axis=others).astype(zero_point.dtype)


# -- observer and fake quantization fused ---------------------------------------------------------

SMALL_SCALE = 6.1e-5  # the smallest scale ATen's ChooseQuantizationParams returns (fp16's min normal)


def _choose_qparams(lo, hi, qmin, qmax, symmetric):
    """(scale, zero_point) covering [lo, hi] (float32 arrays) with qmin..qmax, as ATen's
    ChooseQuantizationParams: the range widened to contain 0, a tiny scale raised to
    SMALL_SCALE, the zero point from the bound that adds less rounding error, then an integer."""
    wide = jnp.result_type(float)  # ATen's double intermediates, where x64 allows
    f32 = jnp.float32
    if symmetric:
        sym_lo, sym_hi = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        straddles = (lo < 0) & (hi > 0)
        m = jnp.maximum(jnp.abs(lo / f32(sym_lo)), jnp.abs(hi / f32(sym_hi))).astype(wide)
        lo = jnp.where(straddles, (m * sym_lo).astype(f32), lo)
        hi = jnp.where(straddles, (m * sym_hi).astype(f32), hi)
    lo, hi = jnp.minimum(lo, f32(0)), jnp.maximum(hi, f32(0))
    scale = (hi.astype(wide) - lo.astype(wide)) / (qmax - qmin)
    s32 = scale.astype(f32)
    scale = jnp.where((s32 == 0) | jnp.isinf(f32(1) / s32), 0.1, scale)
    small = scale < f32(SMALL_SCALE)
    amplifier = (f32(SMALL_SCALE) / scale.astype(f32)).astype(f32)
    lo_small = jnp.where(lo == 0, lo, jnp.where(hi == 0, f32(-SMALL_SCALE * (qmax - qmin)), lo * amplifier))
    hi_small = jnp.where(lo == 0, f32(SMALL_SCALE * (qmax - qmin)), jnp.where(hi == 0, hi, hi * amplifier))
    lo, hi = jnp.where(small, lo_small, lo), jnp.where(small, hi_small, hi)
    scale = jnp.where(small, jnp.asarray(SMALL_SCALE, f32).astype(wide), scale)
    from_min, from_max = qmin - lo / scale, qmax - hi / scale
    zp = jnp.where(abs(qmin) - jnp.abs(lo / scale) < abs(qmax) - jnp.abs(hi / scale), from_min, from_max)
    if symmetric:
        zp = jnp.where((lo < 0) & (hi > 0), (qmin + qmax) / 2, zp)
    zp = jnp.clip(jnp.round(zp), qmin, qmax).astype(jnp.int32)
    return scale.astype(f32), zp


@impl("_fused_moving_avg_obs_fq_helper")
def _fused_moving_avg_obs_fq_helper(
    self,
    observer_on,
    fake_quant_on,
    running_min,
    running_max,
    scale,
    zero_point,
    averaging_const,
    quant_min,
    quant_max,
    ch_axis,
    per_row_fake_quant=False,
    symmetric_quant=False,
):
    """(output, mask): when observer_on, a moving average of self's min and max (per row of a
    2-d self when per_row_fake_quant) updates the running range; when fake_quant_on, self is
    fake-quantized with the parameters that range gives, else returned with a full mask.

    ATen writes the new running_min/max, scale and zero_point into its arguments; JAX cannot
    write into inputs, so only the two outputs are returned. `scale` and `zero_point` give
    only their shapes. The moving average runs in float32, as in ATen.
    """
    _check_range(quant_min, quant_max)
    x32 = jnp.asarray(self).astype(jnp.float32)
    if per_row_fake_quant:
        if ch_axis != 0:
            raise RuntimeError(
                "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0"
            )
        cur_lo, cur_hi = jnp.min(x32, axis=1), jnp.max(x32, axis=1)
    else:
        cur_lo, cur_hi = jnp.min(x32), jnp.max(x32)
    run_lo = jnp.reshape(jnp.asarray(running_min, jnp.float32), jnp.shape(cur_lo))
    run_hi = jnp.reshape(jnp.asarray(running_max, jnp.float32), jnp.shape(cur_hi))
    c = jnp.float32(averaging_const)
    observe = jnp.reshape(observer_on, (-1,))[0] != 0
    lo = jnp.where(observe, jnp.where(jnp.isinf(run_lo), cur_lo, run_lo + c * (cur_lo - run_lo)), run_lo)
    hi = jnp.where(observe, jnp.where(jnp.isinf(run_hi), cur_hi, run_hi + c * (cur_hi - run_hi)), run_hi)
    s, z = _choose_qparams(lo, hi, quant_min, quant_max, symmetric_quant)
    if per_row_fake_quant:
        out, mask = _fake_quantize(
            self, _along(s, ch_axis, self.ndim), _along(z, ch_axis, self.ndim), quant_min, quant_max
        )
    else:
        out, mask = _fake_quantize(
            self, s, z.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32), quant_min, quant_max, True
        )
    on = jnp.reshape(fake_quant_on, (-1,))[0] != 0
    return jnp.where(on, out, self), jnp.where(on, mask, True)
