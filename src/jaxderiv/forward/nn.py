"""Forward implementations of ATen's softmax, glu, dropout and embedding ops (and their backward ops).

Randomness (`_fused_dropout`'s Generator) comes from an explicit `jax.random` key: the same
key draws the same mask. Index arguments (embedding indices, bag offsets) are integer arrays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..tensor_utils import long_dtype, opmath
from . import impl
from .nondifferentiable import without_derivative


def _axis(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _float(x):
    """Softmax of an integer tensor is not defined in ATen; of a 0-d tensor it is over one element."""
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"softmax is not implemented for {x.dtype} tensors")
    return x


# -- softmax ---------------------------------------------------------------------------------


@impl("_softmax")
def _softmax(self, dim, half_to_float):
    """In float32 for bfloat16 and float16 inputs, rounded once (ATen's CPU kernel)."""
    x = _float(self)
    if x.ndim == 0:
        return jnp.ones_like(x)
    return jax.nn.softmax(opmath(x), axis=_axis(dim, x.ndim)).astype(x.dtype)


@impl("_log_softmax")
def _log_softmax(self, dim, half_to_float):
    """In float32 for bfloat16 and float16 inputs, rounded once (ATen's CPU kernel)."""
    x = _float(self)
    if x.ndim == 0:
        return jnp.zeros_like(x)
    return jax.nn.log_softmax(opmath(x), axis=_axis(dim, x.ndim)).astype(x.dtype)


def _input_dtype(self_or_dtype):
    """The input's dtype: ATen 1.7's signature passes the input `self`, from 1.11 its dtype."""
    return self_or_dtype.dtype if hasattr(self_or_dtype, "dtype") else jnp.dtype(self_or_dtype)


def _grad_input_dtype(grad_output, self_or_dtype):
    """ATen's meta function: the gradient's own dtype, except a float32 gradient of a float16
    input, which is float16 (the CUDA kernels' half-to-float case)."""
    grad = jnp.result_type(grad_output)
    if grad == jnp.float32 and _input_dtype(self_or_dtype) == jnp.float16:
        return jnp.float16
    return grad


@impl("_softmax_backward_data")
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """output * (grad - sum(grad * output)), in ATen's dtype for it (`_grad_input_dtype`)."""
    if jnp.ndim(output) == 0:
        return jnp.zeros_like(grad_output * output).astype(_grad_input_dtype(grad_output, input_dtype))
    d = _axis(dim, jnp.ndim(output))
    g, y = opmath(grad_output), opmath(output)
    return (y * (g - jnp.sum(g * y, axis=d, keepdims=True))).astype(_grad_input_dtype(grad_output, input_dtype))


@impl("_log_softmax_backward_data")
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    """grad - exp(output) * sum(grad), in ATen's dtype for it (`_grad_input_dtype`)."""
    if jnp.ndim(output) == 0:
        return jnp.zeros_like(grad_output * output).astype(_grad_input_dtype(grad_output, input_dtype))
    d = _axis(dim, jnp.ndim(output))
    g, y = opmath(grad_output), opmath(output)
    return (g - jnp.exp(y) * jnp.sum(g, axis=d, keepdims=True)).astype(_grad_input_dtype(grad_output, input_dtype))


@impl("_safe_softmax")
def _safe_softmax(self, dim, dtype=None):
    """softmax, except that a slice whose every element is -inf gives zeros instead of NaN
    (the rows an attention mask blanks out entirely)."""
    x = _float(self.astype(dtype) if dtype is not None else self)
    if x.ndim == 0:
        return jnp.ones_like(x)
    d = _axis(dim, x.ndim)
    blank = jnp.all(x == -jnp.inf, axis=d, keepdims=True)
    return jnp.where(blank, jnp.zeros((), x.dtype), jax.nn.softmax(x, axis=d))


def masked_softmax_mask(mask, x, mask_type):
    """The boolean mask (True: left out) laid over x. mask_type 1 is a (batch, key) padding
    mask of a (batch, heads, query, key) input; 0 and 2 broadcast as they are."""
    mask = jnp.asarray(mask, bool)
    if mask_type == 1 and mask.ndim == 2 and x.ndim == 4:
        mask = mask[:, None, None, :]
    return jnp.broadcast_to(mask, x.shape)


@impl("_masked_softmax")
def _masked_softmax(self, mask, dim=None, mask_type=None):
    """softmax over `dim` (default the last) of self with the masked elements at -inf: they
    get 0, a slice masked entirely NaN, as ATen's CPU kernel gives."""
    x = _float(self)
    d = _axis(-1 if dim is None else dim, x.ndim)
    return jax.nn.softmax(jnp.where(masked_softmax_mask(mask, x, mask_type), -jnp.inf, x), axis=d)


# -- glu ----------------------------------------------------------------------------------------


def glu_halves(x, dim):
    d = _axis(dim, x.ndim)
    if x.shape[d] % 2:
        raise ValueError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    a, b = jnp.split(x, 2, axis=d)
    return a, b, d


@impl("glu")
def glu(self, dim=-1):
    """a * sigmoid(b), a and b the halves of self along dim."""
    a, b, _ = glu_halves(self, dim)
    return a * jax.nn.sigmoid(b)


@impl("glu_backward")
def glu_backward(grad_output, self, dim):
    a, b, d = glu_halves(self, dim)
    s = jax.nn.sigmoid(b)
    return jnp.concatenate([grad_output * s, grad_output * a * s * (1 - s)], axis=d)


# -- dropout --------------------------------------------------------------------------------------


@impl("_fused_dropout")
def _fused_dropout(self, p, generator=None):
    """(self * mask / p, mask): `p` is the probability of keeping an element; `generator` a jax.random key."""
    if generator is None:
        raise ValueError("_fused_dropout needs an explicit jax.random key as its generator argument")
    mask = jax.random.bernoulli(generator, p, jnp.shape(self))
    return self * mask.astype(self.dtype) * (1.0 / p), mask


def dropout_with_mask(input, p, train, mask):
    """ATen's native_dropout given its mask: (input * mask * scale, mask) in training, scale
    1 / (1 - p) (0 when p == 1), and (input, all-True mask) when `train` is False; `train`
    None counts as training. A 0-size input comes back with an empty mask of its own dtype."""
    if jnp.size(input) == 0:
        return input, jnp.empty(jnp.shape(input), jnp.result_type(input))
    if train is False:
        return input, jnp.ones(jnp.shape(input), jnp.bool_)
    if not jnp.issubdtype(jnp.result_type(input), jnp.inexact):
        raise TypeError(f"result type Float can't be cast to the desired output type {jnp.result_type(input)}")
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * mask.astype(input.dtype) * scale, mask


@impl("native_dropout")
def native_dropout(input, p, train):
    """native_dropout where ATen's mask is determined: not training, p == 0 (every element
    kept) or p == 1 (none). Other training calls draw a mask, and this schema has no Generator
    to draw it from: they raise. `jaxderiv.torch` runs such nodes with apply's `key=`;
    `_fused_dropout` takes a key of its own."""
    if train is False or jnp.size(input) == 0 or p in (0, 1):
        return dropout_with_mask(input, p, train, jnp.full(jnp.shape(input), p != 1))
    raise ValueError(
        f"native_dropout(p={p}, train={train}) draws a random mask and its schema has no Generator: "
        "pass a jax.random key where the caller allows one (jaxderiv.torch's apply(key=...), or "
        "_fused_dropout's generator)"
    )


# -- embedding ----------------------------------------------------------------------------------


@impl("embedding")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of weight: an output of shape indices.shape + (embedding_dim,)."""
    return jnp.take(weight, indices, axis=0)


@impl("embedding_dense_backward")
def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Scatter-add each index's gradient row; none to padding_idx; divided by the index's count."""
    idx = jnp.reshape(indices, (-1,))
    g = jnp.reshape(grad_output, (idx.shape[0], -1))
    if scale_grad_by_freq:
        counts = jnp.zeros((num_weights,), g.dtype).at[idx].add(1)
        g = g / counts[idx][:, None]
    if padding_idx >= 0:
        g = jnp.where((idx == padding_idx)[:, None], 0, g)
    return jnp.zeros((num_weights, g.shape[1]), g.dtype).at[idx].add(g)


@impl("embedding_renorm_")
def embedding_renorm_(self, indices, max_norm, norm_type):
    """Rows named by indices whose norm exceeds max_norm are scaled to max_norm (returned, not mutated)."""
    named = jnp.zeros((self.shape[0],), bool).at[jnp.reshape(indices, (-1,))].set(True)
    norms = jnp.sum(jnp.abs(self) ** norm_type, axis=1) ** (1.0 / norm_type)
    scale = jnp.where(named & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
    return self * scale[:, None].astype(self.dtype)


MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2


def bag_of(indices, offsets, include_last_offset):
    """(offset2bag, number of bags): which bag each index falls in."""
    n_bags = offsets.shape[0] - (1 if include_last_offset else 0)
    starts = offsets[:n_bags]
    positions = jnp.arange(indices.shape[0])
    offset2bag = jnp.sum(positions[:, None] >= starts[None, :], axis=1) - 1
    if include_last_offset:
        offset2bag = jnp.where(positions >= offsets[-1], n_bags, offset2bag)  # past the end: no bag
    return offset2bag, n_bags


@impl("_embedding_bag")
def _embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    """(output, offset2bag, bag_size, max_indices): per bag, the sum / mean / max of its rows.

    Empty bags give zero rows; per_sample_weights (sum mode only) scale each row first. Later
    schemas add padding_idx (-1: none): as ATen's CPU kernel, the entries naming that row are left
    out of their bags (not summed, not the max, not counted in bag_size, so not in mean's
    divisor); offset2bag still places them.
    """
    offset2bag, n_bags = bag_of(indices, offsets, include_last_offset)
    # where each entry goes: its bag, or n_bags (dropped) when it names the padding row
    target = offset2bag if padding_idx < 0 else jnp.where(indices == padding_idx, n_bags, offset2bag)
    rows = jnp.take(weight, indices, axis=0)
    if per_sample_weights is not None:
        if mode != MODE_SUM:
            raise ValueError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum'"
            )
        rows = rows * per_sample_weights[:, None]
    bag_size = jnp.zeros((n_bags,), long_dtype()).at[target].add(1, mode="drop")
    dim = weight.shape[1]
    if mode == MODE_MAX:
        out = jnp.full((n_bags, dim), -jnp.inf, weight.dtype).at[target].max(rows, mode="drop")
        out = jnp.where(bag_size[:, None] > 0, out, 0)
        hit = (rows == out[jnp.clip(target, 0, n_bags - 1)]) & (target < n_bags)[:, None]
        first = jnp.where(hit, jnp.arange(indices.shape[0])[:, None], indices.shape[0])
        pos = jnp.full((n_bags, dim), indices.shape[0], long_dtype()).at[target].min(first, mode="drop")
        # an empty bag's (or one of padding only): 0, as torch 2.13's CPU kernel leaves it
        taken = jnp.take(indices, jnp.minimum(pos, indices.shape[0] - 1)) if indices.shape[0] else jnp.zeros_like(pos)
        max_indices = jnp.where(bag_size[:, None] > 0, taken, 0)
        return out, offset2bag, bag_size, max_indices.astype(indices.dtype)
    out = jnp.zeros((n_bags, dim), weight.dtype).at[target].add(rows, mode="drop")
    if mode == MODE_MEAN:
        out = out / jnp.maximum(bag_size, 1)[:, None].astype(weight.dtype)
        # ATen's max_indices output for mean is a copy of bag_size
        return out, offset2bag, bag_size, bag_size.astype(indices.dtype)
    # sum: ATen's CPU kernel computes neither bag_size nor max_indices (zeros, one per bag) unless
    # weight requires grad (make_bag_size): JAX has no such flag, and no formula reads them in sum mode
    return out, offset2bag, jnp.zeros((n_bags,), long_dtype()), jnp.zeros((n_bags,), indices.dtype)


@without_derivative("_embedding_bag_forward_only")
def _embedding_bag_forward_only(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    """_embedding_bag's forward (what F.embedding_bag calls under no_grad): the same outputs.
    ATen has no derivative for it (torch refuses it on a weight that requires grad). In sum
    mode its bag_size and max_indices are zeros of offsets' length (one more than the bags with
    include_last_offset), as ATen sizes them when no gradient is wanted."""
    out = _embedding_bag(
        weight,
        indices,
        offsets,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )
    if mode != MODE_SUM:
        return out
    return out[0], out[1], jnp.zeros(offsets.shape, long_dtype()), jnp.zeros(offsets.shape, indices.dtype)


@impl("_embedding_bag_dense_backward")
def _embedding_bag_dense_backward(grad, indices, *args):
    """Each index's bag gradient (over bag_size for mean, times its weight) added to its row;
    for max, each bag's gradient goes to the row that was the maximum.

    1.7's schema passes offsets after indices; later ones drop it (the gradient does not need
    it) and add padding_idx at the end, whose row gets no gradient.
    """
    if isinstance(args[3], (int, np.integer)):  # num_weights where 1.7 has maximum_indices
        (
            offset2bag,
            bag_size,
            maximum_indices,
            num_weights,
            scale_grad_by_freq,
            mode,
            per_sample_weights,
            padding_idx,
        ) = (tuple(args) + (-1,))[:8]
    else:
        _, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights = args
        padding_idx = -1
    out = _embedding_bag_dense_grad(
        grad, indices, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights
    )
    # ATen's max-mode kernel adds each bag's gradient at maximum_indices without a padding check
    return out if padding_idx < 0 or mode == MODE_MAX else out.at[padding_idx].set(0)


@impl("_embedding_bag_backward")
def _embedding_bag_backward(
    grad,
    indices,
    offsets,
    offset2bag,
    bag_size,
    maximum_indices,
    num_weights,
    scale_grad_by_freq,
    mode,
    sparse,
    per_sample_weights,
    padding_idx=-1,
):
    """The dense weight gradient of _embedding_bag; a sparse one (`sparse`) has no JAX form."""
    if sparse:
        raise NotImplementedError("_embedding_bag_backward: sparse gradients are not implemented")
    return _embedding_bag_dense_backward(
        grad,
        indices,
        offset2bag,
        bag_size,
        maximum_indices,
        num_weights,
        scale_grad_by_freq,
        mode,
        per_sample_weights,
        padding_idx,
    )


def _embedding_bag_dense_grad(
    grad, indices, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights
):
    dim = grad.shape[1]
    if mode == MODE_MAX:
        valid = (bag_size > 0)[:, None]
        cols = jnp.broadcast_to(jnp.arange(dim), maximum_indices.shape)
        return (
            jnp.zeros((num_weights, dim), grad.dtype)
            .at[jnp.where(valid, maximum_indices, num_weights), cols]
            .add(grad, mode="drop")
        )
    n_bags = grad.shape[0]
    inside = offset2bag < n_bags
    g = jnp.take(grad, jnp.clip(offset2bag, 0, n_bags - 1), axis=0) * inside[:, None]
    if mode == MODE_MEAN:
        g = g / jnp.maximum(jnp.take(bag_size, jnp.clip(offset2bag, 0, n_bags - 1)), 1)[:, None].astype(grad.dtype)
    if per_sample_weights is not None:
        g = g * per_sample_weights[:, None]
    if scale_grad_by_freq:
        # each row over its index's own count (torch 2.13's CPU kernel differs: see the op record)
        counts = jnp.zeros((num_weights,), grad.dtype).at[indices].add(1)
        g = g / counts[indices][:, None]
    return jnp.zeros((num_weights, dim), grad.dtype).at[indices].add(g)


# -- torch 2.13's linear, prelu and dropout kernels ------------------------------------------------


@impl("linear")
def linear(input, weight, bias=None):
    """input @ weight.T + bias; a 1-d weight gives one output feature, dropped from the shape."""
    out = jnp.matmul(input, jnp.swapaxes(weight, -1, -2) if jnp.ndim(weight) == 2 else weight)
    return out if bias is None else out + bias


@impl("linear_backward")
def linear_backward(self, grad_output, weight, output_mask):
    """(grad_input, grad_weight, grad_bias) of `linear`: the weight and bias gradients sum over
    every leading (batch) dim. All three are computed whatever output_mask asks (JAX has no
    undefined tensor), so that differentiating a call always applies linear_double_backward."""
    flat_g = jnp.reshape(grad_output, (-1, grad_output.shape[-1]))
    grad_weight = jnp.matmul(flat_g.T, jnp.reshape(self, (-1, self.shape[-1])))
    return jnp.matmul(grad_output, weight), grad_weight, jnp.sum(flat_g, axis=0)


@impl("_prelu_kernel")
def _prelu_kernel(self, weight):
    """self where positive, weight * self elsewhere; weight broadcasts against self."""
    return jnp.where(self > 0, self, weight * self)


@impl("_prelu_kernel_backward")
def _prelu_kernel_backward(grad_output, self, weight):
    """(grad_self, grad_weight) with the broadcast shape: the kernel does not sum the weight's
    gradient over the broadcast dims (its caller's autograd does). At 0 the negative side's."""
    positive = self > 0
    grad_self = jnp.where(positive, grad_output, weight * grad_output)
    grad_weight = jnp.where(positive, jnp.zeros((), grad_output.dtype), self * grad_output)
    return grad_self, grad_weight


@impl("native_dropout_backward")
def native_dropout_backward(grad_output, mask, scale):
    """grad_output where the forward kept an element, scaled as it scaled it."""
    return grad_output * mask.astype(grad_output.dtype) * scale
