"""FunctionsManual's helpers of the distance entries and of `_trilinear`.

`_pdist_backward` and `_cdist_backward` are ATen ops (forward/distance.py); here are the
helpers that are not: the Euclidean matmul form's backward and the trilinear product's, which
is the same product with the output's gradient put in place of the input it differentiates.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..forward.distance import expanded, pair_grad_partials, pairs, trilinear
from ..namespace import helper, method
from .core import sum_to_helper
from ..tensor_utils import mT


method("mT")(mT)


@helper("wrap_opt_if")
def wrap_opt_if(x, condition):
    """`x` where the formula needs it, else an undefined optional (nothing is saved)."""
    return x if condition else None


@helper("_pdist_backward_backward")
def _pdist_backward_backward(grad, grad_output, self, p, pdist, grad_input_mask):
    """torch 2.14's derivative of `_pdist_backward(grad_output, self, p, pdist)` = the sum over pairs
    (i, j) of grad_output_k u(self_i - self_j, pdist_k), added to row i and taken from row j: along
    the cotangent `grad` (self's shape), for grad_output, self and pdist (see `pair_grad_partials`)."""
    if grad is None:
        return None, None, None
    i, j = pairs(self.shape[0])
    u, du_dd, du_ddist = pair_grad_partials(self[i] - self[j], pdist[:, None], p)
    g = grad[i] - grad[j]  # the cotangent of each pair's difference
    d_grad_output = jnp.sum(g * u, axis=-1)
    part = grad_output[:, None] * du_dd * g
    d_self = jnp.zeros_like(self).at[i].add(part).at[j].add(-part)
    d_pdist = grad_output * jnp.sum(g * du_ddist, axis=-1)
    return d_grad_output, d_self, d_pdist


@helper("_cdist_backward_backward")
def _cdist_backward_backward(grad, grad_output, x1, x2, p, cdist, grad_input_mask):
    """torch 2.14's derivative of `_cdist_backward(grad_output, x1, x2, p, cdist)` = the sum over j
    of grad_output_ij u(x1_i - x2_j, cdist_ij), along the cotangent `grad` (the batch-expanded
    x1's shape): for grad_output, x1, x2 (each summed back to its shape) and cdist."""
    if grad is None:
        return None, None, None, None
    e1, e2 = expanded(x1, x2)
    u, du_dd, du_ddist = pair_grad_partials(e1[..., :, None, :] - e2[..., None, :, :], cdist[..., None], p)
    g = grad[..., :, None, :]  # the cotangent of each difference x1_i - x2_j
    d_grad_output = jnp.sum(g * u, axis=-1)
    part = grad_output[..., None] * du_dd * g
    d_x1 = sum_to_helper(jnp.sum(part, axis=-2), x1.shape)
    d_x2 = sum_to_helper(-jnp.sum(part, axis=-3), x2.shape)
    d_cdist = grad_output * jnp.sum(g * du_ddist, axis=-1)
    return d_grad_output, d_x1, d_x2, d_cdist


@helper("_euclidean_dist_backward")
def _euclidean_dist_backward(grad, x1, x2, res):
    """d sqrt(|x1 - x2|^2): ratio = grad / res (0 where res is 0), then the two matmul terms."""
    if grad is None:
        return None, None
    zero = res == 0
    ratio = jnp.where(zero, 0.0, grad / jnp.where(zero, 1.0, res))
    g1 = x1 * jnp.sum(ratio, axis=-1, keepdims=True) - ratio @ x2
    g2 = x2 * jnp.sum(ratio, axis=-2)[..., None] - jnp.swapaxes(ratio, -1, -2) @ x1
    return g1, g2


@helper("_trilinear_backward")
def _trilinear_backward_unrolled(grad, i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim, grad_input_mask):
    """PyTorch 1.x files pass `unroll_dim` (a kernel choice, no effect on the values)."""
    return _trilinear_backward(grad, i1, i2, i3, expand1, expand2, expand3, sumdim, grad_input_mask)


@helper("_trilinear_backward")
def _trilinear_backward(grad, i1, i2, i3, expand1, expand2, expand3, sumdim, grad_input_mask):
    """Each input's gradient: the trilinear product of grad with the two others, grad standing
    at the summed dims and the result summed over the input's own expanded dims."""
    mask = grad_input_mask
    if grad is None:
        return None, None, None
    g1 = trilinear(grad, i2, i3, sumdim, expand2, expand3, expand1) if mask[0] else None
    g2 = trilinear(i1, grad, i3, expand1, sumdim, expand3, expand2) if mask[1] else None
    g3 = trilinear(i1, i2, grad, expand1, expand2, sumdim, expand3) if mask[2] else None
    return g1, g2, g3
