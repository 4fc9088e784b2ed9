"""LAPACK's Bunch-Kaufman LDLᵀ factorization and solve, as ATen's `linalg_ldl_factor_ex` and
`linalg_ldl_solve` call them (`?sytrf`/`?hetrf` and `?sytrs`/`?hetrs`, lower triangle).

The pivots are LAPACK's choices, so they are computed as LAPACK's unblocked `?sytf2`/`?hetf2`
computes them (which `?sytrf` runs whole below its block size, 64): column k's largest
off-diagonal entry against alpha = (1 + sqrt 17) / 8, a 1x1 or 2x2 pivot, the interchange
applied to the trailing submatrix only. Magnitudes are LAPACK's `|re| + |im|` for complex
entries. `hermitian` selects `?hetrf` (conjugates, real diagonal) for complex input; a real
input is symmetric either way. ATen implements no derivative for either op.

The trailing submatrix is kept in full (both triangles) and rebuilt from its lower triangle
after each step, so the symmetric interchange is one permutation of rows and columns.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .nondifferentiable import without_derivative

_ALPHA = (1.0 + 17.0**0.5) / 8.0


def _magnitude(x):
    """LAPACK's cabs1 for complex entries (|re| + |im|), |x| for real ones."""
    return jnp.abs(x.real) + jnp.abs(x.imag) if jnp.iscomplexobj(x) else jnp.abs(x)


def _first_argmax(values, valid):
    """LAPACK's i?amax over the valid entries: the first largest; 0 where none is valid."""
    v = jnp.where(valid, values, -1.0)
    return jnp.argmax(v), jnp.max(v, initial=0.0)


def _full(lower, conj: bool):
    """The matrix whose lower triangle (diagonal included) is `lower`'s: symmetric or Hermitian."""
    strict = jnp.tril(lower, -1)
    other = jnp.conj(strict) if conj else strict
    return jnp.tril(lower) + jnp.swapaxes(other, -1, -2)


