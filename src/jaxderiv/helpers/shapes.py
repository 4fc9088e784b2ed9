"""FunctionsManual helpers of the shape, indexing and padding formulas, written from the math.

Backward of a view or a gather is a scatter into zeros of the input's shape; undefined
gradients of multi-output ops (None) stand for zeros.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..forward import indexing, padding, shapes
from ..namespace import helper, method
from ..rules import sum_to
from .core import dtype_of


@helper("reverse_list")
def reverse_list(items):
    return tuple(reversed(tuple(items)))


@helper("fmap")
def fmap(items, fn):
    return tuple(fn(i) for i in items)


@method("squeeze")
def squeeze(x, dim=None):
    """`x.squeeze()` or `x.squeeze(dim)`: the method picks the overload by its arguments."""
    return shapes.squeeze(x) if dim is None else shapes.squeeze_dim(x, dim)


@method("scatter_", "scatter")
def scatter(x, dim, index, src):
    """`x.scatter_(dim, index, src)` with a Tensor or a Scalar src."""
    if isinstance(src, jnp.ndarray) and src.ndim > 0:
        return indexing.scatter_src(x, dim, index, src)
    return indexing.scatter_value(x, dim, index, src)


@method("index_fill_", "index_fill")
def index_fill(x, dim, index, value):
    return indexing.index_fill(x, dim, index, value)


@helper("unsqueeze_to")
def unsqueeze_to(grad, sizes):
    """squeeze's gradient: grad with the size-1 dims squeeze removed put back."""
    return jnp.reshape(grad, tuple(sizes))


@helper("unsqueeze_to")
def _unsqueeze_to_dim(grad, dim, sizes):
    """squeeze.dim (an int: that dim, if it had size 1) and squeeze.dims (a list: squeezing only
    drops size-1 dims)."""
    sizes = tuple(sizes)
    if not isinstance(dim, (tuple, list)) and sizes and sizes[shapes.wrap_dim(dim, len(sizes))] != 1:
        return grad
    return jnp.reshape(grad, sizes)


@helper("permute_backwards")
def permute_backwards(grad, fwd_dims):
    dims = [shapes.wrap_dim(d, len(fwd_dims)) for d in fwd_dims]
    return jnp.transpose(grad, tuple(int(i) for i in np.argsort(dims)))


@helper("select_backward")
def select_backward(grad, input_sizes, dim, index):
    return shapes.select_backward(grad, input_sizes, dim, index)


@helper("slice_backward")
def slice_backward(grad, input_sizes, dim, start, end, step):
    return shapes.slice_backward(grad, input_sizes, dim, start, end, step)


@helper("split_with_sizes_backward")
def split_with_sizes_backward(grads, split_sizes, dim, sizes, options):
    d = shapes.wrap_dim(dim, len(sizes))
    dtype = dtype_of(options)
    parts = []
    for g, n in zip(grads, split_sizes):
        shape = tuple(sizes[:d]) + (n,) + tuple(sizes[d + 1 :])
        parts.append(jnp.zeros(shape, dtype) if g is None else g)
    return jnp.concatenate(parts, axis=d)


@helper("split_backward")
def split_backward(grads, split_size, dim, sizes, options):
    n = sizes[shapes.wrap_dim(dim, len(sizes))]
    return split_with_sizes_backward(grads, shapes.split_sizes_of(n, split_size), dim, sizes, options)


@helper("unbind_backward")
def unbind_backward(grads, dim):
    like = next(g for g in grads if g is not None)
    return jnp.stack(
        [jnp.zeros_like(like) if g is None else g for g in grads], axis=shapes.wrap_dim(dim, like.ndim + 1)
    )


@helper("to_args_sizes")
def to_args_sizes(tensors):
    return [tuple(jnp.shape(t)) for t in tensors]


@helper("to_args_scalartypes")
def to_args_scalartypes(tensors):
    return [np.dtype(jnp.result_type(t)) for t in tensors]


@helper("cat_tensors_backward")
def _cat_tensors_backward_same_dtype(grad, sizes, dim):
    """The 1.7 form: no dtypes (every input has grad's)."""
    return cat_tensors_backward(grad, sizes, [grad.dtype] * len(sizes), dim)


@helper("cat_tensors_backward")
def cat_tensors_backward(grad, sizes, dtypes, dim):
    """grad narrowed back per input; a 1-d empty input (which cat skips) gets an empty
    gradient, a real input a real one."""
    d = shapes.legacy_cat_dim(dim, sizes)
    out, at = [], 0
    for shape, dtype in zip(sizes, dtypes):
        g = jnp.real(grad) if jnp.iscomplexobj(grad) and not jnp.issubdtype(dtype, jnp.complexfloating) else grad
        if tuple(shape) == (0,):
            out.append(jnp.zeros((0,), g.dtype))
            continue
        out.append(jax.lax.slice_in_dim(g, at, at + shape[d], axis=d))  # a slice, not a gather
        at += shape[d]
    return out


