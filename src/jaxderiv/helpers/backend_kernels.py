"""The backward kernels oneDNN's (mkldnn) entries call, on dense arrays: those of linear, max
pooling and adaptive average pooling. Written from their mathematics as the generic ops'
backward kernels are (see forward/nn.py and forward/pooling.py), not from JAX's autodiff."""

from __future__ import annotations

from ..forward.nn import linear_backward
from ..forward.pooling import max_backward, adaptive_avg_pool_backward, max_pool
from ..namespace import helper


@helper("mkldnn_linear_backward")
def mkldnn_linear_backward(self, grad_output, weight, output_mask):
    """(grad_input, grad_weight, grad_bias) of self @ weight.T + bias: linear_backward's."""
    return linear_backward(self, grad_output, weight, output_mask)


def _max_pool_backward(grad_output, input, n, kernel_size, stride, padding, dilation, ceil_mode):
    """grad_output added at each window's maximum (the first, on ties), found again from input."""
    _, indices = max_pool(input, n, kernel_size, stride, padding, dilation, ceil_mode)
    return max_backward(grad_output, input, indices, n)


@helper("mkldnn_max_pool2d_backward")
def mkldnn_max_pool2d_backward(
    grad_output, output, input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
):
    """`output` (the forward's result) is oneDNN's workspace stand-in: the argmax comes from input.
    The default stride [] is the kernel size, as in the forward (torch 2.13's oneDNN backward
    kernel raises for it instead: "expected stride to be ... but got stride=[]")."""
    return _max_pool_backward(grad_output, input, 2, kernel_size, stride, padding, dilation, ceil_mode)


@helper("mkldnn_max_pool3d_backward")
def mkldnn_max_pool3d_backward(
    grad_output, output, input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
):
    return _max_pool_backward(grad_output, input, 3, kernel_size, stride, padding, dilation, ceil_mode)


@helper("mkldnn_adaptive_avg_pool2d_backward")
def mkldnn_adaptive_avg_pool2d_backward(grad_output, self):
    """Each output's gradient shared equally by the inputs of its window."""
    return adaptive_avg_pool_backward(grad_output, self, 2)
