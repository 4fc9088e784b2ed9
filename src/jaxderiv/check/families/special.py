"""Checker inputs for the special functions: inside each function's domain, away from poles and kinks;
the parity run's inputs at those poles and kinks, and where the spec's results there are not torch's.

No op here is checked on complex inputs: ATen implements none of them for complex dtypes.
"""

from __future__ import annotations

import numpy as np

from .. import symbolic_math
from ..opdb import (
    compiled_apart,
    definition,
    domain,
    kinks,
    not_applicable,
    parity_differs,
    parity_tolerance,
    reference_tolerance,
    samples,
    without_meaning,
)
from ..samples import DEFAULT_SHAPES, Sample, draw
from ..symbolic import sp
from . import vector

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


compiled_apart(
    "12 samples, n = 0..3, each n its own series (the Hurwitz zeta's for n >= 2): one program per (mode, "
    "sample) compiles in 37.7 s against 48.0 s for the entry's one program (one process, no cache, "
    "measured 2026-12-06 on the loaded 2-core machine); polygamma_ runs the same forward on the same "
    "samples, so compiled the same way its programs are polygamma's, found in the persistent cache "
    "(17.7 s in the full run with one program, 4.7 s sharing polygamma's)",
    "polygamma",
    "polygamma_",
)


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
kinks("special_ndtri", (vector(0.5, 1e-6, 1 - 1e-6),))  # the far tails, outside the domain
not_applicable(
    "ATen's CPU kernel has no bfloat16 (or float16) variant: the op refuses that dtype, as torch does",
    "special_ndtri",
    "special_log_ndtr",
    modes=("bfloat16",),
)

without_meaning("steps to the next float: no real-number meaning", "nextafter")  # for the sympy proofs


# -- parity with torch ------------------------------------------------------------------------
# The points the checker avoids: poles, the x = 0 branches, the ends of a domain, infinities, NaN.
# igamma's and zeta's `self` has no derivative in the spec: an integer `self` leaves the formula
# for `other` to be compared; a float one (infinities, non-integers) has its values compared.

