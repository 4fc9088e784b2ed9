"""Forward implementations of ATen's recurrent ops: fused cells, packing, multi-layer networks.

The cells take the gate pre-activations already multiplied out (input @ W_ih.T and
hx @ W_hh.T, one column block per gate) and apply the nonlinearities. Besides the new
state they return a workspace, the values their fused backward reads: the LSTM's four
activated gates, and the GRU's three activated gates with hx and the hidden `n` block.

`_cudnn_rnn` / `miopen_rnn` run a multi-layer, optionally bidirectional RNN/LSTM/GRU over
cuDNN's weight list with lax.scan; their `*_backward` ops are backpropagation through time,
written out with the cells' gate-gradient helpers.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..tensor_utils import gru_gate_grads, lstm_gate_grads
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
        out = out.at[t, :b].set(grad[offset : offset + b])
        offset += b
    return jnp.swapaxes(out, 0, 1) if batch_first else out


# -- multi-layer recurrent networks over cuDNN's (and MIOpen's) weight list -------------------

RNN_RELU, RNN_TANH, LSTM, GRU = 0, 1, 2, 3  # cuDNN's and MIOpen's mode numbers
_GATES = {RNN_RELU: 1, RNN_TANH: 1, LSTM: 4, GRU: 3}


class _Stack:
    """The static shape of a network: mode, layers, directions, and each layer-direction's
    (w_ih, w_hh, b_ih, b_hh) from the weight list (weight_stride0 tensors each, biases optional)."""

    def __init__(
        self, weight, weight_stride0, mode, hidden_size, num_layers, bidirectional, batch_sizes, dropout, train
    ):
        if mode not in _GATES:
            raise ValueError(f"unknown RNN mode {mode}: 0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU")
        if batch_sizes:
            raise NotImplementedError("packed input (non-empty batch_sizes) is not supported: pass the padded input")
        if train and dropout > 0 and num_layers > 1:
            raise NotImplementedError("dropout between layers needs a random key: not supported")
        self.mode, self.hidden, self.layers = mode, hidden_size, num_layers
        self.directions = 2 if bidirectional else 1
        if weight_stride0 not in (2, 4) or len(weight) != weight_stride0 * num_layers * self.directions:
            raise ValueError(
                f"expected {num_layers * self.directions} groups of weight_stride0={weight_stride0} weights, got {len(weight)} tensors"
            )
        self.stride = weight_stride0
        self.groups = [
            tuple(weight[k * weight_stride0 : (k + 1) * weight_stride0]) + (None, None)[: 4 - weight_stride0]
            for k in range(num_layers * self.directions)
        ]


def _direction(mode, weights, x, h0, c0, reverse):
    """One layer in one direction over (T, N, I) input: (outputs, h_T, c_T, per-step values the
    backward reads: h_prev and, per mode, c_prev, the activated gates, c; r, z, n, hn; the output)."""
    w_ih, w_hh, b_ih, b_hh = weights
    projected = _biased(x @ w_ih.T, b_ih)

    def step(carry, xw):
        h, c = carry
        hw = _biased(h @ w_hh.T, b_hh)
        if mode == LSTM:
            i, f, g, o = jnp.split(xw + hw, 4, axis=1)
            i, f, g, o = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o)
            c_new = f * c + i * g
            h_new = o * jnp.tanh(c_new)
            return (h_new, c_new), (h_new, (h, c, i, f, g, o, c_new))
        if mode == GRU:
            ir, iz, in_ = jnp.split(xw, 3, axis=1)
            hr, hz, hn = jnp.split(hw, 3, axis=1)
            r, z = jax.nn.sigmoid(ir + hr), jax.nn.sigmoid(iz + hz)
            n = jnp.tanh(in_ + r * hn)
            h_new = n + z * (h - n)
            return (h_new, c), (h_new, (h, r, z, n, hn))
        pre = xw + hw
        h_new = jnp.tanh(pre) if mode == RNN_TANH else jnp.maximum(pre, 0)
        return (h_new, c), (h_new, (h, pre, h_new))

    (h_t, c_t), (outputs, saved) = lax.scan(step, (h0, c0 if c0 is not None else h0), projected, reverse=reverse)
    return outputs, h_t, c_t, saved


def _time_major(x, batch_first):
    return jnp.swapaxes(x, 0, 1) if batch_first else x


def _run(stack: _Stack, input, hx, cx, batch_first):
    """(output, hy, cy, layer inputs, saved values per layer-direction)."""
    layer_input, hy, cy, inputs, saved = _time_major(input, batch_first), [], [], [], []
    for layer in range(stack.layers):
        inputs.append(layer_input)
        outs = []
        for d in range(stack.directions):
            k = layer * stack.directions + d
            out, h_t, c_t, s = _direction(
                stack.mode, stack.groups[k], layer_input, hx[k], cx[k] if stack.mode == LSTM else None, d == 1
            )
            outs.append(out)
            hy.append(h_t)
            cy.append(c_t)
            saved.append(s)
        layer_input = jnp.concatenate(outs, axis=-1)
    return _time_major(layer_input, batch_first), jnp.stack(hy), jnp.stack(cy), inputs, saved


def _without_proj_size(rest: tuple, n: int) -> tuple:
    """The arguments after hidden_size without the proj_size later schemas put first there
    (LSTM projections, which only proj_size 0, none, is supported here)."""
    if len(rest) == n + 1:
        if rest[0]:
            raise NotImplementedError("_cudnn_rnn: LSTM projections (proj_size > 0) are not implemented")
        return rest[1:]
    return rest


@impl("_cudnn_rnn")
def _cudnn_rnn(input, weight, weight_stride0, weight_buf, hx, cx, mode, hidden_size, *rest):
    """(output, hy, cy, reserve, weight_buf). output is (T, N, D*H) (batch first if asked), the
    directions' outputs side by side; hy, cy are (layers*D, N, H), cy empty unless LSTM. The
    backward recomputes what it needs, so the reserve is empty; weight_buf is the weights flattened.
    After hidden_size: [proj_size,] num_layers, batch_first, dropout, train, bidirectional,
    batch_sizes, dropout_state."""
    num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state = _without_proj_size(rest, 7)
    stack = _Stack(weight, weight_stride0, mode, hidden_size, num_layers, bidirectional, batch_sizes, dropout, train)
    output, hy, cy, _, _ = _run(stack, input, hx, cx, batch_first)
    cy = cy if mode == LSTM else jnp.zeros((0,), hx.dtype)
    flat = jnp.concatenate([jnp.ravel(w) for w in weight]) if weight_buf is None else weight_buf
    return output, hy, cy, jnp.zeros((0,), input.dtype), flat


@impl("miopen_rnn")
def miopen_rnn(
    input,
    weight,
    weight_stride0,
    hx,
    cx,
    mode,
    hidden_size,
    num_layers,
    batch_first,
    dropout,
    train,
    bidirectional,
    batch_sizes,
    dropout_state,
):
    """The same network as `_cudnn_rnn` (MIOpen numbers the modes alike)."""
    return _cudnn_rnn(
        input,
        weight,
        weight_stride0,
        None,
        hx,
        cx,
        mode,
        hidden_size,
        num_layers,
        batch_first,
        dropout,
        train,
        bidirectional,
        batch_sizes,
        dropout_state,
    )


def _direction_backward(mode, weights, x, saved, d_out, dh, dc, reverse):
    """Backpropagation through time for one layer-direction, walking time against its forward:
    (d input, d h0, d c0, [d w_ih, d w_hh, d b_ih, d b_hh] with None for absent biases)."""
    w_ih, w_hh, b_ih, b_hh = weights

    def step(carry, xs):
        dh_next, dc_next = carry
        d_out_t, s = xs
        dh_total = d_out_t + dh_next
        if mode == LSTM:
            h_prev, c_prev, i, f, g, o, c = s
            d_gates, dc_prev = lstm_gate_grads(dh_total, dc_next, i, f, g, o, c_prev, jnp.tanh(c))
            return (d_gates @ w_hh, dc_prev), (d_gates, d_gates)
        if mode == GRU:
            h_prev, r, z, n, hn = s
            d_input_gates, d_hidden_gates, dh_direct = gru_gate_grads(dh_total, r, z, n, h_prev, hn)
            return (dh_direct + d_hidden_gates @ w_hh, dc_next), (d_input_gates, d_hidden_gates)
        h_prev, pre, h = s
        d_pre = dh_total * ((1 - h * h) if mode == RNN_TANH else (pre > 0).astype(h.dtype))
        return (d_pre @ w_hh, dc_next), (d_pre, d_pre)

    (dh0, dc0), (d_in, d_hid) = lax.scan(step, (dh, dc), (d_out, saved), reverse=not reverse)
    h_prev = saved[0]
    grads = [jnp.einsum("tng,tni->gi", d_in, x), jnp.einsum("tng,tnh->gh", d_hid, h_prev)]
    grads += [jnp.sum(d_in, axis=(0, 1)), jnp.sum(d_hid, axis=(0, 1))] if b_ih is not None else [None, None]
    return d_in @ w_ih, dh0, dc0, grads


@impl("_cudnn_rnn_backward")
def _cudnn_rnn_backward(
    input, weight, weight_stride0, weight_buf, hx, cx, output, grad_output, grad_hy, grad_cy, mode, hidden_size, *rest
):
    """(d input, d hx, d cx, d weights) by backpropagation through time, from the top layer down;
    undefined gradients (None) read as zeros, entries output_mask leaves out are None. After
    hidden_size: [proj_size,] num_layers, batch_first, dropout, train, bidirectional, batch_sizes,
    dropout_state, reserve, output_mask."""
    num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state, reserve, output_mask = (
        _without_proj_size(rest, 9)
    )
    stack = _Stack(weight, weight_stride0, mode, hidden_size, num_layers, bidirectional, batch_sizes, dropout, train)
    _, _, _, inputs, saved = _run(stack, input, hx, cx, batch_first)
    t_len, batch = inputs[0].shape[:2]
    H, D = hidden_size, stack.directions
    d_layer = (
        _time_major(grad_output, batch_first)
        if grad_output is not None
        else jnp.zeros((t_len, batch, D * H), input.dtype)
    )
    grad_hy = grad_hy if grad_hy is not None else jnp.zeros_like(hx)
    grad_cy = grad_cy if (grad_cy is not None and mode == LSTM) else jnp.zeros_like(hx)
    dhx, dcx, dweights = [None] * len(stack.groups), [None] * len(stack.groups), [None] * len(weight)
    for layer in reversed(range(stack.layers)):
        d_input = 0
        for d in range(D):
            k = layer * D + d
            dx, dhx[k], dcx[k], grads = _direction_backward(
                mode,
                stack.groups[k],
                inputs[layer],
                saved[k],
                d_layer[..., d * H : (d + 1) * H],
                grad_hy[k],
                grad_cy[k],
                d == 1,
            )
            dweights[k * stack.stride : (k + 1) * stack.stride] = grads[: stack.stride]
            d_input = d_input + dx
        d_layer = d_input
    wanted = tuple(output_mask) + (True,) * (4 - len(output_mask))
    return (
        _time_major(d_layer, batch_first) if wanted[0] else None,
        jnp.stack(dhx) if wanted[1] else None,
        jnp.stack(dcx) if wanted[2] and mode == LSTM else None,
        dweights if wanted[3] else None,
    )


@impl("miopen_rnn_backward")
def miopen_rnn_backward(
    input,
    weight,
    weight_stride0,
    weight_buf,
    hx,
    cx,
    output,
    grad_output,
    grad_hy,
    grad_cy,
    mode,
    hidden_size,
    num_layers,
    batch_first,
    dropout,
    train,
    bidirectional,
    batch_sizes,
    dropout_state,
    reserve,
    output_mask,
):
    return _cudnn_rnn_backward(
        input,
        weight,
        weight_stride0,
        weight_buf,
        hx,
        cx,
        output,
        grad_output,
        grad_hy,
        grad_cy,
        mode,
        hidden_size,
        num_layers,
        batch_first,
        dropout,
        train,
        bidirectional,
        batch_sizes,
        dropout_state,
        reserve,
        output_mask,
    )


# -- oneDNN's single LSTM layer (the CPU path of nn.LSTM in reduced precision) ---------------


def _onednn_layer(name, input, weights, hx_, cx_, reverse, batch_sizes, mode, has_biases, batch_first):
    """(input, the layer's weights, h0, c0) after ATen's checks. The
    input is time-major whatever `batch_first` says: ATen's mkldnn_rnn transposes a batch-first
    input before it calls the layer, which only passes the flag on (torch's kernel writes out of
    bounds when given a batch-first input)."""
    if mode != LSTM:
        raise ValueError(f"{name}: oneDNN's RNN layer is an LSTM (mode {LSTM}), got mode {mode}")
    if batch_sizes:
        raise NotImplementedError(
            f"{name}: packed input (non-empty batch_sizes) is not supported: pass the padded input"
        )
    w_ih, w_hh, b_ih, b_hh = weights
    x = input
    n, h = x.shape[1], w_hh.shape[1]
    if not has_biases:  # zeros in their place (ATen passes zeros of any shape): the same values
        b_ih = b_hh = jnp.zeros(w_hh.shape[:1], w_hh.dtype)
    layer = (w_ih, w_hh, b_ih, b_hh)
    return x, layer, jnp.reshape(hx_, (n, h)), jnp.reshape(cx_, (n, h))


@impl("mkldnn_rnn_layer")
def mkldnn_rnn_layer(
    input,
    weight0,
    weight1,
    weight2,
    weight3,
    hx_,
    cx_,
    reverse,
    batch_sizes,
    mode,
    hidden_size,
    num_layers,
    has_biases,
    bidirectional,
    batch_first,
    train,
):
    """(output, hy, cy, workspace): one LSTM layer in one direction over (T, N, I) input
    (`reverse`: walking time backwards), weights w_ih, w_hh, b_ih, b_hh; hy and cy shaped as hx_
    and cx_. The workspace
    is oneDNN's opaque buffer: empty here, the backward recomputes what it reads."""
    x, layer, h0, c0 = _onednn_layer(
        "mkldnn_rnn_layer",
        input,
        (weight0, weight1, weight2, weight3),
        hx_,
        cx_,
        reverse,
        batch_sizes,
        mode,
        has_biases,
        batch_first,
    )
    out, h_t, c_t, _ = _direction(LSTM, layer, x, h0, c0, reverse)
    workspace = jnp.zeros((0,), jnp.uint8)
    return out, jnp.reshape(h_t, jnp.shape(hx_)), jnp.reshape(c_t, jnp.shape(cx_)), workspace


@impl("mkldnn_rnn_layer_backward")
def mkldnn_rnn_layer_backward(
    input,
    weight1,
    weight2,
    weight3,
    weight4,
    hx_,
    cx_tmp,
    output,
    hy_,
    cy_,
    grad_output,
    grad_hy,
    grad_cy,
    reverse,
    mode,
    hidden_size,
    num_layers,
    has_biases,
    train,
    bidirectional,
    batch_sizes,
    batch_first,
    workspace,
):
    """(d input, d w_ih, d w_hh, d b_ih, d b_hh, d hx, d cx) by backpropagation through time;
    undefined gradients read as zeros. The bias gradients, (4H,), are the gate gradients summed
    with or without biases, as torch's kernel returns them."""
    x, layer, h0, c0 = _onednn_layer(
        "mkldnn_rnn_layer_backward",
        input,
        (weight1, weight2, weight3, weight4),
        hx_,
        cx_tmp,
        reverse,
        batch_sizes,
        mode,
        has_biases,
        batch_first,
    )
    _, _, _, saved = _direction(LSTM, layer, x, h0, c0, reverse)
    zeros = jnp.zeros_like(h0)
    d_out = grad_output if grad_output is not None else jnp.zeros(x.shape[:2] + (h0.shape[1],), x.dtype)
    dh = jnp.reshape(grad_hy, h0.shape) if grad_hy is not None else zeros
    dc = jnp.reshape(grad_cy, c0.shape) if grad_cy is not None else zeros
    dx, dh0, dc0, (dw_ih, dw_hh, db_ih, db_hh) = _direction_backward(LSTM, layer, x, saved, d_out, dh, dc, reverse)
    return (
        dx,
        dw_ih,
        dw_hh,
        db_ih,
        db_hh,
        jnp.reshape(dh0, jnp.shape(hx_)),
        jnp.reshape(dc0, jnp.shape(cx_tmp)),
    )
