"""Forward implementations of ATen's fused recurrent cells and of packing padded sequences.

The cells take the gate pre-activations already multiplied out (input @ W_ih.T and
hx @ W_hh.T, one column block per gate) and apply the nonlinearities. Besides the new
state they return a workspace, the values their fused backward reads: the LSTM's four
activated gates, and the GRU's three activated gates with hx and the hidden `n` block.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import impl
from .shapes import concrete


def _biased(gates, bias):
    return gates if bias is None else gates + bias


@impl("_thnn_fused_lstm_cell")
def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """(hy, cy, workspace): gates i, f, g, o; cy = f * cx + i * g, hy = o * tanh(cy)."""
    gates = _biased(_biased(input_gates + hidden_gates, input_bias), hidden_bias)
    i, f, g, o = jnp.split(gates, 4, axis=1)
    i, f, g, o = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o)
    cy = f * cx + i * g
    return o * jnp.tanh(cy), cy, jnp.concatenate([i, f, g, o], axis=1)


@impl("_thnn_fused_gru_cell")
def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """(hy, workspace): r, z gates, n = tanh(in + r * hn); hy = n + z * (hx - n)."""
    ir, iz, in_ = jnp.split(_biased(input_gates, input_bias), 3, axis=1)
    hr, hz, hn = jnp.split(_biased(hidden_gates, hidden_bias), 3, axis=1)
    r, z = jax.nn.sigmoid(ir + hr), jax.nn.sigmoid(iz + hz)
    n = jnp.tanh(in_ + r * hn)
    return n + z * (hx - n), jnp.concatenate([r, z, n, hx, hn], axis=1)


# -- packed sequences --------------------------------------------------------------------------


def _lengths(lengths):
    """Sequence lengths as Python ints: they fix the packed shape, so they must be concrete."""
    values = [int(v) for v in concrete(lengths, "_pack_padded_sequence", "call it outside jit").reshape(-1)]
    if any(v <= 0 for v in values):
        raise ValueError("Length of all samples has to be greater than 0")
    if values != sorted(values, reverse=True):
        raise ValueError("`lengths` array must be sorted in decreasing order")
    return values


def _batch_sizes(lengths):
    """How many sequences are still running at each time step."""
    return [sum(1 for v in lengths if v > t) for t in range(lengths[0])]


@impl("_pack_padded_sequence")
def _pack_padded_sequence(input, lengths, batch_first):
    """(data, batch_sizes): the time steps of (T, B, *) input (B, T, * if batch_first), each
    holding only the sequences still running; batch_sizes is int64 as in ATen."""
    x = jnp.swapaxes(input, 0, 1) if batch_first else input
    sizes = _batch_sizes(_lengths(lengths))
    data = jnp.concatenate([x[t, :b] for t, b in enumerate(sizes)], axis=0)
    return data, jnp.asarray(sizes, jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


@impl("_pack_padded_sequence_backward")
def _pack_padded_sequence_backward(grad, input_size, batch_sizes, batch_first):
    """The packed gradient put back at its time steps, zeros in the padding."""
    sizes = [int(b) for b in concrete(batch_sizes, "_pack_padded_sequence_backward", "call it outside jit")]
    t_max, batch = (input_size[1], input_size[0]) if batch_first else (input_size[0], input_size[1])
    out = jnp.zeros((t_max, batch) + tuple(input_size[2:]), grad.dtype)
    offset = 0
    for t, b in enumerate(sizes):
        out = out.at[t, :b].set(grad[offset:offset + b])
        offset += b
    return jnp.swapaxes(out, 0, 1) if batch_first else out
