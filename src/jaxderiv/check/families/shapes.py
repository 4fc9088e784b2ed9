"""Checker inputs of the shape, indexing and padding ops.

All are linear in their differentiable inputs, so no kinks; what matters are the variants:
negative dims, -1 sizes, uneven splits, empty cat inputs, offsets, broadcast masks and values.
Duplicate indices appear only where the derivative is unique (accumulating ops, gathers):
with overwriting ops (scatter, index_copy, index_put without accumulate) a duplicate makes
the written value depend on which write wins.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, complex_ok, known_failure, parity_samples, samples, torch_equivalent
from ..samples import Sample, draw


class T:
    """A placeholder for a random tensor of this shape in the sample's dtype."""

    def __init__(self, *shape):
        self.shape = shape


def _idx(*values):
    return np.asarray(values, np.int64)


def _mask(shape, seed=0):
    return np.random.default_rng(seed).random(shape) < 0.5


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
_register("squeeze.dims", "squeeze_.dims", cases=[(T(2, 1, 3, 1), (1, -1)), (T(1, 2, 1), (0, 1)), (T(2, 3), ()), (T(), (0,))])
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
_register("diagonal_backward", cases=[(T(3, 1), (2, 3, 4), 1, -1, 0), (T(3), (3, 4), 0, 0, 1), (T(3, 2), (3, 3, 4), -1, 0, 2)])
_register("tril", "triu", cases=[(T(3, 4), 0), (T(3, 4), -1), (T(2, 3, 4), 1)])
_register("unfold", cases=[(T(2, 7), 1, 3, 2), (T(5), 0, 2, 1), (T(6, 2), 0, 2, 3)])
_register("unfold_backward", cases=[(T(2, 3, 3), (2, 7), 1, 3, 2), (T(4, 2), (5,), 0, 2, 1), (T(2, 2, 2), (6, 2), 0, 2, 3)])
_register("as_strided", "as_strided_", cases=[(T(3, 4), (2, 2), (1, 2), 1), (T(3, 4), (3, 3), (2, 1), None), (T(5), (2,), (2,), 0)])

