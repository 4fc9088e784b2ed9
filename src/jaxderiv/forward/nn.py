"""Forward implementations of ATen's softmax, glu, dropout and embedding ops (and their backward ops).

Randomness (`_fused_dropout`'s Generator) comes from an explicit `jax.random` key: the same
key draws the same mask. Index arguments (embedding indices, bag offsets) are integer arrays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..records import (
    CUDA_ONLY,
    Equivalent,
    Sample,
    kinks,
    not_applicable,
    not_compared,
    parity_differs,
    samples,
    torch_equivalent,
)
from ..tensor_utils import long_dtype, opmath
from . import impl, implementation, variant
from .nondifferentiable import without_derivative


def wrapped_axis(dim: int, ndim: int) -> int:
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


def _over_dim(fn, fill_0d, self, dim):
    """`fn` (softmax, log_softmax) over dim, in float32 for bfloat16 and float16 inputs, rounded
    once (ATen's CPU kernel); over the one element of a 0-d tensor, `fill_0d` of it."""
    x = _float(self)
    if x.ndim == 0:
        return fill_0d(x)
    return fn(opmath(x), axis=wrapped_axis(dim, x.ndim)).astype(x.dtype)


@impl("_softmax")
def _softmax(self, dim, half_to_float):
    return _over_dim(jax.nn.softmax, jnp.ones_like, self, dim)


@impl("_log_softmax")
def _log_softmax(self, dim, half_to_float):
    return _over_dim(jax.nn.log_softmax, jnp.zeros_like, self, dim)


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


def _backward_data(grad_output, output, dim, input_dtype, rule):
    """rule(grad, output, dim) computed as ATen's CPU kernel computes it (`opmath`), in ATen's
    dtype for the gradient (`_grad_input_dtype`); zeros for a 0-d output."""
    dtype = _grad_input_dtype(grad_output, input_dtype)
    if jnp.ndim(output) == 0:
        return jnp.zeros_like(grad_output * output).astype(dtype)
    return rule(opmath(grad_output), opmath(output), wrapped_axis(dim, jnp.ndim(output))).astype(dtype)


@impl("_softmax_backward_data")
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """output * (grad - sum(grad * output))."""
    rule = lambda g, y, d: y * (g - jnp.sum(g * y, axis=d, keepdims=True))
    return _backward_data(grad_output, output, dim, input_dtype, rule)


@impl("_log_softmax_backward_data")
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    """grad - exp(output) * sum(grad)."""
    rule = lambda g, y, d: g - jnp.exp(y) * jnp.sum(g, axis=d, keepdims=True)
    return _backward_data(grad_output, output, dim, input_dtype, rule)


@impl("_safe_softmax")
def _safe_softmax(self, dim, dtype=None):
    """softmax, except that a slice whose every element is -inf gives zeros instead of NaN
    (the rows an attention mask blanks out entirely)."""
    x = _float(self.astype(dtype) if dtype is not None else self)
    if x.ndim == 0:
        return jnp.ones_like(x)
    d = wrapped_axis(dim, x.ndim)
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
    d = wrapped_axis(-1 if dim is None else dim, x.ndim)
    return jax.nn.softmax(jnp.where(masked_softmax_mask(mask, x, mask_type), -jnp.inf, x), axis=d)


# -- glu ----------------------------------------------------------------------------------------


def glu_halves(x, dim):
    d = wrapped_axis(dim, x.ndim)
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


@variant(
    "native_dropout",
    entry="native_dropout",
    gradient="the entry's formulas, the mask drawn from apply's key",
    random=True,
)
def native_dropout_variant(registry, op, input, p, train, *, key=None):
    """`native_dropout` with the mask drawn from `key`: (input * mask / (1 - p), mask), mask
    ~ Bernoulli(1 - p); the identity when not training. ATen's schema has no Generator, so the
    entry's op is rebuilt around this draw, the mask one more (never differentiated) argument:
    its derivatives stay the entry's formulas."""
    x = jnp.asarray(input)
    if train is False or p == 0:
        mask = jnp.ones(x.shape, jnp.bool_)
    elif key is None:
        raise ValueError("native_dropout in training mode needs randomness: pass key=jax.random.key(...) to apply()")
    else:
        mask = jax.random.bernoulli(key, 1.0 - p, x.shape)
    return registry.op_with_keyword_tensors(op.entry.name, dropout_with_mask, "mask")(input, p, train, mask=mask)


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
def _embedding_bag_forward_only(weight, indices, offsets, scale_grad_by_freq=False, mode=0, *rest):
    """_embedding_bag's forward (what F.embedding_bag calls under no_grad), after mode the same
    arguments (sparse, per_sample_weights, include_last_offset, padding_idx): the same outputs.
    ATen has no derivative for it (torch refuses it on a weight that requires grad). In sum
    mode its bag_size and max_indices are zeros of offsets' length (one more than the bags with
    include_last_offset), as ATen sizes them when no gradient is wanted."""
    out = _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, *rest)
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
    if not isinstance(args[3], (int, np.integer)):  # 1.7's: maximum_indices where later ones have num_weights
        args = args[1:]  # offsets
    offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights = args[:7]
    padding_idx = args[7] if len(args) > 7 else -1
    out = _embedding_bag_dense_grad(
        grad, indices, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights
    )
    # ATen's max-mode kernel adds each bag's gradient at maximum_indices without a padding check
    return out if padding_idx < 0 or mode == MODE_MAX else out.at[padding_idx].set(0)


