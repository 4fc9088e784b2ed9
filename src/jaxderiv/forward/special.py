"""Forward implementations of ATen's special functions: erf, Bessel, gamma, zeta and relatives.

Values follow ATen where JAX's functions differ at poles and infinities (digamma at 0,
trigamma, zeta at non-positive integers, igamma at a = inf), so that derivative formulas
see the same values PyTorch's would. The kernels are jitted: called eagerly (as derivative
formulas call them), a chain of jnp calls compiles once per primitive and shape, a jitted
kernel once per shape.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax

from ..records import (
    DEFAULT_SHAPES,
    Sample,
    compiled_apart,
    definition,
    domain,
    draw,
    kinks,
    not_applicable,
    parity_differs,
    parity_tolerance,
    reference_tolerance,
    samples,
    symbolic_math,
    vector,
    without_meaning,
)
from ..records.symbolic import sp
from . import impl
from .binary import result_type


# -- dtypes ---------------------------------------------------------------------------------------


def _floating(*args):
    """The arguments as arrays of ATen's result dtype, integers and bools computing in float32."""
    dtype = result_type(*args)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = np.dtype(np.float32)
    return [jnp.asarray(a, dtype) for a in args]


def _require_floating(op: str, *args) -> None:
    """ATen implements some ops for floating dtypes only: it raises where the result would be integral."""
    dtype = result_type(*args)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"aten::{op} is not implemented for {dtype} (floating point only, as in ATen)")


# -- unary ------------------------------------------------------------------------------------------


def _unary(name: str, fn, half_kernel: bool = True):
    """`half_kernel=False`: ATen's CPU kernel has no float16/bfloat16 variant and refuses them."""

    def forward(self):
        (x,) = _floating(self)
        if not half_kernel and x.dtype in (jnp.bfloat16, jnp.float16):
            kind = "BFloat16" if x.dtype == jnp.bfloat16 else "Half"
            raise TypeError(f"\"{name.removeprefix('special_')}_cpu\" not implemented for '{kind}' (as in ATen)")
        return fn(x)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"aten::{name}, computed in the input's floating dtype (integers: float32)."
    return impl(name)(forward)


erf = _unary("erf", jsp.erf)
erfc = _unary("erfc", jsp.erfc)
erfinv = _unary("erfinv", jsp.erfinv)
special_erfcx = _unary("special_erfcx", jsp.erfcx)
i0 = _unary("i0", jsp.i0)
special_i0e = _unary("special_i0e", jsp.i0e)
special_i1 = _unary("special_i1", jsp.i1)
special_i1e = _unary("special_i1e", jsp.i1e)
lgamma = _unary("lgamma", lax.lgamma)
special_ndtri = _unary("special_ndtri", jsp.ndtri, half_kernel=False)
special_entr = _unary("special_entr", jsp.entr)  # -x log x; 0 at 0, -inf below 0
special_log_ndtr = _unary("special_log_ndtr", jsp.log_ndtr, half_kernel=False)  # accurate far in the lower tail


@jax.jit
def _digamma(x):
    """ATen gives -inf at +0 and +inf at -0 (the pole's one-sided limits); JAX gives NaN."""
    return jnp.where(x == 0, jnp.copysign(jnp.inf, -x), jsp.digamma(x))


@impl("digamma")
def digamma(self):
    return _digamma(*_floating(self))


