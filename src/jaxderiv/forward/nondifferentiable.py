"""ATen ops that derivatives.yaml does not list because they carry no gradient: constructors
(`zeros`, `arange`, `*_like`, `new_*`, `empty_permuted`), metadata asserts, `detach`, queries and
logic on integer or bool tensors (`argmax`, `logical_not`, `bitwise_and`, `nonzero_static`,
`repeat_interleave.Tensor`), and ops whose backward ATen leaves unimplemented (`floor_divide`,
`heaviside`, `_chunk_cat`, `resize_`). Exported graphs contain
them; `jaxderiv.torch` runs them with their inputs held constant. Each follows ATen: default
dtype float32 for floating constructors, `arange`'s dtype from its arguments, a `*_like`'s dtype
and shape from its input. `ranges.py`, `queries.py` and `histograms.py` register more with `impl`."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..tensor_utils import long_dtype
from . import OpKind
from . import impl as _register
from .binary import div_mode, result_type
from .shapes import concrete

# What reading a traced value (jit, eval_shape, vmap, export) raises: np.asarray of a tracer
# (TracerArrayConversionError), bool/int of one (ConcretizationTypeError and its subclasses).
_TRACED = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError)

__all__ = ["impl", "without_derivative", "UNINITIALIZED"]


def impl(*names):
    """Register a forward whose outputs never carry a gradient (ATen gives them none)."""
    return _register(*names, kind=OpKind.GRADIENT_FREE)


def without_derivative(*names):
    """Register a forward whose result torch marks as requiring grad but whose derivative ATen
    does not implement (`heaviside`, `floor_divide`, histograms): differentiating it raises, as
    torch's backward does, instead of giving a silent zero."""
    return _register(*names, kind=OpKind.NO_DERIVATIVE)


# Constructors whose values in ATen are whatever memory held (here zeros): comparisons with
# torch look at their shapes and dtypes only.
UNINITIALIZED = frozenset(
    {"empty.memory_format", "empty_strided", "empty_permuted", "empty_like", "new_empty", "new_empty_strided"}
)

_DEFAULT_FLOAT = jnp.float32  # torch.get_default_dtype() unless a model changes it


def _scalar_dtype(value, dtype):
    """ATen's dtype for a Scalar fill: bool, int64, the default float, complex64."""
    if dtype is not None:
        return dtype
    if isinstance(value, bool):
        return jnp.bool_
    if isinstance(value, int):
        return long_dtype()
    if isinstance(value, complex):
        return jnp.complex64
    return _DEFAULT_FLOAT


def _filled(size, value, dtype):
    return jnp.full(tuple(size), value, dtype)


@impl("zeros")
def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _filled(size, 0, dtype or _DEFAULT_FLOAT)


@impl("ones")
def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _filled(size, 1, dtype or _DEFAULT_FLOAT)


@impl("empty.memory_format")
def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # Uninitialised memory in ATen; zeros here, so a graph that reads it is deterministic.
    return _filled(size, 0, dtype or _DEFAULT_FLOAT)


@impl("empty_strided")
def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _filled(size, 0, dtype or _DEFAULT_FLOAT)


@impl("full")
def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return _filled(size, fill_value, _scalar_dtype(fill_value, dtype))


@impl("scalar_tensor")
def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    # ATen: the default float dtype whatever the Scalar's kind, unless given.
    return jnp.asarray(s, dtype or _DEFAULT_FLOAT)


def _like(self, value, dtype):
    return jnp.full(jnp.shape(self), value, dtype if dtype is not None else jnp.result_type(self))


@impl("zeros_like")
def zeros_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _like(self, 0, dtype)


@impl("ones_like")
def ones_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _like(self, 1, dtype)


@impl("empty_like")
def empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _like(self, 0, dtype)


