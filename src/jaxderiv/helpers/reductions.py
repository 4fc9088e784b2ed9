"""FunctionsManual helpers of the reduction, scan and selection formulas, written from the math.

Where ATen branches on data (zeros in prod/cumprod, NaN maxima) both paths are computed and
selected with `where`, with safe denominators in the branch not taken, so that the helpers
stay traceable (jit, vmap) and differentiable a second time.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

from ..forward import reductions as R
from ..forward import unary
from ..namespace import helper, method

# -- shapes of reduced gradients --------------------------------------------------------------


def unsqueeze_dims(x, dims, ndim: int):
    """Put back the reduced `dims` (all if empty) of an ndim-dimensional input as size-1 dims."""
    return jnp.expand_dims(x, R.reduced_dims(dims, ndim)) if ndim else x


@helper("unsqueeze_multiple")
def unsqueeze_multiple(x, dims, n):
    return unsqueeze_dims(x, dims, n)


@helper("sum_backward")
def sum_backward(grad, sizes, dims, keepdim):
    """The gradient of a sum over `dims`: broadcast back to the input's sizes."""
    sizes = tuple(sizes)
    if not keepdim and sizes:
        grad = unsqueeze_dims(grad, dims, len(sizes))
    return jnp.broadcast_to(grad, sizes)


@helper("mean_backward")
def mean_backward(grad, sizes, dims, numel, keepdim):
    """sum's gradient divided by the count of elements averaged: all of them (numel) when dims
    is None or empty."""
    n = numel if dims is None or (not isinstance(dims, int) and len(dims) == 0) else _safe_size(sizes, dims)
    return sum_backward(grad, sizes, dims, keepdim) / n


@helper("nansum_backward")
def nansum_backward(grad, self, dims, keepdim):
    return sum_backward(grad, jnp.shape(self), dims, keepdim) * ~jnp.isnan(self)


@helper("_safe_size")
def _safe_size(sizes, dims):
    """The number of elements reduced over `dims` (1 for a 0-d input)."""
    sizes = tuple(sizes)
    if not sizes:
        return 1
    return math.prod(sizes[R.wrap_dim(d, len(sizes))] for d in ((dims,) if isinstance(dims, int) else dims))


@helper("restore_reduced_dims")
def restore_reduced_dims(output, dims, keepdim):
    """Reshape a reduced output to the input's rank, size 1 on the reduced dims."""
    if keepdim:
        return output
    total = jnp.ndim(output) + len(dims)
    target = [0] * total
    for d in dims:
        target[d % total] = 1
    rest = iter(jnp.shape(output))
    return jnp.reshape(output, tuple(1 if t else next(rest) for t in target))


@helper("scale_grad_by_count")
def scale_grad_by_count(grad, mask, dims):
    """The gradient shared evenly among the positions `mask` marks in each reduced slice."""
    count = jnp.sum(mask, axis=R.reduced_dims(dims, jnp.ndim(mask)), keepdims=True)
    scaled = grad / count
    return scaled * mask.astype(scaled.dtype)  # ATen's product: a slice with no mark (a NaN) gives NaN


@helper("aminmax_backward")
def aminmax_backward(self, dim, keepdim, grad_min, grad_max, min, max):
    """Each defined gradient shared evenly among the positions equal to its extreme."""
    dims = () if dim is None else (dim,)
    total = jnp.zeros(jnp.shape(self), jnp.result_type(self))
    for grad, extreme in ((grad_min, min), (grad_max, max)):
        if grad is not None:
            mask = self == restore_reduced_dims(extreme, dims, keepdim)
            total = total + scale_grad_by_count(restore_reduced_dims(grad, dims, keepdim), mask, dims)
    return total


# -- selection --------------------------------------------------------------------------------


def _scatter(zeros, d: int, index, src, add: bool):
    """zeros.scatter(d, index, src) (or scatter_add) along dim d."""
    grids = jnp.meshgrid(*[jnp.arange(n) for n in jnp.shape(index)], indexing="ij")
    grids[d] = index
    at = zeros.at[tuple(grids)]
    return at.add(src) if add else at.set(src, unique_indices=True)


