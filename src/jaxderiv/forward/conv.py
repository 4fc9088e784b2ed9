"""Forward implementations of ATen's convolutions, every backend's entry and its `*_backward` op.

All backends compute the same mathematics: one general convolution (1d/2d/3d, stride,
padding, dilation, groups, transposed with output_padding) and its backward on
`lax.conv_general_dilated`. ATen layouts: input N C spatial..., weight O I/groups spatial...,
a transposed convolution's weight I O/groups spatial.... The backward ops return None for an
output their output_mask does not ask for, as ATen returns an undefined tensor.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..records import CUDA_ONLY, Equivalent, known_failure, parity_differs, torch_equivalent
from . import impl
from ._spatial_samples import standard_normal, register_spatial_samples


def spatial_tuple(v, n: int) -> tuple:
    """An int[] argument expanded to n spatial dims (ATen repeats a single value); a formula's
    brace initializer `{{1, 1}}` arrives wrapped once more."""
    v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(v) == 1 and isinstance(v[0], (tuple, list)):
        v = tuple(v[0])
    return v * n if len(v) == 1 else v


def _dims(x) -> tuple:
    n = x.ndim - 2
    spatial = "DHW"[3 - n :] if n <= 3 else None
    return (f"NC{spatial}", f"OI{spatial}", f"NC{spatial}")


def _bias(out, bias):
    return out if bias is None else out + jnp.reshape(bias, (1, -1) + (1,) * (out.ndim - 2))


def _conv(x, w, stride, padding, dilation, groups):
    n = x.ndim - 2
    return lax.conv_general_dilated(
        x,
        w,
        spatial_tuple(stride, n),
        [(p, p) for p in spatial_tuple(padding, n)],
        rhs_dilation=spatial_tuple(dilation, n),
        dimension_numbers=_dims(x),
        feature_group_count=groups,
        precision=lax.Precision.HIGHEST,
    )


def _conv_transpose(x, w, stride, padding, dilation, output_padding, groups):
    """The adjoint of `_conv` with weight w (I O/groups k...): a dilated-input convolution."""
    n = x.ndim - 2
    stride, padding, dilation, output_padding = (
        spatial_tuple(v, n) for v in (stride, padding, dilation, output_padding)
    )
    cin, cout_g, *k = w.shape
    w = jnp.reshape(w, (groups, cin // groups, cout_g, *k))
    w = jnp.reshape(jnp.swapaxes(w, 1, 2), (groups * cout_g, cin // groups, *k))
    w = jnp.flip(w, axis=tuple(range(2, 2 + n)))
    pads = [(d * (kk - 1) - p, d * (kk - 1) - p + op) for kk, p, d, op in zip(k, padding, dilation, output_padding)]
    return lax.conv_general_dilated(
        x,
        w,
        (1,) * n,
        pads,
        lhs_dilation=stride,
        rhs_dilation=dilation,
        dimension_numbers=_dims(x),
        feature_group_count=groups,
        precision=lax.Precision.HIGHEST,
    )


def _weight_grad(x, grad, wshape, stride, padding, dilation, groups):
    """d<grad, conv(x, w)>/dw as one convolution: gw[o, i, k] = sum over n, l of
    x[n, i, l*stride + k*dilation - padding] * grad[n, o, l], so the batch is the contracted
    feature dim, grad the kernel, the stride its dilation and the dilation the window stride;
    each group of output channels reads its own group of input channels (batch groups)."""
    n = x.ndim - 2
    s, p, d = (spatial_tuple(v, n) for v in (stride, padding, dilation))
    k = tuple(wshape[2:])
    # the high padding that ends the last window at kernel tap k - 1 (may drop input at the end)
    pads = [
        (pp, dd * (kk - 1) + ss * (l - 1) + 1 - i - pp)
        for i, l, kk, ss, pp, dd in zip(x.shape[2:], grad.shape[2:], k, s, p, d)
    ]
    spatial = "DHW"[3 - n :]
    gw = lax.conv_general_dilated(
        x,
        grad,
        d,
        pads,
        rhs_dilation=s,
        dimension_numbers=(f"CN{spatial}", f"IO{spatial}", f"CN{spatial}"),
        batch_group_count=groups,
        precision=lax.Precision.HIGHEST,
    )
    return jnp.reshape(gw, wshape)


@impl("convolution", "convolution_overrideable")
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """ATen's at::convolution on any backend: what every torch.nn conv layer dispatches to."""
    if transposed:
        out = _conv_transpose(input, weight, stride, padding, dilation, output_padding, groups)
    else:
        out = _conv(input, weight, stride, padding, dilation, groups)
    return _bias(out, bias)


