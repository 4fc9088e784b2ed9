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