@helper("value_selecting_reduction_backward")
def value_selecting_reduction_backward(grad, dim, indices, sizes, keepdim):
    """The gradient routed to the index each selected value came from."""
    sizes = tuple(sizes)
    if not sizes:
        return grad
    d = R.wrap_dim(dim, len(sizes))
    if not keepdim:
        grad, indices = jnp.expand_dims(grad, d), jnp.expand_dims(indices, d)
    return _scatter(jnp.zeros(sizes, jnp.result_type(grad)), d, indices, grad, add=False)


@helper("gather_with_keepdimed_indices")
def gather_with_keepdimed_indices(x, dim, indices, keepdim):
    """x read at the selected indices: the forward tangent of a value-selecting reduction."""
    if jnp.ndim(x) == 0:
        return x
    d = R.wrap_dim(dim, jnp.ndim(x))
    idx = indices if keepdim else jnp.expand_dims(indices, d)
    out = jnp.take_along_axis(x, idx, axis=d)
    return out if keepdim else jnp.squeeze(out, d)


def _extreme_mask(x, value):
    """Where x equals the selected value; NaN matches NaN."""
    return (x == value) | (jnp.isnan(x) & jnp.isnan(value))


@helper("evenly_distribute_backward")
def evenly_distribute_backward(grad, x, value):
    """The gradient of a full max/min/median split evenly among the entries equal to the result."""
    mask = _extreme_mask(x, value)
    return mask * (grad / jnp.sum(mask))


@helper("evenly_read_jvp")
def evenly_read_jvp(fw_grad, x, value):
    """The mean of the tangents at the entries equal to the result."""
    mask = _extreme_mask(x, value)
    return jnp.sum(mask * fw_grad) / jnp.sum(mask)


@helper("cummaxmin_backward")
def cummaxmin_backward(grad, x, indices, dim):
    """Each running extreme's gradient added to the entry it came from."""
    if jnp.size(x) == 0 or jnp.ndim(x) == 0:
        return grad
    d = R.wrap_dim(dim, jnp.ndim(x))
    return _scatter(jnp.zeros(jnp.shape(x), jnp.result_type(grad)), d, indices, grad, add=True)


# -- sums, products, scans -----------------------------------------------------------------------


def _flip_cumsum(x, d):
    return jnp.flip(jnp.cumsum(jnp.flip(x, d), axis=d), d)


@helper("cumsum_backward")
def cumsum_backward(grad, dim):
    """The gradient of cumsum: the reversed cumulative sum."""
    if jnp.ndim(grad) == 0 or jnp.size(grad) == 0:
        return grad
    return _flip_cumsum(grad, R.wrap_dim(dim, jnp.ndim(grad)))


def _exclusive_prods(x, d: int):
    """Product of all entries but one along d, for each entry: exact with zeros."""
    n = x.shape[d]
    ones = jnp.ones_like(lax.slice_in_dim(x, 0, 1, axis=d))
    before = jnp.cumprod(jnp.concatenate([ones, lax.slice_in_dim(x, 0, n - 1, axis=d)], axis=d), axis=d)
    rest = jnp.flip(lax.slice_in_dim(x, 1, n, axis=d), d)
    after = jnp.flip(jnp.cumprod(jnp.concatenate([ones, rest], axis=d), axis=d), d)
    return before * after


def _prod_backward_along(grad, x, result, d):
    """grad * result / x where the slice has no zero; products of the others where it has."""
    if jnp.size(x) == 0:  # an empty input has an empty gradient
        return jnp.zeros(jnp.shape(x), jnp.result_type(grad, x))
    zeros = x == 0
    any_zero = jnp.any(zeros, axis=d, keepdims=True)
    simple = grad * jnp.conj(result / jnp.where(zeros, 1, x))
    return jnp.where(any_zero, grad * jnp.conj(_exclusive_prods(x, d)), simple)


@helper("prod_backward")
def prod_backward(grad, x, result):
    """The gradient of prod over all entries."""
    if jnp.ndim(x) == 0:
        return grad
    return jnp.reshape(_prod_backward_along(grad, jnp.ravel(x), result, 0), jnp.shape(x))


