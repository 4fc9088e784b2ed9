"""FunctionsManual helpers of the activation formulas, written from the math.

The `*_backward` helpers the formulas call are ATen ops, found as forward implementations
(forward/activation.py); these are the ones that exist only in FunctionsManual.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..forward.activation import _prelu_weight, _sum_to_weight, gelu_backward, sigmoid_backward, silu_backward
from ..namespace import helper


# PyTorch has these twins of silu_backward and gelu_backward because its kernels cannot be
# differentiated again; JAX code always can, so each twin is the same function.
helper("infinitely_differentiable_silu_backward")(silu_backward)
helper("infinitely_differentiable_gelu_backward")(gelu_backward)


@helper("softplus_double_backward")
def softplus_double_backward(grad, input, beta, threshold):
    """d/dx of sigmoid(beta * x): beta * s * (1 - s), zero where softplus is the identity."""
    x = input * beta
    return sigmoid_backward(grad, jax.nn.sigmoid(x)) * (x < threshold).astype(jnp.result_type(grad)) * beta


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
    w = _prelu_weight(input, weight)
    ggI = jnp.zeros_like(input) if grad_grad_input is None else grad_grad_input
    ggW = jnp.zeros_like(w) if grad_grad_weight is None else _prelu_weight(input, grad_grad_weight)
    gO = jnp.zeros_like(input) if grad_out is None else grad_out
    nonpositive = (input <= 0).astype(jnp.result_type(input))
    ggO = jnp.where(input > 0, ggI, ggI * w) + ggW * nonpositive * input
    gI = ggW * gO * nonpositive
    gW = _sum_to_weight(ggI * gO * nonpositive, weight, input)
    return ggO, gI, gW
