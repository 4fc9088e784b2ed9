"""Forward implementations of ATen's orthogonal polynomials: torch.special's Chebyshev (T, U,
V, W and their shifted forms), Hermite (H, He), Laguerre and Legendre polynomials.

Each follows ATen's `*_polynomial_*_forward` (ATen/native/Math.h) step by step, so values agree
with torch's CPU kernels to the last bits:
- `n` is cast to the op's floating dtype with `x` (ATen's binary float op: integers and bools
  compute in float32; a Scalar `x` or `n` is a wrapped number), then truncated toward zero as
  C++'s `static_cast<int64_t>` does (n = 2.9 is 2, n = -0.5 is 0). NaN, infinite and
  out-of-range `n` cast to INT64_MIN on x86, a negative degree: the result is 0.
- n < 0 gives 0; the closed forms at x = +-1 (shifted: x = 0, 1) and, for |x| < 1 and large n,
  the trigonometric forms (cos(n acos x) and relatives) are ATen's, with its thresholds.
- Otherwise the three-term recurrence runs, stopping early where ATen's does: when its
  running value is NaN (after overflowing to inf, inf - inf). So |x| > 1 with a large n is inf
  or NaN, exactly when torch's is. Hermite polynomials of degree above 128 (float32) or 512
  (float64) are NaN, as in ATen.
- Where ATen reads an uninitialized variable (x = NaN with n >= 2 for U, V, W, the shifted
  ones, Laguerre and Legendre: its loop never runs) torch returns whatever that memory holds;
  here the result is NaN.

The recurrences run as one `lax.while_loop` over all elements, each element stopping at its
own degree: a degree of 10^9 on the recurrence's path (Legendre, Laguerre at any x; the others
only for |x| > 1, where the values overflow and stop within a few thousand steps) takes as
many steps as torch's loop does, which is slow in both.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import impl
from .binary import result_type

_INT64_LIMIT = 2.0**63


def _operands(x, n):
    """x and n broadcast, in ATen's result dtype of the pair (integers and bools: float32)."""
    dtype = result_type(x, n)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"not implemented for {dtype}: ATen's orthogonal polynomials take real inputs only")
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = np.dtype(np.float32)
    x, n = jnp.asarray(x, dtype), jnp.asarray(n, dtype)
    x, n = jnp.broadcast_arrays(x, n)
    return x, n


def _degree(n):
    """static_cast<int64_t>(n): truncation toward zero; NaN, inf and |n| >= 2^63 become negative."""
    valid = jnp.isfinite(n) & (jnp.abs(n) < _INT64_LIMIT)
    return jnp.where(valid, jnp.trunc(n), -1.0).astype(n.dtype)


def _recurrence(x, n, active, p, q, step, nan_stop=True, r0=None):
    """ATen's loop for every element in `active`: n - 1 steps of `r = step(k_index, p, q)`,
    (p, q) <- (q, r), stopping early once q is NaN when `nan_stop`. Returns q (= r) where the
    loop ran at least once, else r0 (None: NaN, for ATen's uninitialized r)."""
    steps = n - 1

    def running(i, q):
        go = active & (i.astype(n.dtype) < steps)
        return go & ~jnp.isnan(q) if nan_stop else go

    def cond(state):
        i, _, q, _ = state
        return jnp.any(running(i, q))

    def body(state):
        i, p, q, ran = state
        go = running(i, q)
        r = step(i, p, q)
        return i + 1, jnp.where(go, q, p), jnp.where(go, r, q), ran | go

    init = (jnp.zeros((), jnp.int32), p, q, jnp.zeros(x.shape, bool))
    _, _, q, ran = lax.while_loop(cond, body, init)
    return jnp.where(ran, q, jnp.asarray(jnp.nan, x.dtype) if r0 is None else r0)


def _select(default, *cases):
    """The first case whose condition holds, as in a chain of `if (...) return ...;`."""
    out = default
    for cond, value in reversed(cases):
        out = jnp.where(cond, value, out)
    return out


def _k(i, offset, scale, dtype):
    """ATen's int64 loop counter k = offset + scale * i, converted to the op's dtype."""
    return (offset + scale * i).astype(dtype)


def _odd(n):
    return jnp.fmod(n, 2.0) != 0


# -- Chebyshev T, U, V, W, and shifted: the same in y = 2x - 1 ------------------------------------


def _chebyshev(kind: str, threshold: int, shifted: bool = False):
    """ATen's chebyshev_polynomial_<kind>_forward (kind t, u, v or w), of y = x, or its
    shifted_chebyshev_polynomial_<kind>_forward, of y = 2x - 1: the recurrence from (1, q0), the
    trigonometric form for |y| < 1 above degree `threshold`, the closed forms at y = 1 and y = -1
    (shifted: tested as x = 1 and x = 0)."""

    @jax.jit
    def kernel(x, n):
        n = _degree(n)
        one = jnp.ones_like(x)
        y = x + x - 1 if shifted else x
        odd = _odd(n)
        theta = jnp.arccos(y)
        if kind == "t":
            q0, at_one, at_minus_one = y, one, jnp.where(odd, -one, one)
        elif kind == "u":
            q0, at_one, at_minus_one = y + y, n + 1, jnp.where(odd, -(n + 1), n + 1)
        elif kind == "v":
            q0, at_one, at_minus_one = y + y - 1, one, jnp.where(odd, -(n + n + 1), n + n + 1)
        else:
            q0, at_one, at_minus_one = y + y + 1, n + n + 1, jnp.where(odd, -one, one)
        if shifted:
            ends = [(x == 1, at_one), (x == 0, at_minus_one)]
            fallback = at_minus_one  # ATen's shifted V and W: the value at y = -1, also near y = 1
        else:
            at_unit = jnp.where(x > 0, at_one, at_minus_one)
            ends = [(jnp.abs(x) == 1, at_unit)]
            fallback = at_unit
        if kind == "t":
            trig_value = jnp.cos(n * theta)
        elif kind == "u":
            s = jnp.sin(theta)
            trig_value = jnp.where(s != 0, jnp.sin((n + 1) * theta) / s, (n + 1) * jnp.cos((n + 1) * theta) / y)
        elif kind == "v":
            trig_value = jnp.where(jnp.sin(theta / 2) != 1, jnp.cos((n + 0.5) * theta) / jnp.cos(theta / 2), fallback)
        else:
            trig_value = jnp.where(jnp.cos(theta / 2) != 1, jnp.sin((n + 0.5) * theta) / jnp.sin(theta / 2), fallback)
        trig = (n > threshold) & (jnp.abs(y) < 1)
        special = (n < 0) | trig | (n == 0) | (n == 1)
        for at, _ in ends:
            special = special | at
        r0 = x if kind == "t" and not shifted else None  # ATen's T starts its r as x
        loop = _recurrence(x, n, ~special, one, q0, lambda i, p, q: (y + y) * q - p, r0=r0)
        return _select(loop, (n < 0, 0 * one), *ends, (trig, trig_value), (n == 0, one), (n == 1, q0))

    return kernel


