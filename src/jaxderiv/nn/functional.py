"""torch.nn.functional's forms of the layers, each on the ATen op torch itself calls.

Every derivative comes from that op's spec entry; jax.numpy appears only for shape
bookkeeping (reshapes), whose derivative has no convention to differ on.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from .. import default_registry

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "conv",
    "conv_transpose",
    "cross_entropy",
    "dropout",
    "embedding",
    "flatten",
    "gelu",
    "group_norm",
    "layer_norm",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "tanh",
]

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _aten():
    return default_registry().aten


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def linear(x, weight, bias=None):
    """x @ weight.T + bias: addmm (mm without bias) on the rows of x."""
    aten = _aten()
    rows = jnp.reshape(x, (-1, x.shape[-1]))
    wt = aten.t.default(weight)
    y = aten.mm.default(rows, wt) if bias is None else aten.addmm.default(bias, rows, wt)
    return jnp.reshape(y, x.shape[:-1] + (weight.shape[0],))


def conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Convolution of any spatial rank (weight O, I/groups, k...); an unbatched input is batched for the call."""
    n = weight.ndim - 2
    batched = x.ndim == n + 2
    xb = x if batched else x[None]
    if padding == "valid":
        padding = 0
    elif padding == "same":
        d, k = _tuple(dilation, n), weight.shape[2:]
        total = [dd * (kk - 1) for dd, kk in zip(d, k)]
        if any(t % 2 for t in total):
            raise NotImplementedError(
                "padding='same' with an even receptive field pads unevenly; pad the input instead"
            )
        padding = tuple(t // 2 for t in total)
    y = _aten().convolution_overrideable.default(
        xb, weight, bias, _tuple(stride, n), _tuple(padding, n), _tuple(dilation, n), False, (0,) * n, groups
    )
    return y if batched else y[0]


def conv_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution (weight I, O/groups, k...), torch's argument order."""
    n = weight.ndim - 2
    batched = x.ndim == n + 2
    xb = x if batched else x[None]
    y = _aten().convolution_overrideable.default(
        xb,
        weight,
        bias,
        _tuple(stride, n),
        _tuple(padding, n),
        _tuple(dilation, n),
        True,
        _tuple(output_padding, n),
        groups,
    )
    return y if batched else y[0]


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalized x (native_batch_norm); the running statistics are not updated here (see BatchNorm)."""
    return _aten().native_batch_norm.default(x, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalization over the trailing `normalized_shape` dims (aten.native_layer_norm)."""
    return _aten().native_layer_norm.default(x, list(normalized_shape), weight, bias, eps)[0]


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalization over groups of channels (native_group_norm on an (N, C, HxW) view)."""
    n, c = x.shape[0], x.shape[1]
    return _aten().native_group_norm.default(x, weight, bias, n, c, math.prod(x.shape[2:]), num_groups, eps)[0]


def embedding(indices, weight, padding_idx=None, scale_grad_by_freq=False):
    """Rows of weight; the row at padding_idx gets no gradient."""
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += weight.shape[0]
    return _aten().embedding.default(weight, indices, padding_idx, scale_grad_by_freq, False)


def dropout(x, p, key):
    """Elements zeroed with probability p, the rest scaled by 1/(1-p); the mask is drawn from `key`."""
    if p == 0.0:
        return x
    if p == 1.0:
        return jnp.zeros_like(x)
    return _aten()._fused_dropout.default(x, 1.0 - p, key)[0]


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d on aten.max_pool2d_with_indices: ties route the gradient to the first maximum, as ATen does."""
    k = _tuple(kernel_size, 2)
    s = k if stride is None else _tuple(stride, 2)
    out, indices = _aten().max_pool2d_with_indices.default(x, k, s, _tuple(padding, 2), _tuple(dilation, 2), ceil_mode)
    return (out, indices) if return_indices else out


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """torch.nn.functional.avg_pool2d on aten.avg_pool2d."""
    k = _tuple(kernel_size, 2)
    s = k if stride is None else _tuple(stride, 2)
    return _aten().avg_pool2d.default(x, k, s, _tuple(padding, 2), ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(x, output_size):
    """Average over adaptive windows; a None in output_size keeps that input size."""
    size = tuple(x.shape[-2 + i] if s is None else s for i, s in enumerate(_tuple(output_size, 2)))
    return _aten()._adaptive_avg_pool2d.default(x, size)


def relu(x):
    """max(x, 0) with PyTorch's gradient 0 at x = 0 (aten.relu)."""
    return _aten().relu.default(x)


def gelu(x, approximate: str = "none"):
    """GELU (aten.gelu): exact (erf), or with `approximate="tanh"` the tanh approximation."""
    return _aten().gelu.default(x, approximate=approximate)


def silu(x):
    """x * sigmoid(x) (aten.silu)."""
    return _aten().silu.default(x)


def sigmoid(x):
    """aten.sigmoid; its gradient is computed from the result."""
    return _aten().sigmoid.default(x)


def tanh(x):
    """aten.tanh; its gradient is computed from the result."""
    return _aten().tanh.default(x)


def softmax(x, dim):
    """aten._softmax along `dim`."""
    return _aten()._softmax.default(x, dim, False)


def log_softmax(x, dim):
    """aten._log_softmax along `dim`."""
    return _aten()._log_softmax.default(x, dim, False)


def flatten(x, start_dim=1, end_dim=-1):
    """Dimensions start_dim..end_dim merged into one, as torch.flatten (a reshape: its gradient is a reshape)."""
    end = end_dim % x.ndim
    return jnp.reshape(x, x.shape[:start_dim] + (-1,) + x.shape[end + 1 :])


def nll_loss(log_probs, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log likelihood of class indices; inputs (C,), (N, C) (nll_loss_forward) or (N, C, H, W) (nll_loss2d_forward)."""
    if log_probs.ndim not in (1, 2, 4):
        raise ValueError(f"nll_loss takes inputs of 1, 2 or 4 dims, got shape {log_probs.shape}")
    op = _aten().nll_loss2d_forward if log_probs.ndim == 4 else _aten().nll_loss_forward
    return op.default(log_probs, target, weight, REDUCTIONS[reduction], ignore_index)[0]


def cross_entropy(logits, target, weight=None, ignore_index=-100, reduction="mean"):
    """nll_loss of log_softmax over the class dim (1, or 0 for one sample), as torch composes it."""
    return nll_loss(log_softmax(logits, 1 if logits.ndim > 1 else 0), target, weight, ignore_index, reduction)


def mse_loss(x, target, reduction="mean"):
    """aten.mse_loss with torch's reduction names ('none', 'mean', 'sum')."""
    return _aten().mse_loss.default(x, target, REDUCTIONS[reduction])
