"""Forward implementations of ATen's batch, layer, group and weight normalization ops.

Batch norm normalizes over every dimension but 1 (channels). JAX arrays are immutable, so
training mode does not update running_mean / running_var in place; it returns what ATen
returns. cudnn_* and miopen_* are the same math as native batch norm, in ATen's signatures.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from ..tensor_utils import REDUCED_FLOATS, opmath
from . import impl


def in_opmath(fn):
    """ATen's CPU normalization kernels compute bfloat16 and float16 inputs in float32 (their
    `opmath_t`) and round once: the statistics of a bfloat16 batch summed in bfloat16 would be
    off by far more than one rounding. The first output takes the first argument's dtype; the
    others (statistics, parameter gradients) the reduced dtype, or float32 where float32
    parameters are mixed with a reduced input (ATen's `param_scalar_type`)."""

    @functools.wraps(fn)
    def run(*args):
        arrays = [a for a in jax.tree.leaves(args) if isinstance(a, jax.Array)]
        low = next((a.dtype for a in arrays if a.dtype in REDUCED_FLOATS), None)
        if low is None:
            return fn(*args)
        mixed = any(a.dtype == jnp.float32 for a in arrays)

        def up(a):
            return opmath(a) if isinstance(a, jax.Array) else a

        out = fn(*jax.tree.map(up, args, is_leaf=lambda x: x is None))
        first = jnp.result_type(args[0])
        rest = jnp.dtype(jnp.float32) if mixed else low
        return tuple(y.astype(first if i == 0 else rest) for i, y in enumerate(out))

    return run


def channel_shape(x):
    """Shape that broadcasts a per-channel vector against x (channels at dim 1)."""
    return (1, -1) + (1,) * (x.ndim - 2) if x.ndim > 1 else (-1,)


def reduced_axes(x):
    return tuple(i for i in range(x.ndim) if i != 1)


def per_channel(v, x):
    return jnp.reshape(v, channel_shape(x))


def batch_stats(input, running_mean, running_var, training, eps):
    """(mean, invstd) per channel: of the batch (biased variance) in training, else of the running stats."""
    if training:
        axes = reduced_axes(input)
        mean = jnp.mean(input, axis=axes)
        var = jnp.mean(jnp.square(input - per_channel(mean, input)), axis=axes)
    else:
        mean, var = running_mean, running_var
    return mean, 1 / jnp.sqrt(var + eps)


def _affine(xhat, weight, bias, x):
    out = xhat if weight is None else xhat * per_channel(weight, x)
    return out if bias is None else out + per_channel(bias, x)


@impl("native_batch_norm")
@in_opmath
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd); in eval mode the saved statistics are empty, as on ATen's CPU."""
    mean, invstd = batch_stats(input, running_mean, running_var, training, eps)
    out = _affine((input - per_channel(mean, input)) * per_channel(invstd, input), weight, bias, input)
    if not training:
        empty = jnp.zeros((0,), input.dtype)
        return out, empty, empty
    return out, mean, invstd


@impl("native_batch_norm_backward")
@in_opmath
def native_batch_norm_backward(
    grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask
):
    """(grad_input, grad_weight, grad_bias), all three computed whatever output_mask asks
    (JAX has no undefined tensor); training mode uses the saved statistics."""
    if train:
        mean, invstd = save_mean, save_invstd
    else:
        mean, invstd = running_mean, 1 / jnp.sqrt(running_var + eps)
    axes = reduced_axes(input)
    m = input.size // max(input.shape[1] if input.ndim > 1 else input.shape[0], 1)
    xhat = (input - per_channel(mean, input)) * per_channel(invstd, input)
    grad_bias = jnp.sum(grad_out, axis=axes)
    grad_weight = jnp.sum(grad_out * xhat, axis=axes)
    scale = per_channel(invstd if weight is None else invstd * weight, input)
    if train:
        grad_input = scale * (grad_out - per_channel(grad_bias / m, input) - xhat * per_channel(grad_weight / m, input))
    else:
        grad_input = scale * grad_out
    return grad_input, grad_weight, grad_bias


@impl("cudnn_batch_norm")
def cudnn_batch_norm(input, weight, bias, running_mean, running_var, training, exponential_average_factor, epsilon):
    """(output, save_mean, save_invstd, reserve): reserve is cudnn's workspace, an empty byte tensor here."""
    out, mean, invstd = native_batch_norm(
        input, weight, bias, running_mean, running_var, training, exponential_average_factor, epsilon
    )
    return out, mean, invstd, jnp.zeros((0,), jnp.uint8)


