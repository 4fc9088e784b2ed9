"""Checker inputs of the fake-quantize ops.

Inputs sit at least 0.1 quantization steps away from every rounding boundary, on both sides
of the clamp range; scales are powers of two, exact in float32 as ATen stores them, and
learnable zero points sit 0.2 away from the half-integers their rounding turns at.

The spec's gradients of these ops are PyTorch's straight-through estimator (rounding counted
as the identity), not the derivative of the forward, which is zero between rounding steps.
For the ops with fixed quantization parameters, each sample names the function the estimator
is the derivative of: x clamped to the range whose rounding stays in [quant_min, quant_max]
(identity inside, constant outside). The checker differentiates that reference instead of the
forward. The learnable variants (gradients for scale and zero point too) and the fused
observer are declared known failures; tests/test_quantize.py compares them with torch 2.13.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...forward import implementation
from ..samples import Sample, known_failure, samples

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


def _reference(op, along=None, enabled=None):
    """The reference of `op`'s sample: the surrogate for the output, the forward for a mask output.
    `along` broadcasts per-channel parameters; `enabled` names the switch argument if any."""
    forward = implementation(op.name)
    names = [a.name for a in op.schema.arguments]

    def reference(*values):
        kw = dict(zip(names, values))
        scale, zero_point = kw["scale"], kw["zero_point"]
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
        kw = {"self": _values(rng, (3, 4), SCALE, 3), "scale": np.array([SCALE], np.float32), "zero_point": np.array([3], np.int32),
              "fake_quant_enabled": np.array([enabled], np.int64), "quant_min": QMIN, "quant_max": QMAX}
        return Sample((), kw, f"fake_quant_enabled={enabled}", reference=_reference(op, enabled="fake_quant_enabled"))

    return [make(1), make(0)]


def _channel_params(rng, channels):
    return np.array([0.25, 0.5, 0.125][:channels]), np.array([3, 0, 7][:channels], np.int32)


@samples("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask")
def _per_channel(op, rng, dtype=np.float64):
    scale, zp = _channel_params(rng, 3)
    x = _values(rng, (2, 3, 4), scale[:, None], zp[:, None])
    kw = {"self": x, "scale": scale.astype(np.float32), "zero_point": zp, "axis": 1, "quant_min": QMIN, "quant_max": QMAX}
    return [Sample((), kw, "axis=1", reference=_reference(op, along="axis"))]


@samples("_fake_quantize_learnable_per_tensor_affine")
def _learnable_per_tensor(op, rng, dtype=np.float64):
    kw = {"self": _values(rng, (3, 4), SCALE, 3), "scale": np.array([SCALE]), "zero_point": np.array([3.2]), "quant_min": QMIN, "quant_max": QMAX}
    if any(a.name == "grad_factor" for a in op.schema.arguments):
        kw["grad_factor"] = 0.5
    return [Sample((), kw, "zero_point=3.2")]


@samples("_fake_quantize_learnable_per_channel_affine")
def _learnable_per_channel(op, rng, dtype=np.float64):
    scale, zp = _channel_params(rng, 3)
    kw = {"self": _values(rng, (2, 3, 4), scale[:, None], zp[:, None]), "scale": scale, "zero_point": zp + np.array([0.2, -0.1, 0.3]),
          "axis": 1, "quant_min": QMIN, "quant_max": QMAX}
    if any(a.name == "grad_factor" for a in op.schema.arguments):
        kw["grad_factor"] = 0.5
    return [Sample((), kw, "axis=1")]


_STE = (
    "by design: the spec's gradient is PyTorch's straight-through estimator (rounding as the identity), "
    "while the forward's derivative is zero between rounding steps; tests/test_quantize.py compares it with torch 2.13"
)
known_failure(_STE, "_fake_quantize_learnable_per_tensor_affine", "_fake_quantize_learnable_per_channel_affine")


@samples("_fused_moving_avg_obs_fq_helper")
def _fused_observer(op, rng, dtype=np.float64):
    """The observer off, its running range [0, 63.75] giving scale 0.25 and zero point 0 over
    0..255: inputs keep clear of rounding boundaries. Fake quantization on, then off."""

    def make(fake_quant):
        kw = {"self": _values(rng, (3, 4), SCALE, 0), "observer_on": np.array([0]), "fake_quant_on": np.array([fake_quant]),
              "running_min": np.array([0.0], np.float32), "running_max": np.array([255 * SCALE], np.float32),
              "scale": np.ones(1, np.float32), "zero_point": np.zeros(1, np.int32), "averaging_const": 0.01,
              "quant_min": 0, "quant_max": 255, "ch_axis": 0}
        return Sample((), kw, f"fake_quant_on={fake_quant}")

    return [make(1), make(0)]


known_failure(_STE, "_fused_moving_avg_obs_fq_helper", modes=("vjp", "jvp"))
