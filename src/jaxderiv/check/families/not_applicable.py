"""Entries with no meaning for a JAX array: sparse layouts, fbgemm's packed weights.

JAX arrays are dense and strided; these ops take or produce a sparse COO tensor (its
indices, values, coalescing, sparse softmax and sums) or weights packed into fbgemm's
opaque int8/fp16 format, so there is nothing to call them on. The checker reports them as
`not_applicable` with the reason.
"""

from __future__ import annotations

from ..opdb import not_applicable

SPARSE = "operates on a sparse COO tensor (indices and values); JAX arrays are dense, with no sparse layout"
not_applicable(
    SPARSE,
    "_sparse_addmm",
    "coalesce",
    "_coalesce",
    "indices",
    "_indices",
    "values",
    "_values",
    "to_sparse",
    "sparse_mask",
    "_sparse_coo_tensor_with_dims_and_tensors",
    "_sparse_sum.dim",
    "_sparse_softmax",
    "_sparse_log_softmax",
)

FBGEMM = (
    "takes weights packed into fbgemm's opaque format (an inference-only CPU kernel); JAX has no packed-weight tensors"
)
not_applicable(
    FBGEMM,
    "fbgemm_linear_int8_weight_fp32_activation",
    "fbgemm_linear_int8_weight",
    "fbgemm_linear_fp16_weight_fp32_activation",
    "fbgemm_linear_fp16_weight",
)