_ROWS = _idx([0, 3], [2, 1], [1, 2])  # per row: distinct columns of a 3x4 input
_register("gather", cases=[(T(3, 4), 1, _idx([0, 3], [2, 2], [1, 1])), (T(3, 4), 0, _idx([0, 2, 2, 1], [1, 1, 0, 2])), (T(3, 4), -1, _ROWS)])
# src of index's shape: the spec's gradient of src, grad.gather(dim, index), has index's shape
_register("scatter_.src", "scatter.src", cases=[(T(3, 4), 1, _ROWS, T(3, 2)), (T(3, 4), 0, _idx([0, 2, 1, 1]), T(1, 4))])
_register("scatter_.value", "scatter.value", cases=[(T(3, 4), 1, _ROWS, 0.5), (T(3, 4), 0, _idx([0, 2, 1, 1], [1, 1, 0, 2]), -1.0)])
_register("scatter_add_", "scatter_add", cases=[(T(3, 4), 1, _idx([0, 0], [2, 2], [1, 3]), T(3, 2)), (T(3, 4), 0, _idx([0, 2, 2, 1], [0, 0, 0, 2]), T(2, 4))])
_register("index.Tensor", cases=[
    (T(3, 4), [_idx(2, 0, 2)]),
    (T(3, 4, 5), [None, _idx(3, 1), _idx(0, -1)]),
    (T(3, 4), [_mask((3, 4))]),
    (T(3, 4, 5), [_idx([2], [0]), None, _idx(1, 4, 3)]),
])
_register("index_add_", "index_add", cases=[(T(4, 3), 0, _idx(1, 3, 1), T(3, 3)), (T(3, 4), -1, _idx(2), T(3, 1))])
_register("index_add_.alpha", cases=[(T(4, 3), 0, _idx(1, 3, 1), T(3, 3)), (T(3, 4), -1, _idx(2), T(3, 1))], kwargs={"alpha": 2.0})
_register("index_copy_", "index_copy", cases=[(T(4, 3), 0, _idx(3, 1), T(2, 3)), (T(3, 4), -1, _idx(2, 0), T(3, 2))])
_register("index_fill_.int_Scalar", cases=[(T(4, 3), 0, _idx(1, 3, 1), 0.5), (T(3, 4), -1, _idx(2), -1.0)])
# distinct indices: 1.7's formula for `value` counts a repeated index twice (1.10 takes _unique)
_register("index_fill.int_Scalar", cases=[(T(4, 3), 0, _idx(1, 3, 1), 0.5), (T(3, 4), -1, _idx(2), -1.0)])
# torch 2.13's formula for `value` takes _unique: a repeated index counts once
_register("index_fill.int_Tensor", cases=[(T(4, 3), 0, _idx(1, 3, 1), T()), (T(3, 4), -1, _idx(2), T())])
_register("index_fill_.int_Tensor", cases=[(T(4, 3), 0, _idx(1, 3), T()), (T(3, 4), -1, _idx(2), T())])
_PUT = [
    (T(3, 4), [_idx(2, 0)], T(2, 4), False),
    (T(3, 4), [_idx(2, 0, 2, 2)], T(4, 4), True),
    (T(3, 4), [None, _idx(3, 1)], T(3, 2), False),
    (T(3, 4), [_idx(1, 0)], T(4), False),
    (T(3, 4), [_mask((3, 4), seed=1)], T(int(_mask((3, 4), seed=1).sum())), True),
]
_register("index_put_", "index_put", cases=_PUT)
_register("_index_put_impl_", cases=[c + (False,) for c in _PUT])
_register("index_select", cases=[(T(4, 3), 0, _idx(1, 3, 1, 0, 1)), (T(3, 4), -1, np.int64(2))])
_register("masked_fill_.Scalar", "masked_fill.Scalar", cases=[(T(3, 4), _mask((3, 4)), 0.5), (T(3, 4), _mask((4,)), -1.0)])
_register("masked_fill_.Tensor", cases=[(T(3, 4), _mask((3, 4)), T()), (T(3, 4), _mask((4,)), T())])
# `sizes` equal to grad_output's: torch 2.13's result formula gives the tangent grad_output's
# sizes, so forward mode (in torch as here) fails for any other `sizes`
_register("masked_scatter_backward", cases=[(T(3, 4), _mask((3, 4)), (3, 4)), (T(3, 4), _mask((4,)), (3, 4)), (T(2, 3), _mask((2, 3), 1), (2, 3))])
_register("select_backward", cases=[(T(3, 4), (2, 3, 4), 0, 1), (T(2, 3), (2, 3, 5), -1, -2), (T(), (3,), 0, 2)])
_register("slice_backward", cases=[(T(2, 3), (5, 3), 0, 1, 3, 1), (T(2, 2), (2, 6), -1, -5, 10, 3), (T(0, 3), (2, 3), 0, 2, 1, 1)])
_register("masked_scatter_", "masked_scatter", cases=[(T(3, 4), _mask((3, 4)), T(12)), (T(3, 4), _mask((4,)), T(3, 5))])
_register("masked_select", cases=[(T(3, 4), _mask((3, 4))), (T(3, 4), _mask((4,))), (T(4), _mask((3, 4)))])
_register("take", cases=[(T(3, 4), _idx([0, 11, -1], [5, 5, 2]))])
_register("put_", "put", cases=[(T(3, 4), _idx(0, 7, -1, 5, 3), T(5), False), (T(3, 4), _idx([1, 1, 9], [4, 1, 0]), T(2, 3), True)])

_register("constant_pad_nd", cases=[(T(2, 3), (1, 2)), (T(2, 3, 4), (1, 0, -1, 2)), (T(3, 4), (-1, -1, 1, 0), 0.5)])
_PADS = {
    "reflection_pad1d": [(T(2, 5), (2, 1)), (T(2, 3, 5), (1, 3))],
    "reflection_pad2d": [(T(2, 4, 5), (1, 2, 3, 0))],
    "replication_pad1d": [(T(2, 5), (2, 1)), (T(2, 3, 5), (0, 3))],
    "replication_pad2d": [(T(2, 4, 5), (1, 2, 3, 0))],
    "replication_pad3d": [(T(1, 2, 3, 4), (1, 0, 2, 1, 1, 2))],
    "reflection_pad3d": [(T(1, 3, 3, 4), (1, 0, 2, 1, 1, 2))],
}


