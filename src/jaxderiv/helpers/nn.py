"""FunctionsManual helpers of the softmax, glu, dropout and embedding formulas, from the math.

ATen backward ops the spec has entries for are forward implementations (forward/nn.py);
these are the ones that exist only in FunctionsManual or have no spec entry. Each is linear
in its first argument, `grad`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..forward.nn import MODE_SUM, _axis, _embedding_bag_dense_backward, embedding_dense_backward, glu_backward, glu_halves
from ..namespace import helper


@helper("softmax_double_backward")
def softmax_double_backward(grad, grad_output, dim, output):
    """Gradient of <grad, output * (gO - sum(gO * output))> for softmax's input, through output."""
    d = _axis(dim, jnp.ndim(output)) if jnp.ndim(output) else None  # a 0-d tensor is its own softmax dim
    gO, ggI = grad_output, grad
    ggI_output = ggI * output
    ggI_out_sum = jnp.sum(ggI_output, axis=d, keepdims=True)
    gO_out_sum = jnp.sum(gO * output, axis=d, keepdims=True)
    t0 = ggI_output * (gO - gO_out_sum)
    t1 = output * (jnp.sum(ggI_output * gO, axis=d, keepdims=True) - gO_out_sum * ggI_out_sum)
    t2 = ggI_out_sum * output * gO
    t3 = ggI_out_sum * output * gO_out_sum
    return t0 - t1 - t2 + t3


@helper("log_softmax_double_backward")
def log_softmax_double_backward(grad, grad_output, dim, output):
    """Gradient of <grad, gO - exp(output) sum(gO)> for log_softmax's input, through output."""
    d = _axis(dim, jnp.ndim(output)) if jnp.ndim(output) else None
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
def embedding_dense_double_backward(grad, indices):
    """The rows of grad that each index gathered from (1.7's formula: no padding or scaling)."""
    return jnp.take(grad, indices, axis=0)


@helper("embedding_dense_double_backward_symint")
def embedding_dense_double_backward_symint(grad, indices, padding_idx):
    """The rows of grad each index gathered from, zero at padding_idx (later files' form; the
    first backward already applied any frequency scaling)."""
    rows = jnp.take(grad, indices, axis=0)
    if padding_idx >= 0:
        rows = jnp.where((indices == padding_idx)[..., None], jnp.zeros((), rows.dtype), rows)
    return rows


@helper("_embedding_bag_backward")
def _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights):
    return _embedding_bag_dense_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights)


@helper("_embedding_bag_backward_symint")
def _embedding_bag_backward_symint(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx):
    """Later files' form, with padding_idx (whose row gets no gradient): the dense gradient."""
    return _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx)


@helper("_embedding_bag_per_sample_weights_backward")
def _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx=-1):
    """<bag gradient, weight row> for each index (sum mode only, as in ATen); 0 at padding_idx."""
    if mode != MODE_SUM:
        raise ValueError("embedding_bag_backward: per_sample_weights only supported for mode='sum'")
    n_bags = grad.shape[0]
    inside = offset2bag < n_bags
    g = jnp.take(grad, jnp.clip(offset2bag, 0, n_bags - 1), axis=0)
    return jnp.where(inside & (indices != padding_idx), jnp.sum(g * jnp.take(weight, indices, axis=0), axis=1), 0)

