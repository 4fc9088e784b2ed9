"""FunctionsManual's helpers for the CTC losses computed by cuDNN and by MIOpen (ROCm).

Both libraries return the gradient of each sequence's loss with the losses (the op's second
output); the backward only scales it by the incoming gradient of each sequence. FunctionsManual
declares `_miopen_ctc_loss_backward` with `_cudnn_ctc_loss_backward`'s arguments for MIOpen's
identical (costs, gradient) pair, so one function serves both names.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..namespace import helper


@helper("_cudnn_ctc_loss_backward", "_miopen_ctc_loss_backward")
def _cudnn_ctc_loss_backward(grad_out, loss, raw_grad, zero_infinity):
    """raw_grad * grad_out per sequence; with zero_infinity, 0 for the sequences whose loss is 0."""
    scaled = raw_grad * grad_out[None, :, None]
    if zero_infinity:
        return jnp.where(loss[None, :, None] == 0, jnp.zeros((), raw_grad.dtype), scaled)
    return scaled