@impl("miopen_batch_norm")
def miopen_batch_norm(input, weight, bias, running_mean, running_var, training, exponential_average_factor, epsilon):
    return native_batch_norm(
        input, weight, bias, running_mean, running_var, training, exponential_average_factor, epsilon
    )


@impl("cudnn_batch_norm_backward")
def cudnn_batch_norm_backward(
    input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon, reserveSpace
):
    """Training-mode backward; `save_var` holds the inverse standard deviation, as cudnn saves it."""
    return native_batch_norm_backward(
        grad_output, input, weight, running_mean, running_var, save_mean, save_var, True, epsilon, (True, True, True)
    )


@impl("miopen_batch_norm_backward")
def miopen_batch_norm_backward(input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon):
    return native_batch_norm_backward(
        grad_output, input, weight, running_mean, running_var, save_mean, save_var, True, epsilon, (True, True, True)
    )


# -- layer and group norm -----------------------------------------------------------------------


def _stats(x, eps):
    """Mean and 1/sqrt(biased variance + eps) over the last axis."""
    mean = jnp.mean(x, axis=-1)
    var = jnp.mean(jnp.square(x - mean[..., None]), axis=-1)
    return mean, 1 / jnp.sqrt(var + eps)


@impl("native_layer_norm")
@in_opmath
def native_layer_norm(input, *args):
    """(output, mean, rstd), normalized over the trailing dims.

    1.7's schema (input, weight, bias, M, N, eps) sees input as (M, N) and returns mean and rstd
    of shape (M,); later files' (input, normalized_shape, weight, bias, eps) return them with
    the normalized dims kept as size 1.
    """
    if len(args) == 5:
        weight, bias, M, N, eps = args
        return _layer_norm(input, weight, bias, M, N, eps)
    normalized_shape, weight, bias, eps = args
    k = len(normalized_shape)
    N = math.prod(normalized_shape)
    M = math.prod(input.shape[: input.ndim - k])
    out, mean, rstd = _layer_norm(input, weight, bias, M, N, eps)
    stats = input.shape[: input.ndim - k] + (1,) * k
    return out, jnp.reshape(mean, stats), jnp.reshape(rstd, stats)


def _layer_norm(input, weight, bias, M, N, eps):
    x = jnp.reshape(input, (M, N))
    mean, rstd = _stats(x, eps)
    y = (x - mean[:, None]) * rstd[:, None]
    if weight is not None:
        y = y * jnp.reshape(weight, (N,))
    if bias is not None:
        y = y + jnp.reshape(bias, (N,))
    return jnp.reshape(y, input.shape), mean, rstd


@impl("native_layer_norm_backward")
@in_opmath
def native_layer_norm_backward(grad_out, input, *args):
    """(grad_input, grad_weight, grad_bias) of layer norm from its saved mean and rstd, all three
    computed whatever output_mask asks (JAX has no undefined tensor; ATen's kernel leaves the
    masked ones undefined): a formula that differentiates this call then always applies the
    entry's own double-backward formula.

    1.7's call (grad_out, input, mean, rstd, weight, M, N, output_mask) sees input as (M, N);
    later schemas (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    name the normalized trailing dims, whose shape the parameter gradients take.
    """
    if not isinstance(args[0], (tuple, list)):  # 1.7: an array (mean) where later schemas pass normalized_shape
        mean, rstd, weight, M, N, output_mask = args
        shape = (N,)
    else:
        normalized_shape, mean, rstd, weight, bias, output_mask = args
        shape = tuple(normalized_shape)
        N = math.prod(shape)
        M = math.prod(input.shape[: input.ndim - len(shape)])
    x, g = jnp.reshape(input, (M, N)), jnp.reshape(grad_out, (M, N))
    r = jnp.reshape(rstd, (M, 1))
    xhat = (x - jnp.reshape(mean, (M, 1))) * r
    gy = g if weight is None else g * jnp.reshape(weight, (N,))
    grad_input = r * (gy - jnp.mean(gy, axis=1, keepdims=True) - xhat * jnp.mean(gy * xhat, axis=1, keepdims=True))
    return (
        jnp.reshape(grad_input, input.shape),
        jnp.reshape(jnp.sum(g * xhat, axis=0), shape),
        jnp.reshape(jnp.sum(g, axis=0), shape),
    )


