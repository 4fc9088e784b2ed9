"""Forward implementations of ATen's linear algebra ops: products, factorizations, solves.

Matrix ops accept leading batch dimensions where ATen does. Pivots are 1-based int32 and
`info` outputs are int32 zeros, as LAPACK reports them; factorizations follow LAPACK's
conventions (Householder QR, partial-pivoting LU), which is what torch returns on CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ..tensor_utils import mH
from . import impl
from .householder import apply_reflectors, check_float_operands


def _scaled(x, s):
    """s * x, where s == 0 ignores x (ATen: beta=0 does not propagate NaN)."""
    if s == 0:
        return jnp.zeros_like(x)
    return x if s == 1 else x * s


def _check_ndim(name, x, n):
    if x.ndim != n:
        raise RuntimeError(f"{name}: expected a {n}-D tensor, got {x.ndim}-D")


def _info(x):
    return jnp.zeros(x.shape[:-2], jnp.int32)


# -- products -------------------------------------------------------------------------------


def _group_of(offs, n):
    """The group of each of n positions along the grouped dimension: offs holds each group's end
    (cumulative); positions past the last end are in no group (index len(offs))."""
    return jnp.searchsorted(jnp.asarray(offs), jnp.arange(n), side="right")


def grouped_mm(self, mat2, offs=None):
    """The grouped product without ATen's argument checks (also the backward helpers' product):
    2-D x 3-D groups self's rows by `offs`, 3-D x 2-D mat2's columns, 2-D x 2-D the contracted
    dimension (one product per group, stacked), 3-D x 3-D is a batched product. Rows or columns
    past the last offset belong to no group: zeros (ATen leaves them uninitialized)."""
    a, b = self.ndim, mat2.ndim
    if (a, b) == (3, 3):
        return self @ mat2
    groups = len(offs)
    if (a, b) == (2, 3):  # (M, K) x (G, K, N) -> (M, N)
        gid = _group_of(offs, self.shape[0])
        full = jnp.einsum("mk,gkn->gmn", self, mat2)
        mask = gid[None, :, None] == jnp.arange(groups)[:, None, None]
        return jnp.sum(jnp.where(mask, full, 0), axis=0)
    if (a, b) == (3, 2):  # (G, M, K) x (K, N) -> (M, N): the transpose of mat2ᵀ's rows grouped
        return grouped_mm(mat2.T, jnp.swapaxes(self, -1, -2), offs).T
    # (M, K) x (K, N) -> (G, M, N), each group over its part of K
    gid = _group_of(offs, self.shape[1])
    masks = (gid[None, :] == jnp.arange(groups)[:, None]).astype(self.dtype)
    return jnp.einsum("mk,gk,kn->gmn", self, masks, mat2)


@impl("_grouped_mm")
def _grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None):
    if bias is not None:
        raise RuntimeError("_grouped_mm: bias not supported yet")
    if self.ndim not in (2, 3) or mat2.ndim not in (2, 3):
        raise RuntimeError(f"_grouped_mm: expected 2-D or 3-D operands, got {self.ndim}-D and {mat2.ndim}-D")
    if (self.ndim == 3 and mat2.ndim == 3) != (offs is None):
        raise RuntimeError(
            "_grouped_mm: offs is required unless both operands are 3-D, and not allowed then"
            f" (got {self.ndim}-D and {mat2.ndim}-D, offs {'given' if offs is not None else 'None'})"
        )
    if self.shape[-1] != mat2.shape[-2]:
        raise RuntimeError(f"_grouped_mm: contraction sizes differ: {self.shape[-1]} and {mat2.shape[-2]}")
    out = grouped_mm(self, mat2, offs)
    return out if out_dtype is None else out.astype(out_dtype)


@impl("mm")
def mm(self, mat2):
    _check_ndim("mm", self, 2)
    _check_ndim("mm", mat2, 2)
    return self @ mat2


@impl("bmm")
def bmm(self, mat2):
    _check_ndim("bmm", self, 3)
    _check_ndim("bmm", mat2, 3)
    return self @ mat2


@impl("_bmm")
def _bmm(self, mat2, deterministic=False):
    return bmm(self, mat2)


@impl("mv")
def mv(self, vec):
    _check_ndim("mv", self, 2)
    _check_ndim("mv", vec, 1)
    return self @ vec


@impl("dot")
def dot(self, tensor):
    _check_ndim("dot", self, 1)
    return jnp.dot(self, tensor)


@impl("vdot")
def vdot(self, other):
    _check_ndim("vdot", self, 1)
    return jnp.dot(jnp.conj(self), other)


@impl("ger", "outer")
def ger(self, vec2):
    return jnp.outer(self, vec2)


@impl("matmul")
def matmul(self, other):
    return jnp.matmul(self, other)


def _add_product(self, product, beta, alpha):
    return _scaled(jnp.broadcast_to(self, product.shape), beta) + _scaled(product, alpha)


@impl("addmm")
def addmm(self, mat1, mat2, beta=1, alpha=1):
    return _add_product(self, mm(mat1, mat2), beta, alpha)


@impl("addbmm")
def addbmm(self, batch1, batch2, beta=1, alpha=1):
    return _add_product(self, bmm(batch1, batch2).sum(0), beta, alpha)


@impl("baddbmm")
def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    return _add_product(self, bmm(batch1, batch2), beta, alpha)


@impl("addmv")
def addmv(self, mat, vec, beta=1, alpha=1):
    return _add_product(self, mv(mat, vec), beta, alpha)


@impl("addr")
def addr(self, vec1, vec2, beta=1, alpha=1):
    return _add_product(self, jnp.outer(vec1, vec2), beta, alpha)


@impl("trace")
def trace(self):
    _check_ndim("trace", self, 2)
    return jnp.trace(self)


@impl("cross")
def cross(self, other, dim=None):
    """ATen's legacy cross: without `dim`, the first dimension of size 3."""
    shape = jnp.broadcast_shapes(self.shape, other.shape)
    if dim is None:
        dim = next(d for d, s in enumerate(shape) if s == 3)
    return jnp.cross(jnp.broadcast_to(self, shape), jnp.broadcast_to(other, shape), axis=dim)


