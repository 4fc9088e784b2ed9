"""FunctionsManual's recurrent-cell backward helpers and ATen's fused cell backwards.

Each returns (grad_input_gates, grad_hidden_gates, grad_state, grad_input_bias,
grad_hidden_bias); the bias gradients are the gate gradients summed over the batch, or
undefined (None) when the cell had no bias. The differentiable variants recompute the gates
from the cell's inputs, so their own derivatives exist; the fused ones read the workspace.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ..forward.rnn import mkldnn_rnn_layer_backward
from ..namespace import constant, helper
from ..tensor_utils import gru_gate_grads, lstm_gate_grads

# The reason later files give in not_implemented_list for _cudnn_rnn_backward's derivatives.
constant("kCudnnDoubleBackwardMsg", "double backwards is not supported for cuDNN RNNs")


def _bias_grads(grad_input_gates, grad_hidden_gates, has_bias):
    if not has_bias:
        return None, None
    return jnp.sum(grad_input_gates, axis=0), jnp.sum(grad_hidden_gates, axis=0)


@helper("_thnn_differentiable_lstm_cell_backward")
def _thnn_differentiable_lstm_cell_backward(
    grad_hy, grad_cy, input_gates, hidden_gates, input_bias, hidden_bias, cx, cy
):
    gates = input_gates + hidden_gates
    for b in (input_bias, hidden_bias):
        gates = gates if b is None else gates + b
    i, f, g, o = jnp.split(gates, 4, axis=1)
    grad_gates, grad_cx = lstm_gate_grads(
        grad_hy, grad_cy, jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o), cx, jnp.tanh(cy)
    )
    if grad_gates is None:
        return None, None, None, None, None
    return (grad_gates, grad_gates, grad_cx) + _bias_grads(grad_gates, grad_gates, input_bias is not None)


@helper("_thnn_fused_lstm_cell_backward")
def _thnn_fused_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = jnp.split(workspace, 4, axis=1)
    grad_gates, grad_cx = lstm_gate_grads(grad_hy, grad_cy, i, f, g, o, cx, jnp.tanh(cy))
    if grad_gates is None:
        return None, None, None, None, None
    return (grad_gates, grad_gates, grad_cx) + _bias_grads(grad_gates, grad_gates, has_bias)


@helper("_thnn_differentiable_gru_cell_backward")
def _thnn_differentiable_gru_cell_backward(grad_hy, input_gates, hidden_gates, hx, input_bias, hidden_bias):
    ig = input_gates if input_bias is None else input_gates + input_bias
    hg = hidden_gates if hidden_bias is None else hidden_gates + hidden_bias
    ir, iz, in_ = jnp.split(ig, 3, axis=1)
    hr, hz, hn = jnp.split(hg, 3, axis=1)
    r, z = jax.nn.sigmoid(ir + hr), jax.nn.sigmoid(iz + hz)
    n = jnp.tanh(in_ + r * hn)
    gi, gh, ghx = gru_gate_grads(grad_hy, r, z, n, hx, hn)
    return (gi, gh, ghx) + _bias_grads(gi, gh, input_bias is not None)


@helper("_thnn_fused_gru_cell_backward")
def _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
    r, z, n, hx, hn = jnp.split(workspace, 5, axis=1)
    gi, gh, ghx = gru_gate_grads(grad_hy, r, z, n, hx, hn)
    return (gi, gh, ghx) + _bias_grads(gi, gh, has_bias)


@helper("mkldnn_rnn_layer_differentiable_backward")
@functools.wraps(mkldnn_rnn_layer_backward, assigned=())  # its signature: the arguments a call passes
def mkldnn_rnn_layer_differentiable_backward(*args):
    """FunctionsManual's LSTM-layer backward in differentiable ops: the values of ATen's
    `mkldnn_rnn_layer_backward` (whose JAX implementation is differentiable as written), taking
    its arguments, (d input, d w_ih, d w_hh, d b_ih, d b_hh, d hx, d cx); all undefined without a
    gradient (grad_output, grad_hy, grad_cy: args[10:13])."""
    if all(g is None for g in args[10:13]):
        return (None,) * 7
    return mkldnn_rnn_layer_backward(*args)