@impl("native_group_norm")
@in_opmath
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean, rstd): input seen as (N, C, HxW), channels split into `group` groups; mean and rstd are (N, group)."""
    x = jnp.reshape(input, (N, group, C // group * HxW))  # explicit: -1 is ambiguous for N = 0
    mean, rstd = _stats(x, eps)
    y = jnp.reshape((x - mean[..., None]) * rstd[..., None], (N, C, HxW))
    if weight is not None:
        y = y * weight[None, :, None]
    if bias is not None:
        y = y + bias[None, :, None]
    return jnp.reshape(y, input.shape), mean, rstd


# -- weight norm ------------------------------------------------------------------------------


def norm_except_dim(v, dim):
    """The 2-norm of v over every dimension but `dim` (all of them for dim -1), keeping dims."""
    if dim == -1:
        return jnp.sqrt(jnp.sum(jnp.square(v)))
    axes = tuple(i for i in range(v.ndim) if i != dim % v.ndim)
    return jnp.sqrt(jnp.sum(jnp.square(v), axis=axes, keepdims=True))


@impl("_weight_norm_cuda_interface", "_weight_norm_interface")
def _weight_norm_cuda_interface(v, g, dim=0):
    """(v * g / ||v||, ||v||): the norm over every dimension but `dim`, in g's shape."""
    n = norm_except_dim(v, dim)
    return v * (g / n), jnp.reshape(n, jnp.shape(g))


# -- torch 2.13's batch norm split by whether running statistics update, and RMS norm ------------------


@impl("_batch_norm_with_update")
def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """(output, save_mean, save_invstd, reserve): training mode; reserve is a backend's workspace,
    an empty byte tensor on CPU. The running statistics are not updated (arrays are immutable)."""
    out, mean, invstd = native_batch_norm(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out, mean, invstd, jnp.zeros((0,), jnp.uint8)


@impl("_batch_norm_no_update")
def _batch_norm_no_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """Evaluation mode with the running statistics (batch statistics where there are none)."""
    out, mean, invstd = native_batch_norm(
        input, weight, bias, running_mean, running_var, running_mean is None, momentum, eps
    )
    return out, mean, invstd, jnp.zeros((0,), jnp.uint8)


def rms_stats_shape(input, normalized_shape):
    """rstd's shape: the leading dims, the normalized ones kept as size 1."""
    k = len(normalized_shape)
    return input.shape[: input.ndim - k] + (1,) * k


@impl("_fused_rms_norm")
def _fused_rms_norm(input, normalized_shape, weight=None, eps=None):
    """(input * rstd * weight, rstd), rstd = 1/sqrt(mean(input^2) + eps) over the trailing
    `normalized_shape` dims; eps defaults to the dtype's machine epsilon."""
    if eps is None:
        eps = float(jnp.finfo(input.dtype).eps)
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    rstd = 1 / jnp.sqrt(jnp.mean(jnp.square(input), axis=axes, keepdims=True) + eps)
    out = input * rstd
    return (out if weight is None else out * weight), rstd


# -- torch 2.13's batch norm entries for export (running statistics required, or none) -----------


@impl("_native_batch_norm_legit")
def _native_batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """native_batch_norm with running statistics that must be given; ATen updates them in
    place in training, here they are left as they are (arrays are immutable)."""
    return native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


@impl("_native_batch_norm_legit_no_training")
def _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    """Evaluation mode: normalized with the running statistics."""
    return native_batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)


@impl("_native_batch_norm_legit.no_stats")
def _native_batch_norm_legit_no_stats(input, weight, bias, training, momentum, eps):
    """Without running statistics: the batch's are used (ATen only supports training here)."""
    if not training:
        raise RuntimeError("_native_batch_norm_legit.no_stats: running statistics are needed when training=False")
    return native_batch_norm(input, weight, bias, None, None, True, momentum, eps)


@impl("batch_norm_backward")
def batch_norm_backward(
    grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps, output_mask, reserve
):
    """native_batch_norm_backward for _batch_norm_with_update / _no_update: the saved batch
    statistics (save_var holds invstd, as those forwards return) when they were used (update,
    or no running statistics), else the running ones; `reserve` is a backend's workspace."""
    train = update or running_mean is None
    return native_batch_norm_backward(
        grad_out, input, weight, running_mean, running_var, save_mean, save_var, train, eps, output_mask
    )
