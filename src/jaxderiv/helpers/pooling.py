"""FunctionsManual's pooling helper: the double backward of every max pooling."""

from __future__ import annotations

import jax.numpy as jnp

from ..namespace import helper


@helper("max_pool_double_backward")
def max_pool_double_backward(grad, indices, dim):
    """The grad of the input (.., S...) read at each output's flat index over the last `dim` dims."""
    planes = jnp.reshape(grad, grad.shape[: grad.ndim - dim] + (-1,))
    flat = jnp.reshape(indices, indices.shape[: indices.ndim - dim] + (-1,))
    return jnp.reshape(jnp.take_along_axis(planes, flat, axis=-1), indices.shape)