@helper("cat_jvp")
def cat_jvp(tensors, dim):
    """PyTorch reads each input's forward gradient: the list carries them as `.tangents`."""
    return shapes.cat(list(tensors.tangents), dim)


@helper("stack_jvp")
def stack_jvp(tensors, dim):
    """The inputs' forward gradients (the list's `.tangents`) stacked as the inputs are."""
    tangents = list(tensors.tangents)
    return jnp.stack(tangents, axis=shapes.wrap_dim(dim, jnp.ndim(tangents[0]) + 1))


@helper("stack_tensors_backward")
def stack_tensors_backward(grad, dim, dtypes):
    """grad unbound along the stacked dim, one slice per input; a real input gets the real part."""
    d = shapes.wrap_dim(dim, jnp.ndim(grad))
    out = []
    for i, dtype in enumerate(dtypes):
        g = jnp.take(grad, i, axis=d)
        out.append(jnp.real(g) if jnp.iscomplexobj(g) and not jnp.issubdtype(dtype, jnp.complexfloating) else g)
    return out


@helper("slice_backward_wrapper")
def slice_backward_wrapper(grad, input_sizes, dim, start, end, step):
    """slice_backward with slice.Tensor's optional bounds: None is the start or the end."""
    return slice_backward(grad, input_sizes, dim, start, end, step)


@helper("diag_backward")
def diag_backward(grad, input_sizes, diagonal):
    if len(input_sizes) == 1:
        return jnp.diagonal(grad, diagonal)
    return shapes.diagonal_backward(grad, input_sizes, diagonal, 0, 1)


@helper("repeat_backward")
def repeat_backward(grad, repeats, input_shape):
    """Sum the tiles: leading new dims, then each dim reshaped to (repeat, size)."""
    input_shape = tuple(input_shape)
    if 0 in repeats:
        return jnp.zeros(input_shape, grad.dtype)
    lead = len(repeats) - len(input_shape)
    grad = jnp.sum(grad, axis=tuple(range(lead))) if lead else grad
    split = tuple(n for r, s in zip(repeats[lead:], input_shape) for n in (r, s))
    return jnp.sum(jnp.reshape(grad, split), axis=tuple(range(0, len(split), 2)))


class TensorGeometry:
    """Sizes, strides and storage offset of a tensor; JAX arrays are contiguous at offset 0."""

    def __init__(self, x):
        self.sizes = tuple(jnp.shape(x))


helper("TensorGeometry")(TensorGeometry)


@helper("as_strided_backward")
def as_strided_backward(grad, input_geometry, sizes, strides, storage_offset):
    """Scatter-add grad into the storage (the input's elements): overlapping reads add up."""
    pos = shapes.strided_indices(sizes, strides, storage_offset or 0)
    numel = int(np.prod(input_geometry.sizes, dtype=np.int64))
    storage = jnp.zeros((numel,), grad.dtype).at[pos.ravel()].add(jnp.ravel(grad))
    return jnp.reshape(storage, input_geometry.sizes)


@helper("index_backward")
def index_backward(zeros_like_self, indices, grad):
    return indexing.index_put(zeros_like_self, indices, grad, True)


@helper("index_select_backward")
def index_select_backward(grad, self_sizes, dim, index):
    return indexing.index_add(jnp.zeros(tuple(self_sizes), grad.dtype), dim, index, grad)


@helper("gather_backward")
def gather_backward(grad, self, dim, index, sparse_grad=False):
    if jnp.size(index) == 0:  # nothing was gathered (ATen checks no shapes for an empty index)
        return jnp.zeros(jnp.shape(self), grad.dtype)
    return indexing.scatter_add(jnp.zeros(jnp.shape(self), grad.dtype), dim, index, grad)


@helper("masked_select_backward")
def masked_select_backward(grad, self, mask):
    """grad written, in order, at the True places of the broadcast mask; summed back to self."""
    shape = jnp.broadcast_shapes(jnp.shape(self), jnp.shape(mask))
    full = indexing.masked_scatter(jnp.zeros(shape, grad.dtype), mask, grad)
    return jnp.reshape(sum_to(full, jnp.shape(self)), jnp.shape(self))


@helper("masked_scatter_backward")
def masked_scatter_backward(grad, mask, sizes):
    return indexing.masked_scatter_backward(grad, mask, sizes)


@helper("take_backward")
def take_backward(grad, self, index):
    return indexing.put(jnp.zeros(jnp.shape(self), grad.dtype), index, grad, True)


@helper("_unique", "at::_unique")
def unique(x, sorted=True, return_inverse=False):
    """(unique values, inverse indices); the values depend on the data: eager only."""
    values = shapes.concrete(x, "_unique", "call it outside jit")
    u, inverse = np.unique(values, return_inverse=True)
    return jnp.asarray(u, x.dtype), jnp.asarray(inverse.reshape(values.shape), jnp.int64)


@helper("constant_pad_nd_backward")
def constant_pad_nd_backward(grad, pad):
    """Padding's inverse is cropping: the same op with negated pads."""
    return padding.constant_pad_nd(grad, [-p for p in pad])


