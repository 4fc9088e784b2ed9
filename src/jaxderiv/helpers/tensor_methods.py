"""Tensor methods formulas call (`x.sizes()`, `grad.to(...)`, `x.expand({...})`), ATen semantics.

Methods that are also ATen ops (`x.sin()`, `x.neg()`) fall back to the op's forward
implementation in the translator; only methods with no op of their own, or whose method
form differs, are written here.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..cxx import is_tensor
from ..forward import binary
from ..namespace import helper, method
from .core import TensorOptions, dtype_of


def _dim(x, d: int) -> int:
    n = jnp.ndim(x)
    return d + max(n, 1) if d < 0 else d


@method("sizes", "sym_sizes", "shape")
def sizes(x):
    return tuple(jnp.shape(x))


@method("size", "sym_size")
def size(x, d=None):
    if d is None:  # `IntArrayRef.size()` is its length
        return len(x)
    return jnp.shape(x)[_dim(x, d)]


@method("numel", "sym_numel")
def numel(x):
    return int(np.prod(jnp.shape(x), dtype=np.int64))


@method("dim", "ndimension")
def dim(x):
    return jnp.ndim(x)


@method("strides", "sym_strides")
def strides(x):
    shape, out, acc = jnp.shape(x), [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


@method("scalar_type", "dtype")
def scalar_type(x):
    return np.dtype(jnp.result_type(x))


@method("options")
def options(x):
    return TensorOptions(jnp.result_type(x))


@method("defined", "has_value")
def defined(x):
    return x is not None


@method("requires_grad")
def requires_grad(x):
    """JAX arrays carry no requires_grad flag: a defined floating tensor is taken to require
    its gradient (computed, and dropped where no one asks for it)."""
    return x is not None and bool(jnp.issubdtype(jnp.result_type(x), jnp.inexact))


@method("value")
def value(x):
    return x


@method("is_complex", "isComplex")
def is_complex(x):
    if isinstance(x, (complex, np.complexfloating)):
        return True
    return is_tensor(x) and jnp.iscomplexobj(x)


@method("is_floating_point")
def is_floating_point(x):
    return jnp.issubdtype(jnp.result_type(x), jnp.floating)


@method("toDouble", "to_double")
def to_double(x):
    return float(x.real if isinstance(x, complex) else x)


@method("toFloat")
def to_float(x):
    return float(x)


@method("toComplexDouble")
def to_complex_double(x):
    return complex(x)


@method("toLong", "toInt", "guard_int", "expect_int")
def to_long(x, file=None, line=None):
    """`toLong()`, or SymInt's `guard_int(__FILE__, __LINE__)`: sizes are plain integers here."""
    return int(x)


@method("to", "type")
def to(x, target, non_blocking=False, copy=False, memory_format=None):
    """`x.to(dtype)`, `x.to(options)` or `x.to(other)`; device and copy flags do nothing here."""
    if target is None:
        return x
    dtype = dtype_of(target)
    if dtype is None:
        return x
    if jnp.iscomplexobj(x) and not jnp.issubdtype(dtype, jnp.complexfloating):
        x = jnp.real(x)
    return jnp.asarray(x).astype(dtype)


@method("type_as")
def type_as(x, other):
    return to(x, jnp.result_type(other))


@method("contiguous", "coalesce", "to_dense")
def contiguous(x, memory_format=None):
    return x


@method("detach")
def detach(x):
    """The value, cut from differentiation: a formula's `x.detach()` is a constant to the
    derivatives taken of the formula itself (double backward, forward-over-reverse)."""
    return jax.lax.stop_gradient(x) if is_tensor(x) else x


@method("is_contiguous")
def is_contiguous(x, memory_format=None):
    return True


@method("vec")
def vec(x):
    return tuple(x)


@method("expand")
def expand(x, size, implicit=False):
    """ATen expand: -1 keeps a dimension; new leading dimensions are added."""
    shape = jnp.shape(x)
    lead = len(size) - len(shape)
    target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return jnp.broadcast_to(x, target)


@method("expand_as")
def expand_as(x, other):
    return jnp.broadcast_to(x, jnp.shape(other))


@method("new_zeros")
def new_zeros(x, size, options=None):
    return jnp.zeros(tuple(size), dtype_of(options) or jnp.result_type(x))


@method("new_ones")
def new_ones(x, size, options=None):
    return jnp.ones(tuple(size), dtype_of(options) or jnp.result_type(x))


@method("new_empty")
def new_empty(x, size, options=None):
    return jnp.zeros(tuple(size), dtype_of(options) or jnp.result_type(x))


@method("new_full")
def new_full(x, size, fill, options=None):
    return jnp.full(tuple(size), fill, dtype_of(options) or jnp.result_type(x))


