"""Checker inputs of the spatial family: convolutions, pooling, upsampling.

Shapes are small (a few pixels, two channels) so every mode stays fast. Pooling inputs are a
shuffled grid of well-separated values: max pooling has no ties and its argmax does not move
under the finite-difference step.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ...forward import implementation
from ..opdb import Equivalent, kinks, known_failure, parity_differs, parity_samples, samples, torch_equivalent
from ..samples import Sample
from . import CUDA_ONLY, matrix

ALL = (True, True, True)


def _normal(rng, *shape):
    return rng.normal(size=shape)


def _register(name, *variants):
    """`variants`: functions rng -> keyword arguments of one sample."""

    @samples(name)
    def make(op, rng, dtype=np.float64):
        out = []
        for v in variants:
            given = v(rng)
            kw = {a.name: given.get(a.name) for a in op.schema.arguments if a.name in given or a.is_tensor}
            out.append(Sample((), kw, " ".join(f"{k}={x}" for k, x in kw.items() if not isinstance(x, np.ndarray))))
        return out


# -- convolution ------------------------------------------------------------------------------
# (input, weight) shapes: x (N, Cin, sp...), w (Cout, Cin/g, k...), or transposed w (Cin, Cout/g, k...)


def _conv(n=2, groups=1, transposed=False, cin=2, cout=2, size=5, k=3):
    x = (2, cin) + (size,) * n
    w = ((cin, cout // groups) if transposed else (cout, cin // groups)) + (k,) * n
    return x, w, cout


def _out_size(size, k, s, p, d, transposed, op=0):
    if transposed:
        return (size - 1) * s - 2 * p + d * (k - 1) + 1 + op
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _conv_entry(name, arg_names, n, groups=1, transposed=False, bias=True, backward=False, stride=2, padding=1, dilation=1, output_padding=1, mask=ALL, depthwise=False, size=4, k=3):
    """One sample of a convolution entry (or its backward: grad_output added, a mask given).

    groups > 1 has two channels per group, a depthwise one a single input channel per group.
    """
    channels = groups if depthwise else 2 * groups if groups > 1 else 2
    if n == 3:  # 3d: the smallest volume that still strides and pads
        size, k = 3, 2
    x_shape, w_shape, cout = _conv(n, groups, transposed, cin=channels, cout=2 * groups if groups > 1 else 2, size=size, k=k)
    op = output_padding if transposed else 0

    def make(rng):
        values = {arg_names[0]: _normal(rng, *x_shape), "weight": _normal(rng, *w_shape)}
        if bias:
            values["bias"] = _normal(rng, cout)
        named = {"stride": (stride,) * n, "padding": (padding,) * n, "dilation": (dilation,) * n, "output_padding": (op,) * n,
                 "groups": groups, "transposed": transposed, "kernel_size": w_shape[2:], "benchmark": False, "deterministic": False, "allow_tf32": False, "cudnn_enabled": True}
        values.update({k: v for k, v in named.items() if k in arg_names})
        if "bias_sizes" in arg_names:
            values["bias_sizes"] = (cout,)
        if backward:
            out = tuple(_out_size(x_shape[2 + i], w_shape[2 + i], stride, padding, dilation, transposed, op) for i in range(n))
            values["grad_output"] = _normal(rng, x_shape[0], cout, *out)
            values["output_mask"] = mask
        for k in arg_names:
            if k not in values and k in ("columns", "ones", "finput", "fgrad_input"):
                values[k] = np.zeros((0,))
        return values

    return make


_CONV = {  # name: (argument names, dims, groups, transposed, bias, stride/padding/dilation options)
    "convolution_overrideable": (("input", "stride", "padding", "dilation", "transposed", "output_padding", "groups"), None),
    "slow_conv_transpose2d": (("self", "kernel_size", "stride", "padding", "output_padding", "dilation"), dict(n=2, transposed=True)),
    "slow_conv_transpose3d": (("self", "kernel_size", "stride", "padding", "output_padding", "dilation"), dict(n=3, transposed=True)),
    "thnn_conv2d_forward": (("self", "kernel_size", "stride", "padding"), dict(n=2, dilation=1)),
    "slow_conv3d_forward": (("self", "kernel_size", "stride", "padding"), dict(n=3, dilation=1)),
    "slow_conv_dilated2d": (("self", "kernel_size", "stride", "padding", "dilation"), dict(n=2, dilation=2)),
    "slow_conv_dilated3d": (("self", "kernel_size", "stride", "padding", "dilation"), dict(n=3, dilation=2, padding=2)),
    "cudnn_convolution": (("self", "padding", "stride", "dilation", "groups", "benchmark", "deterministic", "allow_tf32"), dict(n=2, groups=2, bias=False, dilation=2)),
    "cudnn_convolution_transpose": (("self", "padding", "output_padding", "stride", "dilation", "groups", "benchmark", "deterministic", "allow_tf32"), dict(n=2, groups=2, bias=False, transposed=True)),
    "miopen_convolution": (("self", "padding", "stride", "dilation", "groups", "benchmark", "deterministic"), dict(n=2, groups=2)),
    "miopen_depthwise_convolution": (("self", "padding", "stride", "dilation", "groups", "benchmark", "deterministic"), dict(n=2, groups=2, depthwise=True)),
    "miopen_convolution_transpose": (("self", "padding", "output_padding", "stride", "dilation", "groups", "benchmark", "deterministic"), dict(n=2, groups=2, transposed=True)),
    "mkldnn_convolution": (("self", "padding", "stride", "dilation", "groups"), dict(n=2, groups=2, dilation=2)),
    "convolution": (("input", "stride", "padding", "dilation", "transposed", "output_padding", "groups"), None),
    "_convolution": (("input", "stride", "padding", "dilation", "transposed", "output_padding", "groups", "benchmark", "deterministic", "cudnn_enabled", "allow_tf32"), dict(n=2, groups=2, dilation=2)),
    "_slow_conv2d_forward": (("self", "kernel_size", "stride", "padding"), dict(n=2, dilation=1)),
}
for _name, (_args, _kw) in _CONV.items():
    if _kw is None:  # the general entry: 1d, 2d with groups and dilation, transposed 2d, 3d
        variants = [dict(n=1), dict(n=2, groups=2, dilation=2), dict(n=2, transposed=True, groups=2), dict(n=3, bias=False, stride=1)]
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
    _register(_name, *[_conv_entry(_name, _args, **{**v, "bias": False, "backward": True, "mask": ALL[:2] if two else ALL}) for v in variants])

_DEPTHWISE = ("self", "kernel_size", "stride", "padding", "dilation")
_register("thnn_conv_depthwise2d_forward", _conv_entry("", _DEPTHWISE, n=2, groups=2, depthwise=True))
_register("thnn_conv_depthwise2d_backward.output_mask", _conv_entry("", _DEPTHWISE, n=2, groups=2, depthwise=True, bias=False, backward=True, mask=(True, True)))


_register("_nnpack_spatial_convolution", _conv_entry("", ("input", "padding", "stride"), n=2, stride=1))
_register("conv_tbc", lambda rng: {"self": _normal(rng, 6, 2, 3), "weight": _normal(rng, 3, 3, 2), "bias": _normal(rng, 2), "pad": 1})
_register("im2col", lambda rng: {"self": _normal(rng, 2, 2, 5, 6), "kernel_size": (2, 3), "dilation": (1, 2), "padding": (1, 0), "stride": (2, 1)})
_register("col2im", lambda rng: {"self": _normal(rng, 2, 12, 6), "output_size": (5, 6), "kernel_size": (2, 3), "dilation": (1, 2), "padding": (1, 0), "stride": (2, 1)})
_register("im2col_backward", lambda rng: {"grad_output": _normal(rng, 2, 12, 6), "input_size": (5, 6), "kernel_size": (2, 3), "dilation": (1, 2), "padding": (1, 0), "stride": (2, 1)})
_register("col2im_backward", lambda rng: {"grad_output": _normal(rng, 2, 2, 5, 6), "kernel_size": (2, 3), "dilation": (1, 2), "padding": (1, 0), "stride": (2, 1)})


# -- pooling -----------------------------------------------------------------------------------


def _distinct(rng, *shape):
    """Values 0.1 apart in random order: no ties, and the argmax of a window stays put."""
    return rng.permutation(math.prod(shape)).reshape(shape) * 0.1 + rng.uniform(-0.01, 0.01, shape)


def _pool(shape, backward_of=None, indices_arg=None, **kw):
    """A pooling entry's sample; a backward entry's grad_output (and indices) from its forward."""

    def make(rng):
        x = _distinct(rng, *shape)
        values = {"self": x, **kw}
        if backward_of is not None:
            out = implementation(backward_of)(jnp.asarray(x), **{k: v for k, v in kw.items()})
            out, idx = out if isinstance(out, tuple) else (out, None)
            values["grad_output"] = _normal(rng, *out.shape)
            if indices_arg:
                values[indices_arg] = np.asarray(idx)
        return values

    return make


_P2, _P3 = (2, 2, 5, 5), (1, 2, 4, 4, 3)
_AVG2 = [dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=False, count_include_pad=True, divisor_override=None),
         dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), ceil_mode=True, count_include_pad=False, divisor_override=None),
         dict(kernel_size=(2, 2), stride=(), padding=(0, 0), ceil_mode=True, count_include_pad=True, divisor_override=3)]
_AVG3 = [dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True, count_include_pad=False, divisor_override=None)]
_MAX2 = [dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=False),
         dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True)]
_MAX3 = [dict(kernel_size=(2, 2, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(1, 1, 1), ceil_mode=True)]
for _n, _shape, _avg, _max in ((2, _P2, _AVG2, _MAX2), (3, _P3, _AVG3, _MAX3)):
    _register(f"avg_pool{_n}d", *[_pool(_shape, **v) for v in _avg])
    _register(f"avg_pool{_n}d_backward", *[_pool(_shape, f"avg_pool{_n}d", **v) for v in _avg])
    _register(f"max_pool{_n}d_with_indices", *[_pool(_shape, **v) for v in _max])
    _register(f"max_pool{_n}d_with_indices_backward", *[_pool(_shape, f"max_pool{_n}d_with_indices", "indices", **v) for v in _max])
    _sizes = [dict(output_size=(3, 2)), dict(output_size=(2, 4))] if _n == 2 else [dict(output_size=(3, 2, 2))]
    for _adaptive_avg in ("_adaptive_avg_pool2d",) if _n == 2 else ("adaptive_avg_pool3d", "_adaptive_avg_pool3d"):
        _register(_adaptive_avg, *[_pool(_shape, **v) for v in _sizes])
        _register(f"{_adaptive_avg}_backward", *[_pool(_shape, _adaptive_avg, **v) for v in _sizes])
    _register(f"adaptive_max_pool{_n}d", *[_pool(_shape, **v) for v in _sizes])
    _register(f"adaptive_max_pool{_n}d_backward", *[_pool(_shape, f"adaptive_max_pool{_n}d", "indices", **v) for v in _sizes])
    _frac = dict(kernel_size=(2,) * _n, output_size=(3, 2, 2)[:_n])
    _samples = lambda rng, _s=_shape, _k=_n: rng.uniform(0, 1, (_s[0], _s[1], _k))
    _register(f"fractional_max_pool{_n}d", lambda rng, _s=_shape, _f=_frac, _r=_samples: {**_pool(_s, **_f)(rng), "random_samples": _r(rng)})
    _register(f"fractional_max_pool{_n}d_backward", lambda rng, _s=_shape, _f=_frac, _r=_samples, _k=_n: _fractional_backward(rng, _s, _f, _r(rng), _k))


_register("max_pool2d", *[_pool(_P2, **v) for v in _MAX2])
_register("max_pool2d_backward", *[_pool(_P2, "max_pool2d", **v) for v in _MAX2])


def _fractional_backward(rng, shape, kw, random_samples, n):
    x = _distinct(rng, *shape)
    out, idx = implementation(f"fractional_max_pool{n}d")(jnp.asarray(x), kw["kernel_size"], kw["output_size"], jnp.asarray(random_samples))
    return {"self": x, "grad_output": _normal(rng, *out.shape), "indices": np.asarray(idx), **kw}


def _unpool(shape, n, backward=False):
    """Indices of a max pooling with stride = kernel: each output position at most once."""

    def make(rng):
        x = _distinct(rng, *shape)
        out, idx = implementation(f"max_pool{n}d_with_indices")(jnp.asarray(x), (2,) * n, (2,) * n)
        values = {"self": _normal(rng, *out.shape), "indices": np.asarray(idx), "output_size": shape[2:], "stride": (2,) * n, "padding": (0,) * n}
        if backward:
            values["grad_output"] = _normal(rng, *shape)
        return values

    return make


_register("max_unpool2d", _unpool(_P2, 2))
_register("max_unpool3d", _unpool(_P3, 3))
_register("max_unpool2d_backward", _unpool(_P2, 2, backward=True))


# -- upsampling ------------------------------------------------------------------------------
_UP = {"nearest1d": (1, False), "linear1d": (1, True), "nearest2d": (2, False), "bilinear2d": (2, True), "bicubic2d": (2, True), "nearest3d": (3, False), "trilinear3d": (3, True)}
_UP_IN = {1: (2, 2, 5), 2: (1, 2, 4, 5), 3: (1, 2, 3, 3, 4)}
_UP_OUT = {1: (8,), 2: (7, 9), 3: (5, 4, 6)}
for _mode, (_n, _corners) in _UP.items():
    _in, _out = _UP_IN[_n], _UP_OUT[_n]
    _scales = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}[_n]
    _ac = [{"align_corners": a} for a in ((False, True) if _corners else (False,))]
    _register(f"upsample_{_mode}", *[lambda rng, _i=_in, _o=_out, _a=a: {"self": _normal(rng, *_i), "output_size": _o, **_a} for a in _ac])
    _register(f"upsample_{_mode}.vec", *[lambda rng, _i=_in, _a=a, _n=_n: {"input": _normal(rng, *_i), "output_size": None, "scale_factors": (1.7,) * _n, **_a} for a in _ac])
    _register(f"upsample_{_mode}_backward", *[lambda rng, _i=_in, _o=_out, _a=a: {"grad_output": _normal(rng, *_i[:2], *_o), "output_size": _o, "input_size": _i, **_a} for a in _ac])
    _register(f"upsample_{_mode}_backward.vec", *[lambda rng, _i=_in, _o=_out, _a=a: {"grad_output": _normal(rng, *_i[:2], *_o), "output_size": _o, "input_size": _i, "scale_factors": None, **_a} for a in _ac])

# torch 2.13's nearest-exact mode: sizes whose source positions are neither a repeat nor a stride
for _n in (1, 2, 3):
    _in, _out = _UP_IN[_n], _UP_OUT[_n]
    _register(f"_upsample_nearest_exact{_n}d", lambda rng, _i=_in, _o=_out: {"self": _normal(rng, *_i), "output_size": _o},
              lambda rng, _i=_in, _o=_out: {"self": _normal(rng, *_i), "output_size": tuple(max(o // 3, 1) for o in _o)})
    _register(f"_upsample_nearest_exact{_n}d_backward", lambda rng, _i=_in, _o=_out: {"grad_output": _normal(rng, *_i[:2], *_o), "output_size": _o, "input_size": _i})

# torch 2.13's antialiased modes: upsampling, and downsampling where the filter spans several inputs
_AA = [((1, 2, 4, 5), (7, 9), False), ((1, 2, 9, 11), (4, 5), False), ((1, 2, 9, 11), (4, 5), True)]
for _mode in ("bilinear2d_aa", "bicubic2d_aa", "lanczos2d_aa"):
    _register(f"_upsample_{_mode}", *[lambda rng, _i=i, _o=o, _a=a: {"self": _normal(rng, *_i), "output_size": _o, "align_corners": _a} for i, o, a in _AA])
    _register(f"_upsample_{_mode}_backward", *[lambda rng, _i=i, _o=o, _a=a: {"grad_output": _normal(rng, *_i[:2], *_o), "output_size": _o, "input_size": _i, "align_corners": _a}
                                               for i, o, a in _AA])


known_failure(
    "spec bug (PyTorch 1.7): convolution_backward_overrideable's double-backward formula passes "
    "transposed=false to _convolution_double_backward, so the second derivative of a transposed "
    "convolution_overrideable is the non-transposed one's",
    "convolution_overrideable",
    modes=("vjp_vjp",),
)
known_failure(
    "spec bug (torch 2.13, an MPS-only entry): max_pool2d_backward's `result: auto_linear` runs the op on "
    "the tangents of both grad_output and self, but the op is linear in grad_output only (self picks "
    "each window's argmax), so the tangent scatters grad_output_t to the argmax of self_t",
    "max_pool2d_backward",
    modes=("jvp",),
)


# -- parity with torch ------------------------------------------------------------------------

# A 1x1x4x4 image whose 2x2 windows each hold a tied maximum, and its 3-D counterpart: max
# pooling with equal elements in a window.
_TIED_IMAGE = np.kron(matrix([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None]
_TIED_VOLUME = np.kron(matrix([[1.0, 2.0], [3.0, 0.5]])[None], np.ones((2, 2, 2)))[None, None]
kinks("max_pool2d_with_indices", (_TIED_IMAGE, [2, 2], [2, 2]))
kinks("max_pool3d_with_indices", (_TIED_VOLUME, [2, 2, 2], [2, 2, 2]))
kinks("adaptive_max_pool2d", (_TIED_IMAGE, [2, 2]))
# the checker's schema-default samples have no torch meaning here (float random_samples)
parity_samples("fractional_max_pool3d", Sample((), {"self": np.linspace(-1, 1, 2 * 5 * 5 * 4).reshape(1, 2, 5, 5, 4), "kernel_size": [2, 2, 2],
                                                    "output_size": [3, 2, 2], "random_samples": np.full((1, 2, 3), 0.4)}, "5x5x4 to 3x2x2"))


# torch calls computing what ops torch cannot run on CPU (or under the seed's schema) compute;
# each gets torch.ops.aten and the sample's arguments by name, as torch values.
def _torch_conv(transposed, bias=True):
    def call(aten, a):
        n = len(a["stride"])
        return aten.convolution(a["self"], a["weight"], a.get("bias") if bias else None, a["stride"], a["padding"], a["dilation"],
                                transposed, a.get("output_padding", [0] * n), a["groups"])

    return call


def _torch_conv_backward_overrideable(aten, a):
    w, groups = a["weight"], a["groups"]
    bias_sizes = [w.shape[1] * groups] if a["transposed"] else [w.shape[0]]
    return aten.convolution_backward(a["grad_output"], a["input"], w, bias_sizes, a["stride"], a["padding"], a["dilation"],
                                     a["transposed"], a["output_padding"], groups, a["output_mask"])


def _torch_max_pool2d_backward(aten, a):
    geometry = [a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"]]
    _, indices = aten.max_pool2d_with_indices(a["self"], *geometry)
    return [aten.max_pool2d_with_indices_backward(a["grad_output"], a["self"], *geometry, indices)]


torch_equivalent(Equivalent(_torch_conv(False, bias=False), f"{CUDA_ONLY}: aten.convolution"), "cudnn_convolution")
torch_equivalent(Equivalent(_torch_conv(True, bias=False), f"{CUDA_ONLY}: aten.convolution, transposed"), "cudnn_convolution_transpose")
torch_equivalent(Equivalent(_torch_conv(False), f"{CUDA_ONLY}: aten.convolution"), "miopen_convolution", "miopen_depthwise_convolution")
torch_equivalent(Equivalent(_torch_conv(True), f"{CUDA_ONLY}: aten.convolution, transposed"), "miopen_convolution_transpose")
torch_equivalent(Equivalent(_torch_conv(False), "torch's mkldnn kernel takes no float64: aten.convolution"), "mkldnn_convolution")
torch_equivalent(Equivalent(
    lambda aten, a: aten.convolution(a["input"], a["weight"], a["bias"], a["stride"], a["padding"], [1, 1], False, [0, 0], 1),
    "torch's NNPACK kernel takes float32 only: aten.convolution"), "_nnpack_spatial_convolution")
torch_equivalent(Equivalent(
    lambda aten, a: aten.convolution(*a.values()), "torch has no CPU kernel for the overrideable hook: aten.convolution"),
    "convolution_overrideable")
torch_equivalent(Equivalent(
    _torch_conv_backward_overrideable, "torch has no CPU kernel for the overrideable hook: aten.convolution_backward"),
    "convolution_backward_overrideable")
torch_equivalent(Equivalent(
    lambda aten, a: [aten.slow_conv3d_forward(*a.values())], "torch 2.13 returns only the output (finput, fgrad_input not compared)", True),
    "slow_conv3d_forward")
torch_equivalent(Equivalent(_torch_max_pool2d_backward, "torch 2.13 runs max_pool2d_backward only on MPS: "
                            "aten.max_pool2d_with_indices, then max_pool2d_with_indices_backward"), "max_pool2d_backward")
parity_differs(("jvp",), "torch 2.13's entry (MPS only) says `result: auto_linear`, which runs the op on the tangents "
               "of grad_output and self, but the op is linear in grad_output only: self_t picks other argmaxes. "
               "jaxderiv evaluates the spec's formula; torch's CPU equivalent differentiates the op",
               "max_pool2d_backward", torch_spec=True, default_spec=False)