@helper("masked_fill_backward")
def masked_fill_backward(grad, mask):
    """The fill value's gradient: grad summed over the places the (broadcast) mask fills."""
    return jnp.sum(jnp.where(mask, grad, jnp.zeros((), jnp.result_type(grad))))


@helper("as_strided_scatter_backward")
def as_strided_scatter_backward(grad, input_geometry, src_geometry, sizes, strides, storage_offset):
    """PyTorch's formula for self, as it reads: zeros of self's sizes holding grad's elements
    at the view's storage positions (the view's own positions, not the rest of self)."""
    pos = shapes.strided_indices(sizes, strides, storage_offset or 0).ravel()
    numel = int(np.prod(input_geometry.sizes, dtype=np.int64))
    storage = jnp.zeros((numel,), grad.dtype).at[pos].set(jnp.ravel(grad)[pos])
    return jnp.reshape(storage, input_geometry.sizes)


# The index ops of scatter_reduce and of index_reduce, each (the forward, the read of each source
# element's target, the sum of source-shaped values into self's shape, the fill of the targets).
_SCATTER_OPS = (indexing.scatter_reduce, indexing.gather, indexing.scatter_add, indexing.scatter_value)
_INDEX_OPS = (indexing.index_reduce, indexing.index_select, indexing.index_add, indexing.index_fill)


def _reduce_backward(ops, grad, self, dim, index, src, reduce, include_self, result):
    """FunctionsManual's scatter_reduce_backward and index_reduce_backward, one body over `ops`
    (_SCATTER_OPS or _INDEX_OPS): `reduce_at` is the forward, `read` takes each source element's
    target, `add` sums source-shaped values into self's shape and the fill zeroes the targets
    (include_self=False leaves self's own elements out)."""
    if grad is None:
        return None, None
    forward, select, scatter_add, fill = ops

    def reduce_at(x, s):
        return forward(x, dim, index, s, reduce, include_self)

    def read(x):
        return select(x, dim, index)

    def add(x, s):
        return scatter_add(x, dim, index, s)

    dtype = jnp.result_type(self)
    if reduce == "sum":
        grad_self, grad_src = grad, read(grad)
    elif reduce == "prod":
        # exclusive products computed apart for zeros in self or src
        masked_self = jnp.where(self == 0, jnp.ones((), dtype), self)
        grad_self = grad * reduce_at(masked_self, src) / masked_self
        src_zero = src == 0
        src_num_zeros = read(add(jnp.zeros_like(self), src_zero.astype(dtype)))
        src_single_zero = src_zero & (src_num_zeros == 1)
        masked_src_result = reduce_at(self, jnp.where(src_single_zero, jnp.ones((), dtype), src))
        grad_src = jnp.where(
            src_single_zero,
            read(grad * masked_src_result),
            read(grad * result) / jnp.where(src_zero, jnp.ones((), dtype), src),
        )
    elif reduce == "mean":
        n = add(jnp.full(jnp.shape(grad), int(include_self), dtype), jnp.ones_like(src))
        n = jnp.where(n == 0, jnp.ones((), dtype), n)
        grad_self, grad_src = grad / n, read(grad) / read(n)
    elif reduce in ("amax", "amin"):
        # the gradient split evenly among the elements equal to the extreme
        value = read(result)
        self_is_result = (self == result).astype(dtype)
        src_is_result = (src == value).astype(dtype)
        distributed = grad / add(self_is_result, src_is_result)
        grad_self, grad_src = self_is_result * distributed, src_is_result * read(distributed)
    else:
        raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {reduce}.")
    return (grad_self if include_self else fill(grad_self, dim, index, 0)), grad_src


@helper("scatter_reduce_backward")
def scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result):
    return _reduce_backward(_SCATTER_OPS, grad, self, dim, index, src, reduce, include_self, result)


@helper("index_reduce_backward")
def index_reduce_backward(grad, self, dim, index, source, reduce, include_self, result):
    return _reduce_backward(_INDEX_OPS, grad, self, dim, index, source, reduce, include_self, result)


@helper("scatter_reduce_jvp")
def scatter_reduce_jvp(self_p, self_t, dim, index, src_p, src_t, reduce, include_self, result):
    """Linear for sum and mean; for amax and amin the tangents of the elements equal to the
    extreme, averaged; PyTorch states no tangent for prod (None)."""
    if reduce in ("sum", "mean"):
        return indexing.scatter_reduce(self_t, dim, index, src_t, reduce, include_self)
    if reduce in ("amin", "amax"):
        dtype = jnp.result_type(self_t)
        mask_self = self_p == result
        mask_src = src_p == indexing.gather(result, dim, index)
        masked_src_t = jnp.where(mask_src, src_t, jnp.zeros((), dtype))
        div = indexing.scatter_reduce(mask_self.astype(dtype), dim, index, mask_src.astype(dtype), "sum", include_self)
        total = indexing.scatter_reduce(
            jnp.where(mask_self, self_t, jnp.zeros((), dtype)), dim, index, masked_src_t, "sum", include_self
        )
        return total / div
    return None
