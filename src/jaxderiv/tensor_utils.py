"""Tensor utilities that `jaxderiv.forward` and `jaxderiv.helpers` share: plain functions on arrays.

Layering (tests/test_layering.py checks it):
  - this module imports neither `jaxderiv.forward` nor `jaxderiv.helpers`, only jax and numpy;
  - `jaxderiv.helpers` (the backward and forward-mode formulas' helpers) may import
    `jaxderiv.forward`: a formula's helper calls the ops it differentiates (convolution_backward,
    lu_solve, ...);
  - `jaxderiv.forward` (the ops) never imports `jaxderiv.helpers`. What an op needs from the
    formulas' math (the RNN cells' gate gradients, for the `*_rnn_backward` ops) lives here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

__all__ = [
    "REDUCED_FLOATS",
    "gru_gate_grads",
    "long_dtype",
    "lstm_gate_grads",
    "mH",
    "mT",
    "opmath",
    "solve_triangular_right",
    "wrap_dim",
]

REDUCED_FLOATS = (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))  # computed in float32 by ATen on CPU


def opmath(x):
    """x as ATen's CPU kernels compute it (`opmath_t`): bfloat16 and float16 in float32, so that
    a reduction (softmax's sum) rounds once, at the end, instead of at every step."""
    return x.astype(jnp.float32) if jnp.result_type(x) in REDUCED_FLOATS else x


def long_dtype():
    """ATen's Long (int64) as JAX's mode has it: int32 with `jax_enable_x64` off, JAX's default
    integer, asked for by that name so that 32-bit mode warns of nothing it truncates."""
    return jax.dtypes.canonicalize_dtype(jnp.int64)


def wrap_dim(d: int, ndim: int) -> int:
    """ATen's maybe_wrap_dim: a possibly negative dim as an index; a 0-d tensor accepts -1 and 0."""
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def mT(x, *, xp=jnp):
    """The transpose of the last two dims. `xp` is the array library that computes it: the default
    jax.numpy returns a jax array; xp=numpy keeps a NumPy array (the checker's samples) in NumPy."""
    return xp.swapaxes(x, -1, -2)


def mH(x, *, xp=jnp):
    """The conjugate transpose of the last two dims (`xp` as in `mT`)."""
    return xp.conj(xp.swapaxes(x, -1, -2))


def solve_triangular_right(
    B, A, *, lower: bool, adjoint: bool = False, unit_diagonal: bool = False, through: str = "mH"
):
    """X = B A⁻¹ (X A = B), or B A⁻ᴴ (X Aᴴ = B) with `adjoint`, for a triangular A that is `lower`
    or upper; a `unit_diagonal` A's diagonal is read as ones.

    It is solved as a left solve of the transposed system, `through` either transpose:
      - "mH", conjugate transposes: X = (A⁻ᴴ Bᴴ)ᴴ, or (A⁻¹ Bᴴ)ᴴ with `adjoint`;
      - "mT", plain transposes: X = (A⁻ᵀ Bᵀ)ᵀ (no `adjoint`).
    """
    if through == "mH":
        return mH(
            jsl.solve_triangular(A, mH(B), lower=lower, trans="N" if adjoint else "C", unit_diagonal=unit_diagonal)
        )
    if through == "mT" and not adjoint:
        return mT(jsl.solve_triangular(A, mT(B), lower=lower, trans="T", unit_diagonal=unit_diagonal))
    raise ValueError(f"solve_triangular_right: through={through!r}, adjoint={adjoint!r} is not supported")


def lstm_gate_grads(grad_hy, grad_cy, i, f, g, o, cx, tanh_cy):
    """An LSTM cell's gradients of the gate pre-activations (i, f, g, o blocks) and of cx, from the
    activated gates; (None, None) when neither hy nor cy has a gradient."""
    if grad_hy is None and grad_cy is None:
        return None, None
    if grad_hy is None:
        gog, gcx = jnp.zeros_like(cx), grad_cy
    else:
        gog = grad_hy * tanh_cy * o * (1 - o)
        gcx = grad_hy * o * (1 - tanh_cy * tanh_cy)
        if grad_cy is not None:
            gcx = gcx + grad_cy
    gig = gcx * g * i * (1 - i)
    gfg = gcx * cx * f * (1 - f)
    ggg = gcx * i * (1 - g * g)
    return jnp.concatenate([gig, gfg, ggg, gog], axis=1), gcx * f


def gru_gate_grads(grad_hy, r, z, n, hx, hn):
    """A GRU cell's (grad_input_gates, grad_hidden_gates, grad_hx): blocks r, z, n; hn reaches n
    through r."""
    gz = grad_hy * (hx - n) * z * (1 - z)
    gn = grad_hy * (1 - z) * (1 - n * n)
    gr = gn * hn * r * (1 - r)
    return jnp.concatenate([gr, gz, gn], axis=1), jnp.concatenate([gr, gz, gn * r], axis=1), grad_hy * z
