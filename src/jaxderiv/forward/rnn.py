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

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..records import (
    CUDA_ONLY,
    Equivalent,
    Sample,
    compiled_apart,
    not_compared,
    parity_in_float32,
    samples,
    torch_equivalent,
)
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
def miopen_rnn(input, weight, weight_stride0, hx, cx, mode, hidden_size, *rest):
    """The same network as `_cudnn_rnn` (MIOpen numbers the modes alike), which has no weight_buf.
    After hidden_size: num_layers, batch_first, dropout, train, bidirectional, batch_sizes,
    dropout_state."""
    return _cudnn_rnn(input, weight, weight_stride0, None, hx, cx, mode, hidden_size, *rest)


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


@impl("_cudnn_rnn_backward", "miopen_rnn_backward")
def _cudnn_rnn_backward(
    input, weight, weight_stride0, weight_buf, hx, cx, output, grad_output, grad_hy, grad_cy, mode, hidden_size, *rest
):
    """(d input, d hx, d cx, d weights) by backpropagation through time, from the top layer down;
    undefined gradients (None) read as zeros, entries output_mask leaves out are None. After
    hidden_size: [proj_size,] num_layers, batch_first, dropout, train, bidirectional, batch_sizes,
    dropout_state, reserve, output_mask. miopen_rnn_backward takes the same arguments (no proj_size)."""
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


# -- oneDNN's single LSTM layer (the CPU path of nn.LSTM in reduced precision) ---------------


def _onednn_check(name, mode, batch_sizes):
    """ATen's checks of oneDNN's RNN layer: an LSTM over padded input."""
    if mode != LSTM:
        raise ValueError(f"{name}: oneDNN's RNN layer is an LSTM (mode {LSTM}), got mode {mode}")
    if batch_sizes:
        raise NotImplementedError(
            f"{name}: packed input (non-empty batch_sizes) is not supported: pass the padded input"
        )


def _onednn_layer(input, hx_, cx_, has_biases, w_ih, w_hh, b_ih, b_hh):
    """(the layer's weights, h0, c0). The input is time-major whatever `batch_first` says: ATen's
    mkldnn_rnn transposes a batch-first input before it calls the layer, which only passes the
    flag on (torch's kernel writes out of bounds when given a batch-first input)."""
    n, h = input.shape[1], w_hh.shape[1]
    if not has_biases:  # zeros in their place (ATen passes zeros of any shape): the same values
        b_ih = b_hh = jnp.zeros(w_hh.shape[:1], w_hh.dtype)
    return (w_ih, w_hh, b_ih, b_hh), jnp.reshape(hx_, (n, h)), jnp.reshape(cx_, (n, h))


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
    _onednn_check("mkldnn_rnn_layer", mode, batch_sizes)
    layer, h0, c0 = _onednn_layer(input, hx_, cx_, has_biases, weight0, weight1, weight2, weight3)
    out, h_t, c_t, _ = _direction(LSTM, layer, input, h0, c0, reverse)
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
    _onednn_check("mkldnn_rnn_layer_backward", mode, batch_sizes)
    layer, h0, c0 = _onednn_layer(input, hx_, cx_tmp, has_biases, weight1, weight2, weight3, weight4)
    _, _, _, saved = _direction(LSTM, layer, input, h0, c0, reverse)
    zeros = jnp.zeros_like(h0)
    d_out = grad_output if grad_output is not None else jnp.zeros(input.shape[:2] + (h0.shape[1],), input.dtype)
    dh = jnp.reshape(grad_hy, h0.shape) if grad_hy is not None else zeros
    dc = jnp.reshape(grad_cy, c0.shape) if grad_cy is not None else zeros
    dx, dh0, dc0, (dw_ih, dw_hh, db_ih, db_hh) = _direction_backward(LSTM, layer, input, saved, d_out, dh, dc, reverse)
    return (
        dx,
        dw_ih,
        dw_hh,
        db_ih,
        db_hh,
        jnp.reshape(dh0, jnp.shape(hx_)),
        jnp.reshape(dc0, jnp.shape(cx_tmp)),
    )


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker samples of the fused recurrent cells and of packing padded sequences.
#
# Cells: batch 2, hidden size 3, with and without the two biases. Packing: lengths sorted
# in decreasing order (as ATen requires), time-major and batch-first. Networks: each mode,
# one and two layers, one and two directions, with and without biases, batch-first or not.
B, H = 2, 3


