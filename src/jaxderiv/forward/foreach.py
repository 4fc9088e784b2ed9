"""`_foreach_*` ops: one ATen op applied to each element of Tensor lists, as torch's optimizers
call them. Each element follows the single-tensor op's semantics (its dtype promotion, NaN
handling); lists must have equal lengths.
"""

from __future__ import annotations

import numpy as np

from ..records import Sample, complex_ok, draw, kinks, known_failure, parity_differs, samples, vector
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


@impl("_foreach_pow.List", "_foreach_pow.ScalarList")
def foreach_pow_list(self, exponent):
    """Exponents a list of tensors (.List) or of numbers (.ScalarList)."""
    return [pow(a, b) for a, b in _zipped("_foreach_pow", self, exponent)]


@impl("_foreach_pow.ScalarAndTensor")
def foreach_pow_scalar_and_tensor(self, exponent):
    return [pow(self, b) for b in exponent]


def _register_extremum(name, clamp):
    """The .Scalar and .ScalarList forwards of `name`, _foreach_minimum or _foreach_maximum: each
    element's `clamp` (minimum(x, s) is clamp_max(x, s), maximum clamp_min, as ATen computes them:
    NaN inputs stay NaN)."""

    def with_scalar(self, scalar):
        return [clamp(a, scalar) for a in self]

    def with_scalars(self, scalars):
        return [clamp(a, s) for a, s in _zipped(name, self, scalars)]

    for overload, forward in ((f"{name}.Scalar", with_scalar), (f"{name}.ScalarList", with_scalars)):
        forward.__name__ = forward.__qualname__ = overload
        impl(overload)(forward)


_register_extremum("_foreach_minimum", clamp_max)
_register_extremum("_foreach_maximum", clamp_min)


@impl("_foreach_norm.Scalar")
def foreach_norm(self, ord=2, dtype=None):
    """Each tensor's norm over all its elements (0-d results)."""
    return [norm_scalar(a, ord) if dtype is None else norm_dtype(a, ord, dtype) for a in self]


@impl("_foreach_mm")
def foreach_mm(self, mat2):
    return [mm(a, b) for a, b in _zipped("_foreach_mm", self, mat2)]


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the `_foreach_*` ops: lists of two or three tensors of different shapes
# (a 0-d one included), so a formula that mixes up elements i shows. Away from the kinks of
# minimum/maximum (ties with the scalar) and pow (0 bases).
_SHAPES = ((2, 3), (3,), ())


def _list(rng, dtype, lo=-2.0, hi=2.0, shapes=_SHAPES):
    return [np.asarray(draw(rng, s, lo, hi, dtype)) for s in shapes]  # a 0-d complex draw is a NumPy scalar


def _away_from(xs, value, gap=0.2):
    """xs with elements within `gap` of `value` moved off it: no ties with the scalar."""
    return [np.where(np.abs(x - value) < gap, x + 2 * gap, x) for x in xs]


@samples("_foreach_div.List")
def _div(op, rng, dtype=np.float64):
    return [Sample((_list(rng, dtype), _list(rng, dtype, 0.5, 2.0)), {}, "3 tensors")]


@samples("_foreach_pow.List")
def _pow_list(op, rng, dtype=np.float64):
    return [Sample((_list(rng, dtype, 0.5, 2.0), _list(rng, dtype, -1.5, 1.5)), {}, "3 tensors")]


@samples("_foreach_pow.ScalarList")
def _pow_scalar_list(op, rng, dtype=np.float64):
    return [Sample((_list(rng, dtype, 0.5, 2.0), [2.5, -1.0, 0.5]), {}, "3 tensors")]


@samples("_foreach_pow.ScalarAndTensor")
def _pow_scalar_and_tensor(op, rng, dtype=np.float64):
    return [Sample((1.7, _list(rng, dtype)), {}, "base 1.7")]


@samples("_foreach_minimum.Scalar", "_foreach_maximum.Scalar")
def _extremum_scalar(op, rng, dtype=np.float64):
    return [Sample((_away_from(_list(rng, dtype), 0.3), 0.3), {}, "scalar 0.3")]


@samples("_foreach_minimum.ScalarList", "_foreach_maximum.ScalarList")
def _extremum_scalar_list(op, rng, dtype=np.float64):
    scalars = [0.3, -0.5, 1.0]
    return [
        Sample(
            ([_away_from([x], s)[0] for x, s in zip(_list(rng, dtype), scalars)], scalars), {}, "scalars 0.3, -0.5, 1"
        )
    ]


@samples("_foreach_norm.Scalar")
def _norm(op, rng, dtype=np.float64):
    return [Sample((_list(rng, dtype, shapes=((2, 3), (4,))), p), {}, f"ord={p}") for p in (2, 3, 1.5)]


@samples("_foreach_mm")
def _mm(op, rng, dtype=np.float64):
    return [
        Sample(
            (
                [draw(rng, (2, 3), -2, 2, dtype), draw(rng, (1, 2), -2, 2, dtype)],
                [draw(rng, (3, 4), -2, 2, dtype), draw(rng, (2, 2), -2, 2, dtype)],
            ),
            {},
            "2 products",
        )
    ]


complex_ok(
    "_foreach_div.List", "_foreach_mm", "_foreach_pow.List", "_foreach_pow.ScalarList", "_foreach_pow.ScalarAndTensor"
)

# torch 2.13's result formulas `scalar + where(self_p == scalar, 0.5, self_p < scalar) * (self_t - scalar)`
# give the scalar, not 0, as the tangent of every clamped element (torch.func.jvp returns the
# same wrong value; torch.minimum's jvp gives 0): a spec bug the check reports each run.
known_failure(
    "torch 2.13's result formula gives `scalar`, not 0, as the tangent of elements clamped to the scalar "
    "(a spec bug: torch.func.jvp of torch._foreach_minimum/_maximum agrees with the formula, torch.minimum's does not)",
    "_foreach_minimum.Scalar",
    "_foreach_minimum.ScalarList",
    "_foreach_maximum.Scalar",
    "_foreach_maximum.ScalarList",
    modes=("jvp",),
)


# -- parity with torch ------------------------------------------------------------------------

kinks("_foreach_minimum.Scalar", ([vector(0.5, 0.4, 0.6), vector(0.5)], 0.5))
kinks("_foreach_maximum.Scalar", ([vector(0.5, 0.4, 0.6), vector(0.5)], 0.5))
kinks("_foreach_minimum.ScalarList", ([vector(0.5, 0.4, 0.6), vector(-1.0)], [0.5, -1.0]))
kinks("_foreach_maximum.ScalarList", ([vector(0.5, 0.4, 0.6), vector(-1.0)], [0.5, -1.0]))
parity_differs(
    ("jvp",),
    "torch.func.jvp of aten._foreach_norm.Scalar raises in torch 2.13 (a forward gradient of "
    "another size than the 0-d norm), as for norm.Scalar; jaxderiv evaluates the result formula",
    "_foreach_norm.Scalar",
    torch_spec=True,
    seed_spec=False,
)