@impl("linalg_cross")
def linalg_cross(self, other, dim=-1):
    """The cross product along `dim` (size 3), inputs broadcast."""
    shape = jnp.broadcast_shapes(jnp.shape(self), jnp.shape(other))
    if shape[dim] != 3:
        raise ValueError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {jnp.shape(self)} and {jnp.shape(other)}"
        )
    return jnp.cross(jnp.broadcast_to(self, shape), jnp.broadcast_to(other, shape), axis=dim)


# -- Cholesky -------------------------------------------------------------------------------


@impl("cholesky")
def cholesky(self, upper=False):
    """Reads one triangle only, as LAPACK does: the lower one, the upper one with upper=True
    (the two differ where the input is Hermitian only up to rounding)."""
    if upper:
        lower = mH(jnp.triu(self))  # the Hermitian matrix the upper triangle states, by its lower half
    else:
        lower = jnp.tril(self)
    L = jnp.linalg.cholesky(lower + mH(jnp.tril(lower, -1)), symmetrize_input=False)
    return mH(L) if upper else L


@impl("linalg_cholesky_ex")
def linalg_cholesky_ex(self, upper=False, check_errors=False):
    return cholesky(self, upper), _info(self)


@impl("cholesky_solve")
def cholesky_solve(self, input2, upper=False):
    """Solves A X = self for A = L Lᴴ (or Uᴴ U) with the factor input2."""
    L = mH(input2) if upper else input2
    y = jsl.solve_triangular(L, self, lower=True)
    return jsl.solve_triangular(L, y, lower=True, trans="C")


