"""Forward implementations of torch.linalg's factorization ops (ATen's `linalg_*` and `_linalg_*`).

They return what ATen returns, auxiliary outputs included: the packed LU and LAPACK pivots
(1-based int32) that `_linalg_det`, `_linalg_slogdet` and `_linalg_solve_ex` save for their
derivatives, `info` as int32 zeros. For a real input ATen factors Aᵀ in `_linalg_det` and
`_linalg_slogdet` (its row-major A is LAPACK's column-major Aᵀ); their formulas say so with
`use_A_T`, and these forwards do the same.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ..tensor_utils import mH, solve_triangular_right
from . import impl
from .linalg import _lu, unpack
from .reductions import vector_norm


def _info(x):
    return jnp.zeros(x.shape[:-2], jnp.int32)


def _require_inexact(name, x):
    if not jnp.issubdtype(jnp.result_type(x), jnp.inexact):
        raise RuntimeError(f"{name}: expected a floating point or complex tensor, got {jnp.result_type(x)}")


def _require_square(name, A):
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2:]} matrices")


def _lu_as_aten(A):
    """(LU, pivots) as _linalg_det/_linalg_slogdet save them: of Aᵀ for a real A."""
    return _lu(A if jnp.iscomplexobj(A) else jnp.swapaxes(A, -1, -2))


# -- determinants ---------------------------------------------------------------------------


@impl("_linalg_det")
def _linalg_det(A):
    _require_square("linalg.det", A)
    _require_inexact("linalg.det", A)
    return (jnp.linalg.det(A), *_lu_as_aten(A))


@impl("_linalg_slogdet")
def _linalg_slogdet(A):
    _require_square("linalg.slogdet", A)
    _require_inexact("linalg.slogdet", A)
    sign, logabsdet = jnp.linalg.slogdet(A)
    return (sign, logabsdet, *_lu_as_aten(A))


# -- block diagonal, matrix exponential -------------------------------------------------------


def as_block(t):
    """torch.block_diag's view of an input: a 0-d tensor is 1x1, a 1-d one a row."""
    t = jnp.asarray(t)
    if t.ndim > 2:
        raise RuntimeError(
            f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has {t.ndim} dimensions"
        )
    return t.reshape((1,) * (2 - t.ndim) + t.shape)


@impl("block_diag")
def block_diag(tensors):
    blocks = [as_block(t) for t in tensors]
    if not blocks:
        return jnp.zeros((1, 0), jnp.float32)
    dtype = jnp.result_type(*blocks)
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    out = jnp.zeros((rows, cols), dtype)
    r = c = 0
    for b in blocks:
        out = out.at[r : r + b.shape[0], c : c + b.shape[1]].set(b.astype(dtype))
        r, c = r + b.shape[0], c + b.shape[1]
    return out


@impl("linalg_matrix_exp")
def linalg_matrix_exp(self):
    _require_square("linalg.matrix_exp", self)
    return jsl.expm(self) if self.shape[-1] else self


# -- solves ---------------------------------------------------------------------------------


def _broadcast_batch(A, B):
    batch = jnp.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    return jnp.broadcast_to(A, batch + A.shape[-2:]), jnp.broadcast_to(B, batch + B.shape[-2:])


@impl("linalg_solve_triangular")
def linalg_solve_triangular(self, B, upper, left=True, unitriangular=False):
    """X with A X = B (left) or X A = B, reading only A's `upper` or lower triangle."""
    A, B = _broadcast_batch(self, B)
    if left:
        return jsl.solve_triangular(A, B, lower=not upper, unit_diagonal=unitriangular)
    # X A = B  <=>  Aᵀ Xᵀ = Bᵀ
    return solve_triangular_right(B, A, lower=not upper, unit_diagonal=unitriangular, through="mT")


def is_vector_rhs(A, B):
    """ATen's linalg_solve_is_vector_rhs: B is a (batch of) vector(s) rather than matrices."""
    return B.ndim == 1 or (A.ndim - 1 == B.ndim and B.shape == A.shape[:-1])


def lu_solve(LU, pivots, B, left=True, adjoint=False):
    """op(A)⁻¹ B (left) or B op(A)⁻¹, A = P L U packed in (LU, pivots), op = ᴴ when adjoint."""
    if not left:  # B op(A)⁻¹ = (op(A)ᴴ⁻¹ Bᴴ)ᴴ
        return mH(lu_solve(LU, pivots, mH(B), True, not adjoint))
    P, L, U = unpack(LU, pivots)
    batch = jnp.broadcast_shapes(LU.shape[:-2], B.shape[:-2])
    P, L, U = (jnp.broadcast_to(x, batch + x.shape[-2:]) for x in (P, L, U))
    B = jnp.broadcast_to(B, batch + B.shape[-2:])
    if adjoint:  # Aᴴ = Uᴴ Lᴴ Pᵀ
        y = jsl.solve_triangular(U, B, lower=False, trans="C")
        return P @ jsl.solve_triangular(L, y, lower=True, trans="C", unit_diagonal=True)
    y = jsl.solve_triangular(L, jnp.swapaxes(P, -1, -2) @ B, lower=True, unit_diagonal=True)
    return jsl.solve_triangular(U, y, lower=False)


@impl("_linalg_solve_ex")
def _linalg_solve_ex(A, B, left=True, check_errors=False):
    """(A⁻¹ B or B A⁻¹, A's LU, pivots, info); a vector B (ATen's rule) is solved as a column."""
    _require_square("linalg.solve", A)
    vector = is_vector_rhs(A, B)
    LU, pivots = _lu(A)
    if vector and not left:  # a vector is a column: X A = b has no solution shape
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({A.shape[-2]}x{A.shape[-1]} and {B.shape[-1]}x1)"
        )
    X = lu_solve(LU, pivots, B[..., None] if vector else B, left)
    return (X[..., 0] if vector else X), LU, pivots, _info(A)