def _cell(gates):
    def fn(op, rng, dtype=np.float64):
        out = []
        for bias in (True, False):
            args = [rng.normal(size=(B, gates * H)), rng.normal(size=(B, gates * H)), rng.normal(size=(B, H))]
            if bias:
                args += [rng.normal(size=(gates * H,)), rng.normal(size=(gates * H,))]
            out.append(Sample(tuple(args), {}, f"batch {B} hidden {H} bias={bias}"))
        return out

    return fn


samples("_thnn_fused_lstm_cell")(_cell(4))
samples("_thnn_fused_gru_cell")(_cell(3))


@samples("_pack_padded_sequence")
def _pack(op, rng, dtype=np.float64):
    lengths = np.array([4, 2, 1])
    return [
        Sample((rng.normal(size=(4, 3, 2)), lengths, False), {}, "T=4 B=3 lengths 4,2,1"),
        Sample((rng.normal(size=(3, 4, 2)), lengths, True), {}, "batch_first"),
    ]


# Multi-layer networks: T=3 steps, batch 2, input 3, hidden 2; weights per layer-direction in
# cuDNN's list order (w_ih, w_hh, b_ih, b_hh). ReLU pre-activations are random, clear of 0.
T, N, I, HIDDEN = 3, 2, 3, 2
_NETWORKS = (  # (mode, layers, bidirectional, bias, batch_first)
    (2, 2, True, True, False),
    (3, 1, False, False, True),
    (1, 2, False, True, False),
    (0, 1, True, True, True),
)


def _network(rng, mode, layers, bidirectional, bias, batch_first, with_buf):
    gates, d = {0: 1, 1: 1, 2: 4, 3: 3}[mode], 2 if bidirectional else 1
    weight = []
    for layer in range(layers):
        for _ in range(d):
            size = I if layer == 0 else d * HIDDEN
            weight += [rng.normal(size=(gates * HIDDEN, size)) * 0.5, rng.normal(size=(gates * HIDDEN, HIDDEN)) * 0.5]
            weight += (
                [rng.normal(size=(gates * HIDDEN,)) * 0.5, rng.normal(size=(gates * HIDDEN,)) * 0.5] if bias else []
            )
    x = rng.normal(size=(N, T, I) if batch_first else (T, N, I))
    hx = rng.normal(size=(layers * d, N, HIDDEN))
    cx = rng.normal(size=(layers * d, N, HIDDEN)) if mode == 2 else None
    head = (x, weight, 4 if bias else 2) + ((None,) if with_buf else ())
    args = head + (hx, cx, mode, HIDDEN, layers, batch_first, 0.0, True, bidirectional, (), None)
    return Sample(
        args, {}, f"mode={mode} layers={layers} bidirectional={bidirectional} bias={bias} batch_first={batch_first}"
    )


@samples("_cudnn_rnn")
def _cudnn_rnn_samples(op, rng, dtype=np.float64):
    made = [_network(rng, *net, with_buf=True) for net in _NETWORKS]
    if len(op.schema.arguments) == 15:
        return made
    # Later files add proj_size after hidden_size (0: no projection).
    return [dataclasses.replace(s, args=s.args[:8] + (0,) + s.args[8:]) for s in made]


compiled_apart(
    "multi-layer networks under lax.scan, in every mode: one program per (mode, sample) compiles in 25.5 s "
    "against 47.4 s for the entry's one program (_cudnn_rnn; miopen_rnn 18.7 s against 29.0 s; one process, "
    "no cache, measured 2026-12-06 on the loaded 2-core machine)",
    "_cudnn_rnn",
    "miopen_rnn",
)


@samples("miopen_rnn")
def _miopen_rnn(op, rng, dtype=np.float64):
    return [_network(rng, *net, with_buf=False) for net in _NETWORKS[:2]]


# -- parity with torch ------------------------------------------------------------------------
# torch calls computing what the CUDA/ROCm ops compute; each gets torch.ops.aten and the
# sample's arguments by name, as torch values.


def _torch_fused_lstm_cell(aten, a):
    gates = a["input_gates"] + a["hidden_gates"]
    for b in (a.get("input_bias"), a.get("hidden_bias")):
        gates = gates if b is None else gates + b
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * a["cx"] + i.sigmoid() * g.tanh()
    return [o.sigmoid() * cy.tanh(), cy]


def _torch_fused_gru_cell(aten, a):
    ig, hg = a["input_gates"], a["hidden_gates"]
    ig = ig if a.get("input_bias") is None else ig + a["input_bias"]
    hg = hg if a.get("hidden_bias") is None else hg + a["hidden_bias"]
    (ir, ii, in_), (hr, hi, hn) = ig.chunk(3, 1), hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    return [n + z * (a["hx"] - n)]


