"""Checker inputs for the special functions: inside each function's domain, away from poles and kinks.

No op here is checked on complex inputs: ATen implements none of them for complex dtypes.
"""

from __future__ import annotations

import numpy as np

from ..opdb import domain, samples, without_meaning
from ..samples import DEFAULT_SHAPES, Sample, draw

domain(-0.9, 0.9, "erfinv")  # erfinv has poles at +-1
domain(0.3, 3.0, "lgamma", "digamma", "polygamma")  # poles at 0, -1, -2, ...
domain(0.05, 0.95, "logit")  # log(x / (1 - x)) has poles at 0 and 1


def _pointwise(op, rng, dtype, ranges: dict, scalars: dict | None = None, label: str = "") -> list[Sample]:
    """One sample per DEFAULT_SHAPES: each Tensor argument drawn from its own interval, the rest given."""
    out = []
    for shapes in DEFAULT_SHAPES:
        args, k = [], 0
        for a in op.schema.arguments:
            if a.is_tensor:
                lo, hi = ranges[a.name]
                args.append(draw(rng, shapes[min(k, 1)], lo, hi, dtype))
                k += 1
            else:
                args.append((scalars or {})[a.name])
        shape = "x".join(map(str, shapes[0])) + (" bcast" if shapes[0] != shapes[1] else "")
        out.append(Sample(tuple(args), label=f"{shape} {label}".strip()))
    return out


@samples("polygamma", "polygamma_")
def _polygamma(op, rng, dtype=np.float64):
    """The first orders (digamma, ATen's own trigamma, zeta-based) each have their own code."""
    return [s for n in (0, 1, 2, 3) for s in _pointwise(op, rng, dtype, {"self": (0.3, 3.0)}, {"n": n}, f"n={n}")]


@samples("mvlgamma")
def _mvlgamma(op, rng, dtype=np.float64):
    """Defined for x > (p - 1) / 2."""
    return [
        s
        for p in (1, 2, 3)
        for s in _pointwise(op, rng, dtype, {"self": ((p - 1) / 2 + 0.3, (p - 1) / 2 + 3.0)}, {"p": p}, f"p={p}")
    ]


@samples("xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other")
def _xlogy(op, rng, dtype=np.float64):
    """x of either sign (and x = 0 as a Scalar: its own branch), y > 0."""
    tensors = {"self": (-2.0, 2.0), "other": (0.2, 3.0)}
    if op.name == "xlogy.Scalar_Self":
        return [s for x in (1.5, 0) for s in _pointwise(op, rng, dtype, tensors, {"self": x}, f"self={x}")]
    return _pointwise(op, rng, dtype, tensors, {"other": 2.5})


@samples("special_xlog1py", "special_xlog1py.self_scalar", "special_xlog1py.other_scalar")
def _xlog1py(op, rng, dtype=np.float64):
    """x of either sign, y > -1."""
    return _pointwise(op, rng, dtype, {"self": (-2.0, 2.0), "other": (-0.8, 2.0)}, {"self": 1.5, "other": 1.5})


def _integer_self(samples: list[Sample]) -> list[Sample]:
    """The spec has no derivative in `self` (not_implemented): an integer `self`, which ATen
    promotes, is not differentiable and leaves the formula for `other` to be checked."""
    return [
        Sample((np.rint(s.args[0]).astype(np.int64), *s.args[1:]), label=f"{s.label} integer self") for s in samples
    ]


@samples("igamma", "igammac")
def _incomplete_gamma(op, rng, dtype=np.float64):
    """P(a, x) and Q(a, x): a > 0, x > 0."""
    return _integer_self(_pointwise(op, rng, dtype, {"self": (1.0, 4.0), "other": (0.5, 3.0)}))


@samples("special_zeta", "special_zeta.self_scalar", "special_zeta.other_scalar")
def _zeta(op, rng, dtype=np.float64):
    """Hurwitz zeta(x, q): x > 1, q > 0 (integer x for the Tensor-Tensor overload)."""
    out = _pointwise(op, rng, dtype, {"self": (2.0, 4.0), "other": (0.5, 3.0)}, {"self": 2.5, "other": 1.5})
    return _integer_self(out) if op.name == "special_zeta" else out


@samples("logit")
def _logit(op, rng, dtype=np.float64):
    """Without eps; with eps inside [eps, 1 - eps] and in the clamped part; negative eps (no clamp)."""
    cases = [(None, (0.05, 0.95)), (0.2, (0.25, 0.75)), (0.2, (0.02, 0.15)), (-1.0, (0.05, 0.95))]
    return [s for eps, r in cases for s in _pointwise(op, rng, dtype, {"self": r}, {"eps": eps}, f"eps={eps} x in {r}")]


domain(0.1, 3.0, "special_entr")  # -x log x: -inf below 0, a kink of its derivative at 0
domain(0.05, 0.95, "special_ndtri")  # the inverse normal CDF has poles at 0 and 1

without_meaning("steps to the next float: no real-number meaning", "nextafter")  # for the sympy proofs
