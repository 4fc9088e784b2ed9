"""FunctionsManual's helper for the CTC loss computed by cuDNN.

cuDNN returns the gradient of each sequence's loss with the losses (the op's second output);
the backward only scales it by the incoming gradient of each sequence.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..namespace import helper


@helper("_cudnn_ctc_loss_backward")
def _cudnn_ctc_loss_backward(grad_out, loss, raw_grad, zero_infinity):
    """raw_grad * grad_out per sequence; with zero_infinity, 0 for the sequences whose loss is 0."""
    scaled = raw_grad * grad_out[None, :, None]
    if zero_infinity:
        return jnp.where(loss[None, :, None] == 0, jnp.zeros((), raw_grad.dtype), scaled)
    return scaled
