"""Checker samples of the fused recurrent cells and of packing padded sequences.

Cells: batch 2, hidden size 3, with and without the two biases. Packing: lengths sorted
in decreasing order (as ATen requires), time-major and batch-first. Networks: each mode,
one and two layers, one and two directions, with and without biases, batch-first or not.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..opdb import Equivalent, compiled_apart, not_compared, parity_in_float32, samples, torch_equivalent
from ..samples import Sample
from . import CUDA_ONLY

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
def _cudnn_rnn(op, rng, dtype=np.float64):
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
