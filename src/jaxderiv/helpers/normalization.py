"""FunctionsManual helpers of the normalization formulas, written from the math.

The `infinitely_differentiable_*` helpers take the cotangents of all three outputs (the
normalized output, mean and rstd); each is linear in them. Undefined ones count as zero.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..forward.normalization import (
    batch_stats,
    native_batch_norm_backward,
    norm_except_dim,
    per_channel,
    reduced_axes,
    rms_stats_shape,
)
from ..namespace import helper


def _sum_but_1(x):
    return jnp.sum(x, axis=reduced_axes(x), keepdims=True)


@helper("batchnorm_double_backward")
def batchnorm_double_backward(
    input, gamma, ggI, ggG, ggB, gO, running_mean, running_var, training, eps, save_mean, save_invstd, output_mask
):
    """Gradients of native_batch_norm_backward's (gI, gW, gB), given their cotangents (ggI,
    ggG, ggB), for (input, weight, grad_out); in training the statistics depend on input."""
    m = input.size // input.shape[1]
    g = jnp.ones((), input.dtype) if gamma is None else per_channel(gamma, input)
    mu = per_channel(save_mean if training else running_mean, input)
    invstd = per_channel(save_invstd if training else 1 / jnp.sqrt(running_var + eps), input)
    xmu = input - mu
    inv2, inv3 = invstd**2, invstd**3
    gO_sum = _sum_but_1(gO)
    gOxmu_sum = _sum_but_1(gO * xmu)

    def first_backward(grad, weight):
        return weight * invstd / m * (m * grad - _sum_but_1(grad) - xmu * inv2 * _sum_but_1(grad * xmu))

    gI = jnp.zeros_like(input)
    gG = jnp.zeros(jnp.shape(g), input.dtype)
    ggO = jnp.zeros_like(gO)
    if ggI is not None:
        if training:
            ggI_sum, ggIxmu_sum = _sum_but_1(ggI), _sum_but_1(ggI * xmu)
            all_sub = ggI_sum * gO_sum / m - _sum_but_1(gO * ggI) + 3.0 / m * inv2 * gOxmu_sum * ggIxmu_sum
            gI = gI + g * (
                xmu * inv3 * all_sub / m
                + ggIxmu_sum * inv3 / m * (gO_sum / m - gO)
                + gOxmu_sum * inv3 / m * (ggI_sum / m - ggI)
            )
            gG = _sum_but_1(ggI * first_backward(gO, 1.0))
            ggO = ggO + first_backward(ggI, g)
        else:
            gG = _sum_but_1(ggI * gO * invstd)
            ggO = ggO + ggI * invstd * g
    if ggG is not None:
        ggG_ = per_channel(ggG, input)
        if training:
            gI = gI + ggG_ * (gO * invstd - invstd * gO_sum / m - xmu * inv3 * gOxmu_sum / m)
        else:
            gI = gI + ggG_ * invstd * gO
        ggO = ggO + ggG_ * xmu * invstd
    if ggB is not None:
        ggO = ggO + per_channel(ggB, input)
    return gI, (None if gamma is None else jnp.reshape(gG, jnp.shape(gamma))), ggO


def _norm_backward(dY, dmean, drstd, x, mean, rstd, gamma_b, d):
    """dX of y = (x - mean) rstd * gamma over groups of the last axis of x (d elements each),
    with mean and rstd outputs too: rstd (g - mean g - xhat mean(g xhat)) + dmean / d - drstd rstd^3 (x - mean) / d."""
    xmu = x - mean[..., None]
    xhat = xmu * rstd[..., None]
    dX = jnp.zeros_like(x)
    if dY is not None:
        g = dY * gamma_b
        dX = dX + rstd[..., None] * (
            g - jnp.mean(g, axis=-1, keepdims=True) - xhat * jnp.mean(g * xhat, axis=-1, keepdims=True)
        )
    if dmean is not None:
        dX = dX + dmean[..., None] / d
    if drstd is not None:
        dX = dX - (drstd * rstd**3)[..., None] * xmu / d
    return dX, xhat


@helper("infinitely_differentiable_native_layer_norm_backward")
def infinitely_differentiable_native_layer_norm_backward(
    dY, dmean, drstd, X, mean, rstd, gamma, M, N, eps, grad_input_mask
):
    x = jnp.reshape(X, (M, N))
    dy = None if dY is None else jnp.reshape(dY, (M, N))
    gamma_b = 1.0 if gamma is None else jnp.reshape(gamma, (N,))
    dX, xhat = _norm_backward(dy, dmean, drstd, x, mean, rstd, gamma_b, N)
    dgamma = dbeta = None
    if gamma is not None:
        dgamma = jnp.reshape(jnp.zeros((N,), X.dtype) if dy is None else jnp.sum(dy * xhat, axis=0), jnp.shape(gamma))
        dbeta = jnp.reshape(jnp.zeros((N,), X.dtype) if dy is None else jnp.sum(dy, axis=0), jnp.shape(gamma))
    return jnp.reshape(dX, X.shape), dgamma, dbeta


@helper("infinitely_differentiable_native_group_norm_backward")
def infinitely_differentiable_native_group_norm_backward(
    dY, dmean, drstd, X, mean, rstd, gamma, N, C, HxW, group, eps, grad_input_mask
):
    per_group = C // group * HxW  # explicit: -1 is ambiguous for N = 0
    x = jnp.reshape(X, (N, group, per_group))
    dy = None if dY is None else jnp.reshape(dY, (N, group, per_group))
    gamma_b = 1.0 if gamma is None else jnp.reshape(jnp.broadcast_to(gamma[:, None], (C, HxW)), (group, -1))
    dX, xhat = _norm_backward(dy, dmean, drstd, x, mean, rstd, gamma_b, x.shape[-1])
    dgamma = dbeta = None
    if dy is not None:
        dgamma = jnp.sum(jnp.reshape(dy * xhat, (N, C, HxW)), axis=(0, 2))
        dbeta = jnp.sum(jnp.reshape(dy, (N, C, HxW)), axis=(0, 2))
    else:
        dgamma = dbeta = jnp.zeros((C,), X.dtype)
    return jnp.reshape(dX, X.shape), dgamma, dbeta


@helper("native_group_norm_backward_dispatcher")
def native_group_norm_backward_dispatcher(dY, dmean, drstd, X, mean, rstd, gamma, N, C, HxW, group, grad_input_mask):
    """torch 2.14's name for the group-norm backward its formula differentiates again: the values
    of `infinitely_differentiable_native_group_norm_backward`, which never read eps."""
    return infinitely_differentiable_native_group_norm_backward(
        dY, dmean, drstd, X, mean, rstd, gamma, N, C, HxW, group, None, grad_input_mask
    )


@helper(
    "_weight_norm_differentiable_backward", "_weight_norm_cuda_interface_backward", "_weight_norm_interface_backward"
)
def _weight_norm_differentiable_backward(grad_w, saved_v, saved_g, saved_norms, dim):
    """Of w = v g / ||v||: grad_g = <grad_w, v> / ||v||; grad_v = g / ||v|| (grad_w - v <grad_w, v> / ||v||^2),
    the inner products over every dimension but `dim`. The norms are recomputed from v, as
    PyTorch's differentiable path does, so that a second derivative sees their dependence on v."""
    n = norm_except_dim(saved_v, dim)
    if dim == -1:
        dot = jnp.sum(grad_w * saved_v)
    else:
        dot = jnp.sum(
            grad_w * saved_v, axis=tuple(i for i in range(saved_v.ndim) if i != dim % saved_v.ndim), keepdims=True
        )
    g = jnp.reshape(saved_g, jnp.shape(n))
    grad_v = g / n * (grad_w - saved_v * dot / (n * n))
    grad_g = jnp.reshape(dot / n, jnp.shape(saved_g))
    return grad_v, grad_g