# -- LU -------------------------------------------------------------------------------------


def _no_pivoting(pivot):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


@impl("linalg_lu_factor_ex")
def linalg_lu_factor_ex(A, pivot=True, check_errors=False):
    _no_pivoting(pivot)
    LU, pivots = _lu(A)
    return LU, pivots, _info(A)


@impl("linalg_lu")
def linalg_lu(A, pivot=True):
    """(P, L, U) with A = P L U; L is m x k and U k x n, k = min(m, n)."""
    _no_pivoting(pivot)
    return unpack(*_lu(A))


@impl("linalg_lu_solve")
def linalg_lu_solve(LU, pivots, B, left=True, adjoint=False):
    _require_square("linalg.lu_solve", LU)
    return lu_solve(LU, pivots, B, left, adjoint)


# -- norms ----------------------------------------------------------------------------------


@impl("linalg_vector_norm")
def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    _require_inexact("linalg.vector_norm", self)
    x = self if dtype is None else self.astype(dtype)
    dims = None if dim is None or (not isinstance(dim, int) and len(dim) == 0) else dim
    out = vector_norm(x, ord, dims, keepdim)
    return out.astype(jnp.real(jnp.zeros((), x.dtype)).dtype)


# -- spectral -------------------------------------------------------------------------------


@impl("_linalg_svd")
def _linalg_svd(A, full_matrices=False, compute_uv=True, driver=None):
    """(U, S, Vh); U and Vh empty when compute_uv is False."""
    if not compute_uv:
        empty = jnp.zeros((0,), A.dtype)
        return empty, jnp.linalg.svd(A, compute_uv=False), empty
    U, S, Vh = jnp.linalg.svd(A, full_matrices=full_matrices)
    return U, S, Vh


@impl("_linalg_eigh")
def _linalg_eigh(A, UPLO="L", compute_v=True):
    """Ascending eigenvalues from the UPLO triangle; empty eigenvectors unless compute_v."""
    _require_square("linalg.eigh", A)
    w, V = jnp.linalg.eigh(A, UPLO=UPLO, symmetrize_input=False)
    return w, (V if compute_v else jnp.zeros((0,), A.dtype))


def _complex(dtype):
    return np.result_type(dtype, np.complex64)


@impl("linalg_eig")
def linalg_eig(self):
    """Complex eigenvalues and unit-norm eigenvectors (LAPACK's geev), for real inputs too."""
    _require_square("linalg.eig", self)
    w, V = jnp.linalg.eig(self)
    dtype = _complex(self.dtype)
    return w.astype(dtype), V.astype(dtype)


@impl("linalg_pinv.atol_rtol_tensor")
def linalg_pinv(self, atol=None, rtol=None, hermitian=False):
    """Σ⁺ from singular values (|eigenvalues| when hermitian) above max(atol, rtol σ_max);
    ATen's default rtol is eps max(m, n) when neither tolerance is given."""
    m, n = self.shape[-2:]
    real = jnp.real(jnp.zeros((), self.dtype)).dtype
    default = np.finfo(real).eps * max(m, n)
    if rtol is None:  # zero when a positive atol is given
        rtol = (
            jnp.asarray(default, real) if atol is None else jnp.where(jnp.asarray(atol) > 0, 0.0, default).astype(real)
        )
    atol = jnp.asarray(0.0 if atol is None else atol, real)
    if hermitian:
        w, V = jnp.linalg.eigh(self, UPLO="L", symmetrize_input=False)
        s = jnp.abs(w)
        tol = (
            jnp.maximum(atol[..., None], jnp.asarray(rtol)[..., None] * jnp.max(s, -1, keepdims=True))
            if s.shape[-1]
            else s
        )
        inv = jnp.where(s > tol, 1 / jnp.where(s > tol, w, 1), 0).astype(self.dtype)
        return (V * inv[..., None, :]) @ mH(V)
    U, s, Vh = jnp.linalg.svd(self, full_matrices=False)
    tol = (
        jnp.maximum(atol[..., None], jnp.asarray(rtol)[..., None] * jnp.max(s, -1, keepdims=True)) if s.shape[-1] else s
    )
    inv = jnp.where(s > tol, 1 / jnp.where(s > tol, s, 1), 0).astype(self.dtype)
    return (mH(Vh) * inv[..., None, :]) @ mH(U)


@impl("linalg_matrix_sqrth")
def linalg_matrix_sqrth(self):
    """The principal square root of a Hermitian positive-definite matrix, from the eigenvalues of
    its lower triangle (as torch.linalg.eigh reads it): V diag(√λ) Vᴴ."""
    _require_square("linalg.matrix_sqrth", self)
    w, V = jnp.linalg.eigh(self, UPLO="L", symmetrize_input=False)
    return (V * jnp.sqrt(w).astype(V.dtype)[..., None, :]) @ mH(V)


@impl("linalg_polar")
def linalg_polar(A):
    """A = U H for an m x n A with m ≥ n: U = W Vh (orthonormal columns) and H = Vhᴴ diag(S) Vh
    (Hermitian positive semi-definite), from the thin SVD A = W diag(S) Vh, as ATen on CPU."""
    m, n = A.shape[-2:]
    if m < n:
        raise ValueError(f"linalg.polar: A must have at least as many rows as columns, got {m} x {n}")
    W, S, Vh = jnp.linalg.svd(A, full_matrices=False)
    return W @ Vh, (mH(Vh) * S.astype(A.dtype)[..., None, :]) @ Vh
