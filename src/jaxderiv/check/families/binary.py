"""Checker inputs of the elementwise binary and ternary ops: Scalars, bounds, and gaps from kinks.

Each op's samples are the default shapes (same shape, broadcasting, 0-d) for each variant of
its non-tensor arguments. Inputs are redrawn until they keep GAP away from the op's kinks
(clamp bounds, ties of maximum, jumps of fmod), where finite differences cannot judge.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..opdb import Equivalent, complex_ok, kinks, samples, torch_equivalent
from ..samples import DEFAULT_SHAPES, Sample, draw
from . import vector

GAP = 0.05  # distance kept from a kink; the finite-difference step is 1e-6
DEFAULT_RANGE = (-2.0, 2.0)


def _bools(rng, shape, dtype):
    return rng.random(shape) < 0.5


def _small_ints(rng, shape, dtype):
    """An integer operand: not differentiable, so the checker judges only the float one."""
    return rng.integers(1, 4, size=shape)


def _sample(op, rng, dtype, spec: dict, shapes, kinks: Callable | None) -> Sample:
    """One call: tensors drawn as `spec` says ((lo, hi), a function, or None), other arguments from `spec`."""
    for _ in range(100):
        values: dict[str, object] = {}
        k = 0
        for a in op.schema.arguments:
            if a.is_tensor:
                how = spec.get(a.name, DEFAULT_RANGE if a.default is None else None)
                shape = shapes[min(k, len(shapes) - 1)]
                k += 1
                if how is None:
                    values[a.name] = None
                elif callable(how):
                    values[a.name] = how(rng, shape, dtype)
                else:
                    lo, hi = how
                    values[a.name] = draw(rng, shape, lo, hi, dtype)
            elif a.name in spec:
                values[a.name] = spec[a.name]
        if kinks is None or np.min(kinks(**values), initial=np.inf) >= GAP:
            break
    else:
        raise ValueError(f"{op.name}: no inputs {GAP} away from its kinks in 100 draws")
    label = ("x".join(map(str, shapes[0])) or "0-d") + (" bcast" if shapes[0] != shapes[1] else "")
    label += "".join(f" {n}={v}" for n, v in spec.items() if not isinstance(v, tuple) and not callable(v))
    return Sample((), values, label)  # by keyword: a Scalar may be given while one before it is not


def _register(
    *names: str, variants=({},), kinks: Callable | None = None, complex_: bool = False, complex_variants=(), **args
):
    """Samples of `names`: `args` (ranges or values) updated by each variant, in every default
    shape. `complex_variants` are added on complex inputs only: complex Scalars (alpha, weight),
    without which a formula's complex branch or a Scalar's missing `.conj()` goes unjudged."""

    @samples(*names)
    def make(op, rng, dtype=np.float64):
        several = sum(a.is_tensor for a in op.schema.arguments) > 1  # else broadcasting is moot
        shapes = [s for s in DEFAULT_SHAPES if several or s[0] == s[1]]
        chosen = tuple(variants) + (tuple(complex_variants) if np.issubdtype(dtype, np.complexfloating) else ())
        return [_sample(op, rng, dtype, {**args, **v}, s, kinks) for v in chosen for s in shapes]

    if complex_:
        complex_ok(*names)


def _from_other(self, other):
    """Ties of maximum-like ops, and the jumps of comparisons."""
    return np.abs(self - other)


def _from_multiples(self, other, **_):
    """fmod, remainder and rounded division jump where self is a multiple of other."""
    return np.abs(self - other * np.round(self / other))


def _from_bounds(self, min=None, max=None):
    return np.concatenate([np.ravel(np.abs(self - b)) for b in (min, max) if b is not None])


_COMPLEX_ALPHA = ({"alpha": 0.5 - 1.5j},)
_register("add.Tensor", variants=({}, {"alpha": 2.0}), complex_=True, complex_variants=_COMPLEX_ALPHA)
# The 1.7 formulas of sub/rsub (`-grad * alpha`, no `.conj()`) are written for a real alpha.
_register("sub.Tensor", "rsub.Tensor", variants=({}, {"alpha": 2.0}), complex_=True)
_register(
    "add.Scalar",
    "sub.Scalar",
    other=0.7,
    variants=({}, {"alpha": 2.0}),
    complex_=True,
    complex_variants=_COMPLEX_ALPHA + ({"other": 0.7 + 0.4j},),
)
_register(
    "rsub.Scalar", other=0.7, variants=({}, {"alpha": 2.0}), complex_=True, complex_variants=({"other": 0.7 + 0.4j},)
)
_register("mul.Tensor", complex_=True)
_register("mul.Scalar", other=1.5, complex_=True, complex_variants=({"other": 1.5 - 0.5j},))
_register("div.Tensor", other=(0.5, 2.0), complex_=True)
_register("div.Scalar", other=1.5, complex_=True, complex_variants=({"other": 1.5 - 0.5j},))
_ROUNDING = ({"rounding_mode": None}, {"rounding_mode": "trunc"}, {"rounding_mode": "floor"})
_register("div.Tensor_mode", other=(0.5, 2.0), variants=_ROUNDING, kinks=_from_multiples)
_register("div.Scalar_mode", other=1.5, variants=_ROUNDING, kinks=_from_multiples)
# pow: positive bases, away from the branch cut of a real power of a negative number
_register("pow.Tensor_Scalar", self=(0.5, 2.0), variants=[{"exponent": e} for e in (2.5, 3, 0, -1.5)], complex_=True)
_register("pow.Tensor_Tensor", self=(0.5, 2.0), complex_=True)
_register("pow.Scalar", self=2.5, complex_=True)
_register("copysign.Scalar", variants=({"other": 0.5}, {"other": -0.5}))
_register("fmod.Scalar", "remainder.Scalar", other=0.75, kinks=_from_multiples)
# fmod.Tensor's `other` is not_implemented in the spec: an integer `other` leaves `self` to check
_register("fmod.Tensor", other=_small_ints, kinks=_from_multiples)
_register("remainder.Tensor", other=(0.5, 2.0), kinks=_from_multiples)
_register(
    "lerp.Scalar",
    variants=({"weight": 0.3}, {"weight": 0.8}),
    complex_=True,
    complex_variants=({"weight": 0.3 + 0.6j},),
)
_register("lerp.Tensor", complex_=True)
_register("addcmul", variants=({}, {"value": 0.5}), complex_=True)
_register("addcdiv", tensor2=(0.5, 2.0), variants=({}, {"value": 0.5}), complex_=True)
_register(
    "clamp",
    variants=({"min": -1.0, "max": 1.0}, {"min": -0.5}, {"max": 0.5}, {"min": 0.5, "max": -0.5}),
    kinks=_from_bounds,
)
_register(
    "clamp.Tensor",
    variants=(
        {"min": (-1.2, -0.2), "max": (0.2, 1.2)},
        {"min": (-1.0, 1.0), "max": None},
        {"max": (-1.0, 1.0)},
        {"min": (0.2, 1.2), "max": (-1.2, -0.2)},
    ),
    kinks=_from_bounds,
)
_register("clamp_min", min=0.3, kinks=_from_bounds)
_register("clamp_max", max=0.3, kinks=_from_bounds)
_register("clamp_min.Tensor", "clamp_max.Tensor", kinks=_from_bounds)
_register("ldexp.Tensor", complex_=True)
_register("_s_where", "where.self", condition=_bools, complex_=True)
_register("maximum", "minimum", "fmax", "fmin", kinks=_from_other)
# In-place comparisons write 0 and 1 into self's dtype: differentiable, with zero gradients.
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_register(*[f"{c}_.Tensor" for c in _COMPARISONS], kinks=_from_other)
_register(*[f"{c}_.Scalar" for c in _COMPARISONS], other=0.5, kinks=_from_other)
complex_ok("eq_.Tensor", "eq_.Scalar", "ne_.Tensor", "ne_.Scalar")


# -- parity with torch ------------------------------------------------------------------------

kinks("clamp", (vector(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0), (vector(-0.5, 0.3), -0.5, None))
kinks("clamp_min", (vector(0.5, 0.4, 0.6), 0.5))
kinks("clamp_max", (vector(0.5, 0.4, 0.6), 0.5))
kinks("clamp.Tensor", (vector(-1.0, 1.0, 0.0), vector(-1.0, -1.0, -1.0), vector(1.0, 1.0, 1.0)))
kinks("clamp_min.Tensor", (vector(0.5, 0.4, 0.6), vector(0.5, 0.5, 0.5)))
kinks("clamp_max.Tensor", (vector(0.5, 0.4, 0.6), vector(0.5, 0.5, 0.5)))
kinks("maximum", (vector(1.0, 2.0, -1.0), vector(1.0, 3.0, -1.0)))
kinks("minimum", (vector(1.0, 2.0, -1.0), vector(1.0, 3.0, -1.0)))
kinks("fmax", (vector(1.0, 2.0, np.nan), vector(1.0, np.nan, 3.0)))
kinks("fmin", (vector(1.0, 2.0, np.nan), vector(1.0, np.nan, 3.0)))
kinks("pow.Tensor_Scalar", (vector(0.0, 1.0, -2.0), 0), (vector(0.0, 1.0, 2.0), 0.5))
kinks("pow.Tensor_Tensor", (vector(0.0, 0.0, 0.0, 2.0), vector(0.0, 1.0, 2.0, 0.0)))
kinks("hypot", (vector(0.0, 3.0), vector(0.0, 4.0)))
kinks("copysign.Tensor", (vector(0.0, -0.0, 1.5), vector(-1.0, 1.0, -0.0)))
# where with equal branches: the gradient goes to the branch the condition selects
kinks("_s_where", (np.array([True, False, True]), vector(1.0, 2.0, 3.0), vector(1.0, 2.0, 3.0)))
torch_equivalent(
    Equivalent(lambda aten, a: aten.where.self(*a.values()), "torch 2.13 has no _s_where: aten.where.self"), "_s_where"
)
