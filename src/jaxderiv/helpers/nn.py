"""FunctionsManual helpers of the softmax, glu, dropout and embedding formulas, from the math.

ATen backward ops the spec has entries for are forward implementations (forward/nn.py);
these are the ones that exist only in FunctionsManual or have no spec entry. Each is linear
in its first argument, `grad`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ..forward.nn import (
    MODE_SUM,
    wrapped_axis,
    embedding_bag_backward as embedding_bag_backward_op,
    embedding_dense_backward,
    glu_backward,
    glu_halves,
    native_dropout_backward,
)
from ..namespace import helper
from .forward_mode import logsumexp_jvp


@helper("softmax_double_backward")
def softmax_double_backward(grad, grad_output, dim, output):
    """Gradient of <grad, output * (gO - sum(gO * output))> for softmax's input, through output."""
    d = wrapped_axis(dim, jnp.ndim(output)) if jnp.ndim(output) else None  # a 0-d tensor is its own softmax dim
    gO, ggI = grad_output, grad
    ggI_output = ggI * output
    ggI_out_sum = jnp.sum(ggI_output, axis=d, keepdims=True)
    gO_out_sum = jnp.sum(gO * output, axis=d, keepdims=True)
    t0 = ggI_output * (gO - gO_out_sum)
    t1 = output * (jnp.sum(ggI_output * gO, axis=d, keepdims=True) - gO_out_sum * ggI_out_sum)
    t2 = ggI_out_sum * output * gO
    t3 = ggI_out_sum * output * gO_out_sum
    return t0 - t1 - t2 + t3


@helper("softmax_double_backward", since=(1, 11))
def softmax_double_backward_through_output(grad, grad_output, dim, output):
    """Gradient of <grad, output * (gO - sum(gO * output))> for `output` itself: from PyTorch 1.11
    `_softmax_backward_data` takes `output` (not `self`) as the input its formula differentiates."""
    d = wrapped_axis(dim, jnp.ndim(output)) if jnp.ndim(output) else None
    gO = grad_output
    return (
        gO * grad
        - jnp.sum(output * gO, axis=d, keepdims=True) * grad
        - gO * jnp.sum(output * grad, axis=d, keepdims=True)
    )


@helper("log_softmax_double_backward")
def log_softmax_double_backward(grad, grad_output, dim, output):
    """Gradient of <grad, gO - exp(output) sum(gO)> for log_softmax's input, through output."""
    d = wrapped_axis(dim, jnp.ndim(output)) if jnp.ndim(output) else None
    z = jnp.exp(output)
    return z * jnp.sum(grad_output, axis=d, keepdims=True) * (jnp.sum(grad * z, axis=d, keepdims=True) - grad)


@helper("glu_double_backward")
def glu_double_backward(grad, grad_output, input, dim):
    """Gradient of <grad, glu_backward(gO, input)> for input."""
    a, b, d = glu_halves(input, dim)
    gg_a, gg_b, _ = glu_halves(grad, dim)
    s = jax.nn.sigmoid(b)
    s1 = s * (1 - s)
    second = s1 * (1 - s) - s * s1  # d/db of s (1 - s)
    return jnp.concatenate([gg_b * grad_output * s1, gg_b * a * grad_output * second + gg_a * grad_output * s1], axis=d)


@helper("glu_double_backward_grad_output")
def glu_double_backward_grad_output(grad, input, dim):
    """Gradient of <grad, glu_backward(gO, input)> for gO: glu_backward is linear in gO."""
    _, b, d = glu_halves(input, dim)
    tmp = grad * glu_backward(jnp.ones(b.shape, grad.dtype), input, dim)
    first, second = jnp.split(tmp, 2, axis=d)
    return first + second


@helper("_fused_dropout_backward")
def _fused_dropout_backward(grad, mask, p):
    """grad * mask / p: the elements the forward kept, scaled as it scaled them."""
    return grad * mask.astype(grad.dtype) * (1.0 / p)


@helper("embedding_backward")
def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    """The dense gradient (a sparse one would hold the same values)."""
    return embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)