_BESSEL = vector(0.0, -0.0, 1e-17, -1e-17, 30.0, -30.0)  # 0: where i1's and i1e's backward take their limit 1/2
_INFS = vector(np.inf, -np.inf)
kinks("erf", (vector(0.0, -0.0, 6.0, -6.0, np.inf, -np.inf, np.nan),))
kinks("erfc", (vector(0.0, 10.0, -10.0, np.inf, -np.inf),))
kinks("erfinv", (vector(0.0, -0.0, 1.0, -1.0, 0.999999),))
kinks("special_erfcx", (vector(0.0, 30.0, 1e5, -5.0),))
kinks("i0", (_BESSEL,))
kinks("special_i0e", (np.concatenate([_BESSEL, _INFS]),))
kinks("special_i1", (_BESSEL,))
kinks("special_i1e", (np.concatenate([_BESSEL, _INFS]),))
# poles at 0 and the negative integers; negative arguments between them
kinks("lgamma", (vector(-3.7, -2.4, -1.3, -0.6, -0.2),), (vector(0.0, -1.0, -2.0, np.inf, 1.0, 2.0),))
kinks("digamma", (vector(-0.5, -1.5, -2.7),), (vector(0.0, -0.0, -1.0, np.inf, 1e10),))
# below about -7 JAX's Hurwitz zeta (a fixed 8 or 16 terms before Euler-Maclaurin) was wrong:
# polygamma(4, -8.3157) gave 8100.5 for torch's 7497.7; the recurrence to positive q fixes it
kinks(
    "polygamma",
    (5, vector(0.4, 1.7, 4.2)),
    *[(n, vector(-0.5, -1.5, -2.25)) for n in (1, 2, 3)],
    *[(n, vector(0.0, -1.0, -2.0, np.inf)) for n in (1, 2, 3)],
    *[(n, vector(-8.3157, -12.6, -30.2, -7.5)) for n in (1, 2, 4)],
)
kinks("mvlgamma", (vector(2.1, 3.0, 5.5), 5), (vector(1.0, 1.5, 3.0), 3))  # 1.0: the end (p - 1) / 2 for p = 3
kinks("igamma", (np.array([0, 2, 2, 1]), vector(1.0, 0.0, np.inf, 1.0)), (vector(np.inf, np.inf), vector(2.0, np.inf)))
parity_tolerance(
    1e-7,
    "torch 2.13's xlogy.Scalar_Other backward, self / other, takes the Scalar self in float32 precision: "
    "3.1e-8 relative on the samples",
    "xlogy.Scalar_Other",
)
parity_tolerance(
    1e-5,
    "ATen's igamma and igammac gradients in `other` evaluate lgamma(self) in float32: up to 1.7e-6 relative "
    "from the float64 value",
    "igamma",
    "igammac",
)
kinks("igammac", (np.array([0, 2, 2]), vector(1.0, 0.0, np.inf)), (vector(np.inf), vector(2.0)))
# Dtype-losing steps inside float64 formulas, as PyTorch writes them: the checker's float64
# comparison with JAX autodiff (rtol 1e-9) reports them, at the error measured here.
reference_tolerance(
    1e-6,
    1e-8,
    "the formula for `other` evaluates lgamma(self) of the integer `self` sample in float32 (the dtype "
    "an integer tensor's lgamma takes, in torch as here): 4.8e-7 relative from the float64 value, measured",
    "igamma",
    "igammac",
)
reference_tolerance(
    1e-6,
    1e-8,
    "PyTorch 1.10's formula xlogy((self != 0), other) takes a bool tensor and a Scalar, which promote to "
    "float32: 3.1e-8 relative from the float64 value, measured (torch 2.13's xlogy(grad, other) keeps "
    "grad's dtype and is not loosened)",
    "xlogy.Scalar_Other",
    when=lambda op: any("(self != 0)" in f.text for f in op.entry.backward),
)
kinks(
    "special_zeta",
    (np.array([2, 2, 2, 3, 2, 1]), vector(0.0, -1.0, -np.inf, -1.5, np.inf, 2.0)),  # q at poles, infinities; x = 1
    (np.array([3, 4, 2, 5]), vector(-8.3157, -12.25, -0.5, -20.7)),  # negative q
    (vector(0.5, 2.5), vector(2.0, -9.5)),  # x < 1, a non-integer x
)
# x = 0: the result is 0 and the derivatives have branches of their own; y = NaN gives NaN
kinks("xlogy.Tensor", (vector(0.0, 0.0, 0.0, 1.0, 2.0, -1.0), vector(0.0, np.nan, 2.0, 0.0, np.nan, np.inf)))
kinks("xlogy.Scalar_Self", (0, vector(0.0, 1.0, np.nan)))
kinks("xlogy.Scalar_Other", (vector(0.0, 0.0, 1.0), 2.5), (vector(0.0, 1.0), 0.0))
kinks("special_xlog1py", (vector(0.0, 0.0, 0.0, 1.0, 2.0), vector(-1.0, np.nan, 2.0, -1.0, np.nan)))
# eps clamps to [eps, 1 - eps]; without it (or with a negative one) the ends 0 and 1 are poles
kinks(
    "logit",
    (vector(0.0, 1.0, 0.5, -0.5, 1.5), None),
    (vector(0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.0, 1.0), 0.1),
    (vector(0.0, 0.3, 1.0), 0.0),
    (vector(0.3, 0.6, -0.5), -1.0),
)
kinks("frexp.Tensor", (vector(0.0, -0.0, 1.0, 0.5, -4.0, np.inf, np.nan),))
kinks("nextafter", (vector(0.0, 1.0, 1.0, np.nan), vector(1.0, 0.0, 1.0, 0.0)))

