"""FunctionsManual's convolution helpers: the double backward shared by every backend, conv_tbc's backward."""

from __future__ import annotations

import inspect

import jax.numpy as jnp

from ..forward.conv import convolution, convolution_backward
from ..namespace import helper


def _defined(x):
    """An undefined tensor arrives as None, or as `{}` (an empty initializer list)."""
    return x if x is not None and not isinstance(x, (tuple, list)) else None


def _unbrace(v):
    return v[0] if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], (tuple, list)) else v


def with_backend_flag_params(fn, *flags: str):
    """`fn` as the files that pass it the backend flags `flags` after `groups` call it: the flags
    (benchmark, deterministic, cudnn_enabled, allow_tf32) choose a kernel, not the mathematics,
    and are dropped. The signature names them, so that a call's argument count picks this
    variant of the helper (`namespace.Helper`)."""
    params = list(inspect.signature(fn).parameters.values())
    at = [p.name for p in params].index("groups") + 1

    def with_backend_flags(*args):
        return fn(*args[:at], *args[at + len(flags) :])

    flag_params = [inspect.Parameter(f, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in flags]
    setattr(with_backend_flags, "__signature__", inspect.Signature(params[:at] + flag_params + params[at:]))
    with_backend_flags.__name__ = with_backend_flags.__qualname__ = f"{fn.__name__}_with_{len(flags)}_flags"
    return with_backend_flags


@helper("_convolution_double_backward")
def convolution_double_backward(
    ggI, ggW, ggb, gO, weight, input, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """(ggO, gI, gW) of the backward (gO, input, weight) -> (grad_input, grad_weight, grad_bias).

    The backward is bilinear: ggO is the convolution's differential along (ggI, ggW, ggb);
    gW pairs ggI with gO as a weight gradient, gI pairs ggW with gO as an input gradient.
    The later files' spelling: earlier ones pass backend flags after groups (the variants of
    `with_backend_flag_params`). C++'s `{{1, 1}}` (THNN entries' dilation and output_padding) arrives
    as a list holding the list.
    """
    dilation, output_padding = _unbrace(dilation), _unbrace(output_padding)
    ggI, ggW, ggb = _defined(ggI), _defined(ggW), _defined(ggb)
    conv = lambda x, w, b=None: convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)

    def backward(x, w, mask):
        return convolution_backward(gO, x, w, stride, padding, dilation, transposed, output_padding, groups, mask)

    ggO = gI = gW = None
    if output_mask[0]:
        terms = [conv(ggI, weight)] if ggI is not None else []
        terms += [conv(input, ggW)] if ggW is not None else []
        if ggb is not None:
            terms.append(jnp.broadcast_to(jnp.reshape(ggb, (1, -1) + (1,) * (gO.ndim - 2)), gO.shape))
        ggO = sum(terms[1:], terms[0]) if terms else jnp.zeros_like(gO)
    if output_mask[1]:
        gI = jnp.zeros_like(input) if ggW is None else backward(input, ggW, (True, False, False))[0]
    if output_mask[2]:
        gW = jnp.zeros_like(weight) if ggI is None else backward(ggI, weight, (False, True, False))[1]
    return ggO, gI, gW


# As 1.7's file calls it, with the four backend flags (before 1.7, without allow_tf32: older_releases.py).
helper("_convolution_double_backward")(
    with_backend_flag_params(convolution_double_backward, "benchmark", "deterministic", "cudnn_enabled", "allow_tf32")
)


@helper("conv_tbc_backward")
def conv_tbc_backward(grad, self, weight, bias, pad):
    """(grad_self, grad_weight, grad_bias) of conv_tbc, through the NCW convolution's backward."""
    gi, gw, gb = convolution_backward(
        jnp.transpose(grad, (1, 2, 0)),
        jnp.transpose(self, (1, 2, 0)),
        jnp.transpose(weight, (2, 1, 0)),
        1,
        pad,
        1,
        False,
        0,
        1,
        (True, True, True),
    )
    return jnp.transpose(gi, (2, 0, 1)), jnp.transpose(gw, (2, 1, 0)), gb


# -- later files' spellings: bias sizes passed, cuDNN's backward by name -----------------------------


@helper("convolution_backward_symint")
def convolution_backward_symint(
    grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """at::convolution_backward as later files call it: `bias_sizes` names the bias's shape, which
    the bias gradient (a sum of grad_output over all dims but channels) already has. C++'s
    `{{1, 1}}` (an std::array's braces) arrives as a list holding the list."""
    dilation, output_padding = _unbrace(dilation), _unbrace(output_padding)
    return convolution_backward(
        grad_output, input, weight, stride, padding, dilation, transposed, output_padding, groups, output_mask
    )


@helper("_cudnn_convolution_backward")
def _cudnn_convolution_backward(
    self, grad_output, weight, padding, output_padding, stride, dilation, transposed, groups, output_mask
):
    """(grad_input, grad_weight) of cuDNN's convolution, which has no bias: the same mathematics."""
    mask = (output_mask[0], output_mask[1], False)
    gi, gw, _ = convolution_backward(
        grad_output, self, weight, stride, padding, dilation, transposed, output_padding, groups, mask
    )
    return gi, gw


# -- torch 2.13's forward-mode helpers ------------------------------------------------------------


@helper("convolution_jvp")
def convolution_jvp(
    input_p, input_t, weight_p, weight_t, bias_p, bias_t, stride, padding, dilation, transposed, output_padding, groups
):
    """The convolution is bilinear in (input, weight) and affine in bias:
    conv(dx, w) + conv(x, dw) + db, each term present where its tangent is."""
    conv = lambda x, w, b=None: convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    terms = [conv(input_t, weight_p)] if input_t is not None else []
    terms += [conv(input_p, weight_t)] if weight_t is not None else []
    if bias_t is not None:
        shape = terms[0].shape if terms else conv(input_p, weight_p).shape
        terms.append(jnp.broadcast_to(jnp.reshape(bias_t, (1, -1) + (1,) * (len(shape) - 2)), shape))
    return sum(terms[1:], terms[0]) if terms else jnp.zeros_like(conv(input_p, weight_p, bias_p))


# The `_convolution` entry's: convolution_jvp with its four backend flags.
helper("_convolution_jvp")(
    with_backend_flag_params(convolution_jvp, "benchmark", "deterministic", "cudnn_enabled", "allow_tf32")
)


@helper("convolution_backward_jvp_grad_bias")
def convolution_backward_jvp_grad_bias(grad_out_t, grad_bias):
    """grad_bias sums grad_output over every dim but channels: its tangent sums grad_out_t so."""
    if _defined(grad_bias) is None:
        return None
    return jnp.sum(grad_out_t, axis=(0,) + tuple(range(2, jnp.ndim(grad_out_t))))