def _padded(shape, pad):
    out = list(shape)
    for j in range(len(pad) // 2):
        out[-1 - j] += pad[2 * j] + pad[2 * j + 1]
    return T(*out)


for _name, _cases in _PADS.items():
    _register(_name, cases=_cases)
    _register(_name + "_backward", cases=[(_padded(x.shape, p), x, p) for x, p in _cases])

_register("pixel_shuffle", cases=[(T(1, 8, 2, 3), 2), (T(9, 2, 2), 3), (T(2, 1, 4, 1, 2), 1)])
_register("pixel_unshuffle", cases=[(T(1, 2, 4, 6), 2), (T(1, 6, 6), 3), (T(2, 1, 3, 1, 2), 1)])
_register("channel_shuffle", cases=[(T(2, 6, 3), 2), (T(1, 6, 2, 2), 3), (T(2, 4, 1), 1)])
_register("masked_fill.Tensor", cases=[(T(3, 4), _mask((3, 4)), T()), (T(3, 4), _mask((4,)), T())])

# torch differentiates slice_scatter and select_scatter on real dtypes only
_register("slice_scatter", cases=[(T(4, 5), T(4, 2), 1, 1, 4, 2), (T(4, 5), T(2, 5), 0, -3, None, 2), (T(4, 5), T(4, 5))], complex_=False)
_register("slice_inverse", cases=[(T(4, 2), T(4, 5), 1, 1, 4, 2), (T(2, 5), T(4, 5), 0, -3, None, 2)], complex_=False)
_register("select_scatter", cases=[(T(2, 3, 4), T(2, 4), 1, -1), (T(3), T(), 0, 2)], complex_=False)
_register("diagonal_scatter", cases=[(T(3, 4), T(3), 0, 0, 1), (T(2, 3, 4), T(3, 1), 1, -1, 0), (T(2, 3, 4), T(3, 1), -1, 0, 2)])
_register("as_strided_scatter", cases=[(T(3, 4), T(2, 2), (2, 2), (1, 4), 1), (T(3, 4), T(3), (3,), (5,), None), (T(5), T(2), (2,), (2,), 0)])
known_failure(
    "spec bug: torch 2.13's as_strided_scatter_backward gives self the gradient at the scattered "
    "positions, which src overwrote, and zero elsewhere (the reverse of the derivative)",
    "as_strided_scatter", modes=("vjp",))

_register("_unsafe_index.Tensor", cases=[(T(3, 4), [_idx(2, 0, 2)]), (T(3, 4, 5), [None, _idx(3, 1), _idx(0, -1)])])
_register("_unsafe_index_put", cases=[(T(3, 4), [_idx(2, 0)], T(2, 4), False), (T(3, 4), [_idx(2, 0, 2, 2)], T(4, 4), True),
                                      (T(3, 4), [None, _idx(3, 1)], T(3, 2), False)])
# indices out of range only where the mask is False, as upsampling's borders use them
_OUT = _idx(0, 2, 5)
_KEEP = np.array([[True], [True], [False]])
_register("_unsafe_masked_index", cases=[(T(3, 4), _KEEP, [_OUT], 0.5), (T(3, 4), _mask((2, 4)), [None, _idx([0, 3, 3, 1], [2, 2, 0, 1])], 0.0)])
_register("_unsafe_masked_index_put_accumulate", cases=[(T(3, 4), _KEEP, [_OUT], T(3, 4)), (T(3, 4), _mask((2, 4)), [None, _idx([0, 3, 3, 1], [2, 2, 0, 1])], T(3, 2, 4))])


def _reducing(index, src_shape, reductions):
    """Samples of scatter_reduce / index_reduce: every reduction with and without self, repeated
    indices, a zero in src for prod's own path; values drawn apart, so no extreme is tied."""

    def make(op, rng, dtype=np.float64):
        out = []
        for reduce in reductions:
            for include_self in (True, False):
                x, src = draw(rng, (3, 4), -2.0, 2.0, dtype), draw(rng, src_shape, -2.0, 2.0, dtype)
                if reduce == "prod":
                    src.flat[1] = 0.0
                for dim in (1, -1):
                    out.append(Sample((x, dim, index, src, reduce), {"include_self": include_self}, f"{reduce} include_self={include_self} dim={dim}"))
        return out

    return make


samples("scatter_reduce.two")(_reducing(_idx([0, 0, 2], [1, 3, 3], [2, 2, 2]), (3, 3), ("sum", "prod", "mean", "amax", "amin")))
samples("index_reduce")(_reducing(_idx(0, 2, 0, 3), (3, 4), ("prod", "mean", "amax", "amin")))
known_failure(
    "spec gap: torch 2.13's scatter_reduce_jvp states no tangent for reduce='prod' (torch.func.jvp "
    "gives zeros there too); the other reductions' tangents are compared with torch in the tests",
    "scatter_reduce.two", modes=("jvp",))


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(Equivalent(
    lambda aten, a: aten.slice_scatter(a["src"], a["self"], a["dim"], a["start"], a["end"], a["step"]),
    "torch's CPU kernel needs `self` to be a view of `src`: aten.slice_scatter(src, self, ...)"), "slice_inverse")
torch_equivalent(Equivalent(
    lambda aten, a: aten.index_add_(a["self"], a["dim"], a["index"], a["source"], alpha=a["alpha"]),
    "torch 2.13 merged the overload into index_add_"), "index_add_.alpha")
# the checker's schema-default samples have no torch meaning here (float indices)
parity_samples("one_hot", Sample((np.array([0, 2, 1, 3]), 4), {}, "4 classes"), Sample((np.array([[0, 2], [1, 1]]),), {}, "num_classes=-1"))