@impl("_convolution")
def _convolution(
    input,
    weight,
    bias,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    benchmark,
    deterministic,
    cudnn_enabled,
    allow_tf32,
):
    """The backend flags choose a kernel, not the mathematics."""
    return convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@impl("convolution_backward_overrideable")
def convolution_backward(
    grad_output, input, weight, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """(grad_input, grad_weight, grad_bias) of `convolution`, each None where the mask says no."""
    n = input.ndim - 2
    gi = gw = gb = None
    if output_mask[0]:
        if transposed:
            # I + output_padding // stride positions: an output_padding of at least the stride
            # (allowed while it is below the dilation) adds taps that no input position reached
            gi = _conv(grad_output, weight, stride, padding, dilation, groups)
            gi = gi[(..., *(slice(0, i) for i in input.shape[2:]))]
        else:
            # the output_padding that gives back input's size from grad_output's
            s, p, d = (spatial_tuple(v, n) for v in (stride, padding, dilation))
            extra = [
                i - ((o - 1) * ss - 2 * pp + dd * (kk - 1) + 1)
                for i, o, ss, pp, dd, kk in zip(input.shape[2:], grad_output.shape[2:], s, p, d, weight.shape[2:])
            ]
            gi = _conv_transpose(grad_output, weight, stride, padding, dilation, extra, groups)
    if output_mask[1]:
        if transposed:
            gw = _weight_grad(grad_output, input, weight.shape, stride, padding, dilation, groups)
        else:
            gw = _weight_grad(input, grad_output, weight.shape, stride, padding, dilation, groups)
    if len(output_mask) > 2 and output_mask[2]:
        gb = jnp.sum(grad_output, axis=(0,) + tuple(range(2, grad_output.ndim)))
    return gi, gw, gb


@impl("convolution_backward")
def aten_convolution_backward(
    grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """`bias_sizes` is the bias's shape, which the bias gradient has already."""
    return convolution_backward(
        grad_output, input, weight, stride, padding, dilation, transposed, output_padding, groups, output_mask
    )


# -- the backends' entries -------------------------------------------------------------------


@impl("slow_conv_transpose2d", "slow_conv_transpose3d")
def slow_conv_transpose(self, weight, kernel_size, bias=None, stride=1, padding=0, output_padding=0, dilation=1):
    return convolution(self, weight, bias, stride, padding, dilation, True, output_padding, 1)


@impl("slow_conv_transpose2d_backward.output_mask")
def slow_conv_transpose2d_backward(
    grad_output, self, weight, kernel_size, stride, padding, output_padding, dilation, columns, ones, output_mask
):
    """`columns` and `ones` are the CPU kernel's scratch buffers: unused."""
    return convolution_backward(
        grad_output, self, weight, stride, padding, dilation, True, output_padding, 1, output_mask
    )


@impl("slow_conv_transpose3d_backward.output_mask")
def slow_conv_transpose3d_backward(
    grad_output, self, weight, kernel_size, stride, padding, output_padding, dilation, finput, fgrad_input, output_mask
):
    """`finput` and `fgrad_input` are the CPU kernel's scratch buffers (`columns` and `ones` in 2d): unused."""
    return convolution_backward(
        grad_output, self, weight, stride, padding, dilation, True, output_padding, 1, output_mask
    )


@impl("thnn_conv2d_forward", "slow_conv3d_forward")
def slow_conv_forward(self, weight, kernel_size, bias, stride, padding):
    """(output, finput, fgrad_input): the buffers were the CPU kernel's im2col scratch, here empty."""
    empty = jnp.zeros((0,), self.dtype)
    return convolution(self, weight, bias, stride, padding, 1, False, 0, 1), empty, empty


@impl("thnn_conv2d_backward.output_mask", "slow_conv3d_backward.output_mask")
def slow_conv_backward(grad_output, self, weight, kernel_size, stride, padding, finput, fgrad_input, output_mask):
    return convolution_backward(grad_output, self, weight, stride, padding, 1, False, 0, 1, output_mask)


@impl("thnn_conv_depthwise2d_forward")
def thnn_conv_depthwise2d_forward(self, weight, kernel_size, bias, stride, padding, dilation):
    """Depthwise: one group per input channel."""
    return convolution(self, weight, bias, stride, padding, dilation, False, 0, self.shape[1])


@impl("thnn_conv_depthwise2d_backward.output_mask")
def thnn_conv_depthwise2d_backward(grad_output, self, weight, kernel_size, stride, padding, dilation, output_mask):
    return convolution_backward(
        grad_output, self, weight, stride, padding, dilation, False, 0, self.shape[1], tuple(output_mask) + (False,)
    )[:2]


@impl("slow_conv_dilated2d", "slow_conv_dilated3d")
def slow_conv_dilated(self, weight, kernel_size, bias=None, stride=1, padding=0, dilation=1):
    return convolution(self, weight, bias, stride, padding, dilation, False, 0, 1)


@impl("slow_conv_dilated2d_backward", "slow_conv_dilated3d_backward")
def slow_conv_dilated_backward(grad_output, self, weight, kernel_size, stride, padding, dilation, output_mask):
    return convolution_backward(grad_output, self, weight, stride, padding, dilation, False, 0, 1, output_mask)


@impl("cudnn_convolution")
def cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32):
    return convolution(self, weight, None, stride, padding, dilation, False, 0, groups)


@impl("cudnn_convolution_backward")
def cudnn_convolution_backward(
    self, grad_output, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32, output_mask
):
    return convolution_backward(
        grad_output, self, weight, stride, padding, dilation, False, 0, groups, tuple(output_mask) + (False,)
    )[:2]


@impl("cudnn_convolution_transpose")
def cudnn_convolution_transpose(
    self, weight, padding, output_padding, stride, dilation, groups, benchmark, deterministic, allow_tf32
):
    return convolution(self, weight, None, stride, padding, dilation, True, output_padding, groups)


@impl("cudnn_convolution_transpose_backward")
def cudnn_convolution_transpose_backward(
    self,
    grad_output,
    weight,
    padding,
    output_padding,
    stride,
    dilation,
    groups,
    benchmark,
    deterministic,
    allow_tf32,
    output_mask,
):
    return convolution_backward(
        grad_output,
        self,
        weight,
        stride,
        padding,
        dilation,
        True,
        output_padding,
        groups,
        tuple(output_mask) + (False,),
    )[:2]


@impl("miopen_convolution", "miopen_depthwise_convolution")
def miopen_convolution(self, weight, bias, padding, stride, dilation, groups, benchmark, deterministic):
    return convolution(self, weight, bias, stride, padding, dilation, False, 0, groups)


@impl("miopen_convolution_backward", "miopen_depthwise_convolution_backward")
def miopen_convolution_backward(
    self, grad_output, weight, padding, stride, dilation, groups, benchmark, deterministic, output_mask
):
    return convolution_backward(grad_output, self, weight, stride, padding, dilation, False, 0, groups, output_mask)


@impl("miopen_convolution_transpose")
def miopen_convolution_transpose(
    self, weight, bias, padding, output_padding, stride, dilation, groups, benchmark, deterministic
):
    return convolution(self, weight, bias, stride, padding, dilation, True, output_padding, groups)


@impl("miopen_convolution_transpose_backward")
def miopen_convolution_transpose_backward(
    self, grad_output, weight, padding, output_padding, stride, dilation, groups, benchmark, deterministic, output_mask
):
    return convolution_backward(
        grad_output, self, weight, stride, padding, dilation, True, output_padding, groups, output_mask
    )


@impl("mkldnn_convolution")
def mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups):
    return convolution(self, weight, bias, stride, padding, dilation, False, 0, groups)


