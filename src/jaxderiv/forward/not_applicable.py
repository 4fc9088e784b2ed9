"""Entries with no meaning for a JAX array: sparse layouts, nested tensors, fbgemm's packed
weights, kernels of Apple's MPS backend.

JAX arrays are dense, strided and rectangular; these ops take or produce a sparse COO or
compressed (CSR, CSC, BSR, BSC) tensor, a nested (jagged) tensor, or weights packed into
fbgemm's opaque int8/fp16 format, or exist only as MPS kernels (whose formulas call MPS-only
backward kernels), so there is nothing to call them on. The checker reports them as
`not_applicable` with the reason.
"""

from __future__ import annotations

from ..records import not_applicable

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
    "_to_sparse",
    "_to_sparse.sparse_dim",
    "_sparse_sparse_matmul",
)

SPARSE_COMPRESSED = (
    "operates on a sparse compressed tensor (CSR, CSC, BSR or BSC: compressed indices and values); "
    "JAX arrays are dense, with no sparse layout"
)
not_applicable(
    SPARSE_COMPRESSED,
    "crow_indices",
    "col_indices",
    "ccol_indices",
    "row_indices",
    "_to_sparse_csr",
    "_to_sparse_csc",
    "_to_sparse_bsr",
    "_to_sparse_bsc",
    "sparse_compressed_tensor.comp_plain_value_size",
    "sparse_sampled_addmm",
    "_sparse_mm_reduce_impl",
)

NESTED = "operates on a nested (jagged) tensor; JAX arrays are rectangular"
not_applicable(
    NESTED,
    "_nested_tensor_from_tensor_list",
    "_nested_tensor_from_mask",
    "_nested_from_padded",
    "to_padded_tensor",
    "_nested_from_padded_tensor",
    "_nested_view_from_buffer",
    "_nested_view_from_jagged",
    "_nested_get_values",
)
not_applicable(
    "its formulas are for nested tensors only (dispatch key AutogradNestedTensor, no Default block)",
    "_test_autograd_multiple_dispatch.ntonly",
)

MPS = (
    "a kernel of Apple's Metal (MPS) backend only, whose formulas call MPS-only backward kernels; "
    "the dense op is `convolution` / `lstm`"
)
not_applicable(
    MPS, "_mps_convolution", "mps_convolution_backward", "_mps_convolution_transpose", "_lstm_mps", "lstm_mps_backward"
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
