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
import numpy as np

from ..records import Sample, parity_in_float32, samples
from . import impl, implementation


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


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the fake-quantize ops.
#
# Inputs sit at least 0.1 quantization steps away from every rounding boundary, on both sides
# of the clamp range; scales are powers of two, exact in float32 as ATen stores them, and
# learnable zero points sit 0.2 away from the half-integers their rounding turns at.
#
# The spec's gradients of these ops are PyTorch's straight-through estimator (rounding counted
# as the identity), not the derivative of the forward, which is zero between rounding steps.
# Each sample names what the checker differentiates instead of the forward (`Sample.reference`):
#
# - fixed quantization parameters, and the fused observer (its parameters from the running
#   range): x clamped to the range whose rounding stays in [quant_min, quant_max], identity
#   inside and constant outside; the identity where fake quantization is off.
# - learnable scale and zero point: learned step size quantization (LSQ), whose estimator is the
#   derivative of s * (clamp(round(x / s + z)) - z) with round, and the zero point's rounding
#   and clamping, counted as the identity, scaled by grad_factor in s and z, and summed over the
#   elements each parameter scales. That is no function's gradient (d/dscale depends on x,
#   d/dx not on scale), so the reference is built at the sample: its values are that forward
#   with rounding frozen as a shift by its residual at the sample (finite differences at the
#   sample see the estimator), its derivative at any point the same construction frozen at
#   that point, whose own derivative (rounding piecewise constant) judges the second order.
QMIN, QMAX = 0, 15
SCALE = 0.25


def _values(rng, shape, scale, zero_point):
    """x / scale + zero_point = an integer in [QMIN - 4, QMAX + 4] plus an offset in [-0.4, 0.4]."""
    k = rng.integers(QMIN - 4, QMAX + 5, size=shape)
    return (k - zero_point + rng.uniform(-0.4, 0.4, size=shape)) * scale


def _straight_through(x, scale, zero_point, quant_min, quant_max):
    """The surrogate: x inside the values that round into [quant_min, quant_max], clamped outside."""
    scale, zero_point = jnp.asarray(scale, x.dtype), jnp.asarray(zero_point, x.dtype)
    return jnp.clip(x, (quant_min - zero_point - 0.5) * scale, (quant_max - zero_point + 0.5) * scale)


def _reference(op, along=None, enabled=None, qparams=None):
    """The reference of `op`'s sample: the surrogate for the output, the forward for a mask output.
    `along` broadcasts per-channel parameters; `enabled` names the switch argument if any;
    `qparams(arguments) -> (scale, zero_point)` where the arguments do not hold them as such."""
    forward = implementation(op.name)
    names = [a.name for a in op.schema.arguments]

    def reference(*values):
        kw = dict(zip(names, values))
        scale, zero_point = qparams(kw) if qparams else (kw["scale"], kw["zero_point"])
        if along is not None:
            shape = [1] * kw["self"].ndim
            shape[kw[along]] = -1
            scale, zero_point = jnp.reshape(scale, shape), jnp.reshape(zero_point, shape)
        out = _straight_through(kw["self"], scale, zero_point, kw["quant_min"], kw["quant_max"])
        if enabled is not None:
            out = jnp.where(jnp.reshape(kw[enabled], ()) != 0, out, kw["self"])
        if len(op.schema.returns) == 1:
            return out
        return (out, *forward(*values)[1:])

    return reference


@samples("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask")
def _per_tensor(op, rng, dtype=np.float64):
    kw = {"self": _values(rng, (3, 4), SCALE, 3), "scale": SCALE, "zero_point": 3, "quant_min": QMIN, "quant_max": QMAX}
    return [Sample((), kw, "zero_point=3", reference=_reference(op))]


@samples("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams")
def _tensor_qparams(op, rng, dtype=np.float64):
    def make(enabled):
        kw = {
            "self": _values(rng, (3, 4), SCALE, 3),
            "scale": np.array([SCALE], np.float32),
            "zero_point": np.array([3], np.int32),
            "fake_quant_enabled": np.array([enabled], np.int64),
            "quant_min": QMIN,
            "quant_max": QMAX,
        }
        return Sample((), kw, f"fake_quant_enabled={enabled}", reference=_reference(op, enabled="fake_quant_enabled"))

    return [make(1), make(0)]


def _channel_params(rng, channels):
    return np.array([0.25, 0.5, 0.125][:channels]), np.array([3, 0, 7][:channels], np.int32)


@samples("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask")
def _per_channel(op, rng, dtype=np.float64):
    scale, zp = _channel_params(rng, 3)
    x = _values(rng, (2, 3, 4), scale[:, None], zp[:, None])
    kw = {
        "self": x,
        "scale": scale.astype(np.float32),
        "zero_point": zp,
        "axis": 1,
        "quant_min": QMIN,
        "quant_max": QMAX,
    }
    return [Sample((), kw, "axis=1", reference=_reference(op, along="axis"))]