@helper("prod_backward")
def _prod_backward_dim(grad, x, result, dim, keepdim):
    """The gradient of prod over `dim` (with keepdim)."""
    if jnp.ndim(x) == 0:
        return grad
    d = R.wrap_dim(dim, jnp.ndim(x))
    if not keepdim:
        grad, result = jnp.expand_dims(grad, d), jnp.expand_dims(result, d)
    return _prod_backward_along(grad, x, result, d)


@helper("cumprod_backward")
def cumprod_backward(grad, x, dim, output=None):
    """sum_{j>=k} grad_j * conj(prod_{i<=j, i!=k} x_i): reversed cumsum over x where no zero."""
    if jnp.size(x) <= 1:
        return grad
    d = R.wrap_dim(dim, jnp.ndim(x))
    n = x.shape[d]
    if n == 1:
        return grad
    if output is None:
        output = jnp.cumprod(x, axis=d)
    zeros = x == 0
    simple = _flip_cumsum(grad * jnp.conj(output), d) / jnp.conj(jnp.where(zeros, 1, x))
    # with zeros: for each k, the running products with x_k replaced by 1, read from j = k on
    xm = jnp.moveaxis(x, d, -1)
    gm = jnp.moveaxis(grad, d, -1)
    eye = jnp.eye(n, dtype=bool)
    omitted = jnp.cumprod(jnp.where(eye, 1, xm[..., None, :]), axis=-1)  # [..., k, j]
    upper = jnp.arange(n)[None, :] >= jnp.arange(n)[:, None]
    full = jnp.sum(jnp.where(upper, gm[..., None, :] * jnp.conj(omitted), 0), axis=-1)
    return jnp.where(jnp.any(zeros, axis=d, keepdims=True), jnp.moveaxis(full, -1, d), simple)


@helper("cumprod_jvp")
def cumprod_jvp(self_t, self_p, result, dim):
    """Tangent of cumprod: cumsum(t / x) * result before the first zero, running products after."""
    if jnp.ndim(self_p) == 0:
        return jnp.where(self_p == 0, self_t, self_t / jnp.where(self_p == 0, 1, self_p) * result)
    d = R.wrap_dim(dim, jnp.ndim(self_p))
    zeros = self_p == 0
    gradient = jnp.cumsum(self_t / jnp.where(zeros, 1, self_p), axis=d) * result
    first_zero = zeros & (jnp.cumsum(zeros, axis=d) == 1)
    new_grad = jnp.cumprod(jnp.where(first_zero, self_t, self_p), axis=d)
    after_first_zero = jnp.cumsum(first_zero, axis=d) > 0
    return jnp.where(after_first_zero, new_grad, gradient)


@helper("logsumexp_backward")
def logsumexp_backward(grad, x, result, dim, keepdim):
    if not keepdim and jnp.ndim(x):
        grad = unsqueeze_dims(grad, dim, jnp.ndim(x))
        result = unsqueeze_dims(result, dim, jnp.ndim(x))
    return grad * jnp.conj(jnp.exp(x - result))  # FunctionsManual: grad * (self - result).exp().conj()


@helper("logcumsumexp_backward")
def logcumsumexp_backward(grad, x, result, dim):
    """sum_{j>=k} grad_j exp(x_k - result_j): each exponent is <= 0, and the map is linear in grad.
    Complex: FunctionsManual's conj(exp(reverse_logcumsumexp(log(conj(grad)) - result) + self)),
    that is sum_{j>=k} grad_j conj(exp(x_k - result_j))."""
    if jnp.ndim(grad) == 0 or jnp.size(grad) == 0:
        return grad
    d = R.wrap_dim(dim, jnp.ndim(x))
    xm, rm, gm = (jnp.moveaxis(v, d, -1) for v in (x, result, grad))
    n = xm.shape[-1]
    upper = jnp.arange(n)[None, :] >= jnp.arange(n)[:, None]  # [k, j]: j >= k
    xk = xm[..., :, None]
    keep = upper & ~jnp.isneginf(jnp.real(xk))
    exponent = jnp.where(keep, xk - rm[..., None, :], -jnp.inf)
    factor = jnp.exp(exponent)
    if jnp.iscomplexobj(factor):
        factor = jnp.conj(factor)
    return jnp.moveaxis(jnp.sum(factor * gm[..., None, :], axis=-1), -1, d)