@helper("native_group_norm_backward")
def native_group_norm_backward(dY, X, mean, rstd, gamma, N, C, HxW, group, grad_input_mask):
    return infinitely_differentiable_native_group_norm_backward(
        dY, None, None, X, mean, rstd, gamma, N, C, HxW, group, 0.0, grad_input_mask
    )


# -- forward-mode helpers of later files -------------------------------------------------------------


def _normalized_jvp(x, dx, mean, invstd, axes, training):
    """Tangent of (x - mean) invstd, the statistics over `axes` when `training`, else constant."""
    if not training:
        return dx * invstd
    n = 1
    for a in axes:
        n *= x.shape[a]
    centered = x - mean
    dcentered = dx - jnp.sum(dx, axis=axes, keepdims=True) / n
    dvar = 2 * jnp.sum(centered * dcentered, axis=axes, keepdims=True) / n
    return dcentered * invstd - 0.5 * centered * invstd**3 * dvar


def _affine_jvp(out_t, xhat, weight_p, weight_t, bias_t, view):
    if weight_p is not None:
        out_t = out_t * view(weight_p)
    if weight_t is not None:
        out_t = out_t + xhat * view(weight_t)
    if bias_t is not None:
        out_t = out_t + view(bias_t)
    return out_t


@helper("batch_norm_jvp")
def batch_norm_jvp(
    input_p,
    input_t,
    weight_p,
    weight_t,
    bias_p,
    bias_t,
    running_mean,
    running_var,
    saved_mean,
    saved_invstd,
    train,
    eps,
):
    """The tangent of batch norm: in training the batch statistics move with the input."""
    view = lambda v: per_channel(v, input_p)
    if train:
        mean, invstd = view(saved_mean), view(saved_invstd)
    else:
        mean, invstd = view(running_mean), view(1 / jnp.sqrt(running_var + eps))
    out_t = _normalized_jvp(input_p, input_t, mean, invstd, reduced_axes(input_p), train)
    return _affine_jvp(out_t, (input_p - mean) * invstd, weight_p, weight_t, bias_t, view)