@impl("_embedding_bag_backward")
def embedding_bag_backward(
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
    dense = (offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights)
    return _embedding_bag_dense_backward(grad, indices, *dense, padding_idx)


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


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker samples of the neural-network core (forward/nn.py): softmax and its masked and safe
# variants, glu, dropout, embedding and embedding_bag, linear and the prelu kernel.
#
# Inputs keep clear of kinks (prelu's at self = 0, ties of embedding_bag's max). The backward
# entries of softmax get output = softmax(self), as their formulas assume; masked softmax's mask
# leaves every slice an element; embedding takes neither padding_idx nor scale_grad_by_freq
# (their gradients differ from the forward's derivative by design). `samples_from` (a samples
# function from argument tuples) and `away_from_kinks` (values clear of kinks) serve losses.py and
# normalization.py too.
GAP = 0.1


def away_from_kinks(rng, shape, kinks=(), lo=-2.0, hi=2.0):
    """Uniform values, redrawn until none lies within GAP of a kink."""
    x = np.array(rng.uniform(lo, hi, size=shape))
    while kinks and (near := np.any(np.abs(x[..., None] - np.asarray(kinks)) < GAP, axis=-1)).any():
        x[near] = rng.uniform(lo, hi, size=int(near.sum()))
    return x


def samples_from(fn, kwarg_only=()):
    """A samples function from `fn(rng) -> [(args, label)]`; the last len(kwarg_only) args go by keyword."""

    def make(op, rng, dtype=np.float64):
        out = []
        for args, label in fn(rng):
            n = len(args) - len(kwarg_only)
            out.append(Sample(tuple(args[:n]), dict(zip(kwarg_only, args[n:])), label))
        return out

    return make


# -- softmax and glu -------------------------------------------------------------------------------


def _softmax_samples(rng):
    return [
        ((rng.normal(size=s), d, False), f"{s} dim={d}") for s, d in (((2, 3), 1), ((2, 3), -2), ((4,), 0), ((), 0))
    ]


def _softmax_backward_data_samples(log):
    """grad_output, output = (log_)softmax(self), dim, and `self` (1.7's schema) or its dtype
    (from 1.11). The 1.7 spec keys the derivative through `output` to `self`: its formula for
    `self` is softmax's double backward, the derivative through output = softmax(self). So the
    reference, of which it is the derivative, computes output from self. From 1.11 the
    formula is keyed to `output` itself and needs no reference."""
    forward_name = "_log_softmax" if log else "_softmax"

    def make(op, rng, dtype=np.float64):
        softmax, backward = implementation(forward_name), implementation(op.name)
        keyed_to_self = [a.name for a in op.schema.arguments][-1] == "self"

        def reference(grad_output, output, dim, self):
            return backward(grad_output, softmax(self, dim, False), dim, self)

        out = []
        for s, d in (((2, 3), 1), ((3, 2), 0)):
            x = rng.normal(size=s)
            y = np.asarray(softmax(x, d, False))
            last = x if keyed_to_self else np.dtype(dtype)
            out.append(
                Sample(
                    (rng.normal(size=s), y, d, last),
                    {},
                    f"{s} dim={d}, output = {forward_name}(self)",
                    reference=reference if keyed_to_self else None,
                )
            )
        return out

    return make


# Their second derivative reaches `output` (softmax(self) in every use), for which the 1.7
# entries give no formula: PyTorch's graph has no derivative there either.
not_applicable(
    "the second derivative runs through `output` (= softmax(self)), for which the 1.7 entry gives no formula",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
    modes=("vjp_vjp",),
    when=lambda op: op.schema.arguments[-1].name == "self",
)
samples("_softmax", "_log_softmax")(samples_from(_softmax_samples))
samples("_softmax_backward_data")(_softmax_backward_data_samples(False))
samples("_log_softmax_backward_data")(_softmax_backward_data_samples(True))
samples("glu")(samples_from(lambda rng: [((rng.normal(size=(2, 4)), d), f"2x4 dim={d}") for d in (-1, 0)]))
samples("glu_backward")(
    samples_from(
        lambda rng: [
            ((rng.normal(size=(2, 2)), rng.normal(size=(2, 4)), 1), "2x4 dim=1"),
            ((rng.normal(size=(1, 3)), rng.normal(size=(2, 3)), 0), "2x3 dim=0"),
        ]
    )
)


# -- dropout and embedding ----------------------------------------------------------------------

samples("_fused_dropout")(
    samples_from(
        lambda rng: [((rng.normal(size=(3, 4)), 0.7, jax.random.key(int(rng.integers(1 << 30)))), "3x4 p=0.7")]
    )
)

# Only the draws ATen's native_dropout determines (its schema has no Generator): not training,
# p = 0 and p = 1; training at other p is jaxderiv.torch's, with a key (tests/nn/test_nn.py).
samples("native_dropout")(
    samples_from(
        lambda rng: [
            ((rng.normal(size=(3, 4)), 0.0, True), "3x4 p=0 train"),
            ((rng.normal(size=(3, 4)), 0.4, False), "3x4 p=0.4 eval"),
            ((rng.normal(size=(2, 3)), 1.0, True), "2x3 p=1 train"),
            ((rng.normal(size=(2, 3)), 0.0, None), "2x3 p=0 train=None"),
        ]
    )
)


def _embedding(rng):
    idx = np.array([[0, 2], [4, 2]])
    # padding_idx and scale_grad_by_freq make the formula differ from the forward's derivative
    # by design (tests/nn/test_nn.py checks them against torch): the checker takes neither.
    return [((rng.normal(size=(5, 3)), idx, -1, False, False), "no padding, no scaling")]


samples("embedding")(samples_from(_embedding))
samples("embedding_renorm_")(
    samples_from(lambda rng: [((rng.normal(size=(5, 3)), np.array([0, 2]), 1.0, 2.0), "max_norm=1")])
)
samples("embedding_dense_backward")(
    samples_from(
        lambda rng: [((rng.normal(size=(2, 2, 3)), np.array([[0, 2], [4, 2]]), 5, -1, False), "no padding, no scaling")]
    )
)


def _embedding_bag_samples(rng):
    out = []
    idx, offsets = np.array([0, 2, 4, 2, 1, 3]), np.array([0, 2, 2, 5])  # bag 1 is empty
    for mode in (0, 1, 2):
        w = rng.normal(size=(5, 3))
        psw = rng.uniform(0.5, 1.5, size=6) if mode == 0 else None
        out.append(
            ((w, idx, offsets, False, mode, False, psw, False), f"mode={mode} per_sample_weights={psw is not None}")
        )
    out.append(
        (
            (rng.normal(size=(5, 3)), idx, np.array([0, 2, 4, 6]), False, 1, False, None, True),
            "mean include_last_offset",
        )
    )
    return out


samples("_embedding_bag")(samples_from(_embedding_bag_samples))


# -- torch 2.13's linear, prelu kernel, dropout backward and softmax variants ------------------------

linear_samples = samples("linear")(
    samples_from(
        lambda rng: [
            ((rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4,))), "2x3 by 4x3, bias"),
            ((rng.normal(size=(2, 2, 3)), rng.normal(size=(4, 3)), None), "batched 2x2x3, no bias"),
            ((rng.normal(size=(3,)), rng.normal(size=(4, 3)), rng.normal(size=(4,))), "1-d input"),
        ]
    )
)
# every output_mask entry on: an output the mask turns off is undefined (None), nothing to check
samples("linear_backward")(
    samples_from(
        lambda rng: [
            (
                (rng.normal(size=(2, 3)), rng.normal(size=(2, 4)), rng.normal(size=(4, 3)), (True, True, True)),
                "2x3 by 4x3, every output",
            ),
            (
                (rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 2, 4)), rng.normal(size=(4, 3)), (True, True, True)),
                "batched 2x2x3",
            ),
        ]
    )
)
# the kink of prelu is self = 0: values kept away from it
samples("_prelu_kernel")(
    samples_from(
        lambda rng: [
            ((away_from_kinks(rng, (2, 3), (0.0,)), rng.normal(size=(3,))), "2x3, weight 3 broadcast"),
            ((away_from_kinks(rng, (2, 3, 2), (0.0,)), rng.normal(size=(1, 3, 1))), "channel weight"),
        ]
    )
)
samples("_prelu_kernel_backward")(
    samples_from(
        lambda rng: [
            (
                (rng.normal(size=(2, 3)), away_from_kinks(rng, (2, 3), (0.0,)), rng.normal(size=(3,))),
                "2x3, weight 3 broadcast",
            ),
        ]
    )
)
samples("native_dropout_backward")(
    samples_from(
        lambda rng: [
            ((rng.normal(size=(3, 4)), rng.uniform(size=(3, 4)) < 0.7, 1 / 0.7), "3x4 scale=1/0.7"),
        ]
    )
)


