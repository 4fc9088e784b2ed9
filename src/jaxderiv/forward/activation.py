"""Forward implementations of ATen's pointwise activations and of their `*_backward` ops.

The `*_backward` functions are ATen ops in their own right: the activations' formulas call
them as helpers, and their own spec entries differentiate them (double backward). Each is
written from ATen's kernel, including which side of a kink a boundary point falls on.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from . import impl


def _require_floating(name: str, x) -> None:
    """ATen has no integer or bool kernel for most activations."""
    if not jnp.issubdtype(jnp.result_type(x), jnp.inexact):
        raise TypeError(f"aten::{name} is not implemented for {jnp.result_type(x)} tensors")


def _float(x):
    """sigmoid and tanh compute integer and bool inputs in the default dtype, float32."""
    return x if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else jnp.asarray(x, jnp.float32)


def _zero_where(mask, grad, self):
    """`mask ? 0 : grad`, in the dtype and broadcast shape of TensorIterator(grad, self)."""
    dtype = jnp.result_type(grad, self)
    return jnp.where(mask, jnp.zeros((), dtype), jnp.asarray(grad, dtype))


# -- relu, threshold, clamps and shrinks (piecewise linear) ----------------------------------


@impl("relu")
def relu(self):
    """max(x, 0); NaN propagates and integers keep their dtype."""
    return jnp.maximum(self, jnp.zeros((), jnp.result_type(self)))


@impl("threshold")
def threshold(self, threshold, value):
    """x <= threshold ? value : x."""
    return jnp.where(self <= threshold, jnp.asarray(value, jnp.result_type(self)), self)


@impl("threshold_backward")
def threshold_backward(grad_output, self, threshold):
    """self <= threshold ? 0 : grad: relu'(0) is 0."""
    return _zero_where(self <= threshold, grad_output, self)


@impl("hardtanh")
def hardtanh(self, min_val=-1, max_val=1):
    """clamp(x, min_val, max_val); NaN propagates and integers keep their dtype."""
    dtype = jnp.result_type(self)
    return jnp.clip(self, jnp.asarray(min_val, dtype), jnp.asarray(max_val, dtype))


@impl("hardtanh_backward")
def hardtanh_backward(grad_output, self, min_val, max_val):
    """Zero outside the open interval: at the bounds themselves too, and at NaN (ATen's
    vectorized kernel keeps grad where min < x < max)."""
    return _zero_where(~((self > min_val) & (self < max_val)), grad_output, self)


@impl("leaky_relu")
def leaky_relu(self, negative_slope=0.01):
    """x > 0 ? x : x * negative_slope."""
    _require_floating("leaky_relu", self)
    return jnp.where(self > 0, self, self * negative_slope)


@impl("leaky_relu_backward")
def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    """self > 0 ? grad : grad * slope: the slope at 0 is negative_slope.

    From the result, the sign of the input is lost when the slope is negative; ATen refuses.
    """
    if self_is_result and negative_slope < 0:
        raise ValueError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported."
        )
    return jnp.where(self > 0, grad_output, grad_output * negative_slope)


@impl("hardshrink")
def hardshrink(self, lambd=0.5):
    """0 on the closed interval [-lambd, lambd], x elsewhere (and at NaN)."""
    _require_floating("hardshrink", self)
    return _zero_where((self >= -lambd) & (self <= lambd), self, self)


@impl("hardshrink_backward")
def hardshrink_backward(grad_out, self, lambd):
    """Zero on the closed interval [-lambd, lambd]: at its ends too, and at NaN (ATen's
    kernel keeps grad where x < -lambd or x > lambd)."""
    return _zero_where(~((self < -lambd) | (self > lambd)), grad_out, self)


@impl("softshrink")
def softshrink(self, lambd=0.5):
    """x - clamp(x, -lambd, lambd): x -+ lambd outside the interval, 0 inside, NaN kept."""
    _require_floating("softshrink", self)
    return self - jnp.clip(self, -lambd, lambd)


@impl("softshrink_backward")
def softshrink_backward(grad_output, self, lambd):
    """As hardshrink's: zero on the closed interval [-lambd, lambd]."""
    return hardshrink_backward(grad_output, self, lambd)