def _learned_step(x, scale, zero_point, at, quant_min, quant_max, grad_factor):
    """Learned step size quantization's straight-through forward, with what rounding decides
    taken at the point `at` = (x, scale, zero_point): s * (clamp(x / s + z + r) - z), where r
    is the rounding residual round(x0 / s0 + z0) - (x0 / s0 + z0) (rounding as a shift, the
    identity for the derivative), z the zero point, rounded and clamped at z0 (also a shift),
    and the clamp's side the one of the rounded value at `at`. grad_factor scales the
    derivative in scale and zero_point: s = g * scale + (1 - g) * s0, likewise z.

    A smooth function of (x, scale, zero_point); at `at` it equals the forward and its
    derivative is PyTorch's estimator there.
    """
    x0, s0, z0 = at
    z_rounded = jnp.clip(jnp.round(z0), quant_min, quant_max)
    q = jnp.round(x0 / s0 + z_rounded)
    residual = q - (x0 / s0 + z_rounded)
    s = grad_factor * scale + (1 - grad_factor) * s0
    z = grad_factor * zero_point + (z_rounded - grad_factor * z0)
    v = jnp.where(q < quant_min, quant_min, jnp.where(q > quant_max, quant_max, x / s + z + residual))
    return s * (v - z)


def _learnable_reference(op, anchor, along=None):
    """The reference of a learnable fake quantize's sample at `anchor` (the sample's self, scale
    and zero_point): its values are `_learned_step` with rounding taken at the anchor (finite
    differences there see the estimator), its derivative at any point y the derivative of
    `_learned_step` with rounding taken at y: PyTorch's estimator as a function of y, whose
    own derivative (rounding piecewise constant) the second-order check compares."""
    names = [a.name for a in op.schema.arguments]

    def reference(*values):
        kw = dict(zip(names, values))
        grad_factor = kw.get("grad_factor", 1.0)

        def shaped(x, scale, zero_point):
            if along is None:
                return x, scale, zero_point
            shape = [1] * jnp.ndim(x)
            shape[kw[along]] = -1
            return x, jnp.reshape(scale, shape), jnp.reshape(zero_point, shape)

        def at(point):
            return lambda x, scale, zero_point: _learned_step(
                *shaped(x, scale, zero_point), shaped(*point), kw["quant_min"], kw["quant_max"], grad_factor
            )

        @jax.custom_jvp
        def quantized(x, scale, zero_point):
            return at(tuple(jnp.asarray(v) for v in anchor))(x, scale, zero_point)

        @quantized.defjvp
        def _(primals, tangents):
            return quantized(*primals), jax.jvp(at(primals), primals, tangents)[1]

        return quantized(kw["self"], kw["scale"], kw["zero_point"])

    return reference


@samples("_fake_quantize_learnable_per_tensor_affine")
def _learnable_per_tensor(op, rng, dtype=np.float64):
    kw = {
        "self": _values(rng, (3, 4), SCALE, 3),
        "scale": np.array([SCALE]),
        "zero_point": np.array([3.2]),
        "quant_min": QMIN,
        "quant_max": QMAX,
    }
    if any(a.name == "grad_factor" for a in op.schema.arguments):
        kw["grad_factor"] = 0.5
    anchor = (kw["self"], kw["scale"], kw["zero_point"])
    return [Sample((), kw, "zero_point=3.2", reference=_learnable_reference(op, anchor))]


@samples("_fake_quantize_learnable_per_channel_affine")
def _learnable_per_channel(op, rng, dtype=np.float64):
    scale, zp = _channel_params(rng, 3)
    kw = {
        "self": _values(rng, (2, 3, 4), scale[:, None], zp[:, None]),
        "scale": scale,
        "zero_point": zp + np.array([0.2, -0.1, 0.3]),
        "axis": 1,
        "quant_min": QMIN,
        "quant_max": QMAX,
    }
    if any(a.name == "grad_factor" for a in op.schema.arguments):
        kw["grad_factor"] = 0.5
    anchor = (kw["self"], kw["scale"], kw["zero_point"])
    return [Sample((), kw, "axis=1", reference=_learnable_reference(op, anchor, along="axis"))]


@samples("_fused_moving_avg_obs_fq_helper")
def _fused_observer(op, rng, dtype=np.float64):
    """The observer off, its running range [0, 63.75] giving scale 0.25 and zero point 0 over
    0..255: inputs keep clear of rounding boundaries. Fake quantization on, then off."""

    def make(fake_quant):
        kw = {
            "self": _values(rng, (3, 4), SCALE, 0),
            "observer_on": np.array([0]),
            "fake_quant_on": np.array([fake_quant]),
            "running_min": np.array([0.0], np.float32),
            "running_max": np.array([255 * SCALE], np.float32),
            "scale": np.ones(1, np.float32),
            "zero_point": np.zeros(1, np.int32),
            "averaging_const": 0.01,
            "quant_min": 0,
            "quant_max": 255,
            "ch_axis": 0,
        }
        return Sample(
            (),
            kw,
            f"fake_quant_on={fake_quant}",
            reference=_reference(op, enabled="fake_quant_on", qparams=_running_range_qparams),
        )

    return [make(1), make(0)]


def _running_range_qparams(kw):
    """The quantization parameters of the samples' running range (the observer off, one range,
    asymmetric): [min(lo, 0), max(hi, 0)] mapped affinely onto [quant_min, quant_max]."""
    lo = jnp.minimum(jnp.reshape(kw["running_min"], ()), 0.0)
    hi = jnp.maximum(jnp.reshape(kw["running_max"], ()), 0.0)
    scale = (hi - lo) / (kw["quant_max"] - kw["quant_min"])
    return scale, jnp.clip(jnp.round(kw["quant_min"] - lo / scale), kw["quant_min"], kw["quant_max"])


# -- parity with torch ------------------------------------------------------------------------

parity_in_float32(
    "torch's CPU kernel takes float32 only",
    "_fake_quantize_learnable_per_tensor_affine",
    "_fake_quantize_learnable_per_channel_affine",
)
