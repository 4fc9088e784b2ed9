"""Forward implementations of backend-specific kernels whose dense semantics are a generic op's.

- `_conv_depthwise2d`, `conv_depthwise3d`: CUDA's depthwise convolutions, one group per input
  channel (weight (C * m, 1, k...)): at::convolution with groups = in_channels.
- `mkldnn_linear`, `mkldnn_max_pool2d`, `mkldnn_max_pool3d`, `mkldnn_adaptive_avg_pool2d`:
  oneDNN's kernels on its blocked layout; a JAX array is dense, so they are linear, max
  pooling (without indices) and adaptive average pooling. oneDNN's adaptive average pooling
  takes only input sizes divisible by the output size (it is an average pool with kernel =
  stride = input / output), and so does this one; torch's mkldnn ops take float32/bfloat16
  only, these any floating dtype.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..records import CUDA_ONLY, Equivalent, known_failure, parity_differs, samples, torch_equivalent
from . import impl
from ._spatial_samples import register_spatial_samples
from .conv import DEPTHWISE, conv_entry, convolution
from .nn import linear, linear_samples
from .pooling import MAX2, MAX3, P2, P3, pool_sample, adaptive_avg_pool, max_pool


@impl("_conv_depthwise2d", "conv_depthwise3d")
def conv_depthwise(self, weight, kernel_size, bias, stride, padding, dilation):
    """Depthwise 2-d or 3-d convolution: groups = in_channels; kernel_size is the weight's."""
    return convolution(self, weight, bias, stride, padding, dilation, False, 0, self.shape[1])


@impl("mkldnn_linear")
def mkldnn_linear(self, weight, bias=None):
    """self @ weight.T + bias."""
    return linear(self, weight, bias)


def _mkldnn_max_pool(self, n, kernel_size, stride, padding, dilation, ceil_mode):
    """The schema's default stride [] is the kernel size, as in max_pool2d and torch's kernel."""
    return max_pool(self, n, kernel_size, stride, padding, dilation, ceil_mode)[0]


@impl("mkldnn_max_pool2d")
def mkldnn_max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _mkldnn_max_pool(self, 2, kernel_size, stride, padding, dilation, ceil_mode)


@impl("mkldnn_max_pool3d")
def mkldnn_max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _mkldnn_max_pool(self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def _check_divisible(self, output_size):
    sizes = jnp.shape(self)[-2:]
    out = tuple(output_size) if not isinstance(output_size, int) else (output_size, output_size)
    if any(o <= 0 or s % o for s, o in zip(sizes, out)):
        raise ValueError(
            f"mkldnn_adaptive_avg_pool2d: input size {tuple(sizes)} is not divisible by the output size {out}, "
            "which oneDNN's kernel (and torch's) does not support"
        )


@impl("mkldnn_adaptive_avg_pool2d")
def mkldnn_adaptive_avg_pool2d(self, output_size):
    _check_divisible(self, output_size)
    return adaptive_avg_pool(self, 2, output_size)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the backend kernels with dense semantics (forward/backend_kernels.py): the
# depthwise convolutions and oneDNN's linear and pooling entries take the generic ops' samples;
# oneDNN's adaptive average pooling needs input sizes divisible by the output size.
#
# torch 2.13's formulas of `_conv_depthwise2d` and `conv_depthwise3d` call convolution_backward
# with groups = 1, which holds only for a single input channel: with C > 1 channels the weight
# (C * m, 1, k...) does not fit an input of C channels, and torch's own convolution_backward
# raises for those arguments ("Given groups=1, weight of size [4, 1, 3, 3], expected input[2, 2,
# 5, 5] to have 1 channels"). Autograd never reaches these formulas in torch (its depthwise
# convolutions differentiate through `convolution`), so the spec bug is latent; the checker runs
# the entries on two channels and reports the failure as known.
register_spatial_samples("_conv_depthwise2d", conv_entry("", DEPTHWISE, n=2, groups=2, depthwise=True))
register_spatial_samples("conv_depthwise3d", conv_entry("", DEPTHWISE, n=3, groups=2, depthwise=True))
register_spatial_samples("mkldnn_max_pool2d", *[pool_sample(P2, **v) for v in MAX2])
register_spatial_samples("mkldnn_max_pool3d", *[pool_sample(P3, **v) for v in MAX3])
register_spatial_samples(
    "mkldnn_adaptive_avg_pool2d", *[pool_sample((2, 2, 6, 4), output_size=s) for s in ((3, 2), (2, 4), (6, 1))]
)
samples("mkldnn_linear")(linear_samples)
known_failure(
    "torch 2.13's formula passes groups=1 to convolution_backward: wrong for a depthwise weight of C > 1 "
    "input channels (torch's convolution_backward raises for the same arguments)",
    "_conv_depthwise2d",
    "conv_depthwise3d",
)


# -- parity with torch ------------------------------------------------------------------------


def _torch_max_pool_values(k):
    """The torch call of mkldnn_max_pool{k}d: aten.max_pool{k}d_with_indices' values."""

    def call(aten, a):
        pool = getattr(aten, f"max_pool{k}d_with_indices")
        return [pool(a["self"], a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"])[0]]

    return call


torch_equivalent(
    Equivalent(
        lambda aten, a: [
            aten.convolution(
                a["self"],
                a["weight"],
                a["bias"],
                a["stride"],
                a["padding"],
                a["dilation"],
                False,
                [0] * len(a["stride"]),
                a["self"].shape[1],
            )
        ],
        f"{CUDA_ONLY}: aten.convolution, groups = in_channels",
    ),
    "_conv_depthwise2d",
    "conv_depthwise3d",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: [aten.linear(a["self"], a["weight"], a["bias"])],
        "torch's mkldnn kernel takes mkldnn float32 tensors: aten.linear",
    ),
    "mkldnn_linear",
)
torch_equivalent(
    Equivalent(
        _torch_max_pool_values(2),
        "torch's mkldnn kernel takes mkldnn float32 tensors: aten.max_pool2d_with_indices' values",
    ),
    "mkldnn_max_pool2d",
)
torch_equivalent(
    Equivalent(
        _torch_max_pool_values(3),
        "torch's mkldnn kernel takes mkldnn float32 tensors: aten.max_pool3d_with_indices' values",
    ),
    "mkldnn_max_pool3d",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: [aten._adaptive_avg_pool2d(a["self"], a["output_size"])],
        "torch's mkldnn kernel takes mkldnn float32 tensors: aten._adaptive_avg_pool2d",
    ),
    "mkldnn_adaptive_avg_pool2d",
)
parity_differs(
    ("vjp", "jvp"),
    "torch 2.13's formula passes groups=1 to convolution_backward, wrong for a depthwise weight of C > 1 input "
    "channels: it raises here as torch's convolution_backward does for the same arguments (autograd in torch never "
    "reaches it: its depthwise convolutions differentiate through convolution); the jvp, that formula "
    "transposed, raises too",
    "_conv_depthwise2d",
    "conv_depthwise3d",
    torch_spec=True,
    seed_spec=False,
)