@impl("mkldnn_convolution_backward")
def mkldnn_convolution_backward(self, grad_output, weight, padding, stride, dilation, groups, output_mask):
    return convolution_backward(grad_output, self, weight, stride, padding, dilation, False, 0, groups, output_mask)


@impl("_nnpack_spatial_convolution")
def _nnpack_spatial_convolution(input, weight, bias, padding, stride=1):
    return convolution(input, weight, bias, stride, padding, 1, False, 0, 1)


@impl("conv_tbc")
def conv_tbc(self, weight, bias, pad=0):
    """Time-batch-channel layout: self (T B Cin), weight (K Cin Cout), bias (Cout)."""
    out = convolution(jnp.transpose(self, (1, 2, 0)), jnp.transpose(weight, (2, 1, 0)), bias, 1, pad, 1, False, 0, 1)
    return jnp.transpose(out, (2, 0, 1))


# -- im2col / col2im ----------------------------------------------------------------------------


def _unfold_kernel(channels, kernel_size, dtype):
    """The one-hot weight (C*kh*kw, 1, kh, kw) whose grouped convolution is im2col."""
    kh, kw = kernel_size
    eye = jnp.eye(kh * kw, dtype=dtype).reshape(kh * kw, 1, kh, kw)
    return jnp.tile(eye, (channels, 1, 1, 1))


