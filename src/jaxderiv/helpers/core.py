"""C++ and ATen basics formulas use everywhere: types, optionals, tuples, dtypes, at:: creators."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..cxx import is_tensor
from ..errors import NotImplementedDerivative
from ..namespace import constant, helper, method, template

# -- values of C++ types ------------------------------------------------------------------


@helper("Tensor")
def undefined_tensor(value=None):
    """`Tensor()` is an undefined tensor; `Tensor(x)` is x."""
    return value


@helper("Scalar", "c10::Scalar")
def scalar(value):
    return value


# The C++ constructors a formula calls with any number of elements: the only variadic helpers.
VARIADIC = ("TensorList", "std::vector<Tensor>", "std::make_tuple")


@helper("TensorList", "std::vector<Tensor>")
def tensor_list(*items):
    return list(items)


@template("std::tuple", "std::make_tuple")
def _tuple_type(*types):
    return lambda *items: tuple(items)


@helper("std::make_tuple")
def make_tuple(*items):
    return tuple(items)


@template("std::get")
def _get(index):
    return lambda t: t[index]


@template("at::ArrayRef", "c10::ArrayRef", "IntArrayRef", "at::IntArrayRef")
def _array_ref_type(*types):
    """A view of a list, or of the one value given."""
    return lambda *items: tuple(items[0]) if len(items) == 1 and isinstance(items[0], (tuple, list)) else tuple(items)


@template("std::vector", "c10::SmallVector", "at::DimVector")
def _vector_type(*types):
    """C++'s constructors: `(n)` n default values (undefined tensors, zeros), `(n, v)` n copies
    of v, `(list)` a copy. The brace form `{a, b}` is a list of its items (see the translator)."""
    tensors = bool(types) and "Tensor" in str(types[0])

    def construct(*items):
        if len(items) == 1 and isinstance(items[0], (tuple, list)):
            return tuple(items[0])
        if len(items) in (1, 2) and isinstance(items[0], int) and not isinstance(items[0], bool):
            value = items[1] if len(items) == 2 else (None if tensors else 0)
            return [value] * items[0] if tensors else (value,) * items[0]
        raise TypeError(f"std::vector constructor with {len(items)} argument(s): only (n), (n, value) and (list) exist")

    return construct


@template("c10::complex", "std::complex")
def _complex_type(*types):
    return lambda re=0.0, im=0.0: complex(re, im)


@template("static_cast")
def _static_cast(type_name):
    convert = {"int64_t": int, "int": int, "double": float, "float": float, "bool": bool}.get(type_name)
    if convert is None:
        return lambda x: x
    return lambda x: convert(x) if not is_tensor(x) else x


@template("std::numeric_limits")
def _numeric_limits(type_name):
    raise ValueError("std::numeric_limits<T> must be followed by ::member()")


@method("value_or")
def value_or(value, default):
    """`opt.value_or(d)`: the optional's value, or d when it holds none."""
    return default if value is None else value


@helper("IntArrayRef", "at::IntArrayRef")
def int_array_ref(values=()):
    """`IntArrayRef({})` called as a function: the list it views."""
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)


@helper("c10::optional", "std::optional", "c10::make_optional", "std::make_optional")
def optional(value=None):
    return value


constant("c10::nullopt", None)
constant("std::nullopt", None)
constant("nullptr", None)
constant("M_PI", math.pi)
constant("at::Reduction::None", 0)
constant("at::Reduction::Mean", 1)
constant("at::Reduction::Sum", 2)
constant("Reduction::None", 0)
constant("Reduction::Mean", 1)
constant("Reduction::Sum", 2)
MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")
constant("at::MemoryFormat::Contiguous", "contiguous_format")
constant("at::MemoryFormat::Preserve", "preserve_format")
constant("at::MemoryFormat::ChannelsLast", "channels_last")
constant("at::MemoryFormat::ChannelsLast3d", "channels_last_3d")
constant("MemoryFormat::Contiguous", "contiguous_format")  # c10::MemoryFormat::Contiguous
constant("MemoryFormat::Preserve", "preserve_format")
constant("LEGACY_CONTIGUOUS_MEMORY_FORMAT", "contiguous_format")

# -- dtypes (ScalarType values are NumPy dtypes) ------------------------------------------------
_DTYPES = {
    "Float": jnp.float32,
    "Double": jnp.float64,
    "Half": jnp.float16,
    "BFloat16": jnp.bfloat16,
    "ComplexFloat": jnp.complex64,
    "ComplexDouble": jnp.complex128,
    "Long": jnp.int64,
    "Int": jnp.int32,
    "Short": jnp.int16,
    "Char": jnp.int8,
    "Byte": jnp.uint8,
    "Bool": jnp.bool_,
}
for _name, _dt in _DTYPES.items():
    for _prefix in ("at::k", "k", "at::ScalarType::", "ScalarType::", "c10::ScalarType::", "c10::k"):
        constant(_prefix + _name, np.dtype(_dt))