def _torch_rnn(aten, a):
    """cuDNN/MIOpen's multi-layer RNN as torch's CPU rnn_relu/rnn_tanh/lstm/gru (same weight order)."""
    dirs = 2 if a["bidirectional"] else 1
    weights, layers = list(a["weight"]), a["num_layers"]
    has_biases = len(weights) == 4 * layers * dirs
    flags = (has_biases, layers, a["dropout"], a["train"], a["bidirectional"], a["batch_first"])
    if a["mode"] == 2:
        return list(aten.lstm.input(a["input"], [a["hx"], a["cx"]], weights, *flags))
    fn = {0: aten.rnn_relu.input, 1: aten.rnn_tanh.input, 3: aten.gru.input}[a["mode"]]
    return list(fn(a["input"], a["hx"], weights, *flags))


torch_equivalent(
    Equivalent(_torch_fused_lstm_cell, f"{CUDA_ONLY}: the LSTM cell in torch ops (the workspace not compared)"),
    "_thnn_fused_lstm_cell",
)
torch_equivalent(
    Equivalent(_torch_fused_gru_cell, f"{CUDA_ONLY}: the GRU cell in torch ops (the workspace not compared)"),
    "_thnn_fused_gru_cell",
)
torch_equivalent(
    Equivalent(
        _torch_rnn, f"{CUDA_ONLY}: aten.rnn_relu/rnn_tanh/lstm/gru.input (reserve and weight buffer not compared)"
    ),
    "_cudnn_rnn",
)
torch_equivalent(
    Equivalent(_torch_rnn, f"{CUDA_ONLY}: aten.rnn_relu/rnn_tanh/lstm/gru.input (reserve and workspace not compared)"),
    "miopen_rnn",
)
not_compared(
    "a backward op whose checker samples are schema defaults; compared through _cudnn_rnn's vjp", "_cudnn_rnn_backward"
)
not_compared(
    "a backward op whose checker samples are schema defaults; compared through miopen_rnn's vjp", "miopen_rnn_backward"
)


def _without_bias_directions(vs):
    """Without biases the layer reads no weight2/weight3, yet its backward (torch's kernel and
    the formula alike, parity measured) returns the gate gradients summed for them, about 1 to
    2 in these samples: derivatives are compared along directions that leave them alone."""
    return [v if i not in (3, 4) else v * 0 for i, v in enumerate(vs)]


@samples("mkldnn_rnn_layer")
def _onednn_lstm_layer(op, rng, dtype=np.float64):
    """oneDNN's LSTM layer: T=3, N=2, input 4, hidden 3; biases or zeros in their place,
    reversed, the batch_first flag (which the layer ignores), hx as (N, H) or (1, N, H)."""
    out = []
    for has_biases, reverse, batch_first, lead in (
        (True, False, False, ()),
        (False, True, False, (1,)),
        (True, True, True, ()),
    ):
        x = rng.normal(size=(3, 2, 4)).astype(dtype)  # time-major always (see forward/rnn.py)
        w_ih, w_hh = rng.normal(size=(12, 4)).astype(dtype), rng.normal(size=(12, 3)).astype(dtype)
        b_ih, b_hh = (rng.normal(size=12).astype(dtype) for _ in range(2)) if has_biases else (np.zeros(12, dtype),) * 2
        hx, cx = (rng.normal(size=lead + (2, 3)).astype(dtype) for _ in range(2))
        out.append(
            Sample(
                (x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, [], 2, 3, 1, has_biases, False, batch_first, True),
                {},
                f"biases={has_biases} reverse={reverse} batch_first={batch_first} hx {'x'.join(map(str, lead + (2, 3)))}",
                tangents=None if has_biases else _without_bias_directions,
            )
        )
    return out


torch_equivalent(
    Equivalent(
        lambda aten, a: list(aten.mkldnn_rnn_layer(*a.values()))[:3],
        "oneDNN's kernel itself (its opaque workspace, output 3, not compared)",
    ),
    "mkldnn_rnn_layer",
)
parity_in_float32("oneDNN's RNN layer takes float32 and bfloat16 only", "mkldnn_rnn_layer")
not_compared(
    "a backward op whose checker samples are schema defaults; compared through mkldnn_rnn_layer's vjp",
    "mkldnn_rnn_layer_backward",
)