def _factor_one(a, hermitian: bool):
    n = a.shape[-1]
    conj = hermitian and jnp.iscomplexobj(a)
    idx = jnp.arange(n)
    real_diag = (lambda m: m.at[idx, idx].set(m[idx, idx].real.astype(m.dtype))) if conj else (lambda m: m)
    m0 = real_diag(_full(a, conj))
    ipiv0 = jnp.zeros((n,), jnp.int32)

    def step(state):
        m, ipiv, k, info = state
        col = m[:, k]
        diag_mag = jnp.abs(col[k].real) if conj else _magnitude(col[k])
        below = idx > k
        imax, colmax = _first_argmax(_magnitude(col), below)
        singular = (jnp.maximum(diag_mag, colmax) == 0) | jnp.isnan(diag_mag)
        # row imax left of the diagonal (columns k..imax-1) and column imax below it
        row_left = _magnitude(m[imax, :])
        _, rowmax_left = _first_argmax(row_left, (idx >= k) & (idx < imax))
        _, rowmax_below = _first_argmax(_magnitude(m[:, imax]), idx > imax)
        rowmax = jnp.maximum(rowmax_left, rowmax_below)
        imax_mag = jnp.abs(m[imax, imax].real) if conj else _magnitude(m[imax, imax])
        keep = diag_mag >= _ALPHA * colmax
        keep2 = diag_mag >= _ALPHA * colmax * (colmax / jnp.where(rowmax == 0, 1.0, rowmax))
        take_imax = imax_mag >= _ALPHA * rowmax
        one_by_one = singular | keep | keep2 | take_imax
        kp = jnp.where(singular | keep | keep2, k, imax)
        kstep = jnp.where(one_by_one, 1, 2)
        kk = k + kstep - 1
        # the interchange of kk and kp, in the trailing submatrix only
        perm = jnp.where(idx == kk, kp, jnp.where(idx == kp, kk, idx))
        trailing = (idx[:, None] >= k) & (idx[None, :] >= k)
        swapped = jnp.where(trailing, m[perm][:, perm], m)
        m = jnp.where(singular, m, swapped)
        # elimination: 1x1
        d = m[k, k].real if conj else m[k, k]
        r1 = 1 / jnp.where(d == 0, 1, d)
        x = jnp.where(below, m[:, k], 0)
        xh = jnp.conj(x) if conj else x
        upd1 = m + (-r1 * xh)[None, :] * x[:, None]
        upd1 = upd1.at[:, k].set(jnp.where(below, x * r1, m[:, k]))
        # elimination: 2x2 (LAPACK's ?sytf2 / ?hetf2 formulas)
        k1 = jnp.minimum(k + 1, n - 1)
        below2 = idx > k1
        ck, ck1 = jnp.where(below2, m[:, k], 0), jnp.where(below2, m[:, k1], 0)
        a21 = m[k1, k]
        if conj:
            dd = jnp.abs(a21)
            d11, d22 = m[k1, k1].real / dd, m[k, k].real / dd
            tt = 1 / (d11 * d22 - 1)
            d21 = a21 / dd
            dt = tt / dd
            wk = dt * (d11 * ck - d21 * ck1)
            wkp1 = dt * (d22 * ck1 - jnp.conj(d21) * ck)
            upd2 = m - ck[:, None] * jnp.conj(wk)[None, :] - ck1[:, None] * jnp.conj(wkp1)[None, :]
        else:
            d11, d22 = m[k1, k1] / a21, m[k, k] / a21
            t = 1 / (d11 * d22 - 1)
            d21 = t / a21
            wk = d21 * (d11 * ck - ck1)
            wkp1 = d21 * (d22 * ck1 - ck)
            upd2 = m - ck[:, None] * wk[None, :] - ck1[:, None] * wkp1[None, :]
        upd2 = upd2.at[:, k].set(jnp.where(below2, wk, m[:, k])).at[:, k1].set(jnp.where(below2, wkp1, m[:, k1]))
        rest1 = (idx[:, None] > k) & (idx[None, :] > k)
        rest2 = (idx[:, None] > k1) & (idx[None, :] > k1)
        new1 = jnp.where(rest1 | (idx[None, :] == k), upd1, m)
        new2 = jnp.where(rest2 | (idx[None, :] == k) | (idx[None, :] == k1), upd2, m)
        new = jnp.where(singular, m, jnp.where(one_by_one, new1, new2))
        # the trailing submatrix from its lower triangle again: LAPACK reads only that one
        rebuilt = real_diag(_full(new, conj))
        m = jnp.where(trailing, rebuilt, new)
        pivot = jnp.where(one_by_one, kp + 1, -(kp + 1)).astype(jnp.int32)
        ipiv = ipiv.at[k].set(pivot)
        ipiv = jnp.where((~one_by_one) & (idx == k1), pivot, ipiv)
        info = jnp.where((info == 0) & singular, k + 1, info)
        return m, ipiv, k + kstep, info

    m, ipiv, _, info = jax.lax.while_loop(lambda s: s[2] < n, step, (m0, ipiv0, 0, jnp.int32(0)))
    return jnp.tril(m), ipiv, info.astype(jnp.int32)


# one compiled program per shape and dtype (the loops are traced once, not at every call)
_factor_batch = jax.jit(jax.vmap(_factor_one, in_axes=(0, None)), static_argnums=1)


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: A must be batches of square matrices, but they are {a.shape[-2:]} matrices")
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        raise TypeError(f"{name}: Expected a floating point or complex tensor as input. Got {np.dtype(a.dtype)}")


@without_derivative("linalg_ldl_factor_ex")
def linalg_ldl_factor_ex(self, hermitian=False, check_errors=False):
    """(LD, pivots, info): L's multipliers below the diagonal and D's 1x1 and 2x2 blocks on and
    below it (zeros above), LAPACK's 1-based pivots (negative pairs for a 2x2 block) as int32,
    and info > 0 at the first zero pivot (the factorization still completes)."""
    a = jnp.asarray(self)
    _square("torch.linalg.ldl_factor_ex", a)
    batch, n = a.shape[:-2], a.shape[-1]
    if a.size == 0:
        return a, jnp.zeros(batch + (n,), jnp.int32), jnp.zeros(batch, jnp.int32)
    flat = a.reshape((-1, n, n))
    ld, piv, info = _factor_batch(flat, bool(hermitian))
    info = info.reshape(batch)
    if check_errors:
        try:
            bad = np.asarray(info)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
            # a tracer: nothing to check (ATen's check needs the values)
            bad = None
        if bad is not None and bad.any():
            raise ValueError(
                f"torch.linalg.ldl_factor_ex: the factorization could not be completed (info = {bad.max()})"
            )
    return ld.reshape(a.shape), piv.reshape(batch + (n,)), info


