"""Forward implementations of ATen's layout conversions that keep a dense array dense.

JAX has one layout, the dense strided array: converting to it (`to_dense`) or to MKL-DNN's
blocked layout (`to_mkldnn`) leaves the values as they are, and so do the backward ops
that convert a gradient back, a reshape in the blocked layout (`_mkldnn_reshape`) and a copy
into pinned memory (`_pin_memory`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..records import Equivalent, Sample, parity_in_float32, samples, torch_equivalent
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


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# The layout conversions that keep a dense array dense (forward/layout.py): what the parity run
# needs of them.
#
# JAX has one layout, the dense strided array, so converting to MKL-DNN's blocked layout leaves
# the values as they are. torch's to_mkldnn gives an mkldnn float32 tensor, which the parity run
# cannot compare: it asks torch for to_dense(to_mkldnn(x)), the identity too (and likewise for
# `_mkldnn_reshape`, whose samples give a target shape). The other checker samples are the schema
# default.
torch_equivalent(
    Equivalent(
        lambda aten, a: [a["self"].clone()],
        "a dense array has no mkldnn layout in JAX: the identity, as torch's to_dense(to_mkldnn(x))",
    ),
    "to_mkldnn",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: [aten.to_dense(a["self"], a.get("dtype"), masked_grad=a.get("masked_grad"))],
        "ATen's _to_dense has kernels for sparse and mkldnn inputs only: to_dense, its public form, which "
        "returns a strided tensor as it is",
    ),
    "_to_dense",
)


@samples("_mkldnn_reshape")
def _mkldnn_reshape_samples(op, rng, dtype=np.float64):
    return [
        Sample((rng.normal(size=(2, 3)).astype(dtype), [3, 2]), {}, "2x3 -> 3x2"),
        Sample((rng.normal(size=(2, 3, 2)).astype(dtype), [4, -1]), {}, "2x3x2 -> 4x-1"),
    ]


torch_equivalent(
    Equivalent(
        lambda aten, a: [aten._mkldnn_reshape(a["self"].to_mkldnn(), a["shape"]).to_dense()],
        "ATen's _mkldnn_reshape takes an mkldnn tensor (float32): to_dense of the reshape of to_mkldnn(x)",
    ),
    "_mkldnn_reshape",
)
parity_in_float32("torch's mkldnn tensors hold float32 only", "_mkldnn_reshape")
torch_equivalent(
    Equivalent(
        lambda aten, a: [a["self"].clone()],
        "torch pins memory only with an accelerator present: the copy it makes, a clone",
    ),
    "_pin_memory",
)
