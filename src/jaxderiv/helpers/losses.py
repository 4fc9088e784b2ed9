"""FunctionsManual helpers of the loss formulas, written from the math.

The losses' first backward ops are forward implementations (forward/losses.py); these are the
helpers that exist only in FunctionsManual: second derivatives, gradients for `target`, and
ATen backward ops the spec has no entry for. All are linear in their first argument, `grad`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..forward.losses import (
    BCE_EPSILON,
    MEAN,
    NONE,
    SUM,
    kl_div_backward,
    l1_loss_backward,
    mse_loss_backward,
    multilabel_is_target,
    nll_loss_forward,
    huber_loss_backward,
    norm,
    smooth_l1_loss_backward,
    soft_margin_loss_backward,
)
from ..namespace import helper


def _grad_output_part(backward, grad, grad_output, input, target, reduction, *parameters):
    """The gradient for the grad_output of `backward`(grad_output, input, target, reduction,
    *parameters): the backward applied to `grad` when the loss was not reduced, else
    <grad, backward(1)> (grad_output was one number)."""
    if reduction == NONE:
        return backward(grad, input, target, reduction, *parameters)
    return jnp.sum(backward(jnp.ones_like(grad_output), input, target, reduction, *parameters) * grad)


@helper("mse_loss_double_backward_grad_output")
def mse_loss_double_backward_grad_output(grad, grad_output, input, target, reduction):
    return _grad_output_part(mse_loss_backward, grad, grad_output, input, target, reduction)


@helper("mse_loss_double_backward")
def mse_loss_double_backward(grad, input, reduction):
    return norm(reduction, input, 2.0) * grad


@helper("l1_loss_double_backward_grad_output")
def l1_loss_double_backward_grad_output(grad, input, target, reduction):
    out = l1_loss_backward(grad, input, target, NONE)
    return jnp.mean(out) if reduction == MEAN else jnp.sum(out) if reduction == SUM else out


@helper("smooth_l1_loss_double_backward_grad_output")
def smooth_l1_loss_double_backward_grad_output(grad, grad_output, input, target, reduction, beta):
    return _grad_output_part(smooth_l1_loss_backward, grad, grad_output, input, target, reduction, beta)


@helper("smooth_l1_loss_double_backward")
def smooth_l1_loss_double_backward(grad, input, target, reduction, beta):
    """The quadratic part's curvature 1/beta; zero on the linear parts."""
    inside = jnp.abs(input - target) < beta
    return jnp.where(inside, norm(reduction, input) * grad / beta if beta else 0 * grad, 0)


@helper("huber_loss_double_backward_grad_output")
def huber_loss_double_backward_grad_output(grad, grad_output, input, target, reduction, delta):
    return _grad_output_part(huber_loss_backward, grad, grad_output, input, target, reduction, delta)


@helper("huber_loss_double_backward")
def huber_loss_double_backward(grad, input, target, reduction, delta):
    """The quadratic part's curvature 1; zero on the linear parts."""
    inside = jnp.abs(input - target) < delta
    return jnp.where(inside, norm(reduction, input) * grad, jnp.zeros((), jnp.result_type(grad)))


@helper("soft_margin_loss_double_backward_grad_output")
def soft_margin_loss_double_backward_grad_output(grad, grad_output, input, target, reduction):
    return _grad_output_part(soft_margin_loss_backward, grad, grad_output, input, target, reduction)


@helper("soft_margin_loss_double_backward")
def soft_margin_loss_double_backward(grad, input, target, reduction):
    """d/dx of -t z / (1 + z), z = exp(-t x): t^2 z / (1 + z)^2."""
    z = jnp.exp(-target * input)
    return norm(reduction, input) * target * target * z / jnp.square(1 + z) * grad


# -- kl_div ---------------------------------------------------------------------------------


@helper("kl_div_target_backward")
def kl_div_target_backward(grad_output, self, target, reduction, log_target):
    """d/dt of t (log t - x): log t + 1 - x, zero where t == 0; of e^t (t - x): e^t (t + 1 - x)."""
    if log_target:
        g = grad_output * jnp.exp(target) * (target + 1 - self)
    else:
        safe = jnp.where(target == 0, 1, target)
        g = jnp.where(target == 0, 0, grad_output * (jnp.log(safe) + 1 - self))
    return norm(reduction, target) * g


@helper("kl_div_double_backward_grad_output")
def kl_div_double_backward_grad_output(grad, input, target, reduction, log_target):
    out = kl_div_backward(grad, input, target, NONE, log_target=log_target)
    return jnp.mean(out) if reduction == MEAN else jnp.sum(out) if reduction == SUM else out


# -- binary cross entropy ---------------------------------------------------------------------


def _bce_denominator(input):
    return jnp.maximum((1 - input) * input, BCE_EPSILON)


@helper("binary_cross_entropy_double_backward")
def binary_cross_entropy_double_backward(grad_output, grad, input, target, weight, reduction):
    """d/dx of (x - t) / (x (1 - x)): (x^2 - 2 x t + t) / (x (1 - x))^2."""
    g = (input * input - 2 * input * target + target) / jnp.square(_bce_denominator(input)) * (grad * grad_output)
    g = g if weight is None else g * weight
    return norm(reduction, input) * g


@helper("binary_cross_entropy_double_backward_grad_output")
def binary_cross_entropy_double_backward_grad_output(grad, input, target, weight, reduction):
    """Elementwise, as PyTorch's: the engine sums it to grad_output's shape when that is reduced
    (a backward formula), and a result formula needs it per element."""
    g = (input - target) / _bce_denominator(input) * grad
    g = g if weight is None else g * weight
    return g / jnp.size(input) if reduction == MEAN else g


