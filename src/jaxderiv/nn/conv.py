"""Conv1d, Conv2d and ConvTranspose2d: torch.nn's convolutions, weights in torch's layout (OI..., IO... transposed)."""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

from . import functional as F
from .dtypes import promote, value
from .initializers import bias_uniform, kaiming_uniform


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(nnx.Module):
    """torch's _ConvNd, in the argument order of Conv1d / Conv2d (ConvTranspose2d reorders them)."""

    spatial = 0
    transposed = False

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by groups ({groups})"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r}: only 'zeros' is supported")
        n = self.spatial
        k = _tuple(kernel_size, n)
        shape = (
            (in_channels, out_channels // groups, *k) if self.transposed else (out_channels, in_channels // groups, *k)
        )
        self.weight = nnx.Param(kaiming_uniform(rngs.params(), shape, param_dtype))
        self.bias = (
            nnx.Param(bias_uniform(rngs.params(), (out_channels,), shape, param_dtype)) if bias else nnx.data(None)
        )
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.dilation, self.groups = _tuple(stride, n), _tuple(dilation, n), groups
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.output_padding = _tuple(0, n)  # ConvTranspose2d sets its own
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, x):
        x, w, b = promote(x, value(self.weight), value(self.bias), dtype=self.dtype)
        if self.transposed:
            return F.conv_transpose(x, w, b, self.stride, self.padding, self.output_padding, self.groups, self.dilation)
        return F.conv(x, w, b, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-d convolution over (N, C, L) or (C, L), like torch.nn.Conv1d.

    >>> Conv1d(2, 4, 3, padding=1, rngs=nnx.Rngs(0))(jnp.ones((1, 2, 5))).shape
    (1, 4, 5)

    Attributes:
      weight: Param [out_channels, in_channels/groups, k]; bias: Param [out_channels] or None.
    """

    spatial = 1


class Conv2d(_ConvNd):
    """2-d convolution over (N, C, H, W) or (C, H, W), like torch.nn.Conv2d.

    >>> Conv2d(1, 8, 3, padding=1, rngs=nnx.Rngs(0))(jnp.ones((2, 1, 8, 8))).shape
    (2, 8, 8, 8)

    Attributes:
      weight: Param [out_channels, in_channels/groups, kh, kw] (OIHW); bias: Param [out_channels] or None.
    """

    spatial = 2


class ConvTranspose2d(_ConvNd):
    """2-d transposed convolution, like torch.nn.ConvTranspose2d.

    >>> ConvTranspose2d(4, 2, 3, stride=2, output_padding=1, rngs=nnx.Rngs(0))(jnp.ones((1, 4, 5, 5))).shape
    (1, 2, 12, 12)

    Attributes:
      weight: Param [in_channels, out_channels/groups, kh, kw]; bias: Param [out_channels] or None.
    """

    spatial = 2
    transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        *args,
        **kw,
    ):
        """torch's order: output_padding after padding, dilation after bias; then padding_mode and
        the keyword arguments of _ConvNd."""
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, *args, **kw)
        self.output_padding = _tuple(output_padding, self.spatial)
