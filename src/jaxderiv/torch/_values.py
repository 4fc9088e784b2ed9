"""Graph constants and tensors, torch -> JAX: dtypes, devices, layouts, symbolic sizes."""

from __future__ import annotations

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
    """The NumPy/JAX dtype of a torch dtype (the form jaxderiv's ops take for ScalarType)."""
    try:
        return jnp.dtype(_DTYPES[dtype])
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


def to_jax_array(t: torch.Tensor):
    return jnp.asarray(to_numpy(t), dtype=jax_dtype(t.dtype))


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
