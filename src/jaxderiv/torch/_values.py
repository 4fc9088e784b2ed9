"""Graph constants and tensors, torch -> JAX: dtypes, devices, layouts, symbolic sizes.

JAX's default 32-bit mode (`jax_enable_x64` off) has no 64-bit types: a graph's int64 values
(ids, positions, `arange`, `cumsum` of masks, size arithmetic) run as int32, JAX's default
integer, and its dtype arguments follow (`jax.dtypes.canonicalize_dtype`). ATen's semantics are
kept where width shows: a tensor whose values do not fit 32 bits is refused by name instead of
wrapping around; overflow of int32 arithmetic inside the model is the user's choice of mode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import torch

__all__ = ["to_jax_array", "to_numpy", "jax_dtype", "convert_constant"]

_DTYPES = {
    torch.float64: jnp.float64,
    torch.float32: jnp.float32,
    torch.float16: jnp.float16,
    torch.bfloat16: jnp.bfloat16,
    torch.complex128: jnp.complex128,
    torch.complex64: jnp.complex64,
    torch.int64: jnp.int64,
    torch.int32: jnp.int32,
    torch.int16: jnp.int16,
    torch.int8: jnp.int8,
    torch.uint8: jnp.uint8,
    torch.uint16: jnp.uint16,  # torch's shell dtypes (few kernels); hash_tensor returns uint64
    torch.uint32: jnp.uint32,
    torch.uint64: jnp.uint64,
    torch.bool: jnp.bool_,
}


def jax_dtype(dtype: torch.dtype):
    """The NumPy/JAX dtype of a torch dtype (the form jaxderiv's ops take for ScalarType), as
    JAX's mode has it: int64 is int32 with `jax_enable_x64` off (see the module docstring)."""
    try:
        return jax.dtypes.canonicalize_dtype(_DTYPES[dtype])
    except KeyError:
        raise TypeError(f"torch dtype {dtype} has no JAX counterpart") from None


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A detached host copy; bfloat16 goes through float32 (NumPy has no bfloat16). `force=True`
    also materializes torch's storage-less zeros (`_efficientzerotensor`: the forward-mode tangent
    of slogdet's sign on a real input, a gradient that is known to be zero)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy(force=True).astype(jnp.bfloat16)
    return t.resolve_conj().resolve_neg().numpy(force=True).copy()


def to_jax_array(t: torch.Tensor, name: str = "a tensor"):
    """`t` as a JAX array in JAX's mode; an integer tensor whose values do not fit the narrower
    integer of 32-bit mode is refused (ValueError naming `name`) rather than wrapped around."""
    values, dtype = to_numpy(t), jax_dtype(t.dtype)
    if values.dtype.kind in "iu" and dtype.itemsize < values.dtype.itemsize and values.size:
        info = np.iinfo(dtype)
        low, high = values.min(), values.max()
        if low < info.min or high > info.max:
            raise ValueError(
                f"{name} ({t.dtype}) holds values in [{low}, {high}], outside {dtype}'s range: JAX runs in "
                "32 bits; call jax.config.update('jax_enable_x64', True) before importing the model"
            )
    return jnp.asarray(values, dtype=dtype)


def convert_constant(value):
    """A node's non-tensor argument as jaxderiv's forwards take it: dtypes as NumPy dtypes;
    devices, layouts and memory formats dropped (XLA places and lays out arrays itself);
    symbolic ints as ints (graphs are exported with static shapes)."""
    if isinstance(value, torch.dtype):
        return jax_dtype(value)
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return None
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(value)](value)
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, torch.Tensor):
        return to_jax_array(value)
    return value