@impl("rrelu_with_noise")
def rrelu_with_noise(self, noise, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """Training: self * noise, the slopes drawn beforehand (ATen draws them into `noise`, 1
    where self > 0; JAX cannot write into an input). Otherwise leaky relu with the mean slope.

    The condition is the one rrelu_with_noise_backward uses, so both stay consistent.
    """
    _require_floating("rrelu_with_noise", self)
    if training and upper - lower > 1e-6:
        return self * noise
    return leaky_relu(self, (lower + upper) / 2)


@impl("rrelu_with_noise_functional")
def rrelu_with_noise_functional(self, noise, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """(rrelu_with_noise's output, the slopes it used), which ATen writes in place: in training
    the given draw (1 where self > 0), or `lower` where self <= 0 when the range is empty;
    otherwise noise as given."""
    out = rrelu_with_noise(self, noise, lower, upper, training, generator)
    if not training or upper - lower > 1e-6:
        return out, noise
    dtype = jnp.result_type(noise)
    return out, jnp.where(self > 0, jnp.ones((), dtype), jnp.full((), lower, dtype))


@impl("rrelu_with_noise_backward")
def rrelu_with_noise_backward(grad_output, self, noise, lower, upper, training, self_is_result):
    if training and upper - lower > 1e-6:
        return grad_output * noise
    return leaky_relu_backward(grad_output, self, (lower + upper) / 2, self_is_result)


# -- prelu: a learnt slope per channel (dimension 1) -------------------------------------------


def _prelu_weight(self, weight):
    """The weight shaped to broadcast over self: one slope, or one per channel (dimension 1)."""
    n = weight.size
    if n != 1:
        channels = self.shape[1] if self.ndim > 1 else 1
        if self.ndim == 0 or channels != n:
            raise ValueError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} and channel size = {channels}."
            )
    if weight.ndim > 1:
        raise ValueError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if weight.ndim == self.ndim:
        return weight
    shape = [1] * self.ndim
    if self.ndim > 1:
        shape[1] = n
    return weight.reshape(shape)


def _sum_to_weight(value, weight, self):
    """Sum a per-element gradient to the weight: over everything but the channels."""
    keep = (1,) if weight.size != 1 and self.ndim > 1 else ()
    axes = tuple(d for d in range(value.ndim) if d not in keep)
    return jnp.sum(value, axis=axes).reshape(weight.shape).astype(weight.dtype)


@impl("prelu")
def prelu(self, weight):
    _require_floating("prelu", self)
    if jnp.result_type(self) != jnp.result_type(weight):
        raise TypeError(
            f"prelu: self ({jnp.result_type(self)}) and weight ({jnp.result_type(weight)}) must have the same dtype"
        )
    return jnp.where(self > 0, self, _prelu_weight(self, weight) * self)


@impl("prelu_backward")
def prelu_backward(grad_output, self, weight):
    """(grad * (x > 0 ? 1 : w), sum of grad * (x > 0 ? 0 : x) per channel)."""
    w = _prelu_weight(self, weight)
    positive = self > 0
    grad_self = jnp.where(positive, grad_output, w * grad_output)
    grad_weight = jnp.where(positive, 0, self * grad_output)
    return grad_self, _sum_to_weight(grad_weight, weight, self)


# -- smooth activations -------------------------------------------------------------------------


@impl("sigmoid")
def sigmoid(self):
    return jax.nn.sigmoid(_float(self))


@impl("sigmoid_backward")
def sigmoid_backward(grad_output, output):
    """grad * conj(output * (1 - output)): PyTorch's convention for complex inputs."""
    return grad_output * jnp.conj((1 - output) * output)


@impl("tanh")
def tanh(self):
    return jnp.tanh(_float(self))


@impl("tanh_backward")
def tanh_backward(grad_output, output):
    return grad_output * jnp.conj(1 - output * output)


@impl("silu")
def silu(self):
    _require_floating("silu", self)
    return self * jax.nn.sigmoid(self)


@impl("silu_backward")
def silu_backward(grad_output, self):
    """grad * s * (1 + x * (1 - s)), s = sigmoid(x)."""
    s = jax.nn.sigmoid(self)
    return grad_output * s * (1 + self * (1 - s))


