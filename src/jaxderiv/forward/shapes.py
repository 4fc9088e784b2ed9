"""Forward implementations of ATen's shape, view, concatenation and triangle ops.

Values only: JAX arrays do not alias, so a view is a copy with the view's values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..records import Equivalent, Sample, complex_ok, draw, known_failure, parity_samples, samples, torch_equivalent
from ..tensor_utils import long_dtype, wrap_dim
from . import impl


def concrete(x, op: str, remedy: str):
    """x as a NumPy array, or a clear error under jit: the op's output shape depends on x's values."""
    if isinstance(x, jax.core.Tracer):
        raise jax.errors.ConcretizationTypeError(
            x, f"aten::{op}: its output shape depends on the values of a tensor, which jit cannot know; {remedy}"
        )
    return np.asarray(x)


@impl("t")
def t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T


@impl("transpose.int", "transpose_")
def transpose_int(self, dim0, dim1):
    if self.ndim == 0:
        return self
    return jnp.swapaxes(self, wrap_dim(dim0, self.ndim), wrap_dim(dim1, self.ndim))


@impl("permute")
def permute(self, dims):
    return jnp.transpose(self, tuple(wrap_dim(d, self.ndim) for d in dims))


@impl("unsqueeze")
def unsqueeze(self, dim):
    return jnp.expand_dims(self, wrap_dim(dim, self.ndim + 1))


@impl("squeeze")
def squeeze(self):
    return jnp.squeeze(self)


@impl("squeeze.dim")
def squeeze_dim(self, dim):
    if self.ndim == 0:
        return self
    d = wrap_dim(dim, self.ndim)
    return jnp.squeeze(self, d) if self.shape[d] == 1 else self


@impl("squeeze.dims", "squeeze_.dims")
def squeeze_dims(self, dim):
    """Each listed dim of size 1 is removed; the others stay. A dim listed twice is an error."""
    if self.ndim == 0:
        for d in dim:
            wrap_dim(d, 0)
        return self
    dims = [wrap_dim(d, self.ndim) for d in dim]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims} appears multiple times in the list of dims")
    drop = tuple(d for d in dims if self.shape[d] == 1)
    return jnp.squeeze(self, drop) if drop else self


@impl("expand")
def expand(self, size, implicit=False):
    lead = len(size) - self.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(size)}) must be greater or equal to the number of dimensions in the tensor ({self.ndim})"
        )
    target = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return jnp.broadcast_to(self, target)


@impl("view", "_unsafe_view")
def view(self, size):
    return jnp.reshape(self, tuple(size))


@impl("_reshape_copy")
def _reshape_copy(self, size):
    return jnp.reshape(self, tuple(size))


@impl("narrow_copy")
def narrow_copy(self, dim, start, length):
    """`length` elements of `dim` from `start`; a negative start counts from the end."""
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if not -n <= start <= n or length < 0 or (start % n if n and start < 0 else start) + length > n:
        raise IndexError(
            f"narrow_copy(): start {start} and length {length} out of range for dimension {dim} of size {n}"
        )
    start = start + n if start < 0 else start
    return jax.lax.slice_in_dim(self, start, start + length, axis=d)


@impl("select.int")
def select_int(self, dim, index):
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {self.shape} at dimension {dim}")
    return jnp.take(self, index % n, axis=d)


def _open_end(end):
    """ATen's "to the end" (INT64_MAX, what `x[:, 2:]` exports as) as Python's None: the same
    slice, and one that a symbolic dimension (`jax.export`) or 32-bit mode can take."""
    return None if isinstance(end, int) and end >= 2**62 else end


@impl("slice.Tensor")
def slice_tensor(self, dim=0, start=0, end=9223372036854775807, step=1):
    if step <= 0:
        raise ValueError("slice step must be positive")
    d = wrap_dim(dim, self.ndim)
    return self[(slice(None),) * d + (slice(start, _open_end(end), step),)]


# -- the scatters of views: self with one view of it replaced by src ----------------------------


@impl("select_backward")
def select_backward(grad_output, input_sizes, dim, index):
    """Zeros of input_sizes with grad_output written at `index` of `dim`."""
    d = wrap_dim(dim, len(input_sizes))
    z = jnp.zeros(tuple(input_sizes), grad_output.dtype)
    return z.at[(slice(None),) * d + (index,)].set(grad_output, unique_indices=True)


@impl("slice_backward")
def slice_backward(grad_output, input_sizes, dim, start, end, step):
    """Zeros of input_sizes with grad_output written on the slice start:end:step of `dim`."""
    d = wrap_dim(dim, len(input_sizes))
    z = jnp.zeros(tuple(input_sizes), grad_output.dtype)
    return z.at[(slice(None),) * d + (slice(start, _open_end(end), step),)].set(grad_output, unique_indices=True)


@impl("slice_scatter")
def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    if step <= 0:
        raise ValueError("slice step must be positive")
    d = wrap_dim(dim, self.ndim)
    return self.at[(slice(None),) * d + (slice(start, end, step),)].set(
        jnp.asarray(src, self.dtype), unique_indices=True
    )


@impl("slice_inverse")
def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """The base `src` with its slice replaced by `self`, the view: slice_scatter(src, self, ...)."""
    return slice_scatter(src, self, dim, start, end, step)


@impl("select_scatter")
def select_scatter(self, src, dim, index):
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select_scatter(): index {index} out of range for tensor of size {self.shape} at dimension {dim}"
        )
    return self.at[(slice(None),) * d + (index % n,)].set(jnp.asarray(src, self.dtype), unique_indices=True)


@impl("diagonal_scatter")
def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    d1, d2 = wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim)
    moved = jnp.moveaxis(self, (d1, d2), (-2, -1))
    length = max(0, min(moved.shape[-2] + min(offset, 0), moved.shape[-1] - max(offset, 0)))
    if tuple(jnp.shape(src)) != moved.shape[:-2] + (length,):
        raise RuntimeError(
            f"diagonal_scatter: src has shape {tuple(jnp.shape(src))}, the diagonal {moved.shape[:-2] + (length,)}"
        )
    rows = np.arange(length) + max(-offset, 0)
    cols = np.arange(length) + max(offset, 0)
    out = moved.at[..., rows, cols].set(jnp.asarray(src, self.dtype), unique_indices=True)
    return jnp.moveaxis(out, (-2, -1), (d1, d2))


def split_sizes_of(n: int, split_size: int) -> list[int]:
    """ATen's split: chunks of split_size, the last one smaller; one empty chunk for n == 0."""
    if split_size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    count = max(-(-n // split_size), 1) if split_size else 1
    return [split_size] * (count - 1) + [n - split_size * (count - 1)]


@impl("chunk")
def chunk(self, chunks, dim=0):
    """ATen's chunk: splits of ceil(size / chunks), so fewer than `chunks` pieces can result."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if n == 0:
        return tuple(self for _ in range(chunks))
    return tuple(split_with_sizes(self, split_sizes_of(n, -(-n // chunks)), d))


@impl("split_with_sizes", "unsafe_split_with_sizes")
def split_with_sizes(self, split_sizes, dim=0):
    d = wrap_dim(dim, self.ndim)
    if sum(split_sizes) != self.shape[d]:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {self.shape[d]} (input tensor's size at dimension {dim}), but got split_sizes={list(split_sizes)}"
        )
    cuts = np.cumsum(split_sizes)[:-1].tolist()
    return tuple(jnp.split(self, cuts, axis=d))


@impl("split.Tensor", "unsafe_split.Tensor")
def split_tensor(self, split_size, dim=0):
    return split_with_sizes(self, split_sizes_of(self.shape[wrap_dim(dim, self.ndim)], split_size), dim)


@impl("unbind.int")
def unbind_int(self, dim=0):
    d = wrap_dim(dim, self.ndim)
    return tuple(jnp.take(self, i, axis=d) for i in range(self.shape[d]))


@impl("stack")
def stack(tensors, dim=0):
    return jnp.stack(tensors, axis=wrap_dim(dim, tensors[0].ndim + 1))


def legacy_cat_dim(dim: int, shapes) -> int:
    """ATen's cat ignores 1-d empty tensors (legacy): the dim wraps by the first other shape."""
    for s in shapes:
        if tuple(s) != (0,):
            return wrap_dim(dim, len(s))
    return dim


@impl("cat")
def cat(tensors, dim=0):
    kept = [t for t in tensors if t.shape != (0,)]
    if not kept:
        return jnp.zeros((0,), jnp.result_type(*tensors))
    dtype = jnp.result_type(*tensors)
    return jnp.concatenate([t.astype(dtype) for t in kept], axis=legacy_cat_dim(dim, [t.shape for t in kept]))


@impl("flip")
def flip(self, dims):
    return jnp.flip(self, tuple(wrap_dim(d, self.ndim) for d in dims)) if dims else self


@impl("roll")
def roll(self, shifts, dims=()):
    if not dims:
        return jnp.roll(self, shifts[0] if len(shifts) == 1 else shifts)
    return jnp.roll(self, tuple(shifts), tuple(wrap_dim(d, self.ndim) for d in dims))


@impl("rot90")
def rot90(self, k=1, dims=(0, 1)):
    return jnp.rot90(self, k, tuple(wrap_dim(d, self.ndim) for d in dims))


@impl("repeat")
def repeat(self, repeats):
    if len(repeats) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    return jnp.tile(self, tuple(repeats))


def _lead(self, op: str, at_least: int):
    if self.ndim < at_least:
        raise RuntimeError(
            f"{op} expects input to have at least {at_least} dimensions, but got input with {self.ndim} dimension(s)"
        )
    return self.shape[: self.ndim - 3]


@impl("pixel_shuffle")
def pixel_shuffle(self, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): out[c, h r + i, w r + j] = in[c r^2 + i r + j, h, w]."""
    lead, r = _lead(self, "pixel_shuffle", 3), upscale_factor
    c, h, w = self.shape[-3:]
    if c % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    x = jnp.reshape(self, lead + (c // (r * r), r, r, h, w))
    x = jnp.transpose(x, tuple(range(n)) + tuple(n + i for i in (0, 3, 1, 4, 2)))
    return jnp.reshape(x, lead + (c // (r * r), h * r, w * r))


@impl("pixel_unshuffle")
def pixel_unshuffle(self, downscale_factor):
    """The inverse of pixel_shuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    lead, r = _lead(self, "pixel_unshuffle", 3), downscale_factor
    c, h, w = self.shape[-3:]
    if h % r or w % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but got {h}x{w} and {r}"
        )
    n = len(lead)
    x = jnp.reshape(self, lead + (c, h // r, r, w // r, r))
    x = jnp.transpose(x, tuple(range(n)) + tuple(n + i for i in (0, 2, 4, 1, 3)))
    return jnp.reshape(x, lead + (c * r * r, h // r, w // r))


@impl("channel_shuffle")
def channel_shuffle(self, groups):
    """(N, C, *) -> channels regrouped: (N, g, C/g, *) transposed to (N, C/g, g, *)."""
    _lead(self, "channel_shuffle", 3)
    n, c = self.shape[:2]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    x = jnp.reshape(self, (n, groups, c // groups) + self.shape[2:])
    return jnp.reshape(jnp.swapaxes(x, 1, 2), self.shape)


@impl("diagonal")
def diagonal(self, offset=0, dim1=0, dim2=1):
    return jnp.diagonal(self, offset, wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim))


@impl("diagonal_backward")
def diagonal_backward(grad_output, input_sizes, offset, dim1, dim2):
    """Zeros of input_sizes with grad_output written on the diagonal (offset, dim1, dim2)."""
    n = len(input_sizes)
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    z = jnp.moveaxis(jnp.zeros(tuple(input_sizes), grad_output.dtype), (d1, d2), (-2, -1))
    length = grad_output.shape[-1]
    rows = np.arange(length) + max(-offset, 0)
    cols = np.arange(length) + max(offset, 0)
    return jnp.moveaxis(z.at[..., rows, cols].set(grad_output, unique_indices=True), (-2, -1), (d1, d2))


@impl("diag_embed")
def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """The last dim of self written on the (offset) diagonal of two new dims dim1, dim2."""
    n_out = self.ndim + 1
    d1, d2 = wrap_dim(dim1, n_out), wrap_dim(dim2, n_out)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = jnp.reshape(self, (1,)) if self.ndim == 0 else self
    length = x.shape[-1]
    m = length + abs(offset)
    rows = np.arange(length) + max(-offset, 0)
    cols = np.arange(length) + max(offset, 0)
    z = jnp.zeros(x.shape[:-1] + (m, m), x.dtype).at[..., rows, cols].set(x, unique_indices=True)
    return jnp.moveaxis(z, (-2, -1), (d1, d2))


@impl("diag")
def diag(self, diagonal=0):
    if self.ndim == 1:
        return jnp.diag(self, diagonal)
    if self.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{self.ndim}D")
    return jnp.diagonal(self, diagonal)


@impl("tril")
def tril(self, diagonal=0):
    return jnp.tril(self, diagonal)


@impl("triu")
def triu(self, diagonal=0):
    return jnp.triu(self, diagonal)


def _windows(length: int, size: int, step: int) -> np.ndarray:
    """Indices (n, size) of unfold's windows along a dimension of `length`."""
    if step <= 0 or size > length:
        raise RuntimeError(f"unfold: size {size} must be <= the dimension's size {length}, step {step} > 0")
    n = (length - size) // step + 1
    return np.arange(n)[:, None] * step + np.arange(size)[None, :]


@impl("unfold")
def unfold(self, dimension, size, step):
    if self.ndim == 0:
        return jnp.reshape(self, (1,))[_windows(1, size, step)][0]
    d = wrap_dim(dimension, self.ndim)
    windows = jnp.moveaxis(self, d, -1)[..., _windows(self.shape[d], size, step)]
    return jnp.moveaxis(windows, -2, d)


@impl("unfold_backward")
def unfold_backward(grad_in, input_sizes, dim, size, step):
    """Each input element receives the sum of the window entries that read it."""
    if len(input_sizes) == 0:
        return jnp.reshape(grad_in, ())
    d = wrap_dim(dim, len(input_sizes))
    moved = jnp.moveaxis(jnp.zeros(tuple(input_sizes), grad_in.dtype), d, -1)
    out = moved.at[..., _windows(input_sizes[d], size, step)].add(jnp.moveaxis(grad_in, d, -2))
    return jnp.moveaxis(out, -1, d)


def strided_indices(size, stride, offset: int) -> np.ndarray:
    """Storage positions of an as_strided view: offset + sum_i index_i * stride_i."""
    pos = np.full(tuple(size), offset, np.int64)
    for i, (n, s) in enumerate(zip(size, stride)):
        pos = pos + (np.arange(n) * s).reshape((n,) + (1,) * (len(size) - i - 1))
    return pos


@impl("_reshape_alias")
def _reshape_alias(self, size, stride):
    """A strided view of self's (contiguous) storage, as_strided without offset."""
    return as_strided(self, size, stride)


@impl("as_strided")
def as_strided(self, size, stride, storage_offset=None):
    """A strided view of the flattened storage of a contiguous input."""
    pos = strided_indices(size, stride, storage_offset or 0)
    if pos.size and (pos.min() < 0 or pos.max() >= self.size):
        raise RuntimeError(
            f"as_strided: size {list(size)}, stride {list(stride)}, offset {storage_offset} reach outside the storage of {self.size} elements"
        )
    return jnp.ravel(self)[pos]


@impl("as_strided_scatter")
def as_strided_scatter(self, src, size, stride, storage_offset=None):
    """The flattened storage of a contiguous self, with the as_strided view's elements set to src."""
    pos = strided_indices(size, stride, storage_offset or 0)
    if pos.size and (pos.min() < 0 or pos.max() >= self.size):
        raise RuntimeError(
            f"as_strided_scatter: size {list(size)}, stride {list(stride)}, offset {storage_offset} reach outside the storage of {self.size} elements"
        )
    flat = jnp.ravel(self).at[pos.ravel()].set(jnp.ravel(jnp.asarray(src, self.dtype)))
    return jnp.reshape(flat, self.shape)


@impl("one_hot")
def one_hot(self, num_classes=-1):
    if num_classes == -1:
        values = concrete(self, "one_hot", "pass num_classes")
        num_classes = int(values.max()) + 1 if values.size else 0
    return (self[..., None] == jnp.arange(num_classes)).astype(long_dtype())


@impl("nonzero")
def nonzero(self):
    values = concrete(self, "nonzero", "call it outside jit, or use jnp.nonzero with a static size")
    if np.ndim(values) == 0:  # ATen: one index row of no coordinates if the scalar is nonzero
        return jnp.zeros((int(np.asarray(values) != 0), 0), long_dtype())
    return jnp.asarray(np.stack(np.nonzero(values), -1).reshape(-1, values.ndim), long_dtype())


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the shape, view, concatenation and triangle ops, and the scatters into a
# slice, a diagonal or a strided view.
#
# All are linear in their differentiable inputs, so no kinks; what matters are the variants:
# negative dims, -1 sizes, uneven splits, empty cat inputs, offsets. A case is an argument
# tuple in schema order, a tensor given as T(shape) and drawn in the sample's dtype; complex
# inputs run the first case only, as the variants do not depend on the dtype. indexing.py and
# padding.py declare their entries with the same `T` and `_register`.
class T:
    """A placeholder for a random tensor of this shape in the sample's dtype."""

    def __init__(self, *shape):
        self.shape = shape


def _make(value, rng, dtype):
    if isinstance(value, T):
        return draw(rng, value.shape, -2.0, 2.0, dtype)
    if isinstance(value, list):
        return [_make(v, rng, dtype) for v in value]
    return value


def _label(args) -> str:
    def one(v):
        if isinstance(v, T):
            return "x".join(map(str, v.shape)) or "0-d"
        if isinstance(v, np.ndarray):
            return f"{v.dtype}{list(v.shape)}"
        if isinstance(v, list):
            return "[" + ",".join(one(e) for e in v) + "]"
        return repr(v)

    return " ".join(one(v) for v in args)


def register_shape_cases(*names, cases, kwargs=None, complex_=True):
    """`cases`: argument tuples in schema order, tensors as T(shape). Complex runs the first
    case only: the variants exercise shapes and dims, which do not depend on the dtype."""

    @samples(*names)
    def make(op, rng, dtype=np.float64):
        chosen = cases[:1] if np.issubdtype(dtype, np.complexfloating) else cases
        return [Sample(tuple(_make(v, rng, dtype) for v in c), dict(kwargs or {}), _label(c)) for c in chosen]

    if complex_:
        complex_ok(*names)


register_shape_cases("t", cases=[(T(2, 3),), (T(3),), (T(),)])
register_shape_cases("transpose.int", "transpose_", cases=[(T(2, 3, 4), 0, -1), (T(2, 3), 1, 0), (T(), 0, -1)])
register_shape_cases("permute", cases=[(T(2, 3, 4), (2, 0, 1)), (T(2, 3), (-1, 0))])
register_shape_cases("unsqueeze", "unsqueeze_", cases=[(T(2, 3), 0), (T(2, 3), -1), (T(), 0)])
register_shape_cases("squeeze", "squeeze_", cases=[(T(2, 1, 3, 1),), (T(1),)])
register_shape_cases("squeeze.dim", "squeeze_.dim", cases=[(T(2, 1, 3), 1), (T(2, 1, 3), -3), (T(), 0)])
register_shape_cases(
    "squeeze.dims", "squeeze_.dims", cases=[(T(2, 1, 3, 1), (1, -1)), (T(1, 2, 1), (0, 1)), (T(2, 3), ()), (T(), (0,))]
)
register_shape_cases("expand", cases=[(T(3, 1), (2, 3, 4)), (T(3, 1), (-1, 4)), (T(), (2,))])
register_shape_cases("_reshape_copy", cases=[(T(2, 3), (3, 2)), (T(2, 3), (-1,)), (T(), (1, 1))])
# ATen makes _reshape_alias with the contiguous strides of `size` only: the formula assumes them
register_shape_cases("_reshape_alias", cases=[(T(2, 3), (3, 2), (2, 1)), (T(2, 3), (6,), (1,)), (T(), (1, 1), (1, 1))])
register_shape_cases("narrow_copy", cases=[(T(5, 3), 0, 1, 3), (T(2, 6), -1, -4, 2), (T(2, 3), 1, 3, 0)])
register_shape_cases("view", "_unsafe_view", cases=[(T(2, 3), (3, 2)), (T(2, 3), (-1,)), (T(), (1, 1))])
register_shape_cases("select.int", cases=[(T(2, 3, 4), 1, -1), (T(3), 0, 2)])
register_shape_cases(
    "slice.Tensor", cases=[(T(4, 5), 1, 1, 4, 2), (T(4, 5), 0, -3, 2**63 - 1, 1), (T(4, 5), -1, 0, 100, 3)]
)
register_shape_cases("split.Tensor", "unsafe_split.Tensor", cases=[(T(5, 3), 2, 0), (T(2, 6), 4, -1)])
register_shape_cases("chunk", cases=[(T(5, 3), 3, 0), (T(2, 6), 4, -1), (T(2, 3), 1, 1)])
register_shape_cases(
    "split_with_sizes", "unsafe_split_with_sizes", cases=[(T(5, 3), (2, 3), 0), (T(2, 6), (1, 0, 5), -1)]
)
register_shape_cases("unbind.int", cases=[(T(3, 2), 0), (T(2, 3), -1)])
register_shape_cases("stack", cases=[([T(2, 3), T(2, 3), T(2, 3)], 0), ([T(2, 3), T(2, 3)], -1)])
register_shape_cases(
    "cat", cases=[([T(2, 3), T(1, 3)], 0), ([T(2, 3), T(2, 1), T(2, 2)], -1), ([T(2, 3), T(0), T(1, 3)], 0)]
)
register_shape_cases("flip", cases=[(T(2, 3, 4), (0, 2)), (T(2, 3), (-1,))])
register_shape_cases("roll", cases=[(T(2, 3), (1,), ()), (T(2, 3, 4), (1, -2), (0, 2))])
register_shape_cases(
    "rot90", cases=[(T(2, 3), 1, (0, 1)), (T(2, 3, 4), -1, (2, 0)), (T(2, 3), 2, (0, 1)), (T(2, 3), 3, (1, 0))]
)
register_shape_cases("repeat", cases=[(T(2, 3), (2, 1)), (T(2, 3), (2, 1, 3))])
register_shape_cases("diag_embed", cases=[(T(2, 3), 0, -2, -1), (T(3), 1, 0, 1), (T(2, 3), -1, 2, 0)])
register_shape_cases("diag", cases=[(T(3), 0), (T(3), -1), (T(3, 4), 1), (T(3, 4), -2)])
register_shape_cases("diagonal", cases=[(T(3, 4), 0, 0, 1), (T(2, 3, 4), 1, -1, 0), (T(2, 3, 4), -1, 0, 2)])
register_shape_cases(
    "diagonal_backward", cases=[(T(3, 1), (2, 3, 4), 1, -1, 0), (T(3), (3, 4), 0, 0, 1), (T(3, 2), (3, 3, 4), -1, 0, 2)]
)
register_shape_cases("tril", "triu", cases=[(T(3, 4), 0), (T(3, 4), -1), (T(2, 3, 4), 1)])
register_shape_cases("unfold", cases=[(T(2, 7), 1, 3, 2), (T(5), 0, 2, 1), (T(6, 2), 0, 2, 3)])
register_shape_cases(
    "unfold_backward", cases=[(T(2, 3, 3), (2, 7), 1, 3, 2), (T(4, 2), (5,), 0, 2, 1), (T(2, 2, 2), (6, 2), 0, 2, 3)]
)
register_shape_cases(
    "as_strided",
    "as_strided_",
    cases=[(T(3, 4), (2, 2), (1, 2), 1), (T(3, 4), (3, 3), (2, 1), None), (T(5), (2,), (2,), 0)],
)
register_shape_cases(
    "select_backward", cases=[(T(3, 4), (2, 3, 4), 0, 1), (T(2, 3), (2, 3, 5), -1, -2), (T(), (3,), 0, 2)]
)
register_shape_cases(
    "slice_backward",
    cases=[(T(2, 3), (5, 3), 0, 1, 3, 1), (T(2, 2), (2, 6), -1, -5, 10, 3), (T(0, 3), (2, 3), 0, 2, 1, 1)],
)
register_shape_cases("pixel_shuffle", cases=[(T(1, 8, 2, 3), 2), (T(9, 2, 2), 3), (T(2, 1, 4, 1, 2), 1)])
register_shape_cases(
    "pixel_unshuffle", cases=[(T(1, 2, 4, 6), 2), (T(1, 6, 6), 3), (T(2, 1, 3, 1, 2), 1), (T(1, 1, 3, 6, 3), 3)]
)
register_shape_cases("channel_shuffle", cases=[(T(2, 6, 3), 2), (T(1, 6, 2, 2), 3), (T(2, 4, 1), 1)])

# torch differentiates slice_scatter and select_scatter on real dtypes only
register_shape_cases(
    "slice_scatter",
    cases=[
        (T(4, 5), T(4, 2), 1, 1, 4, 2),
        (T(4, 5), T(2, 5), 0, -3, None, 2),
        (T(4, 5), T(2, 5), -2, -3, None, 2),
        (T(4, 5), T(4, 5)),
    ],
    complex_=False,
)
register_shape_cases(
    "slice_inverse", cases=[(T(4, 2), T(4, 5), 1, 1, 4, 2), (T(2, 5), T(4, 5), 0, -3, None, 2)], complex_=False
)
register_shape_cases("select_scatter", cases=[(T(2, 3, 4), T(2, 4), 1, -1), (T(3), T(), 0, 2)], complex_=False)
register_shape_cases(
    "diagonal_scatter",
    cases=[(T(3, 4), T(3), 0, 0, 1), (T(2, 3, 4), T(3, 1), 1, -1, 0), (T(2, 3, 4), T(3, 1), -1, 0, 2)],
)
register_shape_cases(
    "as_strided_scatter",
    cases=[(T(3, 4), T(2, 2), (2, 2), (1, 4), 1), (T(3, 4), T(3), (3,), (5,), None), (T(5), T(2), (2,), (2,), 0)],
)
known_failure(
    "spec bug: torch 2.13's as_strided_scatter_backward gives self the gradient at the scattered "
    "positions, which src overwrote, and zero elsewhere (the reverse of the derivative)",
    "as_strided_scatter",
    modes=("vjp", "vjp_vjp"),  # vjp_vjp: its derivative in the cotangent `grad` is that formula again
)


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(
    Equivalent(
        lambda aten, a: aten.slice_scatter(a["src"], a["self"], a["dim"], a["start"], a["end"], a["step"]),
        "torch's CPU kernel needs `self` to be a view of `src`: aten.slice_scatter(src, self, ...)",
    ),
    "slice_inverse",
)
# the checker's schema-default samples have no torch meaning here (float indices)
parity_samples(
    "one_hot",
    Sample((np.array([0, 2, 1, 3]), 4), {}, "4 classes"),
    Sample((np.array([[0, 2], [1, 1]]),), {}, "num_classes=-1"),
)
