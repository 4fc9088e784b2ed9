"""The layout conversions that keep a dense array dense (forward/layout.py): what the parity run
needs of them.

JAX has one layout, the dense strided array, so converting to MKL-DNN's blocked layout leaves
the values as they are. torch's to_mkldnn gives an mkldnn float32 tensor, which the parity run
cannot compare: it asks torch for to_dense(to_mkldnn(x)), the identity too. The checker's
samples are the schema default.
"""

from __future__ import annotations

from ..opdb import Equivalent, torch_equivalent

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