@impl("full_like")
def full_like(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _like(self, fill_value, dtype)


def _new(self, size, value, dtype):
    return jnp.full(tuple(size), value, dtype if dtype is not None else jnp.result_type(self))


@impl("new_zeros")
def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return _new(self, size, 0, dtype)


@impl("new_ones")
def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return _new(self, size, 1, dtype)


@impl("new_empty")
def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return _new(self, size, 0, dtype)


def _check_size(size) -> tuple:
    if any(n < 0 for n in size):
        raise ValueError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    return tuple(size)


@impl("new_empty_strided")
def new_empty_strided(self, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    """`empty_strided` with self's dtype unless given: zeros of `size` here (values are
    uninitialised in ATen; JAX arrays have no strides, so `stride` only has to match size's
    length, as ATen checks)."""
    if len(size) != len(stride):
        raise ValueError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides ({len(stride)})")
    return _new(self, _check_size(size), 0, dtype)


@impl("new_full")
def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return _new(self, size, fill_value, dtype)


def _arange_dtype(values, dtype):
    """ATen: int64 when every bound is integral, else the default float dtype."""
    if dtype is not None:
        return dtype
    return (
        long_dtype()
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)
        else _DEFAULT_FLOAT
    )


@impl("arange.start_step")
def arange_start_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    dt = _arange_dtype((start, end, step), dtype)
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    n = max(0, math.ceil((end - start) / step))
    # start + i * step, as ATen computes each element (not a running sum).
    if jnp.issubdtype(dt, jnp.integer):
        return (start + step * jnp.arange(n, dtype=long_dtype())).astype(dt)
    return (start + step * jnp.arange(n, dtype=jnp.float64 if jnp.dtype(dt).itemsize >= 8 else jnp.float32)).astype(dt)


@impl("arange.start")
def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(start, end, 1, dtype)


@impl("arange")
def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(0, end, 1, dtype)


@impl("eye")
def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return eye_m(n, n, dtype)


@impl("eye.m")
def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    if n < 0 or m < 0:
        raise ValueError(f"eye: n and m must be non-negative, got {n} and {m}")
    return jnp.eye(n, m, dtype=dtype or _DEFAULT_FLOAT)


def _triangle_indices(name: str, row, col, offset, dtype, indices):
    """The (2, N) row and column indices `indices` (np.tril_indices or np.triu_indices) gives of
    a row x col matrix from the diagonal `offset` on, in row-major order as ATen lists them;
    int64 unless `dtype` (an integer dtype) is given. The sizes are ints: a constant."""
    for which, v in (("row", row), ("col", col)):
        if v < 0:
            raise ValueError(f"{name}: {which} must be non-negative, got {v}")
    dt = jnp.dtype(dtype or long_dtype())
    if not jnp.issubdtype(dt, jnp.integer):
        raise NotImplementedError(f'"{name}" not implemented for {dt}: only integer dtypes')
    rows, cols = indices(row, offset, col)
    return jnp.asarray(np.stack([rows, cols]), dt)


@impl("tril_indices")
def tril_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    return _triangle_indices("tril_indices", row, col, offset, dtype, np.tril_indices)


@impl("triu_indices")
def triu_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    return _triangle_indices("triu_indices", row, col, offset, dtype, np.triu_indices)


# -- metadata and queries --------------------------------------------------------------------


@impl("equal")
def equal(self, other):
    """Same shape and every element equal (NaN equals nothing), as one bool: a Python bool
    where the values are known, a 0-d bool array under tracing."""
    a, b = jnp.asarray(self), jnp.asarray(other)
    if a.shape != b.shape:
        return False
    same = jnp.all(a == b)
    try:
        return bool(same)
    except jax.errors.ConcretizationTypeError:  # a tracer: the value is known when the program runs
        return same


@impl("_local_scalar_dense")
def _local_scalar_dense(self):
    """`Tensor.item()`: the one element, as a 0-d array (a Python number would end tracing)."""
    x = jnp.asarray(self)
    if x.size != 1:
        raise ValueError(f"a Tensor with {x.size} elements cannot be converted to Scalar")
    return x.reshape(())


@impl("_linalg_check_errors")
def _linalg_check_errors(info, api_name, is_matrix):
    """ATen raises where a factorization's `info` is nonzero. Where the values are known here
    too, the same; under tracing they are not, and the result's NaNs tell instead."""
    try:
        bad = np.asarray(info)
    except _TRACED:
        return None
    failed = np.flatnonzero(bad)
    if failed.size:
        where = "" if bad.ndim == 0 else f" (batch element {failed[0]})"
        raise ValueError(f"{api_name}: the factorization failed{where}: info = {bad.reshape(-1)[failed[0]]}")
    return None


@impl("_assert_tensor_metadata")
def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, device=None, layout=None):
    if size is not None and tuple(jnp.shape(a)) != tuple(size):
        raise ValueError(f"tensor metadata assert: shape {tuple(jnp.shape(a))}, expected {tuple(size)}")
    # the dtype as JAX's mode has it: torch's int64 is int32 with jax_enable_x64 off
    expected = jax.dtypes.canonicalize_dtype(dtype) if dtype is not None else None
    if expected is not None and jnp.dtype(jnp.result_type(a)) != expected:
        raise ValueError(f"tensor metadata assert: dtype {jnp.result_type(a)}, expected {expected}")
    return None


