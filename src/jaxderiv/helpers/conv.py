"""FunctionsManual's convolution helpers: the double backward shared by every backend, conv_tbc's backward."""

from __future__ import annotations

import jax.numpy as jnp

from ..forward.conv import convolution, convolution_backward
from ..namespace import helper


def _defined(x):
    """An undefined tensor arrives as None, or as `{}` (an empty initializer list)."""
    return x if x is not None and not isinstance(x, (tuple, list)) else None


@helper("_convolution_double_backward")
def _convolution_double_backward(
    ggI,
    ggW,
    ggb,
    gO,
    weight,
    input,
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
    output_mask,
):
    """(ggO, gI, gW) of the backward (gO, input, weight) -> (grad_input, grad_weight, grad_bias).

    The backward is bilinear: ggO is the convolution's differential along (ggI, ggW, ggb);
    gW pairs ggI with gO as a weight gradient, gI pairs ggW with gO as an input gradient.
    """
    ggI, ggW, ggb = _defined(ggI), _defined(ggW), _defined(ggb)
    conv = lambda x, w, b=None: convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    ggO = gI = gW = None
    if output_mask[0]:
        terms = [conv(ggI, weight)] if ggI is not None else []
        terms += [conv(input, ggW)] if ggW is not None else []
        if ggb is not None:
            terms.append(jnp.broadcast_to(jnp.reshape(ggb, (1, -1) + (1,) * (gO.ndim - 2)), gO.shape))
        ggO = sum(terms[1:], terms[0]) if terms else jnp.zeros_like(gO)
    if output_mask[1]:
        gI = (
            jnp.zeros_like(input)
            if ggW is None
            else convolution_backward(
                gO, input, ggW, stride, padding, dilation, transposed, output_padding, groups, (True, False, False)
            )[0]
        )
    if output_mask[2]:
        gW = (
            jnp.zeros_like(weight)
            if ggI is None
            else convolution_backward(
                gO, ggI, weight, stride, padding, dilation, transposed, output_padding, groups, (False, True, False)
            )[1]
        )
    return ggO, gI, gW


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


# -- later files' spellings: bias sizes passed, cuDNN flags dropped ---------------------------------


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


def _unbrace(v):
    return v[0] if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], (tuple, list)) else v


@helper("_convolution_double_backward")
def _convolution_double_backward_without_flags(
    ggI, ggW, ggb, gO, weight, input, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """_convolution_double_backward without the backend flags (benchmark, deterministic,
    cudnn_enabled, allow_tf32), which do not change the mathematics."""
    dilation, output_padding = _unbrace(dilation), _unbrace(output_padding)
    return _convolution_double_backward(
        ggI,
        ggW,
        ggb,
        gO,
        weight,
        input,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        False,
        False,
        True,
        False,
        output_mask,
    )


@helper("_cudnn_convolution_backward")
def _cudnn_convolution_backward(
    self, grad_output, weight, padding, output_padding, stride, dilation, transposed, groups, output_mask
):
    """(grad_input, grad_weight) of cuDNN's convolution, which has no bias: the same mathematics."""
    gi, gw, _ = convolution_backward(
        grad_output,
        self,
        weight,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        (output_mask[0], output_mask[1], False),
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


@helper("_convolution_jvp")
def _convolution_jvp(
    input_p,
    input_t,
    weight_p,
    weight_t,
    bias_p,
    bias_t,
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
    """convolution_jvp; the backend flags do not change the mathematics."""
    return convolution_jvp(
        input_p,
        input_t,
        weight_p,
        weight_t,
        bias_p,
        bias_t,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )


@helper("convolution_backward_jvp_grad_bias")
def convolution_backward_jvp_grad_bias(grad_out_t, grad_bias):
    """grad_bias sums grad_output over every dim but channels: its tangent sums grad_out_t so."""
    if _defined(grad_bias) is None:
        return None
    return jnp.sum(grad_out_t, axis=(0,) + tuple(range(2, jnp.ndim(grad_out_t))))
