"""Forward implementations of ATen's indexing ops: gather/scatter, index_*, masked_*, take/put.

Indices are int64 and must be in range, as ATen checks. Overwriting scatters declare their
indices unique (JAX transposes only those): with duplicates, which write wins is unspecified,
as in ATen. Ops whose output shape depends on
values (masked_select, `index` with a bool mask) run eagerly and raise under jit.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import impl
from .shapes import concrete, wrap_dim

_MASK_REMEDY = "make the mask into indices outside jit (jnp.nonzero(mask)), or use jnp.where with a static shape"


def _coords(index, dim: int) -> tuple:
    """Per element of index: position index[...] along dim, its own coordinate along the others."""
    grids = np.indices(jnp.shape(index), sparse=True)
    return tuple(index if d == dim else g for d, g in enumerate(grids))


def _leading(src, shape) -> jnp.ndarray:
    """The first shape[d] entries of src along each dim (ATen's src may be larger than index)."""
    return src[tuple(slice(0, n) for n in shape)]


def _scatter(self, dim, index, values, accumulate: bool):
    x = jnp.reshape(self, (1,)) if self.ndim == 0 else self
    idx = jnp.reshape(index, (1,)) if index.ndim == 0 else index
    if not isinstance(values, (int, float, complex)):
        values = _leading(jnp.reshape(values, (1,)) if values.ndim == 0 else values, idx.shape)
    at = x.at[_coords(idx, wrap_dim(dim, x.ndim))]
    out = at.add(values) if accumulate else at.set(values, unique_indices=True)
    return jnp.reshape(out, self.shape)


@impl("gather")
def gather(self, dim, index, sparse_grad=False):
    x = jnp.reshape(self, (1,)) if self.ndim == 0 else self
    idx = jnp.reshape(index, (1,)) if index.ndim == 0 else index
    return jnp.reshape(x[_coords(idx, wrap_dim(dim, x.ndim))], index.shape)


@impl("scatter_.src", "scatter.src")
def scatter_src(self, dim, index, src):
    return _scatter(self, dim, index, src.astype(self.dtype), False)


@impl("scatter_.value", "scatter.value")
def scatter_value(self, dim, index, value):
    hit = _scatter(jnp.zeros(self.shape, bool), dim, index, True, False)
    return jnp.where(hit, jnp.asarray(value, self.dtype), self)


@impl("scatter_add_", "scatter_add")
def scatter_add(self, dim, index, src):
    return _scatter(self, dim, index, src.astype(self.dtype), True)


def _along(self, dim, index) -> tuple:
    """The index tuple selecting `index` (0-d or 1-d) along dim."""
    return (slice(None),) * wrap_dim(dim, self.ndim) + (jnp.reshape(index, (-1,)),)


@impl("index_select")
def index_select(self, dim, index):
    if self.ndim == 0:
        return jnp.reshape(self, (1,))[jnp.reshape(index, (-1,))].reshape(())
    return self[_along(self, dim, index)]


@impl("index_add_", "index_add_.alpha", "index_add")
def index_add(self, dim, index, source, alpha=1):
    if self.ndim == 0:
        return self + alpha * jnp.reshape(source, ())
    source = jnp.reshape(source, (1,)) if source.ndim == 0 else source
    return self.at[_along(self, dim, index)].add((alpha * source).astype(self.dtype))


@impl("index_copy_", "index_copy")
def index_copy(self, dim, index, source):
    if self.ndim == 0:
        return jnp.reshape(source, ()).astype(self.dtype)
    source = jnp.reshape(source, (1,)) if source.ndim == 0 else source
    return self.at[_along(self, dim, index)].set(source.astype(self.dtype), unique_indices=True)


@impl("index_fill_.int_Scalar", "index_fill_.int_Tensor")
def index_fill(self, dim, index, value):
    value = jnp.asarray(value).astype(self.dtype)
    if self.ndim == 0:
        return value
    hit = jnp.zeros(self.shape, bool).at[_along(self, dim, index)].set(True)
    return jnp.where(hit, value, self)


def _index_tuple(indices, op: str) -> tuple:
    """ATen's Tensor?[] indices as a NumPy-style index: None is `:`, a bool mask selects."""
    out = []
    for i in indices:
        if i is None:
            out.append(slice(None))
        elif jnp.result_type(i) in (jnp.bool_, jnp.uint8):
            out.append(concrete(i, op, _MASK_REMEDY).astype(bool))
        else:
            out.append(i)
    return tuple(out)


@impl("index.Tensor")
def index(self, indices):
    return self[_index_tuple(indices, "index")]


@impl("index_put_", "index_put")
def index_put(self, indices, values, accumulate=False):
    at = self.at[_index_tuple(indices, "index_put_")]
    values = jnp.asarray(values).astype(self.dtype)
    return at.add(values) if accumulate else at.set(values, unique_indices=True)


@impl("_index_put_impl_")
def index_put_impl(self, indices, values, accumulate=False, unsafe=False):
    return index_put(self, indices, values, accumulate)


@impl("masked_fill_.Scalar", "masked_fill_.Tensor")
def masked_fill(self, mask, value):
    return jnp.where(jnp.broadcast_to(mask, self.shape), jnp.asarray(value).astype(self.dtype), self)


@impl("masked_scatter_", "masked_scatter")
def masked_scatter(self, mask, source):
    """Where the (broadcast) mask is True, source's elements in order; elsewhere self."""
    m = jnp.ravel(jnp.broadcast_to(mask, self.shape))
    flat = jnp.ravel(source).astype(self.dtype)
    taken = flat[jnp.clip(jnp.cumsum(m) - 1, 0, max(flat.size - 1, 0))] if flat.size else jnp.zeros_like(m, self.dtype)
    return jnp.reshape(jnp.where(m, taken, jnp.ravel(self)), self.shape)


@impl("masked_select")
def masked_select(self, mask):
    shape = jnp.broadcast_shapes(self.shape, mask.shape)
    m = np.broadcast_to(concrete(mask, "masked_select", _MASK_REMEDY), shape)
    return jnp.broadcast_to(self, shape)[m]


@impl("take")
def take(self, index):
    return jnp.ravel(self)[index]


@impl("put_", "put")
def put(self, index, source, accumulate=False):
    at = jnp.ravel(self).at[jnp.ravel(index)]
    source = jnp.ravel(source).astype(self.dtype)
    return jnp.reshape(at.add(source) if accumulate else at.set(source, unique_indices=True), self.shape)
