"""FunctionsManual helpers of the activation formulas, written from the math.

The `*_backward` helpers the formulas call are ATen ops, found as forward implementations
(forward/activation.py); these are the ones that exist only in FunctionsManual.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..forward.activation import (
    GELU_BETA,
    GELU_KAPPA,
    gelu_inner,
    gelu_tanh,
    prelu_weight,
    sum_to_weight,
    elu_backward,
    gelu_backward,
    sigmoid_backward,
    silu_backward,
)
from ..namespace import helper


# PyTorch has these twins of silu_backward and gelu_backward because its kernels cannot be
# differentiated again; JAX code always can, so each twin is the same function.
helper("infinitely_differentiable_silu_backward")(silu_backward)
helper("infinitely_differentiable_gelu_backward")(gelu_backward)


@helper("infinitely_differentiable_mish_backward")
def infinitely_differentiable_mish_backward(grad_output, input):
    """mish'(x) = tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), sp = log1p(exp(x)) (no threshold)."""
    t = jnp.tanh(jnp.log1p(jnp.exp(input)))
    return grad_output * (t + input * jax.nn.sigmoid(input) * (1.0 - t * t))


@helper("softplus_double_backward")
def softplus_double_backward(grad, input, beta, threshold):
    """d/dx of sigmoid(beta * x): beta * s * (1 - s), zero where softplus is the identity."""
    x = input * beta
    return sigmoid_backward(grad, jax.nn.sigmoid(x)) * (x < threshold).astype(jnp.result_type(grad)) * beta


@helper("elu_double_backward")
def elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result, self_or_result):
    """d/d(self_or_result) of elu_backward, times grad: only the negative side has a slope.

    From the result y the negative side is grad_output * input_scale * (y + alpha * scale):
    slope grad_output * input_scale. From the input x it is elu_backward's own exponential,
    whose slope is input_scale times itself.
    """
    negative = (self_or_result < 0).astype(jnp.result_type(grad))
    scaled = grad * grad_output * input_scale
    if is_result:
        return scaled * negative
    return elu_backward(scaled, alpha, scale, input_scale, False, self_or_result) * negative


@helper("gelu_double_backward")
def gelu_double_backward(grad, grad_output, self, approximate="none"):
    """grad * grad_output * gelu''(x): phi(x) (2 - x^2) for the exact form; for the tanh form,
    with t = tanh(u), u = beta (x + kappa x^3): (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2)."""
    x = self
    if gelu_tanh(approximate):
        t = jnp.tanh(gelu_inner(x))
        du = GELU_BETA * (1 + 3 * GELU_KAPPA * x * x)
        ddu = GELU_BETA * 6 * GELU_KAPPA * x
        second = (1 - t * t) * (du + 0.5 * x * (ddu - 2 * t * du * du))
    else:
        pdf = jnp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        second = pdf * (2 - x * x)
    return grad * grad_output * second


@helper("log_sigmoid_double_backward")
def log_sigmoid_double_backward(grad, input):
    """d/dx of sigmoid(-x): (s - 1) * s, s = sigmoid(x)."""
    s = jax.nn.sigmoid(input)
    return grad * (s - 1) * s


@helper("prelu_double_backward")
def prelu_double_backward(grad_grad_input, grad_grad_weight, grad_out, input, weight):
    """Gradients of prelu_backward's outputs (gI = gO * (x > 0 ? 1 : w), gW = sum gO * (x > 0 ? 0 : x))
    for (grad_out, input, weight), given the cotangents ggI and ggW of gI and gW.
    """
    if grad_grad_input is None and grad_grad_weight is None and grad_out is None:
        return None, None, None
    w = prelu_weight(input, weight)
    ggI = jnp.zeros_like(input) if grad_grad_input is None else grad_grad_input
    ggW = jnp.zeros_like(w) if grad_grad_weight is None else prelu_weight(input, grad_grad_weight)
    gO = jnp.zeros_like(input) if grad_out is None else grad_out
    nonpositive = (input <= 0).astype(jnp.result_type(input))
    ggO = jnp.where(input > 0, ggI, ggI * w) + ggW * nonpositive * input
    gI = ggW * gO * nonpositive
    gW = sum_to_weight(ggI * gO * nonpositive, weight, input)
    return ggO, gI, gW
