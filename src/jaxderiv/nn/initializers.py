"""torch.nn's default initialization: kaiming_uniform(a=sqrt(5)) weights, uniform(±1/sqrt(fan_in)) biases."""

from __future__ import annotations

import math

import jax


def fan_in(shape: tuple[int, ...]) -> int:
    """torch's fan_in of a weight: size(1) times the receptive field (dims 2...)."""
    return shape[1] * math.prod(shape[2:]) if len(shape) > 1 else shape[0]


def uniform(key, shape, bound: float, dtype):
    return jax.random.uniform(key, shape, dtype, -bound, bound)


def kaiming_uniform(key, shape, dtype, a: float = math.sqrt(5)):
    """torch.nn.init.kaiming_uniform_ with leaky_relu gain: bound = gain * sqrt(3 / fan_in)."""
    gain = math.sqrt(2.0 / (1 + a * a))
    return uniform(key, shape, gain * math.sqrt(3.0 / fan_in(shape)), dtype)


def bias_uniform(key, shape, weight_shape, dtype):
    """The bias of Linear and Conv layers: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    n = fan_in(weight_shape)
    return uniform(key, shape, 1 / math.sqrt(n) if n > 0 else 0.0, dtype)
