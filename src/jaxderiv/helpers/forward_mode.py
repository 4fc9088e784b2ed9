"""FunctionsManual's `*_jvp` helpers that newer spec files' `result:` formulas call, from the math.

Each takes primals (`*_p`) and tangents (`*_t`) and returns the output's tangent. PyTorch's
choices at ties and kinks are kept: they need not match the backward formula's.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..forward import reductions as R
from ..namespace import helper
from .reductions import sgn, unsqueeze_dims, restore_reduced_dims


def _sum(x, dim, keepdim):
    """ATen's sum over `dim` (all dims when empty)."""
    return jnp.sum(x, axis=R.reduced_dims(dim, jnp.ndim(x)), keepdims=keepdim)


@helper("clamp_jvp")
def clamp_jvp(self_p, self_t, min_p, min_t, max_p, max_t):
    """The tangent of the argument clamp returns: the bound's when self is beyond it, self's
    at the bound itself, max's whenever min > max."""
    if min_p is not None and max_p is not None:
        inner = jnp.where(self_p < min_p, min_t, jnp.where(self_p > max_p, max_t, self_t))
        return jnp.where(min_p > max_p, max_t, inner)
    if min_p is not None:
        return jnp.where(self_p > min_p, self_t, min_t)
    if max_p is not None:
        return jnp.where(self_p < max_p, self_t, max_t)
    return self_t


@helper("amaxamin_jvp")
def amaxamin_jvp(x, dx, result, dim, keepdim):
    """The mean of the tangents at the positions that attain the extremum."""
    mask = x == restore_reduced_dims(result, dim, keepdim)
    return _sum(jnp.where(mask, dx, 0), dim, keepdim) / _sum(mask, dim, keepdim)


@helper("aminmax_jvp")
def aminmax_jvp(self_p, self_t, result, dim, keepdim):
    """amaxamin_jvp over the one dim, or over all of them."""
    return amaxamin_jvp(self_p, self_t, result, () if dim is None else (dim,), keepdim)


@helper("logsumexp_jvp")
def logsumexp_jvp(self_p, self_t, dim, keepdim):
    """sum softmax(x) dx over `dim`, with the max subtracted before exp."""
    if jnp.size(self_p):
        shift = jnp.max(jnp.real(self_p), axis=R.reduced_dims(dim, jnp.ndim(self_p)), keepdims=True)
        e = jnp.exp(self_p - jax.lax.stop_gradient(shift))
    else:
        e = jnp.exp(self_p)
    return _sum(e * self_t, dim, keepdim) / _sum(e, dim, keepdim)


@helper("logcumsumexp_jvp")
def logcumsumexp_jvp(self_p, self_t, dim):
    """cumsum(exp(x) dx) / cumsum(exp(x)) along `dim`, exp-normalized for real x; the 1e-13
    PyTorch adds to the denominator is kept."""
    d = R.wrap_dim(dim, jnp.ndim(self_p))
    if jnp.ndim(self_p) == 0:
        return self_t
    if jnp.iscomplexobj(self_p):
        e = jnp.exp(self_p)
    else:
        e = jnp.exp(self_p - jax.lax.stop_gradient(jnp.max(self_p, axis=d, keepdims=True)))
    return jnp.cumsum(e * self_t, axis=d) / (jnp.cumsum(e, axis=d) + 1e-13)


