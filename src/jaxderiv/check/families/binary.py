"""Checker inputs of the elementwise binary and ternary ops: Scalars, bounds, and gaps from kinks.

Each op's samples are the default shapes (same shape, broadcasting, 0-d) for each variant of
its non-tensor arguments. Inputs are redrawn until they keep GAP away from the op's kinks
(clamp bounds, ties of maximum, jumps of fmod), where finite differences cannot judge.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import symbolic_math
from ..opdb import Equivalent, complex_ok, definition, kinks, parity_differs, samples, torch_equivalent
from ..samples import DEFAULT_SHAPES, Sample, draw
from ..symbolic import sp
from . import matrix, vector

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
    *names: str,
    variants=({},),
    kinks: Callable | None = None,
    complex_: bool = False,
    complex_variants=(),
    real_variants=(),
    **args,
):
    """Samples of `names`: `args` (ranges or values) updated by each variant, in every default
    shape. `complex_variants` are added on complex inputs only: complex Scalars (alpha, weight),
    without which a formula's complex branch or a Scalar's missing `.conj()` goes unjudged;
    `real_variants` on real inputs only (arguments ATen refuses with complex tensors)."""

    @samples(*names)
    def make(op, rng, dtype=np.float64):
        several = sum(a.is_tensor for a in op.schema.arguments) > 1  # else broadcasting is moot
        shapes = [s for s in DEFAULT_SHAPES if several or s[0] == s[1]]
        complex_input = np.issubdtype(dtype, np.complexfloating)
        chosen = tuple(variants) + (tuple(complex_variants) if complex_input else tuple(real_variants))
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
# ATen rounds no complex quotient: complex inputs are checked with rounding_mode None only.
_ROUNDED = ({"rounding_mode": "trunc"}, {"rounding_mode": "floor"})
_TRUE_DIV = ({"rounding_mode": None},)
_register(
    "div.Tensor_mode",
    other=(0.5, 2.0),
    variants=_TRUE_DIV,
    real_variants=_ROUNDED,
    kinks=_from_multiples,
    complex_=True,
)
_register(
    "div.Scalar_mode", other=1.5, variants=_TRUE_DIV, real_variants=_ROUNDED, kinks=_from_multiples, complex_=True
)
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

kinks(
    "clamp",
    (vector(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0),
    (vector(-0.5, 0.3), -0.5, None),
    (vector(0.5, -0.3), None, 0.5),
    (vector(0.5, -0.5, 0.0), 0.5, -0.5),  # min > max: max everywhere
)
kinks("clamp_min", (vector(0.5, 0.4, 0.6), 0.5))
kinks("clamp_max", (vector(0.5, 0.4, 0.6), 0.5))
kinks(
    "clamp.Tensor",
    (vector(-1.0, 1.0, 0.0), vector(-1.0, -1.0, -1.0), vector(1.0, 1.0, 1.0)),
    (matrix([[-1.0, 1.0, 0.0], [0.5, -1.5, 1.7]]), vector(-1.0, -1.0, 0.0), vector(1.0, 1.0, 1.0)),  # broadcast bounds
    (vector(-1.0, 1.0, 0.0), vector(-1.0, -0.8, -1.2), None),  # a tie with a lone bound
    (vector(1.0, -1.0, 0.0), None, vector(1.0, 0.7, 1.3)),
    (vector(-1.1, 1.0, 0.0), vector(-1.0, -0.8, -1.2), None),  # near the bound, no tie
    (vector(0.5, -0.5, 0.0), vector(0.5, 0.5, 0.5), vector(-0.5, -0.5, -0.5)),  # min > max
)
kinks("clamp_min.Tensor", (vector(0.5, 0.4, 0.6), vector(0.5, 0.5, 0.5)))
kinks("clamp_max.Tensor", (vector(0.5, 0.4, 0.6), vector(0.5, 0.5, 0.5)))
kinks("maximum", (vector(1.0, 2.0, -1.0), vector(1.0, 3.0, -1.0)))
kinks("minimum", (vector(1.0, 2.0, -1.0), vector(1.0, 3.0, -1.0)))
kinks("fmax", (vector(1.0, 2.0, np.nan), vector(1.0, np.nan, 3.0)))
kinks("fmin", (vector(1.0, 2.0, np.nan), vector(1.0, np.nan, 3.0)))
# x^0 has a zero gradient also at 0; x^0.5 an infinite slope there
kinks("pow.Tensor_Scalar", (vector(0.0, 1.0, -2.0), 0), (vector(0.0, 1.0, -2.0), 3), (vector(0.0, 1.0, 2.0), 0.5))
# base 0: d/dexponent is 0 for exponent >= 0 and -inf below; d/dbase is 0 for exponent 0
kinks("pow.Tensor_Tensor", (vector(0.0, 0.0, 0.0, 0.0, 2.0), vector(0.0, 1.0, 2.0, -1.0, 0.0)))
kinks("pow.Scalar", (0.0, vector(0.0, 1.0, -1.0, 2.0)))
kinks("atan2", (vector(0.0, 1.0), vector(0.0, 0.0)))  # the origin
kinks("hypot", (vector(0.0, 3.0), vector(0.0, 4.0)))
kinks("copysign.Tensor", (vector(0.0, -0.0, 1.5, -2.0), vector(-1.0, 1.0, -0.0, 3.0)))  # self = 0: gradient 0
kinks("copysign.Scalar", (vector(0.0, -1.0, 2.0), -0.5))
# on the jumps too (self a multiple of other): gradient 1
kinks("fmod.Scalar", (vector(-2.0, 1.5, 0.75, 1.0), 0.75))
kinks(
    "fmod.Tensor",
    (vector(-2.0, 1.5, 3.0, 1.0), np.array([2, 3, 1, 1])),
    # a float `other`: torch's formula for other, -grad * self.div(other, "trunc"); the samples' other is int
    (vector(-3.5, -2.0, -0.4, 0.9, 2.2, 3.7), vector(1.3, 1.3, 1.3, 1.3, 1.3, 1.3)),
)
kinks("remainder.Scalar", (vector(-2.0, 1.5, 0.75, 1.0), 0.75))
kinks("remainder.Tensor", (vector(-2.0, 1.5, 3.0, 1.0), vector(0.5, -1.0, 1.5, 0.3)))
# weight 0.5 (and |weight| 0.5 for lerp.Tensor): where ATen switches between its two formulas
_LERP_SELF, _LERP_END = vector(-1.0, 0.3, 1.7), vector(0.5, 2.0, -1.2)
_LERP_SELF_C, _LERP_END_C = _LERP_SELF + 1j * vector(0.4, -1.1, 0.2), _LERP_END + 1j * vector(1.0, 0.3, -0.6)
kinks("lerp.Scalar", (_LERP_SELF, _LERP_END, 0.5), (_LERP_SELF_C, _LERP_END_C, 0.5))
kinks(
    "lerp.Tensor",
    (_LERP_SELF, _LERP_END, vector(0.5, -0.5, 1.0)),
    (_LERP_SELF_C, _LERP_END_C, vector(0.5, -0.5, 1.0).astype(np.complex128)),
)
kinks("logaddexp", (vector(1.0, -np.inf, np.inf), vector(1.0, -np.inf, 0.0)))  # ties, -inf and inf
# where with equal branches: the gradient goes to the branch the condition selects
kinks(
    "_s_where",
    (np.array([True, False, True]), vector(1.0, 2.0, 3.0), vector(1.0, 2.0, 3.0)),
    (np.array([True, False, True]), vector(1.0, 2.0, 3.0) + 0.5j, vector(1.0, 2.0, 3.0) + 0.5j),
)
# Where the seed has no result: formula, forward mode transposes the backward formula; at these
# kinks torch 2.13's own result formula (which its own file gives jaxderiv too: that run agrees)
# picks another subgradient. Forward values and vjp agree there (tests/ops/test_binary.py).
parity_differs(
    ("kinks",),
    "jvp at a tie with a lone bound (self = min, max None): the transposed clamp_backward gives self's "
    "tangent (1 for self_t = 1, min_t = 0), torch 2.13's clamp_jvp the bound's (0; 1 for min_t = 1)",
    "clamp.Tensor",
)
parity_differs(
    ("kinks",),
    "jvp at the origin: the transposed atan2_backward gives 0, torch 2.13's result formula "
    "(-self_p * other_t + other_p * self_t) / (self_p^2 + other_p^2) 0/0 = NaN",
    "atan2",
)
torch_equivalent(
    Equivalent(lambda aten, a: aten.where.self(*a.values()), "torch 2.13 has no _s_where: aten.where.self"), "_s_where"
)  # torch 2.14.1 changed these kink conventions (the default registry's formulas); torch 2.13, the
# oracle, keeps the old ones. Measured by `python -m jaxderiv parity` on the default spec.
parity_differs(
    ("kinks",),
    "torch 2.14.1's formula gives 0 at self == bound (`where(self > min, grad, 0)`); torch 2.13's gives grad "
    "(`self >= min`): vjp 0 vs -1.25 on the kink sample",
    "clamp_min",
    "clamp_max",
    seed_spec=False,
    newest_spec=True,
)
parity_differs(
    ("kinks",),
    "torch 2.14.1's formula splits a tie half and half (`where(self == other, grad / 2, grad)`, masked); torch 2.13's "
    "gives it all to one side: vjp -0.327 vs -0.654 on the tie (fmax/fmin: also a NaN input gets the gradient in "
    "2.14.1, 0 in 2.13)",
    "clamp_min.Tensor",
    "clamp_max.Tensor",
    "fmax",
    "fmin",
    seed_spec=False,
    newest_spec=True,
)


# -- the sympy proofs: the op's definition ----------------------------------------------------
# Each op as a sympy function of its arguments' symbols: the reference whose derivative its
# formulas must equal (check/proofs.py). `sp` imports sympy only when a proof calls one.

# Symbols other than the Tensor inputs are sampled in 0.5 .. 1.5 unless `ranges` says otherwise.
_CLAMP_RANGES = (("min", -1.5, -0.5), ("max", 0.5, 1.5))

definition("add.Tensor", lambda x, y, a: x + a * y, "self", "other", "alpha")
definition("add.Scalar", lambda x, y, a: x + a * y, "self", "other", "alpha")
definition("sub.Tensor", lambda x, y, a: x - a * y, "self", "other", "alpha")
definition("sub.Scalar", lambda x, y, a: x - a * y, "self", "other", "alpha")
definition("rsub.Tensor", lambda x, y, a: y - a * x, "self", "other", "alpha")
definition("rsub.Scalar", lambda x, y, a: y - a * x, "self", "other", "alpha")
definition("mul.Tensor", lambda x, y: x * y, "self", "other")
definition("mul.Scalar", lambda x, y: x * y, "self", "other")
definition("div.Tensor", lambda x, y: x / y, "self", "other")
definition("div.Scalar", lambda x, y: x / y, "self", "other")
definition("div.Tensor_mode", lambda x, y: x / y, "self", "other", fixed=(("rounding_mode", None),))
definition("div.Scalar_mode", lambda x, y: x / y, "self", "other", fixed=(("rounding_mode", None),))
definition("atan2", lambda x, y: sp.atan2(x, y), "self", "other")
definition("hypot", lambda x, y: sp.sqrt(x**2 + y**2), "self", "other")
definition("pow.Tensor_Tensor", lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0)
definition("pow.Tensor_Scalar", lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0)
definition("pow.Scalar", lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0)
definition("logaddexp", lambda x, y: sp.log(sp.exp(x) + sp.exp(y)), "self", "other")
definition("logaddexp2", lambda x, y: sp.log(2**x + 2**y, 2), "self", "other")
definition("lerp.Tensor", lambda x, e, w: x + w * (e - x), "self", "end", "weight")
definition("lerp.Scalar", lambda x, e, w: x + w * (e - x), "self", "end", "weight")
definition("addcmul", lambda x, a, b, v: x + v * a * b, "self", "tensor1", "tensor2", "value")
definition("addcdiv", lambda x, a, b, v: x + v * a / b, "self", "tensor1", "tensor2", "value", lo=0.5, hi=2.0)
definition("maximum", lambda x, y: sp.Piecewise((x, x > y), (y, True)), "self", "other")
definition("minimum", lambda x, y: sp.Piecewise((x, x < y), (y, True)), "self", "other")
definition("fmax", lambda x, y: sp.Piecewise((x, x > y), (y, True)), "self", "other")
definition("fmin", lambda x, y: sp.Piecewise((x, x < y), (y, True)), "self", "other")
definition("clamp", symbolic_math.clamp, "self", "min", "max", ranges=_CLAMP_RANGES)
definition("clamp.Tensor", symbolic_math.clamp, "self", "min", "max", ranges=_CLAMP_RANGES)
definition("clamp_min", lambda x, lo: symbolic_math.clamp(x, lo, None), "self", "min", ranges=_CLAMP_RANGES)
definition("clamp_min.Tensor", lambda x, lo: symbolic_math.clamp(x, lo, None), "self", "min", ranges=_CLAMP_RANGES)
definition("clamp_max", lambda x, hi: symbolic_math.clamp(x, None, hi), "self", "max", ranges=_CLAMP_RANGES)
definition("clamp_max.Tensor", lambda x, hi: symbolic_math.clamp(x, None, hi), "self", "max", ranges=_CLAMP_RANGES)
definition("copysign.Tensor", symbolic_math.copysign, "self", "other", ranges=(("other", -2.0, 2.0),))
definition("copysign.Scalar", symbolic_math.copysign, "self", "other", ranges=(("other", -2.0, 2.0),))
definition("fmod.Tensor", symbolic_math.fmod, "self", "other", lo=-5.0, hi=5.0)
definition("fmod.Scalar", symbolic_math.fmod, "self", "other", lo=-5.0, hi=5.0)
definition("remainder.Tensor", lambda x, y: x - y * sp.floor(x / y), "self", "other", lo=-5.0, hi=5.0)
definition("remainder.Scalar", lambda x, y: x - y * sp.floor(x / y), "self", "other", lo=-5.0, hi=5.0)
definition(
    "_s_where", lambda c, x, y: sp.Piecewise((x, c), (y, True)), "condition", "self", "other", booleans=("condition",)
)


def _indicator(relation: str):
    """1 where sympy's `relation` (Eq, Ne, ...) holds of (x, y), else 0."""
    return lambda x, y: sp.Piecewise((1, getattr(sp, relation)(x, y)), (0, True))


# In-place comparisons write 0 or 1 into self: piecewise constant, so zero derivatives.
for _name, _relation in {"eq": "Eq", "ne": "Ne", "ge": "Ge", "gt": "Gt", "le": "Le", "lt": "Lt"}.items():
    for _overload in ("Scalar", "Tensor"):
        definition(f"{_name}_.{_overload}", _indicator(_relation), "self", "other")
