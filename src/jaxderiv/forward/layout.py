"""Forward implementations of ATen's layout conversions that keep a dense array dense.

JAX has one layout, the dense strided array: converting to it (`to_dense`) or to MKL-DNN's
blocked layout (`to_mkldnn`) leaves the values as they are, and so do the backward ops
that convert a gradient back.
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


@impl("to_dense_backward")
def to_dense_backward(grad, self):
    """The gradient in the input's layout: dense already."""
    return grad


@impl("to_mkldnn_backward")
def to_mkldnn_backward(grad, self):
    return grad