@impl("sym_size.int")
def sym_size(self, dim):
    return jnp.shape(self)[dim]


@impl("sym_numel")
def sym_numel(self):
    return math.prod(jnp.shape(self))


@impl("sym_stride.int")
def sym_stride(self, dim):
    shape = jnp.shape(self)
    return math.prod(shape[dim % len(shape) + 1 :]) if shape else 1


def _arg_reduce(fn, self, dim, keepdim):
    x = jnp.asarray(self)
    if dim is None:
        out = fn(x.reshape(-1)) if x.ndim else jnp.asarray(0)
        return out.reshape((1,) * x.ndim).astype(long_dtype()) if keepdim else out.astype(long_dtype())
    if x.ndim == 0:
        return jnp.asarray(0, long_dtype())
    # ATen treats NaN as the extreme value: the first NaN's index wins, as jnp's does.
    return fn(x, axis=dim, keepdims=keepdim).astype(long_dtype())


@impl("argmax")
def argmax(self, dim=None, keepdim=False):
    return _arg_reduce(jnp.argmax, self, dim, keepdim)


@impl("argmin")
def argmin(self, dim=None, keepdim=False):
    return _arg_reduce(jnp.argmin, self, dim, keepdim)


@impl("logical_not")
def logical_not(self):
    return jnp.logical_not(self)


@impl("bitwise_not")
def bitwise_not(self):
    x = jnp.asarray(self)
    return jnp.logical_not(x) if x.dtype == jnp.bool_ else jnp.bitwise_not(x)


def _bitwise(fn_bool, fn_int):
    def run(self, other):
        a, b = jnp.asarray(self), jnp.asarray(other)
        if a.dtype == jnp.bool_ and b.dtype == jnp.bool_:
            return fn_bool(a, b)
        if jnp.issubdtype(jnp.result_type(a, b), jnp.inexact):
            raise TypeError(f"bitwise ops take integer or bool tensors, not {jnp.result_type(a, b)}")
        return fn_int(a, b)

    return run


for _name, _b, _i in (
    ("and", jnp.logical_and, jnp.bitwise_and),
    ("or", jnp.logical_or, jnp.bitwise_or),
    ("xor", jnp.logical_xor, jnp.bitwise_xor),
):
    impl(f"bitwise_{_name}.Tensor", f"bitwise_{_name}.Scalar", f"__{_name}__.Tensor", f"__{_name}__.Scalar")(
        _bitwise(_b, _i)
    )
    impl(f"logical_{_name}")(lambda self, other, _f=_b: _f(jnp.asarray(self), jnp.asarray(other)))