@impl("cholesky_inverse")
def cholesky_inverse(self, upper=False):
    eye = jnp.broadcast_to(jnp.eye(self.shape[-1], dtype=self.dtype), self.shape)
    return cholesky_solve(eye, self, upper)


# -- inverse, determinants, LU ----------------------------------------------------------------


@impl("inverse")
def inverse(self):
    return jnp.linalg.inv(self)


@impl("linalg_inv_ex")
def linalg_inv_ex(self, check_errors=False):
    return jnp.linalg.inv(self), _info(self)


@impl("det")
def det(self):
    return jnp.linalg.det(self)


@impl("slogdet")
def slogdet(self):
    sign, logabsdet = jnp.linalg.slogdet(self)
    return sign, logabsdet


@impl("logdet")
def logdet(self):
    """log det: NaN for a negative real determinant, -inf for a singular matrix."""
    sign, logabsdet = jnp.linalg.slogdet(self)
    if jnp.iscomplexobj(self):
        return jnp.log(sign) + logabsdet
    return jnp.where(sign < 0, jnp.nan, logabsdet)


def _lu(a):
    lu, piv, _ = jax.lax.linalg.lu(a)
    return lu, (piv + 1).astype(jnp.int32)


def _permutation(pivots, m):
    """The row permutation LAPACK's sequential swaps (1-based pivots) apply to m rows."""
    perm = jnp.broadcast_to(jnp.arange(m), pivots.shape[:-1] + (m,))
    for i in range(pivots.shape[-1]):
        j = pivots[..., i : i + 1].astype(jnp.int32) - 1
        pi = perm[..., i : i + 1]
        pj = jnp.take_along_axis(perm, j, -1)
        perm = perm.at[..., i].set(pj[..., 0])
        perm = jnp.where(jnp.arange(m) == j, pi, perm)
    return perm


def permutation_matrix(pivots, m, dtype):
    """P with A = P L U, from LAPACK pivots: P[perm[i], i] = 1."""
    perm = _permutation(pivots, m)
    return jnp.swapaxes(jax.nn.one_hot(perm, m, dtype=dtype), -1, -2)


@impl("_det_lu_based_helper")
def _det_lu_based_helper(self):
    lu, piv = _lu(self)
    swaps = jnp.sum(piv != jnp.arange(1, piv.shape[-1] + 1, dtype=piv.dtype), -1)
    sign = jnp.where(swaps % 2 == 0, 1, -1).astype(self.dtype)
    return sign * jnp.prod(jnp.diagonal(lu, 0, -2, -1), -1), lu, piv


@impl("_lu_with_info")
def _lu_with_info(self, pivot=True, check_errors=True):
    if not pivot:
        raise RuntimeError("lu without pivoting is not implemented on the CPU")
    lu, piv = _lu(self)
    return lu, piv, _info(self)


