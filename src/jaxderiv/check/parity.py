"""jaxderiv against PyTorch itself: forward values, vjp, jvp, kinks and complex inputs, per op.

The checker judges rules by JAX's autodiff and finite differences, which cannot judge kinks;
this module asks the installed torch (torch.ops.aten, torch.autograd.grad, torch.func.jvp) on
the same inputs and cotangents. Complex: jax_vjp(ct) == conj(torch_grad(conj(ct))).
Where torch cannot run an op as the spec names it (a CUDA-only kernel, a schema changed since),
EQUIVALENTS names the torch call that computes the same thing; DIFFERENCES lists, by op and
column, where the results differ for a known reason. Needs torch; jaxderiv itself never does.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import NotImplementedDerivative
from .checker import _random_like
from .samples import Sample, checks_complex, samples_for
from ..forward import implementation
from ..op import Op
from ..registry import Registry
from ..spec import Spec

__all__ = ["RTOL", "ATOL", "RTOL32", "ATOL32", "KINKS", "EQUIVALENTS", "FLOAT32", "DIFFERENCES", "ParityRow", "compare",
           "compare_op", "implemented", "parity", "to_markdown", "write_json", "unexplained", "TORCH_SPEC_DIFFERENCES"]

# Tolerances for every comparison: float64 and complex128; FLOAT32 ops in float32.
RTOL, ATOL = 1e-6, 1e-9
RTOL32, ATOL32 = 1e-4, 1e-5
COLUMNS = ("forward", "vjp", "jvp", "kinks", "complex")


def _a(*values):
    return np.asarray(values, np.float64)


def _m(rows):
    return np.asarray(rows, np.float64)


# A 1x1x4x4 image whose 2x2 windows each hold a tied maximum, and its 3-D counterpart.
_TIED_IMAGE = np.kron(_m([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None]
_TIED_VOLUME = np.kron(_m([[1.0, 2.0], [3.0, 0.5]])[None], np.ones((2, 2, 2)))[None, None]

# Hand-picked inputs where finite differences cannot judge: kinks, ties, zeros.
KINKS: dict[str, list[tuple]] = {
    "abs": [(_a(0.0, -0.0, 1.5, -2.0),)],
    "sgn": [(_a(0.0, -0.0, 1.5, -2.0),)],
    "sign": [(_a(0.0, 1.5, -2.0),)],
    "relu": [(_a(0.0, -0.0, 1.5, -2.0),)],
    "threshold": [(_a(0.5, 0.4, 0.6, -1.0), 0.5, -3.0)],
    "hardtanh": [(_a(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0)],
    "clamp": [(_a(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0), (_a(-0.5, 0.3), -0.5, None)],
    "clamp_min": [(_a(0.5, 0.4, 0.6), 0.5)],
    "clamp_max": [(_a(0.5, 0.4, 0.6), 0.5)],
    "clamp.Tensor": [(_a(-1.0, 1.0, 0.0), _a(-1.0, -1.0, -1.0), _a(1.0, 1.0, 1.0))],
    "clamp_min.Tensor": [(_a(0.5, 0.4, 0.6), _a(0.5, 0.5, 0.5))],
    "clamp_max.Tensor": [(_a(0.5, 0.4, 0.6), _a(0.5, 0.5, 0.5))],
    "sqrt": [(_a(0.0, 1.0, 4.0),)],
    "rsqrt": [(_a(0.0, 1.0, 4.0),)],
    "maximum": [(_a(1.0, 2.0, -1.0), _a(1.0, 3.0, -1.0))],
    "minimum": [(_a(1.0, 2.0, -1.0), _a(1.0, 3.0, -1.0))],
    "_foreach_minimum.Scalar": [([_a(0.5, 0.4, 0.6), _a(0.5)], 0.5)],
    "_foreach_maximum.Scalar": [([_a(0.5, 0.4, 0.6), _a(0.5)], 0.5)],
    "_foreach_minimum.ScalarList": [([_a(0.5, 0.4, 0.6), _a(-1.0)], [0.5, -1.0])],
    "_foreach_maximum.ScalarList": [([_a(0.5, 0.4, 0.6), _a(-1.0)], [0.5, -1.0])],
    "fmax": [(_a(1.0, 2.0, np.nan), _a(1.0, np.nan, 3.0))],
    "fmin": [(_a(1.0, 2.0, np.nan), _a(1.0, np.nan, 3.0))],
    "hardshrink": [(_a(0.5, -0.5, 0.0, 1.0), 0.5)],
    "softshrink": [(_a(0.5, -0.5, 0.0, 1.0), 0.5)],
    "leaky_relu": [(_a(0.0, 1.0, -1.0), 0.01)],
    "pow.Tensor_Scalar": [(_a(0.0, 1.0, -2.0), 0), (_a(0.0, 1.0, 2.0), 0.5)],
    "pow.Tensor_Tensor": [(_a(0.0, 0.0, 0.0, 2.0), _a(0.0, 1.0, 2.0, 0.0))],
    "hypot": [(_a(0.0, 3.0), _a(0.0, 4.0))],
    "copysign.Tensor": [(_a(0.0, -0.0, 1.5), _a(-1.0, 1.0, -0.0))],
    # reductions with ties: torch splits the gradient among equal extremes, or picks one index
    "max": [(_a(1.0, 3.0, 3.0, -1.0),)],
    "min": [(_a(1.0, -3.0, 2.0, -3.0),)],
    "max.dim": [(_m([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), 1)],
    "min.dim": [(_m([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), 1)],
    "amax": [(_m([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), [1]), (_m([[1.0, 3.0], [3.0, -1.0]]),)],
    "amin": [(_m([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), [1]), (_m([[1.0, -3.0], [-3.0, 1.0]]),)],
    "median": [(_a(1.0, 2.0, 2.0, 3.0, 2.0),)],
    "nanmedian": [(_a(1.0, 2.0, 2.0, np.nan, 2.0),)],
    "median.dim": [(_m([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]]), 1)],
    "nanmedian.dim": [(_m([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]]), 1)],
    # the norm's kink: the zero vector
    "norm.Scalar": [(np.zeros(3), 2), (np.zeros(3), 1), (_a(0.0, 1.0, -2.0), 1)],
    "norm.ScalarOpt_dim": [(np.zeros((2, 3)), 2, [1]), (_m([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]), float("inf"), [1])],
    "linalg_vector_norm": [(np.zeros((2, 3)), 2, [1]), (_m([[0.0, 1.0, -3.0], [3.0, -3.0, 1.0]]), float("inf"), [1]), (_a(0.0, 1.0, -2.0), 1),
                           (_a(0.0, 1.0, -2.0), 0.5)],
    # prod's special paths: one zero, two zeros
    "prod": [(_a(2.0, 0.0, 3.0),), (_a(2.0, 0.0, 0.0, 3.0),)],
    "prod.dim_int": [(_m([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, 3.0]]), 1)],
    "cumprod": [(_a(2.0, 0.0, 3.0, 0.0, 1.5), 0)],
    # where with equal branches: the gradient goes to the branch the condition selects
    "_s_where": [(np.array([True, False, True]), _a(1.0, 2.0, 3.0), _a(1.0, 2.0, 3.0))],
    # sorting and selection with equal values: which index torch picks carries the gradient
    "sort": [(_a(2.0, 1.0, 2.0, 1.0, 3.0),), (_a(2.0, 1.0, 2.0, 1.0, 3.0), -1, True)],
    "topk": [(_a(2.0, 1.0, 3.0, 3.0, 1.0), 2), (_a(2.0, 1.0, 3.0, 3.0, 1.0), 2, -1, False)],
    "kthvalue": [(_a(2.0, 1.0, 2.0, 1.0, 3.0), 2)],
    "mode": [(_a(2.0, 1.0, 2.0, 1.0, 3.0),)],
    # max pooling with equal elements in a window
    "max_pool2d_with_indices": [(_TIED_IMAGE, [2, 2], [2, 2])],
    "max_pool3d_with_indices": [(_TIED_VOLUME, [2, 2, 2], [2, 2, 2])],
    "adaptive_max_pool2d": [(_TIED_IMAGE, [2, 2])],
}


@dataclasses.dataclass(frozen=True)
class Equivalent:
    """The torch call that computes what the op computes, where torch cannot run the op itself.

    `call(aten, a)` gets the sample's arguments by name, as torch values, and returns torch's
    outputs; only that many of the op's outputs are compared (the rest are workspaces).
    """

    call: Callable
    reason: str
    # only where the op's schema is not torch's (a seed signature torch 2.13 changed): False for
    # ops torch cannot run on CPU under any schema
    schema_change: bool = False

    def applies(self, op: Op) -> bool:
        if not self.schema_change:
            return True
        try:
            theirs = _torch_op(op.name)._schema
        except (AttributeError, RuntimeError):
            return True
        return [a.name for a in op.schema.arguments] != [a.name for a in theirs.arguments] or len(op.schema.returns) != len(theirs.returns)


_CUDA = "torch has no CPU kernel for this CUDA/ROCm op"


def _conv(transposed, bias=True):
    def call(aten, a):
        n = len(a["stride"])
        return aten.convolution(a["self"], a["weight"], a.get("bias") if bias else None, a["stride"], a["padding"], a["dilation"],
                                transposed, a.get("output_padding", [0] * n), a["groups"])

    return call


def _batch_norm(aten, a):
    return aten.native_batch_norm(a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["training"],
                                  a["exponential_average_factor"], a["epsilon"])


def _batch_norm_backward(aten, a):
    return aten.native_batch_norm_backward(a["grad_output"], a["input"], a["weight"], a["running_mean"], a["running_var"],
                                           a["save_mean"], a["save_var"], a["save_mean"] is not None, a["epsilon"], [True] * 3)


def _fused_lstm_cell(aten, a):
    gates = a["input_gates"] + a["hidden_gates"]
    for b in (a.get("input_bias"), a.get("hidden_bias")):
        gates = gates if b is None else gates + b
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * a["cx"] + i.sigmoid() * g.tanh()
    return [o.sigmoid() * cy.tanh(), cy]


def _fused_gru_cell(aten, a):
    ig, hg = a["input_gates"], a["hidden_gates"]
    ig = ig if a.get("input_bias") is None else ig + a["input_bias"]
    hg = hg if a.get("hidden_bias") is None else hg + a["hidden_bias"]
    (ir, ii, in_), (hr, hi, hn) = ig.chunk(3, 1), hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    return [n + z * (a["hx"] - n)]


def _rnn(aten, a):
    """cuDNN/MIOpen's multi-layer RNN as torch's CPU rnn_relu/rnn_tanh/lstm/gru (same weight order)."""
    dirs = 2 if a["bidirectional"] else 1
    weights, layers = list(a["weight"]), a["num_layers"]
    has_biases = len(weights) == 4 * layers * dirs
    flags = (has_biases, layers, a["dropout"], a["train"], a["bidirectional"], a["batch_first"])
    if a["mode"] == 2:
        return list(aten.lstm.input(a["input"], [a["hx"], a["cx"]], weights, *flags))
    fn = {0: aten.rnn_relu.input, 1: aten.rnn_tanh.input, 3: aten.gru.input}[a["mode"]]
    return list(fn(a["input"], a["hx"], weights, *flags))


def _layer_norm(aten, a):
    x, n, shape = a["input"], a["N"], []
    while math.prod(shape) < n:
        shape.insert(0, x.shape[x.dim() - 1 - len(shape)])
    out, mean, rstd = aten.native_layer_norm(x, shape, a["weight"], a["bias"], a["eps"])
    return [out, mean.reshape(-1), rstd.reshape(-1)]


def _conv_backward_overrideable(aten, a):
    w, groups = a["weight"], a["groups"]
    bias_sizes = [w.shape[1] * groups] if a["transposed"] else [w.shape[0]]
    return aten.convolution_backward(a["grad_output"], a["input"], w, bias_sizes, a["stride"], a["padding"], a["dilation"],
                                     a["transposed"], a["output_padding"], groups, a["output_mask"])


def _linear_backward(aten, a):
    """linear's gradients by torch's autograd, with create_graph so that they stay differentiable
    in self, grad_output and weight; a bias leaf gives the bias gradient."""
    torch, mask = _torch(), a["output_mask"]
    x, w, g = a["self"], a["weight"], a["grad_output"]
    x, w = (t if t.requires_grad else t.detach().requires_grad_() for t in (x, w))
    b = torch.zeros(w.shape[0], dtype=w.dtype, requires_grad=True)
    grads = torch.autograd.grad(aten.linear(x, w, b), (x, w, b), g, create_graph=True)
    return [gr if m else None for gr, m in zip(grads, mask)]


def _max_pool2d_backward(aten, a):
    geometry = [a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"]]
    _, indices = aten.max_pool2d_with_indices(a["self"], *geometry)
    return [aten.max_pool2d_with_indices_backward(a["grad_output"], a["self"], *geometry, indices)]


def _attention(lse_layout):
    """The CUDA/privateuse1 attention ops as torch ops: softmax(scale Q K^T + bias, causal top-left) V and
    each row's logsumexp, laid out as the op returns it (`lse_layout(aten, lse, a)`), so that a bias is
    differentiated too (the CPU fused op treats its mask as constant)."""
    def call(aten, a):
        q, k, v, bias = a["query"], a["key"], a["value"], a.get("attn_bias")
        s = aten.matmul(q, k.transpose(-2, -1)) * (a["scale"] if a.get("scale") is not None else q.shape[-1] ** -0.5)
        if a.get("is_causal"):
            torch = _torch()
            s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -float("inf"))
        if bias is not None:
            s = s + bias
        lse = aten.logsumexp(s, [-1])
        return [aten.matmul(aten.exp(s - lse.unsqueeze(-1)), v), lse_layout(aten, lse, a).detach()]  # logsumexp: not differentiable

    return call


def _efficient_lse(aten, lse, a):
    """Rows padded with zeros to a multiple of 32; none without compute_log_sumexp."""
    L = lse.shape[-1]
    return aten.constant_pad_nd(lse, [0, (-(-L // 32) * 32 if a["compute_log_sumexp"] else 0) - L])


EQUIVALENTS: dict[str, Equivalent] = {
    **{n: Equivalent(_conv(False, bias=False), f"{_CUDA}: aten.convolution") for n in ("cudnn_convolution",)},
    "cudnn_convolution_transpose": Equivalent(_conv(True, bias=False), f"{_CUDA}: aten.convolution, transposed"),
    **{n: Equivalent(_conv(False), f"{_CUDA}: aten.convolution") for n in ("miopen_convolution", "miopen_depthwise_convolution")},
    "miopen_convolution_transpose": Equivalent(_conv(True), f"{_CUDA}: aten.convolution, transposed"),
    "mkldnn_convolution": Equivalent(_conv(False), "torch's mkldnn kernel takes no float64: aten.convolution"),
    "_nnpack_spatial_convolution": Equivalent(
        lambda aten, a: aten.convolution(a["input"], a["weight"], a["bias"], a["stride"], a["padding"], [1, 1], False, [0, 0], 1),
        "torch's NNPACK kernel takes float32 only: aten.convolution"),
    "convolution_overrideable": Equivalent(
        lambda aten, a: aten.convolution(*a.values()), "torch has no CPU kernel for the overrideable hook: aten.convolution"),
    "convolution_backward_overrideable": Equivalent(
        _conv_backward_overrideable, "torch has no CPU kernel for the overrideable hook: aten.convolution_backward"),
    "cudnn_grid_sampler_backward": Equivalent(
        lambda aten, a: aten.grid_sampler_2d_backward(a["grad_output"], a["self"], a["grid"], 0, 0, True, [True, True]),
        f"{_CUDA}: grid_sampler_2d_backward bilinear, zeros, align_corners"),
    "_cudnn_ctc_loss.Tensor": Equivalent(
        lambda aten, a: aten._ctc_loss.Tensor(a["log_probs"].log_softmax(2), a["targets"], a["input_lengths"], a["target_lengths"], a["blank"],
                                              a["zero_infinity"])[:1],
        f"{_CUDA}: _ctc_loss.Tensor's loss of the normalized input, as cuDNN normalizes (the 2nd output not compared)"),
    "cudnn_grid_sampler": Equivalent(
        lambda aten, a: aten.grid_sampler_2d(a["self"], a["grid"], 0, 0, True), f"{_CUDA}: grid_sampler_2d bilinear, zeros, align_corners"),
    "cudnn_affine_grid_generator": Equivalent(
        lambda aten, a: aten.affine_grid_generator(a["theta"], [a["N"], a["C"], a["H"], a["W"]], True),
        f"{_CUDA}: affine_grid_generator, align_corners"),
    "_lazy_clone": Equivalent(lambda aten, a: aten.clone(a["self"]),
                              "torch's _lazy_clone needs storage torch allocated itself (not torch.from_numpy's): aten.clone"),
    "slice_inverse": Equivalent(
        lambda aten, a: aten.slice_scatter(a["src"], a["self"], a["dim"], a["start"], a["end"], a["step"]),
        "torch's CPU kernel needs `self` to be a view of `src`: aten.slice_scatter(src, self, ...)"),
    "cudnn_batch_norm": Equivalent(_batch_norm, f"{_CUDA}: native_batch_norm (the 4th output, cuDNN's reserve space, not compared)"),
    "miopen_batch_norm": Equivalent(_batch_norm, f"{_CUDA}: native_batch_norm"),
    "cudnn_batch_norm_backward": Equivalent(_batch_norm_backward, f"{_CUDA}: native_batch_norm_backward"),
    "miopen_batch_norm_backward": Equivalent(_batch_norm_backward, f"{_CUDA}: native_batch_norm_backward"),
    "_cudnn_ctc_loss": Equivalent(
        lambda aten, a: aten._ctc_loss(a["log_probs"].log_softmax(2), a["targets"], a["input_lengths"], a["target_lengths"], a["blank"],
                                       a["zero_infinity"])[:1],
        f"{_CUDA}: _ctc_loss's loss of the normalized input, as cuDNN normalizes (the 2nd output, cuDNN's gradient, not compared)"),
    "_thnn_fused_lstm_cell": Equivalent(_fused_lstm_cell, f"{_CUDA}: the LSTM cell in torch ops (the workspace not compared)"),
    "_thnn_fused_gru_cell": Equivalent(_fused_gru_cell, f"{_CUDA}: the GRU cell in torch ops (the workspace not compared)"),
    "_cudnn_rnn": Equivalent(_rnn, f"{_CUDA}: aten.rnn_relu/rnn_tanh/lstm/gru.input (reserve and weight buffer not compared)"),
    "miopen_rnn": Equivalent(_rnn, f"{_CUDA}: aten.rnn_relu/rnn_tanh/lstm/gru.input (reserve and workspace not compared)"),
    # schema changes since the seed files: the same computation under torch 2.13's signature
    "elu_backward": Equivalent(
        lambda aten, a: aten.elu_backward(a["grad_output"], a["alpha"], a["scale"], a["input_scale"], True, a["output"]),
        "torch 2.13's elu_backward takes (..., bool is_result, Tensor self_or_result): is_result=True", True),
    "softplus_backward": Equivalent(
        lambda aten, a: aten.softplus_backward(a["grad_output"], a["self"], a["beta"], a["threshold"]),
        "torch 2.13's softplus_backward dropped Tensor output", True),
    "_softmax_backward_data": Equivalent(
        lambda aten, a: aten._softmax_backward_data(a["grad_output"], a["output"], a["dim"], a["self"].dtype),
        "torch 2.13 takes ScalarType input_dtype where the seed takes Tensor self", True),
    "_log_softmax_backward_data": Equivalent(
        lambda aten, a: aten._log_softmax_backward_data(a["grad_output"], a["output"], a["dim"], a["self"].dtype),
        "torch 2.13 takes ScalarType input_dtype where the seed takes Tensor self", True),
    "native_layer_norm": Equivalent(_layer_norm, "torch 2.13 takes normalized_shape where the seed takes int M, int N", True),
    "slow_conv3d_forward": Equivalent(
        lambda aten, a: [aten.slow_conv3d_forward(*a.values())], "torch 2.13 returns only the output (finput, fgrad_input not compared)", True),
    "_bmm": Equivalent(lambda aten, a: aten.bmm(a["self"], a["mat2"]), "torch 2.13 has no _bmm: aten.bmm"),
    "nansum.dim_IntList": Equivalent(
        lambda aten, a: aten.nansum(a["self"], a["dim"], a["keepdim"], dtype=a.get("dtype")), "torch 2.13 merged the overload into nansum", True),
    "_s_where": Equivalent(lambda aten, a: aten.where.self(*a.values()), "torch 2.13 has no _s_where: aten.where.self"),
    "index_add_.alpha": Equivalent(
        lambda aten, a: aten.index_add_(a["self"], a["dim"], a["index"], a["source"], alpha=a["alpha"]),
        "torch 2.13 merged the overload into index_add_"),
    "_fused_dropout": Equivalent(
        lambda aten, a: aten.native_dropout(a["self"], 1 - a["p"], True), f"{_CUDA}: native_dropout(self, 1 - p)"),
    "linear_backward": Equivalent(_linear_backward, "torch 2.13 runs linear_backward only on MKL-DNN and nested tensors: "
                                  "torch.autograd.grad of aten.linear, create_graph=True"),
    "max_pool2d_backward": Equivalent(_max_pool2d_backward, "torch 2.13 runs max_pool2d_backward only on MPS: "
                                      "aten.max_pool2d_with_indices, then max_pool2d_with_indices_backward"),
    "_scaled_dot_product_efficient_attention": Equivalent(_attention(_efficient_lse), f"{_CUDA}: attention in torch ops"),
    "_scaled_dot_product_flash_attention": Equivalent(_attention(lambda aten, lse, a: lse), f"{_CUDA}: attention in torch ops"),
    "_scaled_dot_product_cudnn_attention": Equivalent(
        _attention(lambda aten, lse, a: lse.unsqueeze(-1)), f"{_CUDA}: attention in torch ops, logsumexp (B, H, L, 1)"),
    "_scaled_dot_product_fused_attention_overrideable": Equivalent(
        _attention(lambda aten, lse, a: lse), "torch has no CPU kernel for the privateuse1 hook: attention in torch ops"),
    "to_mkldnn": Equivalent(lambda aten, a: [a["self"].clone()], "a dense array has no mkldnn layout in JAX: the identity, as torch's to_dense(to_mkldnn(x))"),
    **{n: Equivalent(lambda aten, a: [aten.convolution(a["self"], a["weight"], a["bias"], a["stride"], a["padding"], a["dilation"], False,
                                                       [0] * len(a["stride"]), a["self"].shape[1])],
                     f"{_CUDA}: aten.convolution, groups = in_channels") for n in ("_conv_depthwise2d", "conv_depthwise3d")},
    "mkldnn_linear": Equivalent(lambda aten, a: [aten.linear(a["self"], a["weight"], a["bias"])], "torch's mkldnn kernel takes mkldnn float32 tensors: aten.linear"),
    **{f"mkldnn_max_pool{k}d": Equivalent(
        lambda aten, a, k=k: [getattr(aten, f"max_pool{k}d_with_indices")(a["self"], a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"])[0]],
        f"torch's mkldnn kernel takes mkldnn float32 tensors: aten.max_pool{k}d_with_indices' values") for k in (2, 3)},
    "mkldnn_adaptive_avg_pool2d": Equivalent(lambda aten, a: [aten._adaptive_avg_pool2d(a["self"], a["output_size"])],
                                             "torch's mkldnn kernel takes mkldnn float32 tensors: aten._adaptive_avg_pool2d"),
}

# Ops whose torch CPU kernel takes float32 only: both sides run in float32 (RTOL32, ATOL32).
FLOAT32: dict[str, str] = {
    "_fake_quantize_learnable_per_tensor_affine": "torch's CPU kernel takes float32 only",
    "_fake_quantize_learnable_per_channel_affine": "torch's CPU kernel takes float32 only",
    "_grid_sampler_2d_cpu_fallback": "torch's fallback kernel takes float32 only",
    "_grid_sampler_2d_cpu_fallback_backward": "torch's fallback kernel takes float32 only",
}


@dataclasses.dataclass
class ParityRow:
    """One op against torch: per column True (agrees), False (differs), None (not applicable)."""

    op: str
    spec: str
    forward: bool | None = None
    vjp: bool | None = None
    jvp: bool | None = None
    kinks: bool | None = None
    complex: bool | None = None
    max_err: float = 0.0
    note: str = ""  # the first difference or error, for the reader
    how: str = ""  # how torch was asked, where not by the op's own name in float64

    @property
    def ok(self) -> bool:
        return all(getattr(self, c) is not False for c in COLUMNS)

    @property
    def differs(self) -> tuple[str, ...]:
        return tuple(c for c in COLUMNS if getattr(self, c) is False)


class _Tally:
    """Worst error and first difference over the comparisons of one column."""

    def __init__(self, row: ParityRow, rtol: float = RTOL, atol: float = ATOL):
        self.row, self.rtol, self.atol = row, rtol, atol

    def close(self, what: str, ours, theirs) -> bool:
        a, b = (np.asarray(v) for v in (ours, theirs))
        if a.dtype == bool or b.dtype == bool:
            a, b = a.astype(np.float64), b.astype(np.float64)
        if a.shape != b.shape:
            return self._differs(f"{what}: shape {a.shape} vs torch {b.shape}")
        finite = np.isfinite(a) & np.isfinite(b)
        if finite.any():
            self.row.max_err = max(self.row.max_err, float(np.max(np.abs(a[finite] - b[finite]))))
        if not np.allclose(a, b, rtol=self.rtol, atol=self.atol, equal_nan=True):
            i = np.unravel_index(int(np.argmax(~np.isclose(a, b, self.rtol, self.atol, equal_nan=True))), a.shape) if a.ndim else ()
            return self._differs(f"{what}: {a[i]!r} vs torch {b[i]!r} at {tuple(map(int, i))}")
        return True

    def note(self, message: str) -> None:
        self.row.note = self.row.note or message

    def _differs(self, message: str) -> bool:
        self.note(message)
        return False


def _torch():
    try:
        import torch
    except ImportError:
        raise RuntimeError("parity compares with PyTorch: install torch to run it") from None
    return torch


def _torch_op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(_torch().ops.aten, base), overload or "default")


def _to_torch(v):
    torch = _torch()
    if isinstance(v, jax.Array) and jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key):
        return None  # a jax.random key: torch draws from its own generator
    if isinstance(v, (np.ndarray, jax.Array)):
        return torch.from_numpy(np.array(v))
    if isinstance(v, np.dtype):
        return getattr(torch, v.name)
    if isinstance(v, (list, tuple)):
        return [_to_torch(e) for e in v]
    return v


def _np(t):
    return t.numpy(force=True) if hasattr(t, "numpy") else np.asarray(t)  # force: conj, neg and zero views


def _outs(value) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _narrow(v, dtype):
    """float64/complex128 arrays (and lists of them) in float32/complex64, for FLOAT32 ops."""
    if isinstance(v, (list, tuple)):
        return type(v)(_narrow(e, dtype) for e in v)
    if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.inexact):
        return v.astype(np.complex64 if np.iscomplexobj(v) else np.float32)
    return v


class _Call:
    """One sample bound to an op's schema, callable on both sides with its inexact inputs replaced."""

    def __init__(self, op: Op, args: tuple, kwargs: dict, sample: Sample | None = None, float32: bool = False):
        self.op, self.sample = op, sample
        bound = op.bind(tuple(args), dict(kwargs))
        self.arguments = op.schema.arguments
        # A 0-d NumPy scalar given for a Tensor argument is a 0-d tensor on both sides.
        self.values = [np.asarray(v) if a.is_tensor and isinstance(v, np.generic) else v for a, v in zip(op.schema.arguments, bound.values())]
        if float32:
            self.values = [_narrow(v, np.float32) for v in self.values]
        # (argument, element of a Tensor[] or None) of every differentiable inexact input
        self.paths = []
        for i, (a, v) in enumerate(zip(self.arguments, self.values)):
            if a.name not in op.differentiable_inputs:
                continue
            if a.is_tensor and _inexact(v):
                self.paths.append((i, None))
            elif a.is_tensor_list and isinstance(v, (list, tuple)):
                self.paths += [(i, j) for j, e in enumerate(v) if _inexact(e)]
        self.inplace = op.schema.name.endswith("_") and not op.schema.name.endswith("__")
        self.random = any(a.type.base == "Generator" for a in self.arguments)

    def _split(self, values):
        args = [v for a, v in zip(self.arguments, values) if not a.kwarg_only]
        return args, {a.name: v for a, v in zip(self.arguments, values) if a.kwarg_only}

    def _with(self, xs, convert):
        values = [convert(v) for v in self.values]
        values = [list(v) if isinstance(v, (list, tuple)) and not isinstance(v, str) else v for v in values]
        for (i, j), x in zip(self.paths, xs):
            if j is None:
                values[i] = x
            else:
                values[i][j] = x
        return values

    def jax(self, *xs):
        args, kwargs = self._split(self._with(xs, lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v))
        return _outs(self.op(*args, **kwargs))

    def _torch_value(self, a, v):
        v = _to_torch(v)
        if a.type.is_list and a.type.base in ("int", "SymInt") and isinstance(v, int):
            return [v]  # torch.ops takes no bare int for int[]
        return v

    def torch(self, *xs):
        torch = _torch()
        values = [self._torch_value(a, v) for a, v in zip(self.arguments, self._with(xs, lambda v: v))]
        if self.inplace:  # in place on a copy, so that a leaf stays a leaf
            values[0] = values[0].clone()
        for i, v in enumerate(values):  # running statistics and other buffers torch writes to
            if isinstance(v, torch.Tensor) and not v.requires_grad and self.arguments[i].type.is_write:
                values[i] = v.clone()
        equivalent = EQUIVALENTS.get(self.op.name)
        if equivalent is not None and equivalent.applies(self.op):
            return _outs(equivalent.call(torch.ops.aten, {a.name: v for a, v in zip(self.arguments, values)}))
        args, kwargs = self._split(values)
        return _outs(_torch_op(self.op.name)(*args, **kwargs))

    def xs(self):
        return [self.values[i] if j is None else self.values[i][j] for i, j in self.paths]

    def gauge(self, outs):
        """The sample's gauge-invariant function of the outputs (svd, eigh...), on either side."""
        return list(self.sample.outputs(outs)) if self.sample is not None and self.sample.outputs else outs

    def project(self, grads):
        """Gradients restricted to the input directions the sample admits (one triangle, Hermitian)."""
        return list(self.sample.tangents(list(grads))) if self.sample is not None and self.sample.tangents else grads