# -- ops ATen lists no derivative for ---------------------------------------------------------
# torch marks their results as requiring grad, but backward raises "derivative for aten::... is
# not implemented"; so does differentiating them here (`without_derivative`).


def _known(x):
    """`x` as a NumPy array where its values are known, None under tracing."""
    try:
        return np.asarray(x)
    except _TRACED:
        return None


@without_derivative("floor_divide", "floor_divide.Scalar")
def floor_divide(self, other):
    """`div(self, other, rounding_mode='floor')`: ATen's type promotion, integers stay integers
    (rounded toward -inf; a zero divisor raises where the values are known, as ATen does)."""
    dt = result_type(self, other)
    if dt == np.bool_ or jnp.issubdtype(dt, jnp.complexfloating):
        raise TypeError(f'"div_floor_cpu" not implemented for {dt}')
    if jnp.issubdtype(dt, jnp.integer):
        divisor = _known(other)
        nonempty = math.prod(np.broadcast_shapes(jnp.shape(self), jnp.shape(other))) > 0
        if divisor is not None and nonempty and (divisor == 0).any():
            raise ZeroDivisionError("ZeroDivisionError")
    return div_mode(self, other, "floor")


@without_derivative("heaviside")
def heaviside(self, values):
    """`values` where self is 0 (either sign), else 1 where self > 0 and 0 elsewhere (NaN
    included, as ATen's kernel compares); ATen requires one real dtype for both."""
    a, v = jnp.asarray(self), jnp.asarray(values)
    if jnp.iscomplexobj(a) or jnp.iscomplexobj(v):
        raise TypeError("heaviside is not yet implemented for complex tensors.")
    if a.dtype != v.dtype:
        raise TypeError("heaviside is not yet implemented for tensors with different dtypes.")
    a, v = jnp.broadcast_arrays(a, v)
    return jnp.where(a == 0, v, (a > 0).astype(a.dtype))


@without_derivative("_chunk_cat")
def _chunk_cat(tensors, dim, num_chunks):
    """FSDP's fused copy: each tensor zero-padded along `dim` to a multiple of num_chunks, viewed
    as (..., num_chunks, -1) there, the views concatenated after `dim` (torch's decomposition)."""
    xs = [jnp.asarray(t) for t in tensors]
    if num_chunks < 1:
        raise ValueError("_chunk_cat expects positive num_chunks")
    if not xs:
        raise ValueError("_chunk_cat expects a non-empty input tensor list")
    if any(x.size == 0 for x in xs):
        raise ValueError("_chunk_cat expects non-empty tensor")
    if any(x.dtype != xs[0].dtype for x in xs):
        raise TypeError("_chunk_cat expects all input tensors with the same dtype")
    if len({x.ndim for x in xs}) == 1:
        if not -xs[0].ndim <= dim < xs[0].ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-xs[0].ndim}, {xs[0].ndim - 1}], but got {dim})"
            )
        dim %= xs[0].ndim
    elif dim < 0 or any(dim >= x.ndim for x in xs):
        raise ValueError(
            "_chunk_cat expects non-negative dim < ndim for all input tensors when they have different ndims"
        )
    if any(x.shape[:dim] != xs[0].shape[:dim] for x in xs):
        raise ValueError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors")
    views = []
    for x in xs:
        padded = -(-x.shape[dim] // num_chunks) * num_chunks
        x = jnp.pad(x, [(0, padded - x.shape[dim]) if d == dim else (0, 0) for d in range(x.ndim)])
        views.append(x.reshape(*x.shape[:dim], num_chunks, -1))
    return jnp.concatenate(views, axis=dim + 1)


@impl("empty_permuted")
def empty_permuted(size, physical_layout, dtype=None, layout=None, device=None, pin_memory=None):
    """`empty` whose memory is laid out in `physical_layout`'s order of dims: JAX arrays have no
    strides, so zeros of the logical shape (values are uninitialised in ATen)."""
    if len(physical_layout) != len(size):
        raise ValueError(
            "Number of dimensions in size does not match the length of the physical_layout; i.e. "
            f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(physical_layout)}"
        )
    if sorted(d % len(size) if -len(size) <= d < len(size) else d for d in physical_layout) != list(range(len(size))):
        raise ValueError(
            f"physical_layout {list(physical_layout)} is not a permutation of the dims (duplicate dim not allowed)"
        )
    return _filled(size, 0, dtype or _DEFAULT_FLOAT)


