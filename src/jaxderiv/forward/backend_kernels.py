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

from . import impl
from .conv import convolution
from .nn import linear
from .pooling import adaptive_avg_pool, max_pool


@impl("_conv_depthwise2d")
def _conv_depthwise2d(self, weight, kernel_size, bias, stride, padding, dilation):
    """Depthwise 2-d convolution: groups = in_channels; kernel_size is the weight's."""
    return convolution(self, weight, bias, stride, padding, dilation, False, 0, self.shape[1])


@impl("conv_depthwise3d")
def conv_depthwise3d(self, weight, kernel_size, bias, stride, padding, dilation):
    """Depthwise 3-d convolution: groups = in_channels; kernel_size is the weight's."""
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
