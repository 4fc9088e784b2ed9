"""Forward implementations of ATen's indexing ops: gather/scatter, index_*, masked_*, take/put.

Indices are int64 and must be in range, as ATen checks. `scatter.reduce` and
`scatter.value_reduce` (add or multiply) have no derivative in ATen (`without_derivative`).
Overwriting scatters declare their indices unique (JAX transposes only those): with duplicates,
which write wins is unspecified, as in ATen. Ops whose output shape depends on values
(masked_select, `index` with a bool mask) run eagerly and raise under jit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..records import Equivalent, Sample, draw, kinks, known_failure, matrix, samples, torch_equivalent
from . import impl
from .nondifferentiable import without_derivative
from .shapes import T, register_shape_cases, concrete, wrap_dim

_MASK_REMEDY = "make the mask into indices outside jit (jnp.nonzero(mask)), or use jnp.where with a static shape"


def _coords(index, dim: int) -> tuple:
    """Per element of index: position index[...] along dim, its own coordinate along the others."""
    grids = np.indices(jnp.shape(index), sparse=True)
    return tuple(index if d == dim else g for d, g in enumerate(grids))


def _leading(src, shape) -> jnp.ndarray:
    """The first shape[d] entries of src along each dim (ATen's src may be larger than index)."""
    return src[tuple(slice(0, n) for n in shape)]


def _scatter(self, dim, index, values, accumulate):
    """values written (accumulate False), added (True) or multiplied ("multiply") into self at
    index along dim."""
    x = jnp.reshape(self, (1,)) if self.ndim == 0 else self
    idx = jnp.reshape(index, (1,)) if index.ndim == 0 else index
    if not isinstance(values, (int, float, complex)):
        values = _leading(jnp.reshape(values, (1,)) if values.ndim == 0 else values, idx.shape)
    at = x.at[_coords(idx, wrap_dim(dim, x.ndim))]
    if accumulate == "multiply":
        out = at.multiply(values)
    else:
        out = at.add(values) if accumulate else at.set(values, unique_indices=True)
    return jnp.reshape(out, self.shape)


@impl("gather")
def gather(self, dim, index, sparse_grad=False):
    if jnp.size(index) == 0:  # ATen checks no shapes for an empty index: an empty result of its shape
        return jnp.zeros(jnp.shape(index), self.dtype)
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


def _scatter_checks(self, dim, index, src=None) -> None:
    """ATen's scatter checks: an int32 or int64 index of self's rank (0-d counting as 1-d), no larger than
    src anywhere nor than self off `dim`, src of self's dtype; index values in range where
    they are known."""
    nd = lambda a: max(jnp.ndim(a), 1)  # noqa: E731
    shape = lambda a: jnp.shape(a) or (1,)  # noqa: E731
    if jnp.result_type(index) not in (jnp.int32, jnp.int64):
        raise TypeError("scatter(): Expected dtype int32/int64 for index")
    if src is not None and jnp.result_type(src) != jnp.result_type(self):
        raise TypeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = wrap_dim(dim, nd(self))
    if jnp.size(index) == 0:
        return
    if nd(index) != nd(self) or (src is not None and nd(src) != nd(self)):
        raise ValueError("Index tensor must have the same number of dimensions as self tensor")
    for k, n in enumerate(shape(index)):
        if (k != d and n > shape(self)[k]) or (src is not None and n > shape(src)[k]):
            raise ValueError(
                f"Expected index {list(jnp.shape(index))} to be no larger than self {list(jnp.shape(self))} apart "
                f"from dimension {d}"
                + ("" if src is None else f" and to be no larger size than src {list(jnp.shape(src))}")
            )
    try:
        known = np.asarray(index)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return  # a tracer: out-of-range indices are dropped
    size = shape(self)[d]
    bad = known[(known < 0) | (known >= size)]
    if bad.size:
        raise IndexError(f"index {bad[0]} is out of bounds for dimension {d} with size {size}")


def _scatter_reduction(reduce: str) -> str | bool:
    """_scatter's `accumulate` for reduce "add" or "multiply"."""
    if reduce not in ("add", "multiply"):
        raise ValueError("reduce argument must be either add or multiply.")
    return True if reduce == "add" else "multiply"


@without_derivative("scatter.reduce", "scatter_.reduce")
def scatter_reduce_src(self, dim, index, src, reduce):
    """src's elements added ("add") or multiplied ("multiply") into self at index along dim,
    self's own element included. ATen implements no derivative for it: torch's backward raises."""
    how = _scatter_reduction(reduce)
    _scatter_checks(self, dim, index, src)
    return _scatter_reduced(self, dim, index, src, how)


@without_derivative("scatter.value_reduce", "scatter_.value_reduce")
def scatter_value_reduce(self, dim, index, value, reduce):
    """scatter.reduce of the Scalar value (converted to self's dtype as C++ converts) at every
    index. ATen implements no derivative for it: torch's backward raises."""
    how = _scatter_reduction(reduce)
    _scatter_checks(self, dim, index)
    v = jnp.asarray(value).astype(self.dtype)
    return _scatter_reduced(self, dim, index, jnp.broadcast_to(v, jnp.shape(index)), how)


def _scatter_reduced(self, dim, index, src, how):
    """`_scatter` accumulating; bool adds as `or` and multiplies as `and` (in int32 here)."""
    if jnp.size(index) == 0:
        return self
    if self.dtype != jnp.bool_:
        return _scatter(self, dim, index, src, how)
    return _scatter(self.astype(jnp.int32), dim, index, src.astype(jnp.int32), how) != 0


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, dtype):
    """The value a reduction starts from where include_self=False drops self's own element."""
    if reduce in ("sum", "mean", "prod"):
        return jnp.asarray(int(reduce == "prod"), dtype)
    inexact = jnp.issubdtype(dtype, jnp.inexact)
    lowest, highest = (-jnp.inf, jnp.inf) if inexact else (jnp.iinfo(dtype).min, jnp.iinfo(dtype).max)
    return jnp.asarray(lowest if reduce == "amax" else highest, dtype)