@helper("embedding_dense_double_backward")
def embedding_dense_double_backward(grad, indices, padding_idx=-1):
    """The rows of grad each index gathered from; later files pass padding_idx (`_symint`),
    whose positions get zero (1.7's form has no padding; the first backward already applied any
    frequency scaling)."""
    rows = jnp.take(grad, indices, axis=0)
    if padding_idx >= 0:
        rows = jnp.where((indices == padding_idx)[..., None], jnp.zeros((), rows.dtype), rows)
    return rows


@helper("_embedding_bag_backward")
@functools.wraps(embedding_bag_backward_op, assigned=())  # its signature: the arguments a call passes
def embedding_bag_backward(*args):
    """The op's dense gradient whatever `sparse` (args[9]) says: a sparse one would hold the same
    values. Later files pass padding_idx (`_symint`), whose row gets no gradient."""
    return embedding_bag_backward_op(*args[:9], False, *args[10:])


@helper("_embedding_bag_per_sample_weights_backward")
def _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx=-1):
    """<bag gradient, weight row> for each index (sum mode only, as in ATen); 0 at padding_idx."""
    if mode != MODE_SUM:
        raise ValueError("embedding_bag_backward: per_sample_weights only supported for mode='sum'")
    n_bags = grad.shape[0]
    inside = offset2bag < n_bags
    g = jnp.take(grad, jnp.clip(offset2bag, 0, n_bags - 1), axis=0)
    return jnp.where(inside & (indices != padding_idx), jnp.sum(g * jnp.take(weight, indices, axis=0), axis=1), 0)


# -- torch 2.13's linear, dropout and masked softmax -------------------------------------------------


@helper("linear_double_backward")
def linear_double_backward(grads, self, grad_output, weight):
    """(grad_self, grad_grad_output, grad_weight) of linear_backward, whose outputs are
    gI = gO W, gW = gO^T x (batch dims summed) and gb = sum gO: each is bilinear or linear,
    so each input's gradient pairs the other input with the incoming grads."""
    ggI, ggW, ggb = (list(grads) + [None] * 3)[:3]
    if grad_output is None:
        return None, None, None
    flat = lambda t: jnp.reshape(t, (-1, t.shape[-1]))
    grad_self = None if ggW is None else jnp.matmul(grad_output, ggW)
    grad_weight = None if ggI is None else jnp.matmul(flat(grad_output).T, flat(ggI))
    grad_grad_output = None
    if ggI is not None or ggW is not None or ggb is not None:
        grad_grad_output = jnp.zeros_like(grad_output)
        if ggI is not None:
            grad_grad_output = grad_grad_output + jnp.matmul(ggI, weight.T)
        if ggW is not None:
            grad_grad_output = grad_grad_output + jnp.matmul(self, ggW.T)
        if ggb is not None:
            grad_grad_output = grad_grad_output + ggb
    return grad_self, grad_grad_output, grad_weight


@helper("infinitely_differentiable_native_dropout_backward")
def infinitely_differentiable_native_dropout_backward(grad, mask, scale):
    """grad * mask * scale, written so that it differentiates again (it is linear in grad)."""
    return grad * (mask.astype(grad.dtype) * scale)


@helper("native_dropout_double_backward")
def native_dropout_double_backward(ggI, grad, mask, scale):
    """native_dropout_backward is linear in grad_output: its gradient is itself applied to ggI."""
    return native_dropout_backward(ggI, mask, scale)


@helper("_masked_softmax_backward")
def _masked_softmax_backward(grad, output, mask, dim=None):
    """softmax's backward, output * (grad - sum(grad * output)), zero at the masked elements."""
    d = wrapped_axis(-1 if dim is None else dim, jnp.ndim(output))
    g = output * (grad - jnp.sum(grad * output, axis=d, keepdims=True))
    return jnp.where(jnp.broadcast_to(jnp.asarray(mask, bool), g.shape), jnp.zeros((), g.dtype), g)


@helper("safe_logsumexp_jvp")
def safe_logsumexp_jvp(self_p, self_t, dim, keepdim):
    """logsumexp's tangent, zero over a slice whose every element is -inf (_safe_softmax's blank rows)."""
    tangent = logsumexp_jvp(self_p, self_t, dim, keepdim)
    axes = tuple(d % max(jnp.ndim(self_p), 1) for d in dim) if jnp.ndim(self_p) else None
    blank = jnp.all(self_p == -jnp.inf, axis=axes, keepdims=keepdim)
    return jnp.where(blank, jnp.zeros((), tangent.dtype), tangent)
