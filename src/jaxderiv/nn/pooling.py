"""MaxPool2d, AvgPool2d and AdaptiveAvgPool2d: torch.nn's pooling layers (no parameters)."""

from __future__ import annotations

from flax import nnx

from . import functional as F


class MaxPool2d(nnx.Module):
    """Max over windows, like torch.nn.MaxPool2d: the gradient goes to the first maximum of a window, as torch's.

    >>> MaxPool2d(2)(jnp.ones((1, 1, 4, 4))).shape
    (1, 1, 2, 2)
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def __call__(self, x):
        return F.max_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class AvgPool2d(nnx.Module):
    """Mean over windows, like torch.nn.AvgPool2d.

    >>> AvgPool2d(2)(jnp.ones((1, 1, 4, 4))).shape
    (1, 1, 2, 2)
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
    ):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def __call__(self, x):
        return F.avg_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AdaptiveAvgPool2d(nnx.Module):
    """Mean over adaptive windows to a fixed output size, like torch.nn.AdaptiveAvgPool2d.

    >>> AdaptiveAvgPool2d((1, 1))(jnp.ones((2, 3, 5, 7))).shape
    (2, 3, 1, 1)
    """

    def __init__(self, output_size):
        self.output_size = output_size

    def __call__(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)