# -- Hermite, Laguerre, Legendre --------------------------------------------------------------


def _hermite_limit(dtype) -> int:
    """ATen's getHermitianLimit: above this degree the result is NaN."""
    return 128 if dtype == np.float32 else 512 if dtype == np.float64 else 1024


@jax.jit
def _hermite_h(x, n):
    n = _degree(n)  # ATen maps inf and NaN to -1 here explicitly: the same result, 0
    one = jnp.ones_like(x)
    too_high = n > _hermite_limit(x.dtype)
    special = (n < 0) | (n == 0) | (n == 1) | too_high
    loop = _recurrence(
        x, n, ~special, one, x + x, lambda i, p, q: (x + x) * q - _k(i, 2, 2, x.dtype) * p, nan_stop=False
    )
    return _select(loop, (n < 0, 0 * one), (n == 0, one), (n == 1, x + x), (too_high, jnp.full_like(x, jnp.nan)))


@jax.jit
def _hermite_he(x, n):
    n = _degree(n)
    one = jnp.ones_like(x)
    too_high = n > _hermite_limit(x.dtype)
    special = (n < 0) | (n == 0) | (n == 1) | too_high
    loop = _recurrence(x, n, ~special, one, x, lambda i, p, q: x * q - _k(i, 1, 1, x.dtype) * p, nan_stop=False)
    return _select(loop, (n < 0, 0 * one), (n == 0, one), (n == 1, x), (too_high, jnp.full_like(x, jnp.nan)))


@jax.jit
def _laguerre_l(x, n):
    n = _degree(n)
    one = jnp.ones_like(x)
    special = (n < 0) | (x == 0) | (n == 0) | (n == 1)

    def step(i, p, q):
        k = _k(i, 1, 1, x.dtype)
        return (((k + k) + (1 - x)) * q - k * p) / (k + 1)

    loop = _recurrence(x, n, ~special, one, 1 - x, step)
    return _select(loop, (n < 0, 0 * one), (x == 0, one), (n == 0, one), (n == 1, 1 - x))


@jax.jit
def _legendre_p(x, n):
    n = _degree(n)
    one = jnp.ones_like(x)
    unit = jnp.abs(x) == 1
    special = (n < 0) | unit | (n == 0) | (n == 1)

    def step(i, p, q):
        k = _k(i, 1, 1, x.dtype)
        return ((k + k + 1) * x * q - k * p) / (k + 1)

    loop = _recurrence(x, n, ~special, one, x, step)
    return _select(loop, (n < 0, 0 * one), (unit, jnp.where((x > 0) | ~_odd(n), one, -one)), (n == 0, one), (n == 1, x))


# -- registration: every overload (Tensor x, Tensor n), (Scalar x, Tensor n), (Tensor x, Scalar n)


def _register(name: str, kernel):
    def forward(x, n):
        return kernel(*_operands(x, n))

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"aten::{name}(x, n), as ATen's {name[len('special_') :]}_forward (see the module's docstring)."
    return impl(name, f"{name}.x_scalar", f"{name}.n_scalar")(forward)


special_chebyshev_polynomial_t = _register("special_chebyshev_polynomial_t", _chebyshev("t", 6))
special_chebyshev_polynomial_u = _register("special_chebyshev_polynomial_u", _chebyshev("u", 8))
special_chebyshev_polynomial_v = _register("special_chebyshev_polynomial_v", _chebyshev("v", 8))
special_chebyshev_polynomial_w = _register("special_chebyshev_polynomial_w", _chebyshev("w", 8))
special_shifted_chebyshev_polynomial_t = _register("special_shifted_chebyshev_polynomial_t", _chebyshev("t", 6, True))
special_shifted_chebyshev_polynomial_u = _register("special_shifted_chebyshev_polynomial_u", _chebyshev("u", 6, True))
special_shifted_chebyshev_polynomial_v = _register("special_shifted_chebyshev_polynomial_v", _chebyshev("v", 6, True))
special_shifted_chebyshev_polynomial_w = _register("special_shifted_chebyshev_polynomial_w", _chebyshev("w", 4, True))
special_hermite_polynomial_h = _register("special_hermite_polynomial_h", _hermite_h)
special_hermite_polynomial_he = _register("special_hermite_polynomial_he", _hermite_he)
special_laguerre_polynomial_l = _register("special_laguerre_polynomial_l", _laguerre_l)
special_legendre_polynomial_p = _register("special_legendre_polynomial_p", _legendre_p)