def _inexact(v) -> bool:
    return isinstance(v, (np.ndarray, jax.Array)) and np.issubdtype(np.dtype(v.dtype), np.inexact)


def _inexact_outputs(outs) -> list[int]:
    return [k for k, y in enumerate(outs) if jnp.issubdtype(jnp.result_type(y), jnp.inexact)]


def _seeded(seed, fn):
    _torch().manual_seed(seed)
    return fn()


def _compare_sample(call: _Call, rng, tally: _Tally, with_jvp: bool) -> dict[str, bool]:
    """forward, vjp and jvp verdicts of one sample (None: nothing to differentiate)."""
    xs = call.xs()
    ours, theirs = call.jax(*[jnp.asarray(x) for x in xs]), _seeded(0, lambda: call.torch(*[_to_torch(x) for x in xs]))
    fwd = len(ours) >= len(theirs) and (len(ours) == len(theirs) or call.op.name in EQUIVALENTS and EQUIVALENTS[call.op.name].applies(call.op))
    if not fwd:
        tally.note(f"forward: {len(ours)} outputs vs torch {len(theirs)}")
    for k, (o, t) in enumerate(zip(ours, theirs)):
        if t is None:  # an output its output_mask turns off: undefined in ATen, an array in JAX
            tally.note(f"forward output {k}: undefined in torch (output_mask), not compared")
            continue
        if not call.random:  # a sampler's values are its generator's: shapes and dtypes compared
            fwd &= tally.close(f"forward output {k}", o, _np(t))
        elif np.shape(o) != tuple(t.shape):
            fwd = tally._differs(f"forward output {k}: shape {np.shape(o)} vs torch {tuple(t.shape)}")
        if np.dtype(jnp.result_type(o)).name != str(t.dtype).removeprefix("torch."):
            fwd = tally._differs(f"forward output {k}: dtype {jnp.result_type(o)} vs torch {t.dtype}")
    verdict = {"forward": fwd, "vjp": None, "jvp": None}
    args, kwargs = call._split(call.values)
    differentiable = call.op.output_differentiable(*args, **kwargs)
    inexact = [k for k in _inexact_outputs(ours) if k < len(theirs) and theirs[k] is not None]
    outs = [k for k in inexact if differentiable[k]]
    if not xs or not outs:
        return verdict
    undifferentiated = [k for k in inexact if not differentiable[k]]
    compares = {"vjp": lambda: _compare_vjp(call, xs, outs, ours, rng, tally, undifferentiated),
                "jvp": lambda: _compare_jvp(call, xs, outs, ours, rng, tally)}
    for column, compare_ in compares.items():
        if column == "jvp" and not with_jvp:
            continue
        try:
            verdict[column] = compare_()
        except NotImplementedDerivative as e:  # the spec says not_implemented: nothing to compare
            tally.note(f"{column}: {str(e).rsplit(': ', 1)[-1]}")
        except _DrawDependent:
            tally.note(f"{column}: torch's derivative depends on the draw: not compared")
        except Exception as e:  # noqa: BLE001 - a crash in one mode is that mode's difference, reported
            verdict[column] = tally._differs(f"{column}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    return verdict


class _DrawDependent(Exception):
    """A sampler whose torch derivative changes with the draw: jaxderiv's draw is another."""


def _stable(call: _Call, fn):
    """torch's derivative of a sampler, if it does not depend on the draw (two seeds agree)."""
    first = _seeded(0, fn)
    if call.random:
        second = _seeded(1, fn)
        if any((a is None) != (b is None) or a is not None and not np.allclose(_np(a), _np(b), equal_nan=True) for a, b in zip(first, second)):
            raise _DrawDependent
    return first


def _pick(values, ks):
    return [values[k] for k in ks]


def _compare_vjp(call: _Call, xs, outs, ours, rng, tally: _Tally, undifferentiated=()) -> bool:
    """`outs`: the outputs jaxderiv differentiates; `undifferentiated`: its other inexact
    outputs, each a difference if torch differentiates it (a gradient jaxderiv would drop)."""
    torch = _torch()
    leaves = [_to_torch(x).requires_grad_() for x in xs]
    t_outs = _seeded(0, lambda: call.torch(*leaves))
    dropped = [k for k in undifferentiated if t_outs[k].requires_grad and _has_gradient(leaves, t_outs[k], rng, tally.atol)]
    if dropped:
        return tally._differs(f"vjp: torch differentiates output(s) {dropped}, jaxderiv does not")
    outs = [k for k in outs if t_outs[k].requires_grad]  # torch's non-differentiable outputs (pivots, indices) carry no gradient
    if not outs:
        return None
    ours_g = call.gauge([ours[k] for k in outs])
    cts = [_random_like(rng, y) for y in ours_g]
    _, pullback = jax.vjp(lambda *a: call.gauge(_pick(call.jax(*a), outs)), *[jnp.asarray(x) for x in xs])
    our_grads = call.project([np.asarray(g) for g in pullback(cts)])

    def grads():
        leaves = [_to_torch(x).requires_grad_() for x in xs]
        t_outs = call.gauge(_pick(call.torch(*leaves), outs))
        return torch.autograd.grad(t_outs, leaves, [_to_torch(np.asarray(np.conj(c))) for c in cts], allow_unused=True)

    t_grads = _stable(call, grads)
    their_grads = call.project([np.conj(_np(t)) if t is not None else np.zeros_like(x) for t, x in zip(t_grads, xs)])
    return all([tally.close(f"vjp input {j}", g, t) for j, (g, t) in enumerate(zip(our_grads, their_grads))])


def _has_gradient(leaves, out, rng, atol) -> bool:
    """Whether torch gives `out` a nonzero gradient (not a `not_implemented` formula, not the
    zero derivative of a real input's sign)."""
    ct = _to_torch(np.asarray(_random_like(rng, _np(out.detach()))))
    try:
        grads = _torch().autograd.grad(out, leaves, ct, allow_unused=True, retain_graph=True)
    except RuntimeError:
        return False
    return any(g is not None and g.numel() and float(g.abs().max()) > atol for g in grads)


def _compare_jvp(call: _Call, xs, outs, ours, rng, tally: _Tally) -> bool:
    ts = call.project([np.asarray(_random_like(rng, x)) for x in xs])
    _, our_t = jax.jvp(lambda *a: call.gauge(_pick(call.jax(*a), outs)), tuple(jnp.asarray(x) for x in xs), tuple(jnp.asarray(t) for t in ts))
    their_t = _stable(call, lambda: _torch().func.jvp(lambda *a: tuple(call.gauge(_pick(call.torch(*a), outs))),
                                                     tuple(_to_torch(x) for x in xs), tuple(_to_torch(t) for t in ts))[1])
    return all([tally.close(f"jvp output {k}", o, _np(t)) for k, (o, t) in enumerate(zip(our_t, their_t))])


def _merge(old, new):
    return new if old is None else old if new is None else old and new


def compare_op(op: Op, samples: list[Sample], kinks: list[tuple], complex_samples: list[Sample], seed: int = 0) -> ParityRow:
    """Compare one op with torch on its samples (forward, vjp, jvp), kink inputs and complex ones."""
    row = ParityRow(op.name, os.path.basename(op.entry.location.file or ""))
    float32 = op.name in FLOAT32
    tally, rng = _Tally(row, *((RTOL32, ATOL32) if float32 else (RTOL, ATOL))), np.random.default_rng(seed)
    row.how = "; ".join(x for x in (EQUIVALENTS[op.name].reason if op.name in EQUIVALENTS and EQUIVALENTS[op.name].applies(op) else "", f"float32: {FLOAT32[op.name]}" if float32 else "",
                                    "random: shapes and dtypes compared, derivatives where torch's do not depend on the draw"
                                    if any(a.type.base == "Generator" for a in op.schema.arguments) else "") if x)
    with_jvp = bool(op.entry.forward)
    groups = (("plain", [(s.args, s.kwargs, s) for s in samples]), ("kinks", [(k, {}, None) for k in kinks]),
              ("complex", [(s.args, s.kwargs, s) for s in complex_samples]))
    for group, cases in groups:
        for args, kwargs, sample in cases:
            try:
                verdict = _compare_sample(_Call(op, args, kwargs, sample, float32), rng, tally, with_jvp)
            except Exception as e:  # noqa: BLE001 - a crash on either side is a difference, reported
                verdict = {"forward": tally._differs(f"{group}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")}
            if group == "plain":
                for column in ("forward", "vjp", "jvp"):
                    setattr(row, column, _merge(getattr(row, column), verdict.get(column)))
            else:
                agreed = all(v is not False for v in verdict.values())
                setattr(row, group, _merge(getattr(row, group), agreed))
    return row


# Ops the checker samples with schema defaults that have no torch meaning (float indices...):
# compared on these inputs instead.
SAMPLES: dict[str, list[Sample]] = {
    "fractional_max_pool3d": [Sample((), {"self": np.linspace(-1, 1, 2 * 5 * 5 * 4).reshape(1, 2, 5, 5, 4), "kernel_size": [2, 2, 2],
                                          "output_size": [3, 2, 2], "random_samples": np.full((1, 2, 3), 0.4)}, "5x5x4 to 3x2x2")],
    "one_hot": [Sample((np.array([0, 2, 1, 3]), 4), {}, "4 classes"), Sample((np.array([[0, 2], [1, 1]]),), {}, "num_classes=-1")],
}

# Implemented ops with no torch comparison, and why (ops torch 2.13 lacks are listed by compare).
NOT_COMPARED: dict[str, str] = {
    "_embedding_bag_dense_backward": "a backward op whose checker samples are schema defaults (float indices); compared through _embedding_bag's vjp",
    "_cudnn_rnn_backward": "a backward op whose checker samples are schema defaults; compared through _cudnn_rnn's vjp",
    "miopen_rnn_backward": "a backward op whose checker samples are schema defaults; compared through miopen_rnn's vjp",
}

# Known differences from torch 2.13 under the default (seed) spec, by op: the columns that
# differ and why. tests/test_parity.py asserts each, so a difference that goes or changes shows.
DIFFERENCES: dict[str, tuple[tuple[str, ...], str]] = {
    "angle": (("complex",), "the 1.10 result formula angle_backward(self_t, self_p) is wrong off the real line; torch 2.13's "
              "conjugates the tangent and the result: complex jvp differs (declared as a known failure of the checker too)"),
    "_softmax_backward_data": (("vjp",), "the seed's formula sends softmax_double_backward to Tensor self; torch 2.13's "
                               "schema has input_dtype there and sends it to output: the second-order gradient lands on another input"),
    "_log_softmax_backward_data": (("vjp",), "the seed's formula sends the second-order gradient to Tensor self; torch 2.13's "
                                   "schema has input_dtype there and sends it to output"),
    "_ctc_loss": (("forward",), "log_alpha (output 1) past each sequence's input length and its 2 target_length + 1 states is "
                  "scratch: torch leaves 0 or uninitialized memory there, jaxderiv -inf (the shape, N x T x "
                  "2 max(target_lengths) + 1, is torch's); the loss and every gradient agree"),
    "slogdet": (("complex",), "the seed's output_differentiability [false, true] gives sign no gradient; torch 2.13 "
                "differentiates sign, whose derivative is nonzero for complex inputs (zero for real ones)"),
    "_embedding_bag": (("forward",), "bag_size (output 2) in mode sum: torch computes it only when weight requires grad "
                       "(make_bag_size), else returns zeros; jaxderiv always computes it"),
    "_standard_gamma_grad": (("forward",), "torch evaluates d sample / d alpha by series and rational fits (relative error ~1e-4); "
                             "jaxderiv by the exact implicit derivative of the regularized incomplete gamma function"),
}
# Under torch 2.13's own spec: entries whose results differ from torch's for a reason outside
# jaxderiv (scratch outputs, torch's own approximations and bugs), and why.
TORCH_SPEC_DIFFERENCES: dict[str, tuple[tuple[str, ...], str]] = {
    "_ctc_loss": DIFFERENCES["_ctc_loss"],
    "_ctc_loss.Tensor": DIFFERENCES["_ctc_loss"],
    "_standard_gamma_grad": DIFFERENCES["_standard_gamma_grad"],
    "_embedding_bag": DIFFERENCES["_embedding_bag"],
    **{n: (("vjp",), "torch 2.13's formula passes groups=1 to convolution_backward, wrong for a depthwise weight of C > 1 input "
               "channels: it raises here as torch's convolution_backward does for the same arguments (autograd in torch never "
               "reaches it: its depthwise convolutions differentiate through convolution)") for n in ("_conv_depthwise2d", "conv_depthwise3d")},
    "cholesky_inverse": (("jvp", "complex"), "torch 2.13's cholesky_inverse_jvp computes -X dF X Fᴴ (+ its adjoint), which disagrees with "
                         "finite differences of torch's own forward (1e-2 on the sample); jaxderiv's helper computes the derivative, "
                         "-X dL Lᴴ X (+ its adjoint)"),
    "norm.Scalar": (("jvp", "kinks", "complex"), "torch.func.jvp of aten.norm.Scalar raises in torch 2.13 (its forward gradient "
                    "has the input's shape, not the 0-d result's); jaxderiv evaluates the result formula"),
    "norm.ScalarOpt_dtype": (("jvp",), "torch.func.jvp of aten.norm.ScalarOpt_dtype raises in torch 2.13, as for norm.Scalar"),
    "_foreach_norm.Scalar": (("jvp",), "torch.func.jvp of aten._foreach_norm.Scalar raises in torch 2.13 (a forward gradient of "
                             "another size than the 0-d norm), as for norm.Scalar; jaxderiv evaluates the result formula"),
    "max_pool2d_backward": (("jvp",), "torch 2.13's entry (MPS only) says `result: auto_linear`, which runs the op on the tangents "
                            "of grad_output and self, but the op is linear in grad_output only: self_t picks other argmaxes. "
                            "jaxderiv evaluates the spec's formula; torch's CPU equivalent differentiates the op"),
    "triangular_solve": (("jvp", "complex"), "torch 2.13's triangular_solve_jvp applies the whole tangent dA, not op(dA) restricted to "
                         "the triangle the solve reads: with transpose=True it disagrees with finite differences of torch's own "
                         "forward by 0.25-0.45; jaxderiv's helper (1e-10 from them) restricts and transposes dA"),
}


def _float64(fn):
    def run(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run


def torch_has(name: str) -> bool:
    """Whether torch.ops.aten has the op, or EQUIVALENTS a call computing it."""
    if name in EQUIVALENTS:
        return True
    try:
        _torch_op(name)
    except (AttributeError, RuntimeError):
        return False
    return True


def implemented(spec: Spec) -> list[str]:
    """The entries of `spec` that have a forward implementation (with or without a torch counterpart)."""
    from .samples import not_applicable_reason

    return [e.name for e in spec if implementation(e.name) is not None and not_applicable_reason(e.name) is None]


@_float64
def compare(registry: Registry, name: str, seed: int = 0, max_samples: int | None = None) -> ParityRow:
    """The parity row of one op of `registry`, on its checker samples (the first `max_samples`)."""
    if name in NOT_COMPARED:
        return ParityRow(name, "", note=f"n/a: {NOT_COMPARED[name]}")
    if not torch_has(name):
        return ParityRow(name, "", note=f"n/a: torch {_torch().__version__} has no aten.{name} and no equivalent call")
    try:
        op = registry.op(name)
        rng = np.random.default_rng(seed)
        samples = _accepted(op, SAMPLES.get(name) or samples_for(op, rng), max_samples)
        complex_samples = samples_for(op, rng, complex_=True)[:max_samples] if checks_complex(name) else []
        kinks = KINKS.get(name, [])
    except Exception as e:  # noqa: BLE001 - an op that does not build is a row, not a crash
        return ParityRow(name, "", forward=False, note=f"{type(e).__name__}: {str(e)[:200]}")
    return compare_op(op, samples, kinks, complex_samples, seed)


def _size(sample: Sample) -> tuple[int, int]:
    """How many arrays a sample holds and how many elements: what a comparison's cost grows with."""
    arrays = [v for v in list(sample.args) + list(sample.kwargs.values()) for v in (v if isinstance(v, (list, tuple)) else [v])
              if isinstance(v, np.ndarray)]
    return len(arrays), sum(v.size for v in arrays)


def _accepted(op: Op, samples: list[Sample], n: int | None) -> list[Sample]:
    """The n smallest samples torch's op accepts (its input checks can be stricter than the
    seed's), else the n smallest: a short run compares each op on its cheapest inputs."""
    if n is None:
        return samples
    ok = []
    for s in sorted(samples, key=_size):
        try:
            call = _Call(op, s.args, s.kwargs, s, op.name in FLOAT32)
            _seeded(0, lambda: call.torch(*[_to_torch(x) for x in call.xs()]))
            ok.append(s)
        except Exception:  # noqa: BLE001 - torch refuses this input: try the next
            continue
        if len(ok) == n:
            break
    return ok or sorted(samples, key=_size)[:n]


def parity(registry: Registry, ops: list[str] | None = None, seed: int = 0, max_samples: int | None = None) -> list[ParityRow]:
    """Parity rows of the named ops, or of every implemented entry of the registry's spec."""
    return [compare(registry, n, seed, max_samples) for n in (ops if ops is not None else implemented(registry.spec))]


def unexplained(rows: list[ParityRow], differences: dict[str, tuple[tuple[str, ...], str]] = DIFFERENCES) -> list[ParityRow]:
    """The rows that differ from torch otherwise than `differences` lists (DIFFERENCES for the
    default spec, TORCH_SPEC_DIFFERENCES for torch's own): what a parity run should fail on."""
    return [r for r in rows if r.differs != differences.get(r.op, ((), ""))[0]]


def _mark(v: bool | None) -> str:
    return "n/a" if v is None else "ok" if v else "DIFFERS"


def counts(rows: list[ParityRow]) -> str:
    """Agreeing rows per column, of those where the column applies."""
    return ", ".join(f"{c} {sum(getattr(r, c) is True for r in rows)}/{sum(getattr(r, c) is not None for r in rows)}" for c in COLUMNS)


METHOD = f"""Each op is called on its first checker sample (`jaxderiv.check.samples_for`; real, and complex where the
checker checks complex) and on the hand-picked kink and tie inputs of `jaxderiv.check.parity.KINKS`, once
through jaxderiv and once through `torch.ops.aten.<name>.<overload>` with the same arguments.

- **forward**: values, dtype and shape of every output (random ops: shapes and dtypes only, the values
  are each library's generator's);
- **vjp**: `jax.vjp` with a random cotangent against `torch.autograd.grad` with the same cotangent;
  complex: `jax_vjp(ct) == conj(torch_grad(conj(ct)))`; outputs torch does not differentiate (indices,
  pivots) get none, and one torch gives a nonzero gradient that jaxderiv does not differentiate is a difference;
  gauge-dependent outputs (svd, eigh) and one-triangle inputs (cholesky) are compared
  through the sample's gauge-invariant function and input projection, as the checker does;
- **jvp**: `jax.jvp` against `torch.func.jvp`, for entries with a `result:` formula;
- **kinks**: forward and vjp (and jvp) on the KINKS inputs: abs/sgn/relu at 0, clamp and friends at their
  bounds, max/min/amax/amin/maximum/minimum/median with ties, sqrt/rsqrt at 0, norm at the zero vector,
  prod with one and two zeros, where with equal branches, sort/topk/kthvalue/mode with equal values,
  max pooling with equal elements in a window;
- **complex**: the same comparisons on complex128 samples.

Tolerances: rtol {RTOL:g}, atol {ATOL:g} in float64/complex128; rtol {RTOL32:g}, atol {ATOL32:g} for the
ops torch runs in float32 only. `n/a`: nothing to compare (no differentiable input, no `result:`
formula, no kink or complex inputs, a `not_implemented` formula, or no torch counterpart: the note
says which). `max error` is the largest absolute difference over all compared values.

PyTorch itself has changed kink conventions and formulas between releases (clamp's gradient at its
bounds changed in 2.14; schemas of elu_backward, softplus_backward, _softmax_backward_data changed
since 1.10), and jaxderiv follows whichever spec file is loaded: with the default (seed) spec some
results differ from torch 2.13 for that reason; each such difference is listed below by op, with
its reason, and asserted as a difference by tests/test_parity.py."""


def _table(title: str, head: str, items) -> list[str]:
    items = list(items)
    return ["", title, "", head, "|---|---|"] + [f"| {op} | {text} |" for op, text in items] if items else []


def to_markdown(rows: list[ParityRow], title: str, differences: dict | None = None,
                listed: str = "jaxderiv.check.parity.DIFFERENCES, default spec") -> str:
    """The page: title, method, the known differences (`differences`, DIFFERENCES by default)
    and torch equivalents among `rows`, the table."""
    names = {r.op for r in rows}
    lines = [title, "", METHOD]
    lines += _table(f"Known differences ({listed})", "| op | columns: reason |",
                    ((n, f"{', '.join(c)}: {why}") for n, (c, why) in (DIFFERENCES if differences is None else differences).items() if n in names))
    lines += _table("Compared through an equivalent torch call (EQUIVALENTS) or in float32 (FLOAT32)", "| op | why |",
                    [(n, e.reason) for n, e in EQUIVALENTS.items() if n in names] + [(n, f"float32: {w}") for n, w in FLOAT32.items() if n in names])
    lines += ["", "| op | spec | " + " | ".join(COLUMNS) + " | max error | note |", "|---" * (len(COLUMNS) + 4) + "|"]
    for r in rows:
        note = "; ".join(x for x in (r.note, r.how) if x).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.op} | {r.spec} | " + " | ".join(_mark(getattr(r, c)) for c in COLUMNS) + f" | {r.max_err:.1e} | {note} |")
    compared = [r for r in rows if any(getattr(r, c) is not None for c in COLUMNS)]
    lines += ["", f"{len(rows)} ops, {len(compared)} compared; agreeing per column (of applicable): {counts(rows)}."]
    return "\n".join(lines) + "\n"


def write_json(rows: list[ParityRow], path: str, torch_version: str) -> None:
    with open(path, "w") as f:
        json.dump({"torch": torch_version, "rtol": RTOL, "atol": ATOL, "rtol32": RTOL32, "atol32": ATOL32,
                   "rows": [dataclasses.asdict(r) for r in rows]}, f, indent=1)