@helper("isComplexType", "at::isComplexType")
def is_complex_type(dtype) -> bool:
    return dtype is not None and jnp.issubdtype(dtype, jnp.complexfloating)


@helper("isFloatingType", "at::isFloatingType")
def is_floating_type(dtype) -> bool:
    return dtype is not None and jnp.issubdtype(dtype, jnp.floating)


@helper("isIntegralType", "at::isIntegralType")
def is_integral_type(dtype, include_bool=False) -> bool:
    return jnp.issubdtype(dtype, jnp.integer) or (include_bool and jnp.issubdtype(dtype, jnp.bool_))


@helper("isDifferentiableType")
def is_differentiable_type(dtype) -> bool:
    return jnp.issubdtype(dtype, jnp.inexact)


@helper("toRealValueType", "c10::toRealValueType")
def to_real_value_type(dtype):
    return np.dtype(jnp.finfo(dtype).dtype) if jnp.issubdtype(dtype, jnp.complexfloating) else dtype


@helper("toComplexType", "c10::toComplexType")
def to_complex_type(dtype):
    return np.dtype(jnp.result_type(dtype, jnp.complex64))


class TensorOptions:
    """`x.options()`: what a factory needs to make a tensor like x (here, just the dtype)."""

    def __init__(self, dtype):
        self._dtype = np.dtype(dtype)

    def dtype(self, dtype=None):
        return self._dtype if dtype is None else TensorOptions(dtype)

    def __repr__(self):
        return f"TensorOptions(dtype={self._dtype})"


def dtype_of(spec):
    """The dtype a factory argument asks for: TensorOptions, a dtype, or a tensor. A MemoryFormat
    converts to TensorOptions in C++ (`zeros_like(grad, at::MemoryFormat::Preserve)`) and asks
    for none: a JAX array has one layout."""
    if spec is None or (isinstance(spec, str) and spec in MEMORY_FORMATS):
        return None
    if isinstance(spec, TensorOptions):
        return spec._dtype
    if is_tensor(spec):
        return spec.dtype
    return np.dtype(spec)


# -- at:: functions that make tensors --------------------------------------------------------


@helper("zeros_like", "at::zeros_like")
def zeros_like(x, options=None, memory_format=None):
    return jnp.zeros(jnp.shape(x), dtype_of(options) or jnp.result_type(x))


@helper("ones_like", "at::ones_like")
def ones_like(x, options=None, memory_format=None):
    return jnp.ones(jnp.shape(x), dtype_of(options) or jnp.result_type(x))


@helper("empty_like", "at::empty_like")
def empty_like(x, options=None, memory_format=None):
    """`empty_like(grad, at::MemoryFormat::Contiguous)`: see `dtype_of`."""
    return zeros_like(x, options)


@helper("at::zeros", "zeros")
def zeros(size, options=None):
    return jnp.zeros(tuple(size), dtype_of(options) or jnp.float32)


@helper("at::ones", "ones")
def ones(size, options=None):
    return jnp.ones(tuple(size), dtype_of(options) or jnp.float32)


@helper("at::full", "full")
def full(size, value, options=None):
    return jnp.full(tuple(size), value, dtype_of(options))


@helper("at::fill", "fill")
def fill(self, value):
    """A tensor shaped and typed like self, every element `value` (a number or a 0-d tensor)."""
    return jnp.broadcast_to(jnp.asarray(value, jnp.result_type(self)), jnp.shape(self))


@helper("at::scalar_tensor", "scalar_tensor")
def scalar_tensor(value, options=None):
    return jnp.asarray(value, dtype_of(options))


@helper("at::scalar_to_tensor", "scalar_to_tensor")
def scalar_to_tensor(value, device=None):
    # ATen wraps a Scalar as a 0-d "wrapped number" tensor, which does not promote
    # the other operand's dtype: keep it a Python number so JAX's weak typing agrees.
    return value


@helper("at::tensor", "tensor")
def tensor(value, options=None):
    return jnp.asarray(value, dtype_of(options))


@helper("not_implemented")
def not_implemented(message, reason=""):
    raise NotImplementedDerivative(f"the derivative is not implemented in the spec: not_implemented({message!r})")


@helper("not_implemented_list")
def not_implemented_list(message, reason=""):
    """not_implemented for an entry whose formula returns a list of gradients."""
    return not_implemented(message, reason)


@helper("GradMode::is_enabled", "at::GradMode::is_enabled")
def grad_mode_is_enabled():
    # Formulas use this to choose a differentiable (double-backward) path: always take it.
    return True


@helper("areAnyTensorSubclassLike", "isTensorSubclassLike", "at::isTensorSubclassLike")
def are_any_tensor_subclass_like(tensors):
    """Whether a tensor (or any of a list) is a subclass such as a functorch wrapper: never here."""
    return False


@helper("at::sum_to", "sum_to")
def sum_to_helper(x, shape):
    """Sum a broadcast gradient back to `shape` (at::sum_to)."""
    from ..rules import sum_to

    return None if x is None else jnp.reshape(sum_to(x, tuple(shape)), tuple(shape))
