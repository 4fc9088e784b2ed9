"""FunctionsManual helpers of the normalization formulas, written from the math.

The `infinitely_differentiable_*` helpers take the cotangents of all three outputs (the
normalized output, mean and rstd); each is linear in them. Undefined ones count as zero.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..forward.normalization import norm_except_dim, per_channel, reduced_axes
from ..namespace import helper


def _sum_but_1(x):
    return jnp.sum(x, axis=reduced_axes(x), keepdims=True)


@helper("batchnorm_double_backward")
def batchnorm_double_backward(input, gamma, ggI, ggG, ggB, gO, running_mean, running_var, training, eps, save_mean, save_invstd, output_mask):
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
            gI = gI + g * (xmu * inv3 * all_sub / m + ggIxmu_sum * inv3 / m * (gO_sum / m - gO) + gOxmu_sum * inv3 / m * (ggI_sum / m - ggI))
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
        dX = dX + rstd[..., None] * (g - jnp.mean(g, axis=-1, keepdims=True) - xhat * jnp.mean(g * xhat, axis=-1, keepdims=True))
    if dmean is not None:
        dX = dX + dmean[..., None] / d
    if drstd is not None:
        dX = dX - (drstd * rstd**3)[..., None] * xmu / d
    return dX, xhat


@helper("infinitely_differentiable_native_layer_norm_backward")
def infinitely_differentiable_native_layer_norm_backward(dY, dmean, drstd, X, mean, rstd, gamma, M, N, eps, grad_input_mask):
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
def infinitely_differentiable_native_group_norm_backward(dY, dmean, drstd, X, mean, rstd, gamma, N, C, HxW, group, eps, grad_input_mask):
    x = jnp.reshape(X, (N, group, -1))
    dy = None if dY is None else jnp.reshape(dY, (N, group, -1))
    gamma_b = 1.0 if gamma is None else jnp.reshape(jnp.broadcast_to(gamma[:, None], (C, HxW)), (group, -1))
    dX, xhat = _norm_backward(dy, dmean, drstd, x, mean, rstd, gamma_b, x.shape[-1])
    dgamma = dbeta = None
    if dy is not None:
        dgamma = jnp.sum(jnp.reshape(dy * xhat, (N, C, HxW)), axis=(0, 2))
        dbeta = jnp.sum(jnp.reshape(dy, (N, C, HxW)), axis=(0, 2))
    else:
        dgamma = dbeta = jnp.zeros((C,), X.dtype)
    return jnp.reshape(dX, X.shape), dgamma, dbeta


@helper("_weight_norm_differentiable_backward", "_weight_norm_cuda_interface_backward")
def _weight_norm_differentiable_backward(grad_w, saved_v, saved_g, saved_norms, dim):
    """Of w = v g / ||v||: grad_g = <grad_w, v> / ||v||; grad_v = g / ||v|| (grad_w - v <grad_w, v> / ||v||^2),
    the inner products over every dimension but `dim`. The norms are recomputed from v, as
    PyTorch's differentiable path does, so that a second derivative sees their dependence on v."""
    n = norm_except_dim(saved_v, dim)
    if dim == -1:
        dot = jnp.sum(grad_w * saved_v)
    else:
        dot = jnp.sum(grad_w * saved_v, axis=tuple(i for i in range(saved_v.ndim) if i != dim % saved_v.ndim), keepdims=True)
    g = jnp.reshape(saved_g, jnp.shape(n))
    grad_v = g / n * (grad_w - saved_v * dot / (n * n))
    grad_g = jnp.reshape(dot / n, jnp.shape(saved_g))
    return grad_v, grad_g


@helper("native_layer_norm_backward")
def native_layer_norm_backward(dY, X, mean, rstd, gamma, M, N, grad_input_mask):
    """The first-order kernel: the same values without the mean and rstd cotangents."""
    return infinitely_differentiable_native_layer_norm_backward(dY, None, None, X, mean, rstd, gamma, M, N, 0.0, grad_input_mask)


@helper("native_group_norm_backward")
def native_group_norm_backward(dY, X, mean, rstd, gamma, N, C, HxW, group, grad_input_mask):
    return infinitely_differentiable_native_group_norm_backward(dY, None, None, X, mean, rstd, gamma, N, C, HxW, group, 0.0, grad_input_mask)
