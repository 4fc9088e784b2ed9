"""Checker inputs of the indexing ops: gather and scatter, index_*, masked_*, take and put, the
_unsafe_* indexing of torch 2.13's decompositions, scatter_reduce and index_reduce.

All but the reductions are linear in their differentiable inputs, so no kinks; what matters
are the variants: negative dims, broadcast masks and values, index lists with None and bool
masks. Duplicate indices appear only where the derivative is unique (accumulating ops,
gathers): with overwriting ops (scatter, index_copy, index_put without accumulate) a
duplicate makes the written value depend on which write wins. scatter_reduce and
index_reduce repeat indices, with values drawn apart so that no extreme is tied. Cases are
written as shapes.py's are (argument tuples, tensors as T(shape)).
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, kinks, known_failure, samples, torch_equivalent
from ..samples import Sample, draw
from . import matrix
from .shapes import T, _register


def _idx(*values):
    return np.asarray(values, np.int64)


def _mask(shape, seed=0):
    return np.random.default_rng(seed).random(shape) < 0.5


_ROWS = _idx([0, 3], [2, 1], [1, 2])  # per row: distinct columns of a 3x4 input
_register(
    "gather",
    cases=[
        (T(3, 4), 1, _idx([0, 3], [2, 2], [1, 1])),
        (T(3, 4), 0, _idx([0, 2, 2, 1], [1, 1, 0, 2])),
        (T(3, 4), -1, _ROWS),
    ],
)
# src of index's shape: the spec's gradient of src, grad.gather(dim, index), has index's shape
_register(
    "scatter_.src", "scatter.src", cases=[(T(3, 4), 1, _ROWS, T(3, 2)), (T(3, 4), 0, _idx([0, 2, 1, 1]), T(1, 4))]
)
_register(
    "scatter_.value",
    "scatter.value",
    cases=[(T(3, 4), 1, _ROWS, 0.5), (T(3, 4), 0, _idx([0, 2, 1, 1], [1, 1, 0, 2]), -1.0)],
)
_register(
    "scatter_add_",
    "scatter_add",
    cases=[
        (T(3, 4), 1, _idx([0, 0], [2, 2], [1, 3]), T(3, 2)),
        (T(3, 4), 0, _idx([0, 2, 2, 1], [0, 0, 0, 2]), T(2, 4)),
    ],
)
_register(
    "index.Tensor",
    cases=[
        (T(3, 4), [_idx(2, 0, 2)]),
        (T(3, 4, 5), [None, _idx(3, 1), _idx(0, -1)]),
        (T(3, 4), [_mask((3, 4))]),
        (T(3, 4, 5), [_idx([2], [0]), None, _idx(1, 4, 3)]),
    ],
)
_register("index_add_", "index_add", cases=[(T(4, 3), 0, _idx(1, 3, 1), T(3, 3)), (T(3, 4), -1, _idx(2), T(3, 1))])
_register(
    "index_add_.alpha",
    cases=[(T(4, 3), 0, _idx(1, 3, 1), T(3, 3)), (T(3, 4), -1, _idx(2), T(3, 1))],
    kwargs={"alpha": 2.0},
)
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
_register(
    "masked_fill_.Scalar", "masked_fill.Scalar", cases=[(T(3, 4), _mask((3, 4)), 0.5), (T(3, 4), _mask((4,)), -1.0)]
)
_register("masked_fill_.Tensor", cases=[(T(3, 4), _mask((3, 4)), T()), (T(3, 4), _mask((4,)), T())])
# `sizes` equal to grad_output's: torch 2.13's result formula gives the tangent grad_output's
# sizes, so forward mode (in torch as here) fails for any other `sizes`
_register(
    "masked_scatter_backward",
    cases=[(T(3, 4), _mask((3, 4)), (3, 4)), (T(3, 4), _mask((4,)), (3, 4)), (T(2, 3), _mask((2, 3), 1), (2, 3))],
)
_register("masked_scatter_", "masked_scatter", cases=[(T(3, 4), _mask((3, 4)), T(12)), (T(3, 4), _mask((4,)), T(3, 5))])
_register("masked_select", cases=[(T(3, 4), _mask((3, 4))), (T(3, 4), _mask((4,))), (T(4), _mask((3, 4)))])
_register("take", cases=[(T(3, 4), _idx([0, 11, -1], [5, 5, 2]))])
_register(
    "put_",
    "put",
    cases=[(T(3, 4), _idx(0, 7, -1, 5, 3), T(5), False), (T(3, 4), _idx([1, 1, 9], [4, 1, 0]), T(2, 3), True)],
)
_register("masked_fill.Tensor", cases=[(T(3, 4), _mask((3, 4)), T()), (T(3, 4), _mask((4,)), T())])
_register(
    "_unsafe_index.Tensor",
    cases=[
        (T(3, 4), [_idx(2, 0, 2)]),
        (T(3, 4, 5), [None, _idx(3, 1), _idx(0, -1)]),
        (T(3, 4, 5), [None, _idx(3, 1, 3), _idx(0, -1, 0)]),  # a repeated (row, column) pair
    ],
)
_register(
    "_unsafe_index_put",
    cases=[
        (T(3, 4), [_idx(2, 0)], T(2, 4), False),
        (T(3, 4), [_idx(2, 0, 2, 2)], T(4, 4), True),
        (T(3, 4), [None, _idx(3, 1)], T(3, 2), False),
    ],
)
# indices out of range only where the mask is False, as upsampling's borders use them
_OUT = _idx(0, 2, 5)
_KEEP = np.array([[True], [True], [False]])
_register(
    "_unsafe_masked_index",
    cases=[(T(3, 4), _KEEP, [_OUT], 0.5), (T(3, 4), _mask((2, 4)), [None, _idx([0, 3, 3, 1], [2, 2, 0, 1])], 0.0)],
)
_register(
    "_unsafe_masked_index_put_accumulate",
    cases=[
        (T(3, 4), _KEEP, [_OUT], T(3, 4)),
        (T(3, 4), _mask((2, 4)), [None, _idx([0, 3, 3, 1], [2, 2, 0, 1])], T(3, 2, 4)),
    ],
)


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
                    out.append(
                        Sample(
                            (x, dim, index, src, reduce),
                            {"include_self": include_self},
                            f"{reduce} include_self={include_self} dim={dim}",
                        )
                    )
        return out

    return make


samples("scatter_reduce.two")(
    _reducing(_idx([0, 0, 2], [1, 3, 3], [2, 2, 2]), (3, 3), ("sum", "prod", "mean", "amax", "amin"))
)
samples("index_reduce")(_reducing(_idx(0, 2, 0, 3), (3, 4), ("prod", "mean", "amax", "amin")))
known_failure(
    "spec gap: torch 2.13's scatter_reduce_jvp states no tangent for reduce='prod' (torch.func.jvp "
    "gives zeros there too); the other reductions' tangents are compared with torch in the tests. "
    "jvp_vjp inherits it: the backward formula reads `result`, whose tangent is that jvp's "
    "(measured on torch 2.13's file: 3.7 off JAX's autodiff of the forward at prod's first sample)",
    "scatter_reduce.two",
    modes=("jvp", "jvp_vjp"),
)


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(
    Equivalent(
        lambda aten, a: aten.index_add_(a["self"], a["dim"], a["index"], a["source"], alpha=a["alpha"]),
        "torch 2.13 merged the overload into index_add_",
    ),
    "index_add_.alpha",
)

# scatter_reduce and index_reduce on ties and zeros (the samples keep clear of both): targets
# reached several times, sources equal to self's own element (amax/amin split the gradient among
# the ties), one zero and two zeros in one target (prod's own paths). With include_self=True,
# the default; include_self=False is keyword-only, which a kink tuple cannot pass:
# tests/ops/test_indexing.py compares those.
_SELF = matrix([[1.0, 2.0, -1.0, 0.5], [0.0, 3.0, 1.0, 2.0], [2.0, -1.0, 4.0, 1.5]])
_SCATTER, _SRC = _idx([0, 0, 2], [1, 3, 3], [2, 2, 2]), matrix([[1.0, 0.0, -1.0], [3.0, 2.0, 0.7], [0.0, 4.0, 0.0]])
_SOURCE = matrix([[1.0, 0.0, 3.0, 0.5], [2.0, 3.0, 1.0, 2.0], [0.0, 1.0, 0.0, -1.0]])
kinks(
    "scatter_reduce.two",
    *[(_SELF, 1, _SCATTER, _SRC, r) for r in ("sum", "prod", "mean", "amax", "amin")],
    (_SELF, -2, _SCATTER.T % 3, _SRC.T.copy(), "prod"),  # two zeros in one target, a negative dim
)
kinks("index_reduce", *[(_SELF, -1, _idx(0, 2, 0, 3), _SOURCE, r) for r in ("prod", "mean", "amax", "amin")])