def _solve_one(ld, piv, b, hermitian: bool):
    """LAPACK's ?sytrs / ?hetrs (lower): L D X = P B forward, then Lᵀ (Lᴴ) X back."""
    n = ld.shape[-1]
    conj = hermitian and jnp.iscomplexobj(ld)
    cj = jnp.conj if conj else (lambda z: z)
    idx = jnp.arange(n)

    def swap_rows(b, i, j):
        perm = jnp.where(idx == i, j, jnp.where(idx == j, i, idx))
        return b[perm]

    def forward(state):
        b, k = state
        p = piv[k]
        one = p > 0
        k1 = jnp.minimum(k + 1, n - 1)
        # 1x1
        b1 = swap_rows(b, k, p - 1)
        l = jnp.where(idx > k, ld[:, k], 0)
        b1 = b1 - l[:, None] * b1[k][None, :]
        dk = ld[k, k].real if conj else ld[k, k]
        b1 = b1.at[k].set(b1[k] / dk)
        # 2x2
        b2 = swap_rows(b, k1, -p - 1)
        l0, l1 = jnp.where(idx > k1, ld[:, k], 0), jnp.where(idx > k1, ld[:, k1], 0)
        b2 = b2 - l0[:, None] * b2[k][None, :] - l1[:, None] * b2[k1][None, :]
        akm1k = ld[k1, k]
        akm1 = ld[k, k] / cj(akm1k)
        ak = ld[k1, k1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b2[k] / cj(akm1k), b2[k1] / akm1k
        b2 = b2.at[k].set((ak * bkm1 - bk) / denom).at[k1].set((akm1 * bk - bkm1) / denom)
        return jnp.where(one, b1, b2), k + jnp.where(one, 1, 2)

    def backward(state):
        b, k = state
        p = piv[k]
        one = p > 0
        km1 = jnp.maximum(k - 1, 0)
        l = jnp.where(idx > k, ld[:, k], 0)
        b1 = b.at[k].add(-(cj(l) @ b))
        b1 = swap_rows(b1, k, p - 1)
        lm1 = jnp.where(idx > k, ld[:, km1], 0)
        b2 = b.at[k].add(-(cj(l) @ b)).at[km1].add(-(cj(lm1) @ b))
        b2 = swap_rows(b2, k, -p - 1)
        return jnp.where(one, b1, b2), k - jnp.where(one, 1, 2)

    b, _ = jax.lax.while_loop(lambda s: s[1] < n, forward, (b, 0))
    b, _ = jax.lax.while_loop(lambda s: s[1] >= 0, backward, (b, n - 1))
    return b


_solve_batch = jax.jit(jax.vmap(_solve_one, in_axes=(0, 0, 0, None)), static_argnums=3)


@without_derivative("linalg_ldl_solve")
def linalg_ldl_solve(LD, pivots, B, hermitian=False):
    """X with A X = B, from `linalg_ldl_factor_ex`'s LD and pivots (batches broadcast)."""
    ld, piv, b = jnp.asarray(LD), jnp.asarray(pivots), jnp.asarray(B)
    _square("torch.linalg.ldl_solve", ld)
    if b.ndim < 2:
        raise ValueError(
            "torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, but it has 1 dimensions instead"
        )
    if b.shape[-2] != ld.shape[-1]:
        raise ValueError(
            f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
            f"({ld.shape[-2]}x{ld.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})"
        )
    dtype = jnp.result_type(ld, b)
    batch = jnp.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    n, r = ld.shape[-1], b.shape[-1]
    out_shape = batch + (n, r)
    if np.prod(out_shape) == 0:
        return jnp.zeros(out_shape, dtype)
    ld = jnp.broadcast_to(ld, batch + (n, n)).reshape((-1, n, n)).astype(dtype)
    piv = jnp.broadcast_to(piv, batch + (n,)).reshape((-1, n))
    b = jnp.broadcast_to(b, out_shape).reshape((-1, n, r)).astype(dtype)
    return _solve_batch(ld, piv, b, bool(hermitian)).reshape(out_shape)