def unpack(LU_data, LU_pivots):
    """(P, L, U) of a packed LU factorization."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    L = jnp.tril(LU_data[..., :, :k], -1) + jnp.eye(m, k, dtype=LU_data.dtype)
    U = jnp.triu(LU_data[..., :k, :])
    return permutation_matrix(LU_pivots, m, LU_data.dtype), L, U


@impl("lu_unpack")
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    P, L, U = unpack(LU_data, LU_pivots)
    empty = jnp.zeros((0,), LU_data.dtype)
    return (P if unpack_pivots else empty), (L if unpack_data else empty), (U if unpack_data else empty)


@impl("lu_solve")
def lu_solve(self, LU_data, LU_pivots):
    P, L, U = unpack(LU_data, LU_pivots)
    y = jsl.solve_triangular(L, mH(P) @ self, lower=True, unit_diagonal=True)
    return jsl.solve_triangular(U, y, lower=False)


# -- solves ---------------------------------------------------------------------------------


@impl("solve")
def solve(self, A):
    """The legacy torch.solve(B, A): (A⁻¹ B, A's packed LU factorization)."""
    batch = jnp.broadcast_shapes(self.shape[:-2], A.shape[:-2])
    A = jnp.broadcast_to(A, batch + A.shape[-2:])
    return jnp.linalg.solve(A, jnp.broadcast_to(self, batch + self.shape[-2:])), _lu(A)[0]


@impl("triangular_solve")
def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    """(op(A)⁻¹ self, A): reads only A's `upper` or lower triangle."""
    batch = jnp.broadcast_shapes(self.shape[:-2], A.shape[:-2])
    A = jnp.broadcast_to(A, batch + A.shape[-2:])
    b = jnp.broadcast_to(self, batch + self.shape[-2:])
    x = jsl.solve_triangular(A, b, lower=not upper, trans="T" if transpose else "N", unit_diagonal=unitriangular)
    return x, A


# -- QR, Householder ------------------------------------------------------------------------------


@impl("qr")
def qr(self, some=True):
    return jnp.linalg.qr(self, mode="reduced" if some else "complete")


@impl("geqrf")
def geqrf(self):
    """LAPACK's geqrf: R above the diagonal, reflectors v (v_0 = 1) below it, and their tau;
    reflector j is H = I - tau v vᴴ, with beta = -sign(Re alpha) ‖(alpha, x)‖ (xLARFG)."""
    a = self
    m, n = a.shape[-2:]
    taus = []
    for j in range(min(m, n)):
        alpha, x = a[..., j, j], a[..., j + 1 :, j]
        xnorm = jnp.sqrt(jnp.sum(jnp.abs(x) ** 2, -1))
        trivial = (xnorm == 0) & (jnp.imag(alpha) == 0)
        beta = -jnp.where(jnp.real(alpha) >= 0, 1.0, -1.0) * jnp.sqrt(jnp.abs(alpha) ** 2 + xnorm**2)
        beta = jnp.where(trivial, jnp.real(alpha), beta)
        tau = jnp.where(trivial, 0, (beta - alpha) / jnp.where(trivial, 1, beta))
        v = jnp.concatenate([jnp.ones_like(alpha)[..., None], x / jnp.where(trivial, 1, alpha - beta)[..., None]], -1)
        rest = a[..., j:, j + 1 :]
        rest = rest - (jnp.conj(tau)[..., None, None] * v[..., :, None]) * (
            jnp.conj(v)[..., None, :] @ rest
        )  # vᴴ·rest per batch item
        a = a.at[..., j:, j + 1 :].set(rest).at[..., j + 1 :, j].set(v[..., 1:]).at[..., j, j].set(beta.astype(a.dtype))
        taus.append(tau)
    if not taus:  # min(m, n) = 0: no reflectors, an empty tau as LAPACK's
        return a, jnp.zeros(self.shape[:-2] + (0,), self.dtype)
    return a, jnp.stack(taus, -1).astype(self.dtype)


@impl("orgqr")
def orgqr(self, input2):
    return jax.lax.linalg.householder_product(self, input2)


@impl("ormqr")
def ormqr(self, input2, input3, left=True, transpose=False):
    """op(Q) input3 (left) or input3 op(Q), Q the product of the reflectors in self, input2."""
    check_float_operands("torch.ormqr", self, input2, input3)
    rows = input3.shape[-2] if left else input3.shape[-1]
    if self.shape[-2] != rows:
        raise RuntimeError(f"torch.ormqr: expected input.shape[-2] == {rows}, got {self.shape[-2]}")
    return apply_reflectors(self, input2, input3, left, transpose)


# -- spectral -------------------------------------------------------------------------------


@impl("svd")
def svd(self, some=True, compute_uv=True):
    """The legacy torch.svd: (U, S, V), not Vᴴ; zero-filled U and V when compute_uv is False."""
    m, n = self.shape[-2:]
    if not compute_uv:
        S = jnp.linalg.svd(self, compute_uv=False)
        return jnp.zeros(self.shape[:-2] + (m, m), self.dtype), S, jnp.zeros(self.shape[:-2] + (n, n), self.dtype)
    U, S, Vh = jnp.linalg.svd(self, full_matrices=not some)
    return U, S, mH(Vh)


@impl("symeig")
def symeig(self, eigenvectors=False, upper=True):
    """Ascending eigenvalues from the `upper` (or lower) triangle; empty vectors unless asked."""
    w, V = jnp.linalg.eigh(self, UPLO="U" if upper else "L", symmetrize_input=False)
    return w, (V if eigenvectors else jnp.zeros((0,), self.dtype))


@impl("eig")
def eig(self, eigenvectors=False):
    """The legacy torch.eig of a real matrix: eigenvalues as (n, 2) [real, imag] rows; real
    eigenvectors, a complex pair's stored as its real and imaginary parts (LAPACK's geev)."""
    if self.ndim != 2:
        raise RuntimeError("eig: expected a 2-D tensor")
    if jnp.iscomplexobj(self):
        raise RuntimeError("eig: complex input is not supported by the legacy torch.eig")
    w, V = jnp.linalg.eig(self)
    values = jnp.stack([w.real, w.imag], -1).astype(self.dtype)
    if not eigenvectors:
        return values, jnp.zeros((0,), self.dtype)
    second = jnp.concatenate([jnp.zeros(1, bool), w.imag[:-1] > 0])  # second column of a pair
    shifted = jnp.concatenate([V[:, :1], V[:, :-1]], 1)
    return values, jnp.where(second, shifted.imag, V.real).astype(self.dtype)


@impl("matrix_exp")
def matrix_exp(self):
    return jsl.expm(self)


# -- least squares ----------------------------------------------------------------------------


@impl("lstsq")
def lstsq(self, A):
    """The legacy torch.lstsq(B, A): X in the first n rows of a max(m, n) x k tensor, and A's QR."""
    m, n = A.shape
    x = jnp.linalg.lstsq(A, self)[0]
    solution = jnp.zeros((max(m, n), self.shape[-1]), self.dtype).at[:n].set(x)
    if m >= n:  # the residual of each column, as LAPACK's gels leaves it below the solution
        q = jnp.linalg.qr(A, mode="complete")[0]
        solution = solution.at[n:].set((mH(q) @ self)[n:])
    return solution, geqrf(A)[0]


@impl("linalg_lstsq")
def linalg_lstsq(self, b, rcond=None, driver=None):
    """torch.linalg.lstsq: (solution, residuals, rank, singular_values), as the CPU drivers fill them.

    The default driver, gelsy, returns no residuals nor singular values; gelsd and gelss
    return the singular values, and they and gels the squared column norms of A X - B when
    m > n (full rank assumed); gels returns no rank. A B of shape A.shape[:-1] is a vector."""
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(
            f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got {driver}"
        )
    check_float_operands("torch.linalg.lstsq", self, b)
    vector = b.ndim == 1 or (b.ndim == self.ndim - 1 and b.shape == self.shape[:-1])
    B = b[..., None] if vector else b
    m, n = self.shape[-2:]
    real = jnp.real(self).dtype
    rtol = np.finfo(real).eps * max(m, n) if rcond is None or rcond < 0 else rcond
    x = jnp.linalg.pinv(self, rtol=rtol) @ B
    empty = jnp.zeros((0,), real)
    residuals = empty
    if driver != "gelsy" and m > n:
        residuals = jnp.sum(jnp.abs(self @ x - B) ** 2, -2)
    rank = jnp.zeros((0,), jnp.int64) if driver == "gels" else jnp.linalg.matrix_rank(self, rtol=rtol).astype(jnp.int64)
    singular_values = jnp.linalg.svd(self, compute_uv=False) if driver in ("gelsd", "gelss") else empty
    return (x[..., 0] if vector else x), residuals, rank, singular_values