@helper("norm_jvp")
def norm_jvp(self_p, self_t, p, norm, dim=(), keepdim=True):
    """The tangent of a p-norm over `dim` (all if empty), split by p as ATen's norm_backward is."""
    p = 2.0 if p is None else float(p)
    n = jnp.ndim(self_p)
    shape = jnp.shape(norm)

    def reduce(x):
        return jnp.reshape(_sum(x, dim, keepdim), shape)

    if p == 0:
        return jnp.zeros_like(norm)
    if p == 1:
        return reduce(jnp.real(sgn(self_p) * jnp.conj(self_t)))
    zero = norm == 0
    if p == 2:
        out = reduce(jnp.real(self_p * jnp.conj(self_t)))
        return jnp.where(zero, 0, out / jnp.where(zero, 1, norm))
    a = jnp.abs(self_p)
    if math.isinf(p):
        full = (
            unsqueeze_dims(norm, dim, n)
            if not keepdim and n
            else jnp.reshape(norm, jnp.shape(norm) + (1,) * (n - jnp.ndim(norm)))
        )
        is_max = ((a == full) | (jnp.isnan(self_p) & jnp.isnan(full))).astype(a.dtype)
        count = jnp.sum(is_max != 0, axis=R.reduced_dims(dim, n), keepdims=True) if n else is_max
        return reduce(jnp.real(sgn(self_p) * jnp.conj(self_t)) * is_max / count)
    if p < 1:
        powed = jnp.where(self_p == 0, 0, jnp.where(self_p == 0, 1, a) ** (p - 1))
        return reduce(powed * jnp.real(sgn(self_p) * jnp.conj(self_t))) * norm ** (1 - p)
    if p < 2:
        summed = reduce(a ** (p - 1) * jnp.real(sgn(self_p) * jnp.conj(self_t)))
    else:
        summed = reduce(a ** (p - 2) * jnp.real(self_p * jnp.conj(self_t)))
    return jnp.where(zero, 0, summed / jnp.where(zero, 1, norm) ** (p - 1))


@helper("glu_jvp")
def glu_jvp(glu, x, dx, dim):
    """glu = a sigmoid(b) with (a, b) the halves of x along dim: da s + glu (1 - s) db."""
    d = R.wrap_dim(dim, jnp.ndim(x))
    half = jnp.shape(x)[d] // 2
    b = jax.lax.slice_in_dim(x, half, 2 * half, axis=d)
    da = jax.lax.slice_in_dim(dx, 0, half, axis=d)
    db = jax.lax.slice_in_dim(dx, half, 2 * half, axis=d)
    s = jax.nn.sigmoid(b)
    return da * s + glu * (1 - s) * db


@helper("glu_backward_jvp")
def glu_backward_jvp(grad_x, grad_glu, x, dgrad_glu, dx, dim):
    """The tangent of glu_backward's output (g s, g a s (1 - s)), g = grad_glu, s = sigmoid(b):
    (dg s + g s (1 - s) db,  (dg a + g da) s (1 - s) + g a s (1 - s) (1 - 2 s) db)."""
    d = R.wrap_dim(dim, jnp.ndim(x))
    half = jnp.shape(x)[d] // 2
    first, second = (
        (lambda v: jax.lax.slice_in_dim(v, 0, half, axis=d)),
        (lambda v: jax.lax.slice_in_dim(v, half, 2 * half, axis=d)),
    )
    a, b, da, db = first(x), second(x), first(dx), second(dx)
    s = jax.nn.sigmoid(b)
    ds = s * (1 - s)
    grad_a = dgrad_glu * s + grad_glu * ds * db
    grad_b = (dgrad_glu * a + grad_glu * da) * ds + grad_glu * a * ds * (1 - 2 * s) * db
    return jnp.concatenate([grad_a, grad_b], axis=d)


@helper("renorm_jvp")
def renorm_jvp(self_p, self_t, p, dim, maxnorm):
    """Slices (along `dim`) whose p-norm exceeds maxnorm are x maxnorm / (norm + 1e-7): their
    tangent is f (dx - x dnorm / (norm + 1e-7)), f = maxnorm / (norm + 1e-7); others pass dx."""
    d = R.wrap_dim(dim, jnp.ndim(self_p))
    others = tuple(i for i in range(jnp.ndim(self_p)) if i != d)
    norm = R.vector_norm(self_p, p, others, keepdim=True) if others else jnp.abs(self_p)
    norm_t = norm_jvp(self_p, self_t, p, norm, others, True) if others else jnp.real(sgn(self_p) * jnp.conj(self_t))
    invnorm = 1 / (norm + 1e-7)
    return jnp.where(norm > maxnorm, maxnorm * invnorm * (self_t - self_p * invnorm * norm_t), self_t)