def _products(targets, values, n: int):
    """Per target position 0..n-1 (last axis), the product of the values whose target it is:
    a dense product over the last axis, which JAX differentiates with repeated targets too."""
    hit = targets[..., None, :] == np.arange(n)[:, None]
    return jnp.prod(jnp.where(hit, values[..., None, :], jnp.ones((), values.dtype)), axis=-1)


def _reduce_at(self, at, where, values, reduce: str, include_self: bool, products):
    """self with `values` reduced into the places `at(x)` selects (`where` marks them);
    `products()` gives prod's factors in self's shape."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    start = self if include_self else jnp.where(where, _identity(reduce, self.dtype), self)
    if reduce == "prod":
        return start * products()
    ref = at(start)
    out = {"sum": ref.add, "mean": ref.add, "amax": ref.max, "amin": ref.min}[reduce](values)
    if reduce != "mean":
        return out
    count = at(jnp.where(where, int(include_self), 1).astype(self.dtype)).add(jnp.ones_like(values))
    count = jnp.where(where, count, 1)
    return out // count if jnp.issubdtype(self.dtype, jnp.integer) else out / count


@impl("scatter_reduce.two")
def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    """Each src element reduced into self at its index along dim (ATen's scatter_reduce)."""
    x = jnp.reshape(self, (1,)) if self.ndim == 0 else self
    idx = jnp.reshape(index, (1,)) if index.ndim == 0 else index
    values = _leading(jnp.reshape(src, (1,)) if src.ndim == 0 else src, idx.shape).astype(x.dtype)
    d = wrap_dim(dim, x.ndim)
    coords = _coords(idx, d)
    hit = jnp.zeros(x.shape, bool).at[coords].set(True)

    def products():
        # index may be smaller than self off dim: the factors of the rest are 1
        f = jnp.moveaxis(_products(jnp.moveaxis(idx, d, -1), jnp.moveaxis(values, d, -1), x.shape[d]), -1, d)
        return jnp.pad(f, [(0, n - m) for n, m in zip(x.shape, f.shape)], constant_values=1)

    out = _reduce_at(x, lambda y: y.at[coords], hit, values, reduce, include_self, products)
    return jnp.reshape(out, self.shape)


@impl("index_reduce")
def index_reduce(self, dim, index, source, reduce, include_self=True):
    """Slices of source reduced into self at the indices along dim (prod, mean, amax, amin)."""
    if reduce == "sum":
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum.")
    x = jnp.reshape(self, (1,)) if self.ndim == 0 else self
    values = (jnp.reshape(source, (1,)) if source.ndim == 0 else source).astype(x.dtype)
    d = wrap_dim(dim, x.ndim)
    along = _along(x, dim, index)
    hit = jnp.zeros(x.shape, bool).at[along].set(True)

    def products():
        return jnp.moveaxis(_products(jnp.reshape(index, (-1,)), jnp.moveaxis(values, d, -1), x.shape[d]), -1, d)

    out = _reduce_at(x, lambda y: y.at[along], hit, values, reduce, include_self, products)
    return jnp.reshape(out, self.shape)


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


@impl("index_fill_.int_Scalar", "index_fill_.int_Tensor", "index_fill.int_Scalar", "index_fill.int_Tensor")
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


@impl("_unsafe_index.Tensor")
def unsafe_index(self, indices):
    """index.Tensor without the bounds check (JAX never checks)."""
    return index(self, indices)


@impl("_unsafe_index_put")
def unsafe_index_put(self, indices, values, accumulate=False):
    return index_put(self, indices, values, accumulate)


def _clamped(self, indices) -> list:
    """Integer indices clamped into range: the masked ops read and write in bounds everywhere,
    and the mask decides which of those reads and writes count."""
    out = []
    for d, i in enumerate(indices):
        if i is not None and not jnp.issubdtype(jnp.result_type(i), jnp.integer):
            raise TypeError(f"_unsafe_masked_index found unexpected index type {jnp.result_type(i)}")
        out.append(None if i is None else jnp.clip(i, -self.shape[d], self.shape[d] - 1))
    return out


@impl("_unsafe_masked_index")
def unsafe_masked_index(self, mask, indices, fill):
    """self[indices] where mask is True, `fill` elsewhere (out-of-range indices only there)."""
    taken = index(self, _clamped(self, indices))
    return jnp.where(mask, taken, jnp.asarray(fill, self.dtype))


@impl("_unsafe_masked_index_put_accumulate")
def unsafe_masked_index_put_accumulate(self, mask, indices, values):
    """self with values added at indices where mask is True."""
    masked = jnp.where(mask, values, jnp.zeros((), jnp.result_type(values)))
    return index_put(self, _clamped(self, indices), masked, True)


@impl("masked_fill_.Scalar", "masked_fill_.Tensor", "masked_fill.Scalar", "masked_fill.Tensor")
def masked_fill(self, mask, value):
    if jnp.result_type(mask) != jnp.bool_:
        raise TypeError(f"masked_fill only supports boolean masks, but got mask with dtype {jnp.result_type(mask)}")
    # the functional form broadcasts self and mask together (a (5,) self with a (5, 5) mask)
    return jnp.where(mask, jnp.asarray(value).astype(self.dtype), self)


@impl("masked_scatter_", "masked_scatter")
def masked_scatter(self, mask, source):
    """Where the (broadcast) mask is True, source's elements in order; elsewhere self. The
    functional form broadcasts self and mask together (a (5,) self with a (5, 5) mask)."""
    shape = jnp.broadcast_shapes(jnp.shape(self), jnp.shape(mask))
    m = jnp.ravel(jnp.broadcast_to(mask, shape))
    flat = jnp.ravel(source).astype(self.dtype)
    taken = flat[jnp.clip(jnp.cumsum(m) - 1, 0, max(flat.size - 1, 0))] if flat.size else jnp.zeros_like(m, self.dtype)
    return jnp.reshape(jnp.where(m, taken, jnp.ravel(jnp.broadcast_to(self, shape))), shape)


@impl("masked_scatter_backward")
def masked_scatter_backward(grad_output, mask, sizes):
    """The masked entries of grad_output, in order, padded with zeros to `sizes`' numel."""
    numel = int(np.prod(tuple(sizes), dtype=np.int64))
    m = jnp.ravel(jnp.broadcast_to(mask, jnp.shape(grad_output)))
    pos = jnp.where(m, jnp.cumsum(m) - 1, numel)
    out = jnp.zeros((numel,), grad_output.dtype).at[pos].add(jnp.ravel(grad_output), mode="drop")
    return jnp.reshape(out, tuple(sizes))


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


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the indexing ops: gather and scatter, index_*, masked_*, take and put, the
# _unsafe_* indexing of torch 2.13's decompositions, scatter_reduce and index_reduce.
#
# All but the reductions are linear in their differentiable inputs, so no kinks; what matters
# are the variants: negative dims, broadcast masks and values, index lists with None and bool
# masks. Duplicate indices appear only where the derivative is unique (accumulating ops,
# gathers): with overwriting ops (scatter, index_copy, index_put without accumulate) a
# duplicate makes the written value depend on which write wins. scatter_reduce and
# index_reduce repeat indices, with values drawn apart so that no extreme is tied. Cases are
# written as shapes.py's are (argument tuples, tensors as T(shape)).
def _idx(*values):
    return np.asarray(values, np.int64)


def _mask(shape, seed=0):
    return np.random.default_rng(seed).random(shape) < 0.5


_ROWS = _idx([0, 3], [2, 1], [1, 2])  # per row: distinct columns of a 3x4 input
register_shape_cases(
    "gather",
    cases=[
        (T(3, 4), 1, _idx([0, 3], [2, 2], [1, 1])),
        (T(3, 4), 0, _idx([0, 2, 2, 1], [1, 1, 0, 2])),
        (T(3, 4), -1, _ROWS),
    ],
)
# src of index's shape: the spec's gradient of src, grad.gather(dim, index), has index's shape
register_shape_cases(
    "scatter_.src", "scatter.src", cases=[(T(3, 4), 1, _ROWS, T(3, 2)), (T(3, 4), 0, _idx([0, 2, 1, 1]), T(1, 4))]
)
register_shape_cases(
    "scatter_.value",
    "scatter.value",
    cases=[(T(3, 4), 1, _ROWS, 0.5), (T(3, 4), 0, _idx([0, 2, 1, 1], [1, 1, 0, 2]), -1.0)],
)
register_shape_cases(
    "scatter_add_",
    "scatter_add",
    cases=[
        (T(3, 4), 1, _idx([0, 0], [2, 2], [1, 3]), T(3, 2)),
        (T(3, 4), 0, _idx([0, 2, 2, 1], [0, 0, 0, 2]), T(2, 4)),
    ],
)
register_shape_cases(
    "index.Tensor",
    cases=[
        (T(3, 4), [_idx(2, 0, 2)]),
        (T(3, 4, 5), [None, _idx(3, 1), _idx(0, -1)]),
        (T(3, 4), [_mask((3, 4))]),
        (T(3, 4, 5), [_idx([2], [0]), None, _idx(1, 4, 3)]),
    ],
)
register_shape_cases(
    "index_add_", "index_add", cases=[(T(4, 3), 0, _idx(1, 3, 1), T(3, 3)), (T(3, 4), -1, _idx(2), T(3, 1))]
)
register_shape_cases(
    "index_add_.alpha",
    cases=[(T(4, 3), 0, _idx(1, 3, 1), T(3, 3)), (T(3, 4), -1, _idx(2), T(3, 1))],
    kwargs={"alpha": 2.0},
)
register_shape_cases(
    "index_copy_", "index_copy", cases=[(T(4, 3), 0, _idx(3, 1), T(2, 3)), (T(3, 4), -1, _idx(2, 0), T(3, 2))]
)
register_shape_cases("index_fill_.int_Scalar", cases=[(T(4, 3), 0, _idx(1, 3, 1), 0.5), (T(3, 4), -1, _idx(2), -1.0)])
# distinct indices: 1.7's formula for `value` counts a repeated index twice (1.10 takes _unique)
register_shape_cases("index_fill.int_Scalar", cases=[(T(4, 3), 0, _idx(1, 3, 1), 0.5), (T(3, 4), -1, _idx(2), -1.0)])
# torch 2.13's formula for `value` takes _unique: a repeated index counts once
register_shape_cases("index_fill.int_Tensor", cases=[(T(4, 3), 0, _idx(1, 3, 1), T()), (T(3, 4), -1, _idx(2), T())])
register_shape_cases("index_fill_.int_Tensor", cases=[(T(4, 3), 0, _idx(1, 3), T()), (T(3, 4), -1, _idx(2), T())])
_PUT = [
    (T(3, 4), [_idx(2, 0)], T(2, 4), False),
    (T(3, 4), [_idx(2, 0, 2, 2)], T(4, 4), True),
    (T(3, 4), [None, _idx(3, 1)], T(3, 2), False),
    (T(3, 4), [_idx(1, 0)], T(4), False),
    (T(3, 4), [_mask((3, 4), seed=1)], T(int(_mask((3, 4), seed=1).sum())), True),
]
register_shape_cases("index_put_", "index_put", cases=_PUT)
register_shape_cases("_index_put_impl_", cases=[c + (False,) for c in _PUT])
register_shape_cases("index_select", cases=[(T(4, 3), 0, _idx(1, 3, 1, 0, 1)), (T(3, 4), -1, np.int64(2))])
register_shape_cases(
    "masked_fill_.Scalar", "masked_fill.Scalar", cases=[(T(3, 4), _mask((3, 4)), 0.5), (T(3, 4), _mask((4,)), -1.0)]
)
register_shape_cases("masked_fill_.Tensor", cases=[(T(3, 4), _mask((3, 4)), T()), (T(3, 4), _mask((4,)), T())])
# `sizes` equal to grad_output's: torch 2.13's result formula gives the tangent grad_output's
# sizes, so forward mode (in torch as here) fails for any other `sizes`
register_shape_cases(
    "masked_scatter_backward",
    cases=[(T(3, 4), _mask((3, 4)), (3, 4)), (T(3, 4), _mask((4,)), (3, 4)), (T(2, 3), _mask((2, 3), 1), (2, 3))],
)
register_shape_cases(
    "masked_scatter_", "masked_scatter", cases=[(T(3, 4), _mask((3, 4)), T(12)), (T(3, 4), _mask((4,)), T(3, 5))]
)
register_shape_cases("masked_select", cases=[(T(3, 4), _mask((3, 4))), (T(3, 4), _mask((4,))), (T(4), _mask((3, 4)))])
register_shape_cases("take", cases=[(T(3, 4), _idx([0, 11, -1], [5, 5, 2]))])
register_shape_cases(
    "put_",
    "put",
    cases=[(T(3, 4), _idx(0, 7, -1, 5, 3), T(5), False), (T(3, 4), _idx([1, 1, 9], [4, 1, 0]), T(2, 3), True)],
)
register_shape_cases("masked_fill.Tensor", cases=[(T(3, 4), _mask((3, 4)), T()), (T(3, 4), _mask((4,)), T())])
register_shape_cases(
    "_unsafe_index.Tensor",
    cases=[
        (T(3, 4), [_idx(2, 0, 2)]),
        (T(3, 4, 5), [None, _idx(3, 1), _idx(0, -1)]),
        (T(3, 4, 5), [None, _idx(3, 1, 3), _idx(0, -1, 0)]),  # a repeated (row, column) pair
    ],
)
register_shape_cases(
    "_unsafe_index_put",
    cases=[
        (T(3, 4), [_idx(2, 0)], T(2, 4), False),
        (T(3, 4), [_idx(2, 0, 2, 2)], T(4, 4), True),
        (T(3, 4), [None, _idx(3, 1)], T(3, 2), False),
    ],
)
# indices out of range only where the mask is False, as upsampling's borders use them
_OUT = _idx(0, 2, 5)
_KEEP = np.array([[True], [True], [False]])
register_shape_cases(
    "_unsafe_masked_index",
    cases=[(T(3, 4), _KEEP, [_OUT], 0.5), (T(3, 4), _mask((2, 4)), [None, _idx([0, 3, 3, 1], [2, 2, 0, 1])], 0.0)],
)
register_shape_cases(
    "_unsafe_masked_index_put_accumulate",
    cases=[
        (T(3, 4), _KEEP, [_OUT], T(3, 4)),
        (T(3, 4), _mask((2, 4)), [None, _idx([0, 3, 3, 1], [2, 2, 0, 1])], T(3, 2, 4)),
    ],
)


def _reducing(index, src_shape, reductions):
    """Samples of scatter_reduce / index_reduce: every reduction with and without self, repeated
    indices, a zero in src for prod's own path; values drawn apart, so no extreme is tied."""

    def make(op, rng, dtype=np.float64):
        out = []
        for reduce in reductions:
            for include_self in (True, False):
                x, src = draw(rng, (3, 4), -2.0, 2.0, dtype), draw(rng, src_shape, -2.0, 2.0, dtype)
                if reduce == "prod":
                    src.flat[1] = 0.0
                for dim in (1, -1):
                    out.append(
                        Sample(
                            (x, dim, index, src, reduce),
                            {"include_self": include_self},
                            f"{reduce} include_self={include_self} dim={dim}",
                        )
                    )
        return out

    return make


samples("scatter_reduce.two")(
    _reducing(_idx([0, 0, 2], [1, 3, 3], [2, 2, 2]), (3, 3), ("sum", "prod", "mean", "amax", "amin"))
)
samples("index_reduce")(_reducing(_idx(0, 2, 0, 3), (3, 4), ("prod", "mean", "amax", "amin")))
known_failure(
    "spec gap: torch 2.13's scatter_reduce_jvp states no tangent for reduce='prod' (torch.func.jvp "
    "gives zeros there too); the other reductions' tangents are compared with torch in the tests. "
    "jvp_vjp inherits it: the backward formula reads `result`, whose tangent is that jvp's "
    "(measured on torch 2.13's file: 3.7 off JAX's autodiff of the forward at prod's first sample)",
    "scatter_reduce.two",
    modes=("jvp", "jvp_vjp"),
)


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(
    Equivalent(
        lambda aten, a: aten.index_add_(a["self"], a["dim"], a["index"], a["source"], alpha=a["alpha"]),
        "torch 2.13 merged the overload into index_add_",
    ),
    "index_add_.alpha",
)

# scatter_reduce and index_reduce on ties and zeros (the samples keep clear of both): targets
# reached several times, sources equal to self's own element (amax/amin split the gradient among
# the ties), one zero and two zeros in one target (prod's own paths). With include_self=True,
# the default; include_self=False is keyword-only, which a kink tuple cannot pass:
# tests/ops/test_indexing.py compares those.
_SELF = matrix([[1.0, 2.0, -1.0, 0.5], [0.0, 3.0, 1.0, 2.0], [2.0, -1.0, 4.0, 1.5]])
_SCATTER, _SRC = _idx([0, 0, 2], [1, 3, 3], [2, 2, 2]), matrix([[1.0, 0.0, -1.0], [3.0, 2.0, 0.7], [0.0, 4.0, 0.0]])
_SOURCE = matrix([[1.0, 0.0, 3.0, 0.5], [2.0, 3.0, 1.0, 2.0], [0.0, 1.0, 0.0, -1.0]])
kinks(
    "scatter_reduce.two",
    *[(_SELF, 1, _SCATTER, _SRC, r) for r in ("sum", "prod", "mean", "amax", "amin")],
    (_SELF, -2, _SCATTER.T % 3, _SRC.T.copy(), "prod"),  # two zeros in one target, a negative dim
)
kinks("index_reduce", *[(_SELF, -1, _idx(0, 2, 0, 3), _SOURCE, r) for r in ("prod", "mean", "amax", "amin")])