@impl("gelu")
def gelu(self, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF: the exact erf form, or with approximate='tanh'
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    _require_floating("gelu", self)
    if _gelu_tanh(approximate):
        return 0.5 * self * (1 + jnp.tanh(_gelu_inner(self)))
    return self * _normal_cdf(self)


def _gelu_tanh(approximate: str) -> bool:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return approximate == "tanh"


_GELU_BETA = math.sqrt(2 / math.pi)
_GELU_KAPPA = 0.044715


def _gelu_inner(x):
    return _GELU_BETA * (x + _GELU_KAPPA * x * x * x)


def _normal_cdf(x):
    return 0.5 * (1 + jax.lax.erf(x * math.sqrt(0.5)))


@impl("gelu_backward")
def gelu_backward(grad_output, self, approximate="none"):
    """grad * (Phi(x) + x * phi(x)), phi the standard normal density; with approximate='tanh'
    grad * (0.5 (1 + t) + 0.5 x (1 - t^2) u'), t = tanh(u), u = beta (x + kappa x^3)."""
    if _gelu_tanh(approximate):
        t = jnp.tanh(_gelu_inner(self))
        du = _GELU_BETA * (1 + 3 * _GELU_KAPPA * self * self)
        return grad_output * (0.5 * (1 + t) + 0.5 * self * (1 - t * t) * du)
    pdf = jnp.exp(-0.5 * self * self) / math.sqrt(2 * math.pi)
    return grad_output * (_normal_cdf(self) + self * pdf)


@impl("elu")
def elu(self, alpha=1, scale=1, input_scale=1):
    """x <= 0 ? alpha * scale * (exp(x * input_scale) - 1) : scale * x."""
    _require_floating("elu", self)
    negative = jnp.expm1(jnp.minimum(self, 0) * input_scale) * (alpha * scale)
    return jnp.where(self <= 0, negative, self * scale)


@impl("celu")
def celu(self, alpha=1.0):
    """elu with scale 1 and input_scale 1 / alpha."""
    if alpha == 0:
        raise ZeroDivisionError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return elu(self, alpha, 1.0, 1.0 / alpha)


@impl("elu_backward")
def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result=None):
    """elu's gradient, from its result (`is_result`) or from its input; 1.7's schema has no
    is_result and passes the result in its place: `elu_backward(grad, alpha, scale, input_scale, output)`.

    From the result y: y <= 0 ? grad * input_scale * (y + alpha * scale) : grad * scale;
    from the input x: x <= 0 ? grad * input_scale * alpha * scale * exp(x * input_scale) : grad * scale.
    """
    if self_or_result is None:
        is_result, self_or_result = True, is_result
    y = self_or_result
    if is_result:
        negative = grad_output * input_scale * (y + alpha * scale)
    else:
        negative = grad_output * (input_scale * alpha * scale) * jnp.exp(jnp.minimum(y, 0) * input_scale)
    return jnp.where(y <= 0, negative, grad_output * scale)


@impl("softplus")
def softplus(self, beta=1, threshold=20):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    _require_floating("softplus", self)
    z = self * beta
    return jnp.where(z > threshold, self, jnp.logaddexp(z, 0) / beta)


@impl("mish")
def mish(self):
    """x * tanh(softplus(x)), softplus with ATen's threshold 20 (the identity above it)."""
    _require_floating("mish", self)
    return self * jnp.tanh(softplus(self))


@impl("mish_backward")
def mish_backward(grad_output, self):
    """grad * (tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2)), sp = softplus(x)."""
    t = jnp.tanh(softplus(self))
    return grad_output * (t + self * jax.nn.sigmoid(self) * (1 - t * t))


@impl("softplus_backward")
def softplus_backward(grad_output, self, beta, threshold, output=None):
    """grad * sigmoid(beta * x), and grad where beta * x > threshold.

    Computed from self, as later ATen does (its schema dropped `output`, which 1.7's passes),
    not from `output`, which is softplus(self): the entry's formula for self assumes this
    dependence on self.
    """
    z = self * beta
    return jnp.where(z > threshold, grad_output, grad_output * jax.nn.sigmoid(z))


@impl("log_sigmoid_forward")
def log_sigmoid_forward(self):
    """(log(sigmoid(x)), buffer exp(-|x|)) as ATen's CPU kernel; stable for large |x|."""
    _require_floating("log_sigmoid_forward", self)
    buffer = jnp.exp(-jnp.abs(self))
    return jnp.minimum(self, 0) - jnp.log1p(buffer), buffer


@impl("log_sigmoid_backward")
def log_sigmoid_backward(grad_output, self, buffer):
    """grad * sigmoid(-x), with z = exp(-|x|) recomputed from self as ATen's CUDA kernel does.

    The CPU kernel reads z from `buffer`, which log_sigmoid_forward made equal; recomputing
    it keeps the derivative in self the one the entry's formula states.
    """
    z = jnp.exp(-jnp.abs(self))
    return jnp.where(self < 0, grad_output / (1 + z), grad_output * z / (1 + z))


@impl("hardsigmoid")
def hardsigmoid(self):
    """relu6(x + 3) / 6."""
    _require_floating("hardsigmoid", self)
    return jnp.clip(self + 3, 0, 6) / 6


@impl("hardsigmoid_backward")
def hardsigmoid_backward(grad_output, self):
    """grad / 6 on the open interval (-3, 3), else 0 (also at NaN)."""
    return _zero_where(~((self > -3) & (self < 3)), grad_output / 6, self)


@impl("hardswish")
def hardswish(self):
    """x * relu6(x + 3) / 6."""
    _require_floating("hardswish", self)
    return self * jnp.clip(self + 3, 0, 6) / 6


@impl("hardswish_backward")
def hardswish_backward(grad_output, self):
    """0 up to -3 (inclusive), grad * (x / 3 + 1/2) below 3, grad from 3 on (and at NaN).

    Which side the boundaries fall on follows PyTorch 2's kernel; older kernels differed.
    """
    return _zero_where(self <= -3, jnp.where(self < 3, grad_output * (self / 3 + 0.5), grad_output), self)