def _masked(rng, shape, dim):
    """A mask (True: left out) that leaves at least one element of every slice along dim."""
    mask = rng.uniform(size=shape) < 0.4
    keep = np.expand_dims(np.arange(shape[dim]), tuple(i for i in range(len(shape)) if i != dim % len(shape))) == 0
    return mask & ~keep


samples("_masked_softmax")(
    samples_from(
        lambda rng: [
            ((rng.normal(size=(2, 4)), _masked(rng, (2, 4), -1), None, None), "2x4 last dim"),
            ((rng.normal(size=(3, 2, 3)), _masked(rng, (3, 2, 3), 0), 0, 2), "3x2x3 dim=0"),
        ]
    )
)
samples("_safe_softmax")(
    samples_from(
        lambda rng: [
            ((rng.normal(size=(2, 3)), 1, None), "2x3 dim=1"),
            ((rng.normal(size=(3, 2)), -2, None), "3x2 dim=-2"),
            ((rng.normal(size=()), 0, None), "0-d"),
        ]
    )
)


def _embedding_bag_backward_samples(rng):
    """The bag layout (offset2bag, bag_size, maximum_indices) of _embedding_bag's forward on the
    same indices; `grad` itself has a not_implemented formula, so nothing is differentiable."""
    out = []
    bag = implementation("_embedding_bag")
    for (w, idx, offsets, _, mode, _, psw, last), label in _embedding_bag_samples(rng):
        if last:
            continue
        _, offset2bag, bag_size, max_indices = (
            np.asarray(t) for t in bag(w, idx, offsets, False, mode, False, psw, last)
        )
        g = rng.normal(size=(len(offsets), w.shape[1]))
        for scale, padding_idx in ((False, -1), (True, 2)):
            out.append(
                (
                    (
                        g,
                        idx,
                        offsets,
                        offset2bag,
                        bag_size,
                        max_indices,
                        w.shape[0],
                        scale,
                        mode,
                        False,
                        psw,
                        padding_idx,
                    ),
                    f"{label} scale_grad_by_freq={scale} padding_idx={padding_idx}",
                )
            )
    return out