@method("conj", "conj_physical")
def conj(x):
    if x is None:
        return None
    if is_tensor(x):
        return jnp.conj(x) if jnp.iscomplexobj(x) else x
    return x.conjugate() if hasattr(x, "conjugate") else x


@method("masked_fill_", "masked_fill")
def masked_fill(x, mask, value):
    return jnp.where(mask, jnp.asarray(value, jnp.result_type(x)), x)


@method("square")
def square(x):
    """x * x (ATen's square is pow(x, 2); bool squares as int64 there, never in a formula)."""
    return x * x


@method("fill_")
def fill_(x, value):
    return jnp.full(jnp.shape(x), value, jnp.result_type(x))


@method("zero_")
def zero_(x):
    return jnp.zeros_like(x)


# Methods of ops registered under overload names only (`pow.Tensor_Scalar`, `div.Tensor`):
# their forward implementations take a Tensor or a Scalar, as the C++ method overloads do.
method("pow")(binary.pow)


@method("div")
def div(x, other, rounding_mode=None):
    """`x.div(other)` is true division; `x.div(other, "trunc")` the rounding overload (Tensor_mode)."""
    return binary.div(x, other) if rounding_mode is None else binary.div_mode(x, other, rounding_mode)


@method("sum")
def sum(x, dim=None, keepdim=False, dtype=None):
    """`x.sum()` or `x.sum(dim, keepdim)`; an empty `dim` reduces everything; integers sum in int64."""
    axis = (dim,) if isinstance(dim, int) else tuple(dim or ())
    axis = () if jnp.ndim(x) == 0 else axis  # a 0-d tensor accepts dim 0 and -1: itself
    if dtype is None and not jnp.issubdtype(jnp.result_type(x), jnp.inexact):
        dtype = jnp.int64
    return jnp.sum(x, axis=axis or None, keepdims=keepdim, dtype=dtype)


@method("reshape", "view")
def reshape(x, size):
    return jnp.reshape(x, tuple(size))


@method("logical_and")
@helper("logical_and")
def logical_and(x, other):
    """`a.logical_and(b)`, `at::logical_and(a, b)`: newer formulas build masks this way."""
    return jnp.logical_and(x, other)


# The in-place forms (fmax's and fmin's formulas combine masks in place) are the same
# here: values are never views.
@method("logical_or", "logical_or_")
@helper("logical_or")
def logical_or_(x, other):
    return jnp.logical_or(x, other)


@method("logical_not", "logical_not_")
def logical_not_method(x):
    return jnp.logical_not(x)


@method("suggest_memory_format")
def suggest_memory_format(x, channels_last_strides_exact_match=False):
    """JAX arrays have no strides to suggest from: always the contiguous format."""
    return "contiguous_format"


@method("resolve_conj", "resolve_neg")
def resolve_conj(x):
    """Materialises a lazy conjugate or negative view: the value is unchanged (not a conj)."""
    return x


@method("copy_")
def copy_(x, src):
    """`x.copy_(src)`: src's values in x's shape and dtype (in-place result formulas end this way)."""
    return jnp.broadcast_to(jnp.asarray(src).astype(jnp.result_type(x)), jnp.shape(x))


@method("layout")
def layout(x):
    """Every array here is strided (dense): `x.layout()` is kStrided."""
    return "Strided"


@method("flatten")
def flatten(x, start_dim=0, end_dim=-1):
    """Dims start_dim..end_dim merged into one; a 0-d tensor becomes 1-d."""
    shape = jnp.shape(x)
    if not shape:
        return jnp.reshape(x, (1,))
    start, end = _dim(x, start_dim), _dim(x, end_dim)
    merged = math.prod(shape[start : end + 1])  # explicit: -1 is ambiguous for an empty tensor
    return jnp.reshape(x, shape[:start] + (merged,) + shape[end + 1 :])


@method("view_as", "reshape_as")
def view_as(x, other):
    return jnp.reshape(x, jnp.shape(other))


@method("narrow")
def narrow(x, dim, start, length):
    """`length` elements of `dim` from `start` (negative start counts from the end)."""
    d = _dim(x, dim)
    start = start + jnp.shape(x)[d] if start < 0 else start
    index = [slice(None)] * jnp.ndim(x)
    index[d] = slice(start, start + length)
    return x[tuple(index)]


@method("device")
def device(x):
    """Every array is on the device JAX runs on; formulas ask only is_cpu() / is_xpu() of it,
    to choose memory layouts, which do not matter here."""
    return "cpu"


@method("is_cpu")
def is_cpu(device_or_tensor):
    return True


@method("is_xpu", "is_cuda")
def is_xpu(device_or_tensor):
    return False
