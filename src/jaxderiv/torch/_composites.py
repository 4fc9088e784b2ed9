"""CompositeImplicitAutograd kernels written out as ATen's C++ writes them, for the overloads
whose gradient in eager torch comes from the entry their kernel calls.

`nn.Upsample(scale_factor=2)` and `F.interpolate(..., scale_factor=...)` leave an
`upsample_*.vec` node in an exported graph. Eager autograd never sees it: its composite kernel
(aten/src/ATen/native/UpSample*.cpp) computes the output size and calls the op of the same name
without `.vec`, and that op's derivatives.yaml entry gives the gradient. torch's Python
decompositions lower some of these overloads to indexing instead, which would swap the entry's
formula for the derivative of a gather; these kernels keep the entry.
"""

from __future__ import annotations

import torch

__all__ = ["eager_composite"]


def _output_size(input, output_size, scale_factors, spatial: int) -> list:
    """ATen's upsample::compute_output_size: the given size, or each spatial size times its
    scale, truncated to an integer."""
    if output_size is not None:
        return list(output_size)
    sizes = input.shape[-spatial:]
    return [torch.sym_int(torch.sym_float(s) * float(f)) for s, f in zip(sizes, scale_factors)]


def _upsample_vec(default: torch._ops.OpOverload, spatial: int, has_align_corners: bool):
    def kernel(input, output_size, *rest):
        align_corners, scale_factors = (rest[0], rest[1]) if has_align_corners else (None, rest[0])
        size = _output_size(input, output_size, scale_factors, spatial)
        scales = list(scale_factors) if scale_factors is not None else [None] * spatial
        head = (align_corners,) if has_align_corners else ()
        return default(input, size, *head, *scales)

    return kernel


def eager_composite(op: torch._ops.OpOverload):
    """The composite kernel of `op` as eager autograd runs it, or None where there is none here."""
    if op._overloadname != "vec" or "upsample" not in op._schema.name:
        return None
    default = op.overloadpacket.default
    names = [a.name for a in default._schema.arguments]
    spatial = len([n for n in names if n.startswith("scales")])
    return _upsample_vec(default, spatial, "align_corners" in names)