@helper("binary_cross_entropy_with_logits_backward", "at::binary_cross_entropy_with_logits_backward")
def binary_cross_entropy_with_logits_backward(grad, input, target, weight, pos_weight, reduction):
    """d/dx: (1 + (pw - 1) t) sigmoid(x) - pw t, i.e. sigmoid(x) - t without pos_weight."""
    s = jax.nn.sigmoid(input)
    if pos_weight is None:
        g = grad * (s - target)
    else:
        t = pos_weight * target
        g = grad * ((t + 1 - target) * s - t)
    g = g if weight is None else g * weight
    return norm(reduction, input) * g


@helper("binary_cross_entropy_with_logits_target_backward")
def binary_cross_entropy_with_logits_target_backward(grad, input, target, weight, pos_weight, reduction):
    """d/dt: -x + (pw - 1) softplus(-x), i.e. -x without pos_weight."""
    if pos_weight is None:
        g = -input * grad
    else:
        g = (-input + (pos_weight - 1) * jnp.logaddexp(0.0, -input)) * grad
    g = g if weight is None else g * weight
    return norm(reduction, target) * g


# -- losses over class indices ------------------------------------------------------------------


@helper("nll_loss", "nll_loss2d", "at::nll_loss", "at::nll_loss2d")
def nll_loss(self, target, weight=None, reduction=MEAN, ignore_index=-100):
    """The loss output of nll_loss_forward (at::nll_loss)."""
    return nll_loss_forward(self, target, weight, reduction, ignore_index)[0]


def _scale(grad, reduction, n):
    """Per-sample factor of the upstream gradient: grad / n for mean, grad for sum or none."""
    g = jnp.reshape(grad, (-1,)) if reduction == NONE else grad
    return g / n if reduction == MEAN else g


@helper("multi_margin_loss_backward", "at::multi_margin_loss_backward")
def multi_margin_loss_backward(grad, self, target, p, margin, weight, reduction):
    """Each active hinge z = margin - x[y] + x[j] > 0 (j != y) adds w[y] (p z^(p-1)) / C to x[j]
    and subtracts it from x[y]."""
    x = jnp.reshape(self, (1, jnp.size(self))) if self.ndim <= 1 else self  # 0-d: one sample, one class
    y = jnp.reshape(target, (-1,))
    n, c = x.shape
    z = margin - jnp.take_along_axis(x, y[:, None], axis=1) + x
    others = jnp.arange(c)[None, :] != y[:, None]
    d = jnp.where(others & (z > 0), 1.0 if p == 1 else 2 * z, 0).astype(x.dtype) / c
    if weight is not None:
        d = d * jnp.asarray(weight, x.dtype)[y][:, None]
    d = d - jax.nn.one_hot(y, c, dtype=x.dtype) * jnp.sum(d, axis=1, keepdims=True)
    g = d * jnp.reshape(_scale(grad, reduction, n), (-1, 1) if reduction == NONE else ())
    return jnp.reshape(g, jnp.shape(self))


@helper("multilabel_margin_loss_backward", "at::multilabel_margin_loss_backward")
def multilabel_margin_loss_backward(grad, self, target, reduction, is_target):
    """Each active hinge 1 - (x[j] - x[k]) > 0 (j a target, k not) adds 1/C to x[k], -1/C to x[j]."""
    x = jnp.reshape(self, (1, jnp.size(self))) if self.ndim <= 1 else self  # 0-d: one sample, one class
    t = jnp.reshape(target, (1, jnp.size(target))) if target.ndim <= 1 else target
    n, c = x.shape
    is_t, valid = multilabel_is_target(x, t)
    xj = jnp.take_along_axis(x, jnp.maximum(t, 0), axis=1)
    active = (1 - (xj[:, :, None] - x[:, None, :]) > 0) & valid[:, :, None] & (is_t[:, None, :] == 0)
    a = active.astype(x.dtype) / c  # (N, slot, k)
    to_k = jnp.sum(a, axis=1)
    to_j = jnp.einsum("nsk,nsc->nc", a, jax.nn.one_hot(jnp.maximum(t, 0), c, dtype=x.dtype))
    d = to_k - to_j
    g = d * jnp.reshape(_scale(grad, reduction, n), (-1, 1) if reduction == NONE else ())
    return jnp.reshape(g, jnp.shape(self))


@helper("apply_loss_reduction")
def apply_loss_reduction(unreduced, reduction):
    """An elementwise loss (or its tangent) reduced as `reduction` asks: mean, sum or none."""
    if reduction == MEAN:
        return jnp.mean(unreduced)
    if reduction == SUM:
        return jnp.sum(unreduced)
    return unreduced


@helper("binary_cross_entropy_target_backward")
def binary_cross_entropy_target_backward(grad, self, target, weight, reduction):
    """d/d target of -w (t log x + (1 - t) log(1 - x)): -w logit(x), over numel for mean."""
    g = -jnp.log(self / (1 - self)) * grad
    if weight is not None:
        g = g * weight
    return g / jnp.size(target) if reduction == MEAN else g


@helper("binary_cross_entropy_double_backward_target")
def binary_cross_entropy_double_backward_target(grad, grad_output, self, target, weight, reduction):
    """d/d target of binary_cross_entropy_backward, gO w (x - t) / (x (1 - x)): -gO w / (x (1 - x)),
    the denominator kept at least 1e-12 as PyTorch does."""
    res = -grad * grad_output
    if weight is not None:
        res = res * weight
    res = res / jnp.maximum((1 - self) * self, 1e-12)
    return res / jnp.size(target) if reduction == MEAN else res