# -- variance, standard deviation, norms ------------------------------------------------------------


def _correction(c) -> float:
    """`unbiased` (bool) in older files, `correction` (Scalar?, None meaning 1) in newer ones."""
    return 1.0 if c is None else float(c)


@helper("var_backward")
def _var_backward_all(grad, x, unbiased):
    """The 1.7 form: over every dim."""
    return var_backward(grad, x, (), unbiased, False)


@helper("var_backward")
def var_backward(grad, x, dims, correction, keepdim):
    """2 / (n - correction) * grad * (x - mean(x)); `correction` is `unbiased` in older files."""
    axes = R.reduced_dims(dims, jnp.ndim(x))
    n = _safe_size(jnp.shape(x), axes)
    if not keepdim and jnp.ndim(x):
        grad = unsqueeze_dims(grad, axes, jnp.ndim(x))
    dof = n - _correction(correction)
    # ATen divides in C++ doubles: no degrees of freedom left is 2 / 0 = inf (a nan gradient), not an error
    scale = 2.0 / dof if dof != 0 else math.inf
    return scale * grad * (x - jnp.mean(x, axis=axes, keepdims=True))


@helper("std_backward")
def _std_backward_all(result, grad, x, unbiased):
    """The 1.7 form: over every dim."""
    return std_backward(result, grad, x, (), unbiased, False)


@helper("std_backward")
def std_backward(result, grad, x, dims, correction, keepdim):
    """var_backward of grad / (2 std), zero where std is 0."""
    grad_var = jnp.where(result == 0, 0, grad / jnp.where(result == 0, 1, 2 * result))
    return var_backward(grad_var, x, dims, correction, keepdim)


@helper("var_std_mean_backward")
def _var_std_mean_backward_all(grads, x, r0, r1, unbiased, is_std):
    """The 1.7 form: over every dim."""
    return var_std_mean_backward(grads, x, r0, r1, (), unbiased, False, is_std)


@helper("var_std_mean_backward")
def var_std_mean_backward(grads, x, r0, r1, dims, unbiased, keepdim, is_std):
    """Sum of the var (or std) and the mean backward for var_mean / std_mean."""
    grad = None
    if grads[0] is not None:
        grad = (
            std_backward(r0, grads[0], x, dims, unbiased, keepdim)
            if is_std
            else var_backward(grads[0], x, dims, unbiased, keepdim)
        )
    if grads[1] is not None:
        axes = R.reduced_dims(dims, jnp.ndim(x))
        mean_grad = sum_backward(grads[1], jnp.shape(x), axes, keepdim) / _safe_size(jnp.shape(x), axes)
        grad = mean_grad if grad is None else grad + mean_grad
    return grad


@helper("var_mean_backward")
def var_mean_backward(grad_var, grad_mean, x, dim, correction, keepdim):
    """Newer files' var_mean: the var and the mean backward, each where its gradient is defined."""
    return var_std_mean_backward([grad_var, grad_mean], x, None, None, dim, correction, keepdim, False)


@helper("std_mean_backward")
def std_mean_backward(grad_std, grad_mean, x, std, dim, correction, keepdim):
    """Newer files' std_mean: the std and the mean backward, each where its gradient is defined."""
    return var_std_mean_backward([grad_std, grad_mean], x, std, None, dim, correction, keepdim, True)


def sgn(x):
    """ATen's sgn: z / |z| (0 at 0) for complex, (0 < x) - (x < 0) for real (0 at NaN)."""
    return unary.sgn(x)