# At x = 0 the spec's 1.10 formulas are not torch 2.13's (its own file's are, and agree); per unit cotangent:
_SPEC_1_10 = "at self = 0 the spec's 1.10 formula is not torch 2.13's: "
parity_differs(
    ("kinks",),
    _SPEC_1_10 + "d/dself = xlogy(self != 0, other) is 0 where torch's xlogy(grad, other) gives log(other) "
    "(0 vs 0.693 at (0, 2)), and d/dother = where(other.isnan() | self != 0, self / other, 0) is 0 where "
    "torch's self / other gives NaN (at (0, 0))",
    "xlogy.Tensor",
)
parity_differs(
    ("kinks",),
    _SPEC_1_10 + "d/dother = where(other.isnan() | self != 0, self / other, 0) is 0 at other = 0, "
    "torch's self / other NaN",
    "xlogy.Scalar_Self",
)
parity_differs(
    ("kinks",),
    _SPEC_1_10 + "d/dself = xlogy(self != 0, other) is 0, torch's xlogy(grad, other) log(2.5) = 0.916 at other = 2.5",
    "xlogy.Scalar_Other",
)
parity_differs(
    ("kinks",),
    _SPEC_1_10 + "d/dself = log1p(other) is -inf at other = -1, torch's masked_fill gives 0",
    "special_xlog1py",
)
parity_differs(
    ("kinks",),
    "at x = -0.5 with eps = -1 (outside [0, 1]: the value is NaN) torch 2.13's logit_backward kernel, which "
    "torch.autograd.grad takes without create_graph, gives NaN; the formula's GradMode branch "
    "(infinitely_differentiable_logit_backward), which jaxderiv takes as torch does with create_graph=True, "
    "gives 1 / (x (1 - x)) = -4/3 per unit cotangent",
    "logit",
    torch_spec=True,
)


# -- the sympy proofs: the op's definition ----------------------------------------------------
# Each op as a sympy function of its arguments' symbols: the reference whose derivative its
# formulas must equal (check/proofs.py). `sp` imports sympy only when a proof calls one.

definition("erf", lambda x: sp.erf(x), "self")
definition("erfc", lambda x: sp.erfc(x), "self")
definition("special_erfcx", lambda x: sp.exp(x**2) * sp.erfc(x), "self")
definition("erfinv", lambda x: sp.erfinv(x), "self", lo=-0.9, hi=0.9)
definition("lgamma", lambda x: sp.loggamma(x), "self", lo=0.1, hi=3.0)
definition("digamma", lambda x: sp.digamma(x), "self", lo=0.1, hi=3.0)
definition("polygamma", lambda n, x: sp.polygamma(n, x), "n", "self", lo=0.1, hi=3.0, fixed=(("n", 2),))
definition("polygamma_", lambda x, n: sp.polygamma(n, x), "self", "n", lo=0.1, hi=3.0, fixed=(("n", 2),))
definition("mvlgamma", symbolic_math.mvlgamma, "self", "p", lo=1.5, hi=4.0, fixed=(("p", 3),))
definition("i0", lambda x: sp.besseli(0, x), "self")
definition("special_i0e", symbolic_math.i0e, "self")
definition("special_i1", lambda x: sp.besseli(1, x), "self")
definition("special_i1e", symbolic_math.i1e, "self")
definition("logit", lambda x: sp.log(x / (1 - x)), "self", lo=0.1, hi=0.9, fixed=(("eps", None),))
definition("frexp.Tensor", lambda x, e: x / 2**e, "self", "exponent")  # the exponent output is locally constant
definition("xlogy.Tensor", lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0)
definition("xlogy.Scalar_Self", lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0)
definition("xlogy.Scalar_Other", lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0)
definition("special_xlog1py", lambda x, y: x * sp.log(1 + y), "self", "other", lo=-0.9, hi=2.0)
definition("special_xlog1py.self_scalar", lambda x, y: x * sp.log(1 + y), "self", "other", lo=-0.9, hi=2.0)
definition("special_xlog1py.other_scalar", lambda x, y: x * sp.log(1 + y), "self", "other", lo=-0.9, hi=2.0)
for _name in ("special_zeta", "special_zeta.self_scalar"):
    definition(_name, lambda s, q: sp.zeta(s, q), "self", "other", lo=0.5, hi=3.0, ranges=(("self", 1.5, 3.0),))
definition(
    "special_zeta.other_scalar",
    lambda s, q: sp.zeta(s, q),
    "self",
    "other",
    lo=1.5,
    hi=3.0,
    ranges=(("other", 0.5, 3.0),),
)
definition("igamma", lambda a, x: sp.lowergamma(a, x) / sp.gamma(a), "self", "other", lo=0.5, hi=3.0)
definition("igammac", lambda a, x: sp.uppergamma(a, x) / sp.gamma(a), "self", "other", lo=0.5, hi=3.0)
