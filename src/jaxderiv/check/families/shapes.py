"""Checker inputs of the shape, view, concatenation and triangle ops, and the scatters into a
slice, a diagonal or a strided view.

All are linear in their differentiable inputs, so no kinks; what matters are the variants:
negative dims, -1 sizes, uneven splits, empty cat inputs, offsets. A case is an argument
tuple in schema order, a tensor given as T(shape) and drawn in the sample's dtype; complex
inputs run the first case only, as the variants do not depend on the dtype. indexing.py and
padding.py declare their entries with the same `T` and `_register`.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, complex_ok, known_failure, parity_samples, samples, torch_equivalent
from ..samples import Sample, draw


class T:
    """A placeholder for a random tensor of this shape in the sample's dtype."""

    def __init__(self, *shape):
        self.shape = shape


def _make(value, rng, dtype):
    if isinstance(value, T):
        return draw(rng, value.shape, -2.0, 2.0, dtype)
    if isinstance(value, list):
        return [_make(v, rng, dtype) for v in value]
    return value


def _label(args) -> str:
    def one(v):
        if isinstance(v, T):
            return "x".join(map(str, v.shape)) or "0-d"
        if isinstance(v, np.ndarray):
            return f"{v.dtype}{list(v.shape)}"
        if isinstance(v, list):
            return "[" + ",".join(one(e) for e in v) + "]"
        return repr(v)

    return " ".join(one(v) for v in args)


def _register(*names, cases, kwargs=None, complex_=True):
    """`cases`: argument tuples in schema order, tensors as T(shape). Complex runs the first
    case only: the variants exercise shapes and dims, which do not depend on the dtype."""

    @samples(*names)
    def make(op, rng, dtype=np.float64):
        chosen = cases[:1] if np.issubdtype(dtype, np.complexfloating) else cases
        return [Sample(tuple(_make(v, rng, dtype) for v in c), dict(kwargs or {}), _label(c)) for c in chosen]

    if complex_:
        complex_ok(*names)


_register("t", cases=[(T(2, 3),), (T(3),), (T(),)])
_register("transpose.int", "transpose_", cases=[(T(2, 3, 4), 0, -1), (T(2, 3), 1, 0), (T(), 0, -1)])
_register("permute", cases=[(T(2, 3, 4), (2, 0, 1)), (T(2, 3), (-1, 0))])
_register("unsqueeze", "unsqueeze_", cases=[(T(2, 3), 0), (T(2, 3), -1), (T(), 0)])
_register("squeeze", "squeeze_", cases=[(T(2, 1, 3, 1),), (T(1),)])
_register("squeeze.dim", "squeeze_.dim", cases=[(T(2, 1, 3), 1), (T(2, 1, 3), -3), (T(), 0)])
_register(
    "squeeze.dims", "squeeze_.dims", cases=[(T(2, 1, 3, 1), (1, -1)), (T(1, 2, 1), (0, 1)), (T(2, 3), ()), (T(), (0,))]
)
_register("expand", cases=[(T(3, 1), (2, 3, 4)), (T(3, 1), (-1, 4)), (T(), (2,))])
_register("_reshape_copy", cases=[(T(2, 3), (3, 2)), (T(2, 3), (-1,)), (T(), (1, 1))])
# ATen makes _reshape_alias with the contiguous strides of `size` only: the formula assumes them
_register("_reshape_alias", cases=[(T(2, 3), (3, 2), (2, 1)), (T(2, 3), (6,), (1,)), (T(), (1, 1), (1, 1))])
_register("narrow_copy", cases=[(T(5, 3), 0, 1, 3), (T(2, 6), -1, -4, 2), (T(2, 3), 1, 3, 0)])
_register("view", "_unsafe_view", cases=[(T(2, 3), (3, 2)), (T(2, 3), (-1,)), (T(), (1, 1))])
_register("select.int", cases=[(T(2, 3, 4), 1, -1), (T(3), 0, 2)])
_register("slice.Tensor", cases=[(T(4, 5), 1, 1, 4, 2), (T(4, 5), 0, -3, 2**63 - 1, 1), (T(4, 5), -1, 0, 100, 3)])
_register("split.Tensor", "unsafe_split.Tensor", cases=[(T(5, 3), 2, 0), (T(2, 6), 4, -1)])
_register("chunk", cases=[(T(5, 3), 3, 0), (T(2, 6), 4, -1), (T(2, 3), 1, 1)])
_register("split_with_sizes", "unsafe_split_with_sizes", cases=[(T(5, 3), (2, 3), 0), (T(2, 6), (1, 0, 5), -1)])
_register("unbind.int", cases=[(T(3, 2), 0), (T(2, 3), -1)])
_register("stack", cases=[([T(2, 3), T(2, 3), T(2, 3)], 0), ([T(2, 3), T(2, 3)], -1)])
_register("cat", cases=[([T(2, 3), T(1, 3)], 0), ([T(2, 3), T(2, 1), T(2, 2)], -1), ([T(2, 3), T(0), T(1, 3)], 0)])
_register("flip", cases=[(T(2, 3, 4), (0, 2)), (T(2, 3), (-1,))])
_register("roll", cases=[(T(2, 3), (1,), ()), (T(2, 3, 4), (1, -2), (0, 2))])
_register("rot90", cases=[(T(2, 3), 1, (0, 1)), (T(2, 3, 4), -1, (2, 0)), (T(2, 3), 2, (0, 1)), (T(2, 3), 3, (1, 0))])
_register("repeat", cases=[(T(2, 3), (2, 1)), (T(2, 3), (2, 1, 3))])
_register("diag_embed", cases=[(T(2, 3), 0, -2, -1), (T(3), 1, 0, 1), (T(2, 3), -1, 2, 0)])
_register("diag", cases=[(T(3), 0), (T(3), -1), (T(3, 4), 1), (T(3, 4), -2)])
_register("diagonal", cases=[(T(3, 4), 0, 0, 1), (T(2, 3, 4), 1, -1, 0), (T(2, 3, 4), -1, 0, 2)])
_register(
    "diagonal_backward", cases=[(T(3, 1), (2, 3, 4), 1, -1, 0), (T(3), (3, 4), 0, 0, 1), (T(3, 2), (3, 3, 4), -1, 0, 2)]
)
_register("tril", "triu", cases=[(T(3, 4), 0), (T(3, 4), -1), (T(2, 3, 4), 1)])
_register("unfold", cases=[(T(2, 7), 1, 3, 2), (T(5), 0, 2, 1), (T(6, 2), 0, 2, 3)])
_register(
    "unfold_backward", cases=[(T(2, 3, 3), (2, 7), 1, 3, 2), (T(4, 2), (5,), 0, 2, 1), (T(2, 2, 2), (6, 2), 0, 2, 3)]
)
_register(
    "as_strided",
    "as_strided_",
    cases=[(T(3, 4), (2, 2), (1, 2), 1), (T(3, 4), (3, 3), (2, 1), None), (T(5), (2,), (2,), 0)],
)
_register("select_backward", cases=[(T(3, 4), (2, 3, 4), 0, 1), (T(2, 3), (2, 3, 5), -1, -2), (T(), (3,), 0, 2)])
_register(
    "slice_backward",
    cases=[(T(2, 3), (5, 3), 0, 1, 3, 1), (T(2, 2), (2, 6), -1, -5, 10, 3), (T(0, 3), (2, 3), 0, 2, 1, 1)],
)
_register("pixel_shuffle", cases=[(T(1, 8, 2, 3), 2), (T(9, 2, 2), 3), (T(2, 1, 4, 1, 2), 1)])
_register("pixel_unshuffle", cases=[(T(1, 2, 4, 6), 2), (T(1, 6, 6), 3), (T(2, 1, 3, 1, 2), 1), (T(1, 1, 3, 6, 3), 3)])
_register("channel_shuffle", cases=[(T(2, 6, 3), 2), (T(1, 6, 2, 2), 3), (T(2, 4, 1), 1)])