@impl("im2col")
def im2col(self, kernel_size, dilation, padding, stride):
    """(N, C, H, W) -> (N, C*kh*kw, L): column c*kh*kw + i*kw + j holds tap (i, j) of channel c."""
    c = self.shape[1]
    cols = _conv(self, _unfold_kernel(c, kernel_size, self.dtype), stride, padding, dilation, c)
    return jnp.reshape(cols, (cols.shape[0], cols.shape[1], math.prod(cols.shape[2:])))  # no -1: a 0-size batch


@impl("col2im")
def col2im(self, output_size, kernel_size, dilation, padding, stride):
    """The adjoint of im2col: every column entry added back into its pixel of (N, C, H, W)."""
    kh, kw = kernel_size
    c = self.shape[1] // (kh * kw)
    s, p, d = (spatial_tuple(v, 2) for v in (stride, padding, dilation))
    blocks = [(o + 2 * pp - dd * (k - 1) - 1) // ss + 1 for o, pp, dd, k, ss in zip(output_size, p, d, kernel_size, s)]
    cols = jnp.reshape(self, (self.shape[0], self.shape[1], *blocks))
    extra = [
        o - ((b - 1) * ss - 2 * pp + dd * (k - 1) + 1)
        for o, b, ss, pp, dd, k in zip(output_size, blocks, s, p, d, kernel_size)
    ]
    w = _unfold_kernel(c, kernel_size, self.dtype)  # (C*K, 1, kh, kw) as a transposed weight: I=C*K, O/groups=1
    return _conv_transpose(cols, w, s, p, d, extra, c)


@impl("im2col_backward")
def im2col_backward(grad_output, input_size, kernel_size, dilation, padding, stride):
    return col2im(grad_output, input_size, kernel_size, dilation, padding, stride)


@impl("col2im_backward")
def col2im_backward(grad_output, kernel_size, dilation, padding, stride):
    return im2col(grad_output, kernel_size, dilation, padding, stride)


# -- torch 2.13's slow 2d convolution ------------------------------------------------------------


@impl("_slow_conv2d_forward")
def _slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding):
    return convolution(self, weight, bias, stride, padding, 1, False, 0, 1)


@impl("_slow_conv2d_backward.output_mask")
def _slow_conv2d_backward(grad_output, self, weight, kernel_size, stride, padding, output_mask):
    return convolution_backward(grad_output, self, weight, stride, padding, 1, False, 0, 1, output_mask)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the convolutions (forward/conv.py): every backend's entry and its backward,
# the depthwise and NNPACK kernels, conv_tbc, im2col and col2im.
#
# Shapes are small (a few pixels, two channels, two per group) so every mode stays fast; 3-D
# convolutions take the smallest volume that still strides and pads. Each backend's entry is
# sampled with the options its schema takes (groups, dilation, transposed with an
# output_padding); the general entries (convolution, convolution_overrideable) in 1d, 2d with
# groups and dilation, transposed 2d and 3d, their backward entries direct only (the formula
# passes transposed=false). A backward entry's grad_output has the shape its forward's output
# has, and every output_mask entry is on.
#
# The parity run compares the kernels torch cannot run on CPU in float64 (cuDNN, MIOpen, oneDNN,
# NNPACK, the overrideable hook) with aten.convolution, and the hook's backward with
# convolution_backward.
ALL = (True, True, True)

