"""FunctionsManual's pooling helpers: the double backward of every max pooling."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..errors import NotImplementedDerivative
from ..namespace import helper


@helper("max_pool_double_backward")
def max_pool_double_backward(grad, indices, dim):
    """The grad of the input (.., S...) read at each output's flat index over the last `dim` dims."""
    lead, ilead = grad.shape[: grad.ndim - dim], indices.shape[: indices.ndim - dim]
    planes = jnp.reshape(grad, lead + (math.prod(grad.shape[grad.ndim - dim :]),))  # no -1: 0-size batches
    flat = jnp.reshape(indices, ilead + (math.prod(indices.shape[indices.ndim - dim :]),))
    return jnp.reshape(jnp.take_along_axis(planes, flat, axis=-1), indices.shape)


@helper("error_for_max_pool2d_double_backward")
def error_for_max_pool2d_double_backward():
    """max_pool2d_backward's gradient for grad_output: PyTorch raises, as its CPU kernel has no
    double backward (max_pool2d_with_indices has one)."""
    raise NotImplementedDerivative(
        "max_pool2d with `requires_grad_output=True` has no double backward in the spec "
        "(error_for_max_pool2d_double_backward); use max_pool2d_with_indices"
    )