# torch differentiates slice_scatter and select_scatter on real dtypes only
_register(
    "slice_scatter",
    cases=[
        (T(4, 5), T(4, 2), 1, 1, 4, 2),
        (T(4, 5), T(2, 5), 0, -3, None, 2),
        (T(4, 5), T(2, 5), -2, -3, None, 2),
        (T(4, 5), T(4, 5)),
    ],
    complex_=False,
)
_register("slice_inverse", cases=[(T(4, 2), T(4, 5), 1, 1, 4, 2), (T(2, 5), T(4, 5), 0, -3, None, 2)], complex_=False)
_register("select_scatter", cases=[(T(2, 3, 4), T(2, 4), 1, -1), (T(3), T(), 0, 2)], complex_=False)
_register(
    "diagonal_scatter",
    cases=[(T(3, 4), T(3), 0, 0, 1), (T(2, 3, 4), T(3, 1), 1, -1, 0), (T(2, 3, 4), T(3, 1), -1, 0, 2)],
)
_register(
    "as_strided_scatter",
    cases=[(T(3, 4), T(2, 2), (2, 2), (1, 4), 1), (T(3, 4), T(3), (3,), (5,), None), (T(5), T(2), (2,), (2,), 0)],
)
known_failure(
    "spec bug: torch 2.13's as_strided_scatter_backward gives self the gradient at the scattered "
    "positions, which src overwrote, and zero elsewhere (the reverse of the derivative)",
    "as_strided_scatter",
    modes=("vjp", "vjp_vjp"),  # vjp_vjp: its derivative in the cotangent `grad` is that formula again
)


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(
    Equivalent(
        lambda aten, a: aten.slice_scatter(a["src"], a["self"], a["dim"], a["start"], a["end"], a["step"]),
        "torch's CPU kernel needs `self` to be a view of `src`: aten.slice_scatter(src, self, ...)",
    ),
    "slice_inverse",
)
# the checker's schema-default samples have no torch meaning here (float indices)
parity_samples(
    "one_hot",
    Sample((np.array([0, 2, 1, 3]), 4), {}, "4 classes"),
    Sample((np.array([[0, 2], [1, 1]]),), {}, "num_classes=-1"),
)