@helper("norm_backward")
def norm_backward(grad, x, p, norm, dim=(), keepdim=False):
    """The gradient of a p-norm over `dim` (all if empty), as ATen splits it by p."""
    p = 2.0 if p is None else float(p)
    n = jnp.ndim(x)
    if not keepdim and n:
        grad, norm = unsqueeze_dims(grad, dim, n), unsqueeze_dims(norm, dim, n)
    zero = norm == 0
    if p == 0:
        return jnp.zeros_like(x)
    if p == 1:
        return sgn(x) * grad
    if p == 2:
        return grad * jnp.where(zero, 0, x / jnp.where(zero, 1, norm))
    a = jnp.abs(x)
    if math.isinf(p):
        return sgn(x) * scale_grad_by_count(grad, (a == norm) | jnp.isnan(a), dim)
    if p < 1:
        scaled = sgn(x) * jnp.where(x == 0, 0, jnp.where(x == 0, 1, a) ** (p - 1))
        return scaled * grad * norm ** (1 - p)
    scaled = sgn(x) * a ** (p - 1) if p < 2 else x * a ** (p - 2)
    return scaled * jnp.where(zero, 0, grad / jnp.where(zero, 1, norm) ** (p - 1))


@helper("renorm_backward")
def renorm_backward(grad, x, p, dim, maxnorm):
    """Derivative of x * maxnorm / (norm + 1e-7) on slices whose norm exceeds maxnorm."""
    d = R.wrap_dim(dim, jnp.ndim(x))
    others = tuple(i for i in range(jnp.ndim(x)) if i != d)
    norm = R.vector_norm(x, p, others, keepdim=True) if others else jnp.abs(x)
    grad_output = jnp.real(jnp.sum(jnp.conj(x) * grad, axis=others, keepdims=True))
    nb = norm_backward(grad_output, x, p, norm, others, True)
    invnorm = 1.0 / (norm + 1e-7)
    factor = invnorm * maxnorm
    return jnp.where(norm > maxnorm, factor * grad - (factor * invnorm) * nb, grad)


# -- methods of the overloaded reductions ----------------------------------------------------------


@method("mean")
@helper("mean", "at::mean")
def mean(x, dim=None, keepdim=False, dtype=None):
    """`x.mean()` or `x.mean(dim, keepdim)`, `mean(x, dim, keepdim)`; an empty dim list is every dim."""
    return R.mean(x, dtype) if dim is None else R.mean_dim(x, dim, keepdim, dtype)


@method("prod")
def prod(x, dim=None, keepdim=False, dtype=None):
    return R.prod(x, dtype) if dim is None else R.prod_dim(x, dim, keepdim, dtype)


@method("max")
def max_(x, dim=None, keepdim=False):
    """`x.max()` is the value; `x.max(dim, keepdim)` is (values, indices)."""
    return R.max_full(x) if dim is None else R.max_dim(x, dim, keepdim)


@method("min")
def min_(x, dim=None, keepdim=False):
    return R.min_full(x) if dim is None else R.min_dim(x, dim, keepdim)


@method("norm")
def norm(x, p=2, dim=None, keepdim=False):
    return R.vector_norm(x, p, dim, keepdim)


# -- segment reductions ---------------------------------------------------------------------------


@helper("_segment_reduce_backward")
def segment_reduce_backward(grad, output, data, reduce, lengths=None, offsets=None, axis=0, initial=None):
    """Each position's share of its segment's gradient: all of it (sum), 1/length (mean), split
    among the elements equal to the extreme (max, min), times the product of the segment's
    other elements and `initial` (prod)."""
    mask, counts, ax = R.segment_mask(data, lengths, offsets, axis)
    x, g, out = jnp.expand_dims(data, ax), jnp.expand_dims(grad, ax + 1), jnp.expand_dims(output, ax + 1)
    dtype = jnp.result_type(grad)
    if reduce == "sum":
        share = g
    elif reduce == "mean":
        share = g / jnp.expand_dims(jnp.where(counts == 0, 1, counts), ax + 1)
    elif reduce in ("max", "min"):
        hit = mask & ((x == out) | (jnp.isnan(x) & jnp.isnan(out)))
        count = jnp.sum(hit, axis=ax + 1, keepdims=True)
        share = jnp.where(hit, g / jnp.where(count == 0, 1, count), jnp.zeros((), dtype))
    elif reduce == "prod":
        others = _exclusive_prods(jnp.where(mask, x, jnp.ones((), x.dtype)), ax + 1)
        share = g * (others if initial is None else others * initial)
    else:
        raise RuntimeError(f"segment_reduce: reduction {reduce!r} is not supported")
    return jnp.sum(jnp.where(mask, share, jnp.zeros((), dtype)), axis=ax)