@helper("layer_norm_jvp")
def layer_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, saved_mean, saved_invstd, normalized_shape):
    """The tangent of layer norm over the trailing `normalized_shape` dims, whose statistics
    move with the input."""
    k = len(normalized_shape)
    stats = input_p.shape[: input_p.ndim - k] + (1,) * k
    mean, invstd = jnp.reshape(saved_mean, stats), jnp.reshape(saved_invstd, stats)
    axes = tuple(range(input_p.ndim - k, input_p.ndim))
    out_t = _normalized_jvp(input_p, input_t, mean, invstd, axes, True)
    return _affine_jvp(
        out_t, (input_p - mean) * invstd, weight_p, weight_t, bias_t, lambda v: jnp.reshape(v, tuple(normalized_shape))
    )


@helper("layer_norm_double_backward")
def layer_norm_double_backward(input, gamma, ggI, ggG, ggB, gO, save_mean, save_invstd, normalized_shape, output_mask):
    """Gradients of native_layer_norm_backward's (gI, gW, gB), given their cotangents (ggI,
    ggG, ggB), for (input, weight, grad_out). Per row of the (M, N) view, with r = rstd,
    xmu = x - mean, xhat = xmu r and gxhat = gO gamma: gI = r (gxhat - mean(gxhat) -
    xhat mean(gxhat xhat)), gW = sum_rows gO xhat, gB = sum_rows gO; mean and r are
    functions of the row, so the input's gradient carries their derivatives (the r^3 terms)."""
    k = len(normalized_shape)
    N = math.prod(normalized_shape)
    M = math.prod(input.shape[: input.ndim - k])
    x, g = jnp.reshape(input, (M, N)), jnp.reshape(gO, (M, N))
    r = jnp.reshape(save_invstd, (M, 1)).astype(x.dtype)
    xmu = x - jnp.reshape(save_mean, (M, 1)).astype(x.dtype)
    r3 = r**3
    xmu_r3 = xmu * r3
    gamma_b = jnp.ones((1, 1), x.dtype) if gamma is None else jnp.reshape(gamma, (1, N))
    row_sum = lambda t: jnp.sum(t, axis=1, keepdims=True)

    def first_backward(t):
        """The input gradient's map of a (row-wise) output gradient, without gamma: self-adjoint."""
        xhat = xmu * r
        return r * (t - row_sum(t) / N - xhat * row_sum(t * xhat) / N)

    gI = ggO = gG = None
    if ggI is not None:
        ggI_ = jnp.reshape(ggI, (M, N))
        gxhat = g * gamma_b
        gxhat_mu_sum, gxhat_sum = row_sum(gxhat * xmu), row_sum(gxhat)
        ggI_sum, ggI_mu_sum = row_sum(ggI_), row_sum(ggI_ * xmu)
        all_sub = ggI_sum * gxhat_sum / N - row_sum(ggI_ * gxhat) + 3.0 / N * r**2 * gxhat_mu_sum * ggI_mu_sum
        gI = (
            xmu_r3 * all_sub / N
            + ggI_mu_sum * r3 / N * (gxhat_sum / N - gxhat)
            + gxhat_mu_sum * r3 / N * (ggI_sum / N - ggI_)
        )
        ggO = first_backward(ggI_) * gamma_b
        if gamma is not None:
            gG = jnp.reshape(jnp.sum(g * first_backward(ggI_), axis=0), jnp.shape(gamma))
    if gamma is not None and ggG is not None:
        ggG_ = jnp.reshape(ggG, (1, N))
        gI_G = first_backward(g * ggG_)
        gI = gI_G if gI is None else gI + gI_G
        ggO_G = ggG_ * xmu * r
        ggO = ggO_G if ggO is None else ggO + ggO_G
    if ggB is not None:
        ggO_B = jnp.broadcast_to(jnp.reshape(ggB, (1, N)), (M, N))
        ggO = ggO_B if ggO is None else ggO + ggO_B
    if gamma is not None and output_mask[1] and gG is None:
        gG = jnp.zeros(jnp.shape(gamma), x.dtype)
    reshape = lambda t, like: None if t is None else jnp.reshape(t, like.shape)
    return reshape(gI, input), gG, reshape(ggO, gO)