samples("_embedding_bag_backward")(samples_from(_embedding_bag_backward_samples))


# -- parity with torch ------------------------------------------------------------------------
# torch calls computing what ops torch cannot run on CPU (or under the seed's schema) compute;
# each gets torch.ops.aten and the sample's arguments by name, as torch values.


def _torch_linear_backward(aten, a):
    """linear's gradients by torch's autograd, with create_graph so that they stay differentiable
    in self, grad_output and weight; a bias leaf gives the bias gradient."""
    import torch

    mask = a["output_mask"]
    x, w, g = a["self"], a["weight"], a["grad_output"]
    x, w = (t if t.requires_grad else t.detach().requires_grad_() for t in (x, w))
    b = torch.zeros(w.shape[0], dtype=w.dtype, requires_grad=True)
    grads = torch.autograd.grad(aten.linear(x, w, b), (x, w, b), g, create_graph=True)
    return [gr if m else None for gr, m in zip(grads, mask)]


torch_equivalent(
    Equivalent(
        lambda aten, a: aten.native_dropout(a["self"], 1 - a["p"], True), f"{CUDA_ONLY}: native_dropout(self, 1 - p)"
    ),
    "_fused_dropout",
)
torch_equivalent(
    Equivalent(
        _torch_linear_backward,
        "torch 2.13 runs linear_backward only on MKL-DNN and nested tensors: "
        "torch.autograd.grad of aten.linear, create_graph=True",
    ),
    "linear_backward",
)
# schema changes since the seed files: the same computation under torch 2.13's signature
torch_equivalent(
    Equivalent(
        lambda aten, a: aten._softmax_backward_data(a["grad_output"], a["output"], a["dim"], a["self"].dtype),
        "torch 2.13 takes ScalarType input_dtype where the seed takes Tensor self",
        True,
    ),
    "_softmax_backward_data",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten._log_softmax_backward_data(a["grad_output"], a["output"], a["dim"], a["self"].dtype),
        "torch 2.13 takes ScalarType input_dtype where the seed takes Tensor self",
        True,
    ),
    "_log_softmax_backward_data",
)
parity_differs(
    ("vjp", "jvp"),
    "the seed's formula sends softmax_double_backward to Tensor self; torch 2.13's "
    "schema has input_dtype there and sends it to output: the second-order gradient lands on another input "
    "(and the jvp, that formula transposed, reads another tangent)",
    "_softmax_backward_data",
)
parity_differs(
    ("vjp", "jvp"),
    "the seed's formula sends the second-order gradient to Tensor self; torch 2.13's "
    "schema has input_dtype there and sends it to output (the jvp, that formula transposed, too)",
    "_log_softmax_backward_data",
)
parity_differs(
    ("forward",),
    "with scale_grad_by_freq, torch 2.13's CPU kernel (_embedding_bag_dense_backward_cpu_sum_mean) divides "
    "the rows of the k-th smallest distinct index by the count of the k-th sorted index (repeats included), "
    "not by that index's own count; jaxderiv divides by the index's own count (row 3 of the "
    "`scale_grad_by_freq=True` samples: -0.698 vs torch -0.349, a factor 2). tests/nn/test_nn.py asserts "
    "both values",
    "_embedding_bag_backward",
    torch_spec=True,
    seed_spec=False,
)
not_compared(
    "a backward op whose checker samples are schema defaults (float indices); compared through _embedding_bag's vjp",
    "_embedding_bag_dense_backward",
)
# padding_idx (the checker's samples take none): the padding row gets no gradient, so grad_output
# at the positions of the padding index gets none back either
kinks(
    "embedding_dense_backward",
    (np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4), np.array([[0, 2, 1], [2, 4, 1]]), 5, 1, False),
)
parity_differs(
    ("kinks",),
    "spec bug (PyTorch 1.7): the formula for grad_output, embedding_dense_double_backward(grad, indices), "
    "has no padding_idx, so the positions of the padding index get their rows of grad back (the kink, "
    "padding_idx=1: 1.043 at grad_output[0, 2, 0] where torch 2.13 gives 0); torch's own file passes padding_idx "
    "(embedding_dense_double_backward_symint(grad, indices, padding_idx)) and agrees",
    "embedding_dense_backward",
)
