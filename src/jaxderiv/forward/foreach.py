"""`_foreach_*` ops: one ATen op applied to each element of Tensor lists, as torch's optimizers
call them. Each element follows the single-tensor op's semantics (its dtype promotion, NaN
handling); lists must have equal lengths.
"""

from __future__ import annotations

from . import impl
from .binary import clamp_max, clamp_min, div, pow
from .linalg import mm
from .reductions import norm_dtype, norm_scalar


def _zipped(name: str, *lists):
    if len({len(v) for v in lists}) != 1:
        raise ValueError(
            f"{name}: Tensor lists must have the same number of tensors, got {', '.join(str(len(v)) for v in lists)}"
        )
    return zip(*lists)


@impl("_foreach_div.List")
def foreach_div_list(self, other):
    return [div(a, b) for a, b in _zipped("_foreach_div", self, other)]


@impl("_foreach_pow.List")
def foreach_pow_list(self, exponent):
    return [pow(a, b) for a, b in _zipped("_foreach_pow", self, exponent)]


@impl("_foreach_pow.ScalarList")
def foreach_pow_scalar_list(self, exponent):
    return [pow(a, b) for a, b in _zipped("_foreach_pow", self, exponent)]


@impl("_foreach_pow.ScalarAndTensor")
def foreach_pow_scalar_and_tensor(self, exponent):
    return [pow(self, b) for b in exponent]


@impl("_foreach_minimum.Scalar")
def foreach_minimum_scalar(self, scalar):
    """minimum(x, s) is clamp_max(x, s), as ATen computes it (NaN inputs stay NaN)."""
    return [clamp_max(a, scalar) for a in self]


@impl("_foreach_minimum.ScalarList")
def foreach_minimum_scalar_list(self, scalars):
    return [clamp_max(a, s) for a, s in _zipped("_foreach_minimum", self, scalars)]


@impl("_foreach_maximum.Scalar")
def foreach_maximum_scalar(self, scalar):
    return [clamp_min(a, scalar) for a in self]


@impl("_foreach_maximum.ScalarList")
def foreach_maximum_scalar_list(self, scalars):
    return [clamp_min(a, s) for a, s in _zipped("_foreach_maximum", self, scalars)]


@impl("_foreach_norm.Scalar")
def foreach_norm(self, ord=2, dtype=None):
    """Each tensor's norm over all its elements (0-d results)."""
    return [norm_scalar(a, ord) if dtype is None else norm_dtype(a, ord, dtype) for a in self]


@impl("_foreach_mm")
def foreach_mm(self, mat2):
    return [mm(a, b) for a, b in _zipped("_foreach_mm", self, mat2)]