# (input, weight) shapes: x (N, Cin, sp...), w (Cout, Cin/g, k...), or transposed w (Cin, Cout/g, k...)


def _conv_samples(n=2, groups=1, transposed=False, cin=2, cout=2, size=5, k=3):
    x = (2, cin) + (size,) * n
    w = ((cin, cout // groups) if transposed else (cout, cin // groups)) + (k,) * n
    return x, w, cout


def _out_size(size, k, s, p, d, transposed, op=0):
    if transposed:
        return (size - 1) * s - 2 * p + d * (k - 1) + 1 + op
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv_entry(
    name,
    arg_names,
    n,
    groups=1,
    transposed=False,
    bias=True,
    backward=False,
    stride=2,
    padding=1,
    dilation=1,
    output_padding=1,
    mask=ALL,
    depthwise=False,
    size=4,
    k=3,
):
    """One sample of a convolution entry (or its backward: grad_output added, a mask given).

    groups > 1 has two channels per group, a depthwise one a single input channel per group.
    """
    channels = groups if depthwise else 2 * groups if groups > 1 else 2
    if n == 3:  # 3d: the smallest volume that still strides and pads
        size, k = 3, 2
    x_shape, w_shape, cout = _conv_samples(
        n, groups, transposed, cin=channels, cout=2 * groups if groups > 1 else 2, size=size, k=k
    )
    op = output_padding if transposed else 0

    def make(rng):
        values = {arg_names[0]: standard_normal(rng, *x_shape), "weight": standard_normal(rng, *w_shape)}
        if bias:
            values["bias"] = standard_normal(rng, cout)
        named = {
            "stride": (stride,) * n,
            "padding": (padding,) * n,
            "dilation": (dilation,) * n,
            "output_padding": (op,) * n,
            "groups": groups,
            "transposed": transposed,
            "kernel_size": w_shape[2:],
            "benchmark": False,
            "deterministic": False,
            "allow_tf32": False,
            "cudnn_enabled": True,
        }
        values.update({k: v for k, v in named.items() if k in arg_names})
        if "bias_sizes" in arg_names:
            values["bias_sizes"] = (cout,)
        if backward:
            out = tuple(
                _out_size(x_shape[2 + i], w_shape[2 + i], stride, padding, dilation, transposed, op) for i in range(n)
            )
            values["grad_output"] = standard_normal(rng, x_shape[0], cout, *out)
            values["output_mask"] = mask
        for k in arg_names:
            if k not in values and k in ("columns", "ones", "finput", "fgrad_input"):
                values[k] = np.zeros((0,))
        return values

    return make


_CONV = {  # name: (argument names, dims, groups, transposed, bias, stride/padding/dilation options)
    "convolution_overrideable": (
        ("input", "stride", "padding", "dilation", "transposed", "output_padding", "groups"),
        None,
    ),
    "slow_conv_transpose2d": (
        ("self", "kernel_size", "stride", "padding", "output_padding", "dilation"),
        dict(n=2, transposed=True),
    ),
    "slow_conv_transpose3d": (
        ("self", "kernel_size", "stride", "padding", "output_padding", "dilation"),
        dict(n=3, transposed=True),
    ),
    "thnn_conv2d_forward": (("self", "kernel_size", "stride", "padding"), dict(n=2, dilation=1)),
    "slow_conv3d_forward": (("self", "kernel_size", "stride", "padding"), dict(n=3, dilation=1)),
    "slow_conv_dilated2d": (("self", "kernel_size", "stride", "padding", "dilation"), dict(n=2, dilation=2)),
    "slow_conv_dilated3d": (("self", "kernel_size", "stride", "padding", "dilation"), dict(n=3, dilation=2, padding=2)),
    "cudnn_convolution": (
        ("self", "padding", "stride", "dilation", "groups", "benchmark", "deterministic", "allow_tf32"),
        dict(n=2, groups=2, bias=False, dilation=2),
    ),
    "cudnn_convolution_transpose": (
        (
            "self",
            "padding",
            "output_padding",
            "stride",
            "dilation",
            "groups",
            "benchmark",
            "deterministic",
            "allow_tf32",
        ),
        dict(n=2, groups=2, bias=False, transposed=True),
    ),
    "miopen_convolution": (
        ("self", "padding", "stride", "dilation", "groups", "benchmark", "deterministic"),
        dict(n=2, groups=2),
    ),
    "miopen_depthwise_convolution": (
        ("self", "padding", "stride", "dilation", "groups", "benchmark", "deterministic"),
        dict(n=2, groups=2, depthwise=True),
    ),
    "miopen_convolution_transpose": (
        ("self", "padding", "output_padding", "stride", "dilation", "groups", "benchmark", "deterministic"),
        dict(n=2, groups=2, transposed=True),
    ),
    "mkldnn_convolution": (("self", "padding", "stride", "dilation", "groups"), dict(n=2, groups=2, dilation=2)),
    "convolution": (("input", "stride", "padding", "dilation", "transposed", "output_padding", "groups"), None),
    "_convolution": (
        (
            "input",
            "stride",
            "padding",
            "dilation",
            "transposed",
            "output_padding",
            "groups",
            "benchmark",
            "deterministic",
            "cudnn_enabled",
            "allow_tf32",
        ),
        dict(n=2, groups=2, dilation=2),
    ),
    "_slow_conv2d_forward": (("self", "kernel_size", "stride", "padding"), dict(n=2, dilation=1)),
}
for _name, (_args, _kw) in _CONV.items():
    if _kw is None:  # the general entry: 1d, 2d with groups and dilation, transposed 2d, 3d
        variants = [
            dict(n=1),
            dict(n=2, groups=2, dilation=2),
            dict(n=2, transposed=True, groups=2),
            dict(n=3, bias=False, stride=1),
        ]
    else:
        variants = [_kw]
    register_spatial_samples(_name, *[conv_entry(_name, _args, **v) for v in variants])

_BACKWARD = {  # backward entry: its forward's argument names
    "convolution_backward_overrideable": "convolution_overrideable",
    "slow_conv_transpose2d_backward.output_mask": "slow_conv_transpose2d",
    "slow_conv_transpose3d_backward.output_mask": "slow_conv_transpose3d",
    "thnn_conv2d_backward.output_mask": "thnn_conv2d_forward",
    "slow_conv3d_backward.output_mask": "slow_conv3d_forward",
    "slow_conv_dilated2d_backward": "slow_conv_dilated2d",
    "slow_conv_dilated3d_backward": "slow_conv_dilated3d",
    "cudnn_convolution_backward": "cudnn_convolution",
    "cudnn_convolution_transpose_backward": "cudnn_convolution_transpose",
    "miopen_convolution_backward": "miopen_convolution",
    "miopen_depthwise_convolution_backward": "miopen_depthwise_convolution",
    "miopen_convolution_transpose_backward": "miopen_convolution_transpose",
    "mkldnn_convolution_backward": "mkldnn_convolution",
    "convolution_backward": "convolution",
    "_slow_conv2d_backward.output_mask": "_slow_conv2d_forward",
}
for _name, _fwd in _BACKWARD.items():
    _args, _kw = _CONV[_fwd]
    _args = _args + ("columns", "ones", "finput", "fgrad_input", "bias_sizes")
    two = _name.startswith("cudnn")
    if _kw is None:  # its formula passes transposed=false whatever `transposed` is: direct only
        variants = [dict(n=1), dict(n=2, groups=2, dilation=2)]
    else:
        variants = [_kw]
    register_spatial_samples(
        _name,
        *[
            conv_entry(_name, _args, **{**v, "bias": False, "backward": True, "mask": ALL[:2] if two else ALL})
            for v in variants
        ],
    )

DEPTHWISE = ("self", "kernel_size", "stride", "padding", "dilation")
register_spatial_samples("thnn_conv_depthwise2d_forward", conv_entry("", DEPTHWISE, n=2, groups=2, depthwise=True))
register_spatial_samples(
    "thnn_conv_depthwise2d_backward.output_mask",
    conv_entry("", DEPTHWISE, n=2, groups=2, depthwise=True, bias=False, backward=True, mask=(True, True)),
)


register_spatial_samples("_nnpack_spatial_convolution", conv_entry("", ("input", "padding", "stride"), n=2, stride=1))
register_spatial_samples(
    "conv_tbc",
    lambda rng: {
        "self": standard_normal(rng, 6, 2, 3),
        "weight": standard_normal(rng, 3, 3, 2),
        "bias": standard_normal(rng, 2),
        "pad": 1,
    },
)
# im2col and col2im (and their backwards, each the other) of a (2, 2, 5, 6) image, 2x3 kernel
_UNFOLD = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": (1, 0), "stride": (2, 1)}
register_spatial_samples("im2col", lambda rng: {"self": standard_normal(rng, 2, 2, 5, 6), **_UNFOLD})
register_spatial_samples(
    "col2im", lambda rng: {"self": standard_normal(rng, 2, 12, 6), "output_size": (5, 6), **_UNFOLD}
)
register_spatial_samples(
    "im2col_backward", lambda rng: {"grad_output": standard_normal(rng, 2, 12, 6), "input_size": (5, 6), **_UNFOLD}
)
register_spatial_samples("col2im_backward", lambda rng: {"grad_output": standard_normal(rng, 2, 2, 5, 6), **_UNFOLD})


_OVERRIDEABLE_BUG = (
    "spec bug (PyTorch 1.7): convolution_backward_overrideable's double-backward formula passes "
    "transposed=false to _convolution_double_backward, so the second derivative of a transposed "
    "convolution_overrideable is the non-transposed one's; so is its jvp (1.7 gives no result formula: "
    "the backward formula transposed through that formula), which fails on shapes there"
)
known_failure(_OVERRIDEABLE_BUG, "convolution_overrideable", modes=("jvp", "vjp_vjp"))
parity_differs(("jvp",), _OVERRIDEABLE_BUG + " (the transposed samples)", "convolution_overrideable")


# -- parity with torch ------------------------------------------------------------------------


# torch calls computing what ops torch cannot run on CPU (or under the seed's schema) compute;
# each gets torch.ops.aten and the sample's arguments by name, as torch values.
def _torch_conv(transposed, bias=True):
    def call(aten, a):
        n = len(a["stride"])
        return aten.convolution(
            a["self"],
            a["weight"],
            a.get("bias") if bias else None,
            a["stride"],
            a["padding"],
            a["dilation"],
            transposed,
            a.get("output_padding", [0] * n),
            a["groups"],
        )

    return call


def _torch_conv_backward_overrideable(aten, a):
    w, groups = a["weight"], a["groups"]
    bias_sizes = [w.shape[1] * groups] if a["transposed"] else [w.shape[0]]
    return aten.convolution_backward(
        a["grad_output"],
        a["input"],
        w,
        bias_sizes,
        a["stride"],
        a["padding"],
        a["dilation"],
        a["transposed"],
        a["output_padding"],
        groups,
        a["output_mask"],
    )


torch_equivalent(Equivalent(_torch_conv(False, bias=False), f"{CUDA_ONLY}: aten.convolution"), "cudnn_convolution")
torch_equivalent(
    Equivalent(_torch_conv(True, bias=False), f"{CUDA_ONLY}: aten.convolution, transposed"),
    "cudnn_convolution_transpose",
)
torch_equivalent(
    Equivalent(_torch_conv(False), f"{CUDA_ONLY}: aten.convolution"),
    "miopen_convolution",
    "miopen_depthwise_convolution",
)
torch_equivalent(
    Equivalent(_torch_conv(True), f"{CUDA_ONLY}: aten.convolution, transposed"), "miopen_convolution_transpose"
)
torch_equivalent(
    Equivalent(_torch_conv(False), "torch's mkldnn kernel takes no float64: aten.convolution"), "mkldnn_convolution"
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.convolution(
            a["input"], a["weight"], a["bias"], a["stride"], a["padding"], [1, 1], False, [0, 0], 1
        ),
        "torch's NNPACK kernel takes float32 only: aten.convolution",
    ),
    "_nnpack_spatial_convolution",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.convolution(*a.values()),
        "torch has no CPU kernel for the overrideable hook: aten.convolution",
    ),
    "convolution_overrideable",
)
torch_equivalent(
    Equivalent(
        _torch_conv_backward_overrideable,
        "torch has no CPU kernel for the overrideable hook: aten.convolution_backward",
    ),
    "convolution_backward_overrideable",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: [aten.slow_conv3d_forward(*a.values())],
        "torch 2.13 returns only the output (finput, fgrad_input not compared)",
        True,
    ),
    "slow_conv3d_forward",
)