def _groups(x, group):
    """x seen as (N, group, rest): the statistics of group norm are over the last axis."""
    rest = int(np.prod(x.shape[1:])) // group  # explicit: -1 is ambiguous for an empty batch
    return jnp.reshape(x, (x.shape[0], group, rest))


@helper("group_norm_jvp")
def group_norm_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, mean, invstd, group):
    """The tangent of group norm: normalized over each group of channels, then per channel affine."""
    x, dx = _groups(input_p, group), _groups(input_t, group)
    m, r = jnp.reshape(mean, x.shape[:2] + (1,)), jnp.reshape(invstd, x.shape[:2] + (1,))
    out_t = jnp.reshape(_normalized_jvp(x, dx, m, r, (2,), True), input_p.shape)
    xhat = jnp.reshape((x - m) * r, input_p.shape)
    return _affine_jvp(out_t, xhat, weight_p, weight_t, bias_t, lambda v: per_channel(v, input_p))


@helper("group_norm_mean_jvp")
def group_norm_mean_jvp(input_t, mean_p, group):
    """The tangent of each group's mean: the mean of the tangent."""
    return jnp.reshape(jnp.mean(_groups(input_t, group), axis=-1), jnp.shape(mean_p))


@helper("group_norm_invstd_jvp")
def group_norm_invstd_jvp(input_p, input_t, mean_p, invstd_p, group):
    """invstd = (var + eps)^(-1/2): its tangent is -invstd^3 mean((x - mean) dx) over the group."""
    x, dx = _groups(input_p, group), _groups(input_t, group)
    centered = x - jnp.reshape(mean_p, x.shape[:2] + (1,))
    return -(invstd_p**3) * jnp.reshape(jnp.mean(centered * dx, axis=-1), jnp.shape(invstd_p))


# -- torch 2.13's batch norm with/without update and RMS norm ------------------------------------------


