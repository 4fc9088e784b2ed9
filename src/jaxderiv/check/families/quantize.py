"""Checker inputs of the fake-quantize ops.

Inputs sit at least 0.1 quantization steps away from every rounding boundary, on both sides
of the clamp range; scales are powers of two, exact in float32 as ATen stores them, and
learnable zero points sit 0.2 away from the half-integers their rounding turns at.

The spec's gradients of these ops are PyTorch's straight-through estimator (rounding counted
as the identity), not the derivative of the forward, which is zero between rounding steps.
Each sample names what the checker differentiates instead of the forward (`Sample.reference`):

- fixed quantization parameters, and the fused observer (its parameters from the running
  range): x clamped to the range whose rounding stays in [quant_min, quant_max], identity
  inside and constant outside; the identity where fake quantization is off.
- learnable scale and zero point: learned step size quantization (LSQ), whose estimator is the
  derivative of s * (clamp(round(x / s + z)) - z) with round, and the zero point's rounding
  and clamping, counted as the identity, scaled by grad_factor in s and z, and summed over the
  elements each parameter scales. That is no function's gradient (d/dscale depends on x,
  d/dx not on scale), so the reference is built at the sample: its values are that forward
  with rounding frozen as a shift by its residual at the sample (finite differences at the
  sample see the estimator), its derivative at any point the same construction frozen at
  that point, whose own derivative (rounding piecewise constant) judges the second order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...forward import implementation
from ..opdb import parity_in_float32, samples
from ..samples import Sample

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