@jax.jit
def _trigamma(x):
    """ATen's calc_trigamma: reflection below 1/2, six recurrence steps, asymptotic series."""
    reflect = x < 0.5
    result = jnp.where(reflect, -(math.pi**2) / jnp.sin(math.pi * x) ** 2, 0.0)
    x = jnp.where(reflect, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
    return jnp.where(reflect, -result, result)


@impl("polygamma")
def polygamma(n, self):
    """ATen's cases: digamma, its own trigamma, else (-1)^(n+1) n! zeta(n + 1, x)."""
    if n < 0:
        raise ValueError(f"polygamma(n, x) does not support negative n, got n = {n}")
    (x,) = _floating(self)
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    return (-1.0) ** (n + 1) * math.exp(math.lgamma(n + 1.0)) * _zeta(jnp.asarray(n + 1.0, x.dtype), x)


@impl("polygamma_")
def polygamma_(self, n):
    """The in-place form takes (self, n): the functional one's arguments swapped. Its floating
    result cannot be written into an integer or bool self, which ATen refuses."""
    dtype = jnp.result_type(self)
    if not jnp.issubdtype(dtype, jnp.inexact):
        name = "Bool" if dtype == jnp.bool_ else "Long" if dtype == jnp.int64 else str(dtype)
        raise TypeError(f"polygamma_: result type Float can't be cast to the desired output type {name}")
    return polygamma(n, self)


@partial(jax.jit, static_argnums=1)
def _mvlgamma(x, p):
    offsets = jnp.arange(-p / 2 + 0.5, 0.5, 0.5, dtype=x.dtype)
    return jnp.sum(lax.lgamma(x[..., None] + offsets), axis=-1) + p * (p - 1) / 4 * math.log(math.pi)


@impl("mvlgamma")
def mvlgamma(self, p):
    """log of the multivariate gamma function: sum_j lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    if p < 1:
        raise ValueError(f"mvlgamma: p has to be greater than or equal to 1, got p = {p}")
    if jnp.result_type(self) == jnp.bool_:
        raise TypeError("mvlgamma: the input tensor may not be a boolean tensor")
    return _mvlgamma(*_floating(self), p)


@partial(jax.jit, static_argnums=1)
def _logit(x, eps):
    if eps is not None:
        x = jnp.clip(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


@impl("logit")
def logit(self, eps=None):
    """log(x / (1 - x)), with x clamped to [eps, 1 - eps] when eps >= 0 is given."""
    return _logit(*_floating(self), eps if eps is not None and eps >= 0 else None)


@impl("frexp.Tensor")
def frexp(self):
    """Mantissa in [0.5, 1) with the input's dtype, and an int32 exponent."""
    _require_floating("frexp", self)
    return jnp.frexp(self)


# -- binary -------------------------------------------------------------------------------------


@jax.jit
def _zeta(x, q):
    """Hurwitz zeta with ATen's special cases, in its order: inf at x = 1, NaN for x < 1,
    inf at integer q <= 0 (JAX gives NaN there)."""
    value = jnp.where((q <= 0) & (q == jnp.floor(q)), jnp.inf, _zeta_any_q(x, q))
    return jnp.where(x == 1, jnp.inf, jnp.where(x < 1, jnp.nan, value))


def _zeta_any_q(x, q):
    """Hurwitz zeta for any q: JAX's for q > 0; for q < 0 (ATen: NaN unless x is an integer)
    the recurrence zeta(x, q) = zeta(x, q + N) + sum_{k<N} (q + k)^-x with N = ceil(-q),
    whose sum is (-1)^x (zeta(x, 1 - f) - zeta(x, 1 - q)) with f = q - floor(q): every
    argument positive. (jsp.zeta sums a fixed number of terms, wrong below q of about -7.)"""
    x, q = jnp.broadcast_arrays(x, q)
    negative = q < 0
    qn = jnp.where(negative, q, -0.5)  # safe values off the branch
    f = qn - jnp.floor(qn)
    f = jnp.where(f > 0, f, 0.5)
    sign = jnp.where(jnp.mod(x, 2) == 0, 1.0, -1.0).astype(q.dtype)
    # The four zetas as one call on stacked arguments: the same arithmetic per element, but one
    # copy of jsp.zeta's long series in the program (and in each derivative of it), not four.
    qs = jnp.stack([jnp.where(negative, 1.0, q), f, 1 - f, 1 - qn])
    z_q, z_f, z_1f, z_1q = jsp.zeta(jnp.broadcast_to(x, qs.shape), qs)
    reflected = z_f + sign * (z_1f - z_1q)
    reflected = jnp.where(x == jnp.floor(x), reflected, jnp.nan)
    return jnp.where(negative, reflected, z_q)


@impl("special_zeta", "special_zeta.self_scalar", "special_zeta.other_scalar")
def special_zeta(self, other):
    return _zeta(*_floating(self, other))


@jax.jit
def _xlogy(x, y):
    return jnp.where(jnp.isnan(y), jnp.nan, jnp.where(x == 0, 0, x * jnp.log(y)))


@impl("xlogy", "xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other")
def xlogy(self, other):
    """x * log(y), 0 where x == 0, NaN where y is NaN. `xlogy` also serves `at::xlogy` calls."""
    return _xlogy(*_floating(self, other))


@jax.jit
def _xlog1py(x, y):
    return jnp.where(jnp.isnan(y), jnp.nan, jnp.where(x == 0, 0, x * jnp.log1p(y)))


@impl("special_xlog1py", "special_xlog1py.self_scalar", "special_xlog1py.other_scalar")
def special_xlog1py(self, other):
    """x * log1p(y), 0 where x == 0, NaN where y is NaN."""
    return _xlog1py(*_floating(self, other))


@partial(jax.jit, static_argnames="upper")
def _incomplete_gamma(a, x, upper):
    a, x = jnp.broadcast_arrays(a, x)  # lax does not broadcast
    # ATen: NaN for x < 0; at a = inf, NaN if x = inf, else 0 (1 for Q), NaN x included.
    at_inf = jnp.where(jnp.isinf(x) | (x < 0), jnp.nan, 1.0 if upper else 0.0)
    return jnp.where(jnp.isposinf(a), at_inf, (lax.igammac if upper else lax.igamma)(a, x))


@impl("igamma")
def igamma(self, other):
    """Regularized lower incomplete gamma P(a, x); at a = inf ATen gives 0 (NaN if x = inf, even for a NaN x), JAX NaN."""
    _require_floating("igamma", self, other)
    return _incomplete_gamma(*_floating(self, other), upper=False)


@impl("igammac")
def igammac(self, other):
    """Regularized upper incomplete gamma Q(a, x); at a = inf ATen gives 1 (NaN if x = inf), JAX NaN."""
    _require_floating("igammac", self, other)
    return _incomplete_gamma(*_floating(self, other), upper=True)


@impl("nextafter")
def nextafter(self, other):
    """The next representable value after x towards y, in their common floating dtype."""
    _require_floating("nextafter", self, other)
    x, y = _floating(self, other)
    return jnp.nextafter(x, y)


# --- records: samples, domains and what the parity run against torch needs ------------------

# The family's traits (records.FamilyTraits; jaxderiv.check.opdb.traits reads them):
# elementwise (listed for the sympy proofs), checked in float32 and bfloat16 too.
FAMILY = {"elementwise": True, "low_precision": True}

# Checker inputs for the special functions: inside each function's domain, away from poles and kinks;
# the parity run's inputs at those poles and kinks, and where the spec's results there are not torch's.
#
# No op here is checked on complex inputs: ATen implements none of them for complex dtypes.
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
def _mvlgamma_samples(op, rng, dtype=np.float64):
    """Defined for x > (p - 1) / 2."""
    return [
        s
        for p in (1, 2, 3)
        for s in _pointwise(op, rng, dtype, {"self": ((p - 1) / 2 + 0.3, (p - 1) / 2 + 3.0)}, {"p": p}, f"p={p}")
    ]


@samples("xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other")
def _xlogy_samples(op, rng, dtype=np.float64):
    """x of either sign (and x = 0 as a Scalar: its own branch), y > 0."""
    tensors = {"self": (-2.0, 2.0), "other": (0.2, 3.0)}
    if op.name == "xlogy.Scalar_Self":
        return [s for x in (1.5, 0) for s in _pointwise(op, rng, dtype, tensors, {"self": x}, f"self={x}")]
    return _pointwise(op, rng, dtype, tensors, {"other": 2.5})


@samples("special_xlog1py", "special_xlog1py.self_scalar", "special_xlog1py.other_scalar")
def _xlog1py_samples(op, rng, dtype=np.float64):
    """x of either sign, y > -1."""
    return _pointwise(op, rng, dtype, {"self": (-2.0, 2.0), "other": (-0.8, 2.0)}, {"self": 1.5, "other": 1.5})


def _integer_self(samples: list[Sample]) -> list[Sample]:
    """The spec has no derivative in `self` (not_implemented): an integer `self`, which ATen
    promotes, is not differentiable and leaves the formula for `other` to be checked."""
    return [
        Sample((np.rint(s.args[0]).astype(np.int64), *s.args[1:]), label=f"{s.label} integer self") for s in samples
    ]


@samples("igamma", "igammac")
def _incomplete_gamma_samples(op, rng, dtype=np.float64):
    """P(a, x) and Q(a, x): a > 0, x > 0."""
    return _integer_self(_pointwise(op, rng, dtype, {"self": (1.0, 4.0), "other": (0.5, 3.0)}))


@samples("special_zeta", "special_zeta.self_scalar", "special_zeta.other_scalar")
def _zeta_samples(op, rng, dtype=np.float64):
    """Hurwitz zeta(x, q): x > 1, q > 0 (integer x for the Tensor-Tensor overload)."""
    out = _pointwise(op, rng, dtype, {"self": (2.0, 4.0), "other": (0.5, 3.0)}, {"self": 2.5, "other": 1.5})
    return _integer_self(out) if op.name == "special_zeta" else out


@samples("logit")
def _logit_samples(op, rng, dtype=np.float64):
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