@helper("batch_norm_backward")
def batch_norm_backward(
    grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, update, eps, output_mask, reserve
):
    """(grad_input, grad_weight, grad_bias) of _batch_norm_with_update / _no_update: the batch
    statistics' backward when they were used (update, or no running statistics), else the
    running ones'. `reserve` is a backend's workspace. The batch statistics are recomputed
    from input (the saved values), so that differentiating this again sees their dependence on it."""
    train = update or running_mean is None
    if train:
        save_mean, save_invstd = batch_stats(input, None, None, True, eps)
    return native_batch_norm_backward(
        grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask
    )


def _rms_axes(x, normalized_shape):
    return tuple(range(x.ndim - len(normalized_shape), x.ndim))


def _rms_rstd(x, rstd, axes):
    """rstd recomputed from x (eps is what the saved rstd says it was), so that differentiating
    a backward formula again sees rstd's dependence on x."""
    ms = jnp.mean(jnp.square(x), axis=axes, keepdims=True)
    eps = jax.lax.stop_gradient(1 / jnp.square(rstd) - ms)
    return 1 / jnp.sqrt(ms + eps)


@helper("infinitely_differentiable_native_rms_norm_backward")
def infinitely_differentiable_native_rms_norm_backward(dY, drstd, input, normalized_shape, rstd, weight, output_mask):
    """(grad_input, grad_weight) of y = x r w, r = (mean(x^2) + eps)^(-1/2) over the N normalized
    elements: dr/dx = -r^3 x / N, so grad_input = r (w dY) - x r^3 / N (sum(w dY x) + drstd)."""
    axes = _rms_axes(input, normalized_shape)
    n = math.prod(normalized_shape)
    r = _rms_rstd(input, jnp.reshape(rstd, rms_stats_shape(input, normalized_shape)), axes)
    grad_input = jnp.zeros_like(input)
    total = jnp.zeros(r.shape, input.dtype)
    if dY is not None:
        wdy = dY if weight is None else dY * weight
        grad_input = grad_input + r * wdy
        total = total + jnp.sum(wdy * input, axis=axes, keepdims=True)
    if drstd is not None:
        total = total + jnp.reshape(drstd, r.shape)
    grad_input = grad_input - input * r**3 / n * total
    grad_weight = None
    if weight is not None and output_mask[1]:
        lead = tuple(range(input.ndim - len(normalized_shape)))
        grad_weight = jnp.zeros_like(weight) if dY is None else jnp.sum(dY * input * r, axis=lead)
    return (grad_input if output_mask[0] else None), grad_weight


@helper("_fused_rms_norm_backward")
def _fused_rms_norm_backward(dY, input, normalized_shape, rstd, weight, output_mask):
    """The first-order kernel: the same values without rstd's cotangent."""
    return infinitely_differentiable_native_rms_norm_backward(
        dY, None, input, normalized_shape, rstd, weight, output_mask
    )


@helper("rms_norm_rstd_jvp")
def rms_norm_rstd_jvp(input_p, input_t, rstd_p, normalized_shape):
    """The tangent of rstd = (mean(x^2) + eps)^(-1/2): -rstd^3 mean(x dx)."""
    axes = _rms_axes(input_p, normalized_shape)
    r = jnp.reshape(rstd_p, rms_stats_shape(input_p, normalized_shape))
    return -(r**3) * jnp.mean(input_p * input_t, axis=axes, keepdims=True)


@helper("rms_norm_jvp")
def rms_norm_jvp(input_p, input_t, weight_p, weight_t, rstd_p, normalized_shape):
    """The tangent of x rstd w: (dx rstd + x drstd) w + x rstd dw."""
    r = jnp.reshape(rstd_p, rms_stats_shape(input_p, normalized_shape))
    out_t = input_t * r + input_p * rms_norm_rstd_jvp(input_p, input_t, rstd_p, normalized_shape)
    if weight_p is not None:
        out_t = out_t * weight_p
    if weight_t is not None:
        out_t = out_t + input_p * r * weight_t
    return out_t