@impl("detach")
def detach(self):
    """The same values, cut from autograd: VariableTypeManual's in torch (derivatives.yaml has no
    entry), a stop_gradient here."""
    return jax.lax.stop_gradient(jnp.asarray(self))


# -- index queries with data-dependent or padded shapes ----------------------------------------


@impl("repeat_interleave.Tensor")
def repeat_interleave(repeats, output_size=None):
    """`arange(len(repeats))` with element i repeated repeats[i] times, in repeats' dtype (int32
    or int64, 1-d, none negative). Its length is the sum of repeats: known only eagerly, unless
    `output_size` gives it (then jit works; ATen refuses a wrong one, checked where the values
    are known)."""
    r = jnp.asarray(repeats)
    if r.ndim != 1:
        raise ValueError("repeat_interleave only accept 1D vector as repeat")
    if r.dtype not in (jnp.int32, jnp.int64):
        raise TypeError(f'"repeat_interleave_cpu" not implemented for {np.dtype(r.dtype)}')
    if output_size is None:
        known = concrete(
            r, "repeat_interleave", "pass output_size (the sum of repeats) to give the result a static shape"
        )
    else:
        known = _known(r)
    if known is not None:
        if (known < 0).any():
            raise ValueError("repeats can not be negative")
        total = int(known.sum())
        if output_size is not None and output_size != total:
            raise ValueError("allocated size does not match required size")
        output_size = total
    return jnp.repeat(jnp.arange(r.shape[0], dtype=r.dtype), r, total_repeat_length=output_size)


@impl("nonzero_static")
def nonzero_static(self, size, fill_value=-1):
    """`nonzero` with a static shape (size, ndim), int64: the first `size` nonzero elements'
    coordinates in row-major order, rows past the last one filled with fill_value. A 0-d input
    gives (size, 0)."""
    x = jnp.asarray(self)
    if size < 0:
        raise ValueError("nonzero_static: 'size' must be an non-negative integer")
    if x.ndim == 0:
        return jnp.zeros((size, 0), long_dtype())
    if x.size == 0:  # jnp.nonzero pads an empty input with zeros
        return jnp.full((size, x.ndim), fill_value, long_dtype())
    coords = jnp.nonzero(x != 0, size=size, fill_value=fill_value)
    return jnp.stack(coords, axis=1).astype(long_dtype())


# -- resize_ ------------------------------------------------------------------------------------


def _resized(self, size):
    """ATen's resize_ keeps the storage: the first min(numel) elements of the result, in row-major
    order, are self's (its logical order: a JAX array is contiguous); ATen leaves any further ones
    uninitialised (whatever the grown storage holds), zeros here."""
    x = jnp.asarray(self)
    shape = _check_size(size)
    n = math.prod(shape)
    flat = x.reshape(-1)[:n]
    return jnp.pad(flat, (0, n - flat.shape[0])).reshape(shape)


@without_derivative("resize_")
def resize_(self, size, memory_format=None):
    """self resized to `size` in self's dtype (a new array: JAX cannot resize in place). torch
    refuses to resize a tensor that requires grad; differentiating it raises here."""
    return _resized(self, size)


@without_derivative("resize_as_")
def resize_as_(self, the_template, memory_format=None):
    """resize_ to the_template's shape."""
    return _resized(self, jnp.shape(the_template))
