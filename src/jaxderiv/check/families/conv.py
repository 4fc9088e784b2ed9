"""Checker inputs of the convolutions (forward/conv.py): every backend's entry and its backward,
the depthwise and NNPACK kernels, conv_tbc, im2col and col2im.

Shapes are small (a few pixels, two channels, two per group) so every mode stays fast; 3-D
convolutions take the smallest volume that still strides and pads. Each backend's entry is
sampled with the options its schema takes (groups, dilation, transposed with an
output_padding); the general entries (convolution, convolution_overrideable) in 1d, 2d with
groups and dilation, transposed 2d and 3d, their backward entries direct only (the formula
passes transposed=false). A backward entry's grad_output has the shape its forward's output
has, and every output_mask entry is on.

The parity run compares the kernels torch cannot run on CPU in float64 (cuDNN, MIOpen, oneDNN,
NNPACK, the overrideable hook) with aten.convolution, and the hook's backward with
convolution_backward.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, known_failure, parity_differs, torch_equivalent
from . import CUDA_ONLY
from ._spatial_common import _normal, _register

ALL = (True, True, True)

# (input, weight) shapes: x (N, Cin, sp...), w (Cout, Cin/g, k...), or transposed w (Cin, Cout/g, k...)


def _conv(n=2, groups=1, transposed=False, cin=2, cout=2, size=5, k=3):
    x = (2, cin) + (size,) * n
    w = ((cin, cout // groups) if transposed else (cout, cin // groups)) + (k,) * n
    return x, w, cout


def _out_size(size, k, s, p, d, transposed, op=0):
    if transposed:
        return (size - 1) * s - 2 * p + d * (k - 1) + 1 + op
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _conv_entry(
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
    x_shape, w_shape, cout = _conv(
        n, groups, transposed, cin=channels, cout=2 * groups if groups > 1 else 2, size=size, k=k
    )
    op = output_padding if transposed else 0

    def make(rng):
        values = {arg_names[0]: _normal(rng, *x_shape), "weight": _normal(rng, *w_shape)}
        if bias:
            values["bias"] = _normal(rng, cout)
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
            values["grad_output"] = _normal(rng, x_shape[0], cout, *out)
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
    _register(_name, *[_conv_entry(_name, _args, **v) for v in variants])

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
    _register(
        _name,
        *[
            _conv_entry(_name, _args, **{**v, "bias": False, "backward": True, "mask": ALL[:2] if two else ALL})
            for v in variants
        ],
    )

_DEPTHWISE = ("self", "kernel_size", "stride", "padding", "dilation")
_register("thnn_conv_depthwise2d_forward", _conv_entry("", _DEPTHWISE, n=2, groups=2, depthwise=True))
_register(
    "thnn_conv_depthwise2d_backward.output_mask",
    _conv_entry("", _DEPTHWISE, n=2, groups=2, depthwise=True, bias=False, backward=True, mask=(True, True)),
)


_register("_nnpack_spatial_convolution", _conv_entry("", ("input", "padding", "stride"), n=2, stride=1))
_register(
    "conv_tbc",
    lambda rng: {"self": _normal(rng, 6, 2, 3), "weight": _normal(rng, 3, 3, 2), "bias": _normal(rng, 2), "pad": 1},
)
_register(
    "im2col",
    lambda rng: {
        "self": _normal(rng, 2, 2, 5, 6),
        "kernel_size": (2, 3),
        "dilation": (1, 2),
        "padding": (1, 0),
        "stride": (2, 1),
    },
)
_register(
    "col2im",
    lambda rng: {
        "self": _normal(rng, 2, 12, 6),
        "output_size": (5, 6),
        "kernel_size": (2, 3),
        "dilation": (1, 2),
        "padding": (1, 0),
        "stride": (2, 1),
    },
)
_register(
    "im2col_backward",
    lambda rng: {
        "grad_output": _normal(rng, 2, 12, 6),
        "input_size": (5, 6),
        "kernel_size": (2, 3),
        "dilation": (1, 2),
        "padding": (1, 0),
        "stride": (2, 1),
    },
)
_register(
    "col2im_backward",
    lambda rng: {
        "grad_output": _normal(rng, 2, 2, 5, 6),
        "kernel_size": (2, 3),
        "dilation": (1, 2),
        "padding": (1, 0),
        "stride": (2, 1),
    },
)


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
