"""Forward implementations of ATen's layout conversions that keep a dense array dense.

JAX has one layout, the dense strided array: converting to it (`to_dense`) or to MKL-DNN's
blocked layout (`to_mkldnn`) leaves the values as they are, and so do the backward ops
that convert a gradient back, a reshape in the blocked layout (`_mkldnn_reshape`) and a copy
into pinned memory (`_pin_memory`).
"""

from __future__ import annotations

import jax.numpy as jnp

from . import impl


@impl("to_dense")
def to_dense(self):
    return jnp.asarray(self)


@impl("to_mkldnn")
def to_mkldnn(self, dtype=None):
    """MKL-DNN tensors hold floating-point values; any float dtype is kept as it is (later
    schemas take a dtype to convert to)."""
    x = jnp.asarray(self) if dtype is None else jnp.asarray(self).astype(dtype)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"to_mkldnn expects a floating-point tensor, got {x.dtype}")
    return x


@impl("_to_dense")
def _to_dense(self, dtype=None, masked_grad=None):
    """A dense copy, in `dtype` if given (`masked_grad` matters for sparse inputs only)."""
    x = jnp.asarray(self)
    return x if dtype is None else x.astype(dtype)


@impl("to_dense_backward")
def to_dense_backward(grad, self, masked_grad=None):
    """The gradient in the input's layout and dtype: dense already (`masked_grad`, torch 2.x's
    third argument, matters for sparse inputs only)."""
    return jnp.asarray(grad).astype(jnp.asarray(self).dtype)


@impl("to_mkldnn_backward")
def to_mkldnn_backward(grad, self):
    return grad


@impl("_mkldnn_reshape")
def _mkldnn_reshape(self, shape):
    """Reshape of a tensor in MKL-DNN's blocked layout: its values are those of the dense array."""
    return jnp.reshape(jnp.asarray(self), tuple(shape))


@impl("_pin_memory")
def _pin_memory(self, device=None):
    """A copy in page-locked host memory: where the values live, not what they are."""
    return jnp.asarray(self)
