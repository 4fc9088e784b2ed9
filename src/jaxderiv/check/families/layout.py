"""The layout conversions that keep a dense array dense (forward/layout.py): what the parity run
needs of them.

JAX has one layout, the dense strided array, so converting to MKL-DNN's blocked layout leaves
the values as they are. torch's to_mkldnn gives an mkldnn float32 tensor, which the parity run
cannot compare: it asks torch for to_dense(to_mkldnn(x)), the identity too (and likewise for
`_mkldnn_reshape`, whose samples give a target shape). The other checker samples are the schema
default.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, parity_in_float32, samples, torch_equivalent
from ..samples import Sample

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
