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

from ..records import (
    Equivalent,
    Sample,
    compiled_apart,
    parity_differs,
    parity_in_float32,
    parity_samples,
    torch_equivalent,
)
from ..tensor_utils import mH
from . import impl
from ._linalg_samples import (
    hermitian,
    householder,
    lower_factor,
    mH_numpy,
    random_matrix,
    register_matrix_cases,
    labelled_sample,
    spd,
    spread_singular_values,
    squares,
    well_conditioned,
)
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


def _checked_matmul(name, a, a_ndim, b, b_ndim):
    """a @ b, each operand of the dims the op `name` takes."""
    _check_ndim(name, a, a_ndim)
    _check_ndim(name, b, b_ndim)
    return a @ b


@impl("mm")
def mm(self, mat2):
    return _checked_matmul("mm", self, 2, mat2, 2)


@impl("bmm")
def bmm(self, mat2):
    return _checked_matmul("bmm", self, 3, mat2, 3)


@impl("_bmm")
def _bmm(self, mat2, deterministic=False):
    return bmm(self, mat2)


@impl("mv")
def mv(self, vec):
    return _checked_matmul("mv", self, 2, vec, 1)


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


@impl("cholesky", hermitian_inputs=("self",))  # it reads one triangle: a Hermitian input
def cholesky(self, upper=False):
    """Reads one triangle only, as LAPACK does: the lower one, the upper one with upper=True
    (the two differ where the input is Hermitian only up to rounding)."""
    if upper:
        lower = mH(jnp.triu(self))  # the Hermitian matrix the upper triangle states, by its lower half
    else:
        lower = jnp.tril(self)
    L = jnp.linalg.cholesky(lower + mH(jnp.tril(lower, -1)), symmetrize_input=False)
    return mH(L) if upper else L


@impl("linalg_cholesky_ex", hermitian_inputs=("self",))
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
def linalg_inv_ex(A, check_errors=False):
    """1.10's schema names A `self` (registry.RENAMED_ARGUMENTS)."""
    return jnp.linalg.inv(A), _info(A)


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


def lu_factors(a):
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
    lu, piv = lu_factors(self)
    swaps = jnp.sum(piv != jnp.arange(1, piv.shape[-1] + 1, dtype=piv.dtype), -1)
    sign = jnp.where(swaps % 2 == 0, 1, -1).astype(self.dtype)
    return sign * jnp.prod(jnp.diagonal(lu, 0, -2, -1), -1), lu, piv


@impl("_lu_with_info")
def _lu_with_info(self, pivot=True, check_errors=True):
    if not pivot:
        raise RuntimeError("lu without pivoting is not implemented on the CPU")
    lu, piv = lu_factors(self)
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
    return jnp.linalg.solve(A, jnp.broadcast_to(self, batch + self.shape[-2:])), lu_factors(A)[0]


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


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the linear-algebra ops: well-posed matrices, batched where ATen accepts them.
#
# SPD matrices for Cholesky, well-conditioned ones for inverses and solves, spread singular
# values and eigenvalues for the spectral ops, and a singular matrix (an exact zero row) for
# det's dedicated branch. Gauge freedom, as `Sample.outputs` / `Sample.tangents` say:
#   - svd: S and the squared entries of U and V's first k columns (sign-invariant; the free
#     columns of a full U or V are dropped), and U Vᴴ (invariant under a joint phase only);
#   - symeig and eig: the eigenvalues and the squared entries of the eigenvectors;
#   - qr: Q and R themselves: a real QR has only a discrete sign gauge, constant nearby;
#   - cholesky and symeig read one triangle and their formulas assume a Hermitian input: input
#     directions are Hermitian; a triangular factor input (cholesky_solve, cholesky_inverse) is
#     perturbed within its triangle.
# Real only where the spec's formula is: entries written inline without conj (1.7's bmm, mv, ger,
# addmv, addr, addbmm, baddbmm, cross, inverse: see _INLINE) get no complex samples; qr_backward
# and eig_backward are real matrix calculus (eig's needs real eigenvalues).
# LU samples are square, wide and tall: the 1.10 LU formulas cover every shape.
# -- products -------------------------------------------------------------------------------------
register_matrix_cases(
    "mm",
    cases=lambda r, d: [
        labelled_sample("3x4 @ 4x2", self=random_matrix(r, (3, 4), d), mat2=random_matrix(r, (4, 2), d))
    ],
)
register_matrix_cases(
    "bmm",
    cases=lambda r, d: [
        labelled_sample("2x3x4 @ 2x4x2", self=random_matrix(r, (2, 3, 4), d), mat2=random_matrix(r, (2, 4, 2), d))
    ],
)
register_matrix_cases(
    "_bmm",
    cases=lambda r, d: [
        labelled_sample("2x3x4 @ 2x4x2", self=random_matrix(r, (2, 3, 4), d), mat2=random_matrix(r, (2, 4, 2), d))
    ],
)
# Grouped products (mixture-of-experts layers): each operand layout ATen accepts, an empty
# group, and rows past the last offset (in no group).
register_matrix_cases(
    "_grouped_mm",
    cases=lambda r, d: [
        labelled_sample(
            "6x4 rows grouped 2,0,3 (+1 past) @ 3x4x5",
            self=random_matrix(r, (6, 4), d),
            mat2=random_matrix(r, (3, 4, 5), d),
            offs=np.array([2, 2, 5], np.int32),
        ),
        labelled_sample(
            "2x3x4 @ 4x5 columns grouped 2,3",
            self=random_matrix(r, (2, 3, 4), d),
            mat2=random_matrix(r, (4, 5), d),
            offs=np.array([2, 5], np.int32),
        ),
        labelled_sample(
            "3x5 @ 5x2 contraction grouped 3,2",
            self=random_matrix(r, (3, 5), d),
            mat2=random_matrix(r, (5, 2), d),
            offs=np.array([3, 5], np.int32),
        ),
        labelled_sample(
            "2x3x4 @ 2x4x2 batched", self=random_matrix(r, (2, 3, 4), d), mat2=random_matrix(r, (2, 4, 2), d)
        ),
    ],
    complex_=False,
)
parity_in_float32("torch's CPU kernel takes float32, bfloat16 and float16 only", "_grouped_mm")
# torch's CPU kernel wants rows of 16-byte multiples and leaves rows past the last offset
# uninitialized: the parity run's samples fill every group.
parity_samples(
    "_grouped_mm",
    *(
        Sample(
            (),
            {
                "self": np.linspace(-1, 1, int(np.prod(a))).reshape(a),
                "mat2": np.cos(np.arange(np.prod(b))).reshape(b),
                **o,
            },
            label,
        )
        for a, b, o, label in (
            ((6, 4), (3, 4, 8), {"offs": np.array([2, 2, 6], np.int32)}, "rows grouped 2,0,4"),
            ((2, 4, 4), (4, 8), {"offs": np.array([4, 8], np.int32)}, "columns grouped 4,4"),
            ((4, 8), (8, 4), {"offs": np.array([4, 8], np.int32)}, "contraction grouped 4,4"),
            ((2, 4, 4), (2, 4, 8), {}, "batched"),
        )
    ),
)
register_matrix_cases(
    "matmul",
    cases=lambda r, d: [
        labelled_sample("3x4 @ 4x2", self=random_matrix(r, (3, 4), d), other=random_matrix(r, (4, 2), d)),
        labelled_sample("4 @ 4", self=random_matrix(r, (4,), d), other=random_matrix(r, (4,), d)),
        labelled_sample("4 @ 2x4x3", self=random_matrix(r, (4,), d), other=random_matrix(r, (2, 4, 3), d)),
        labelled_sample("2x1x3x4 @ 4", self=random_matrix(r, (2, 1, 3, 4), d), other=random_matrix(r, (4,), d)),
        labelled_sample(
            "2x1x3x4 @ 5x4x2 (batch broadcast)",
            self=random_matrix(r, (2, 1, 3, 4), d),
            other=random_matrix(r, (5, 4, 2), d),
        ),
    ],
)
register_matrix_cases(
    "mv",
    cases=lambda r, d: [labelled_sample("3x4 @ 4", self=random_matrix(r, (3, 4), d), vec=random_matrix(r, (4,), d))],
)
register_matrix_cases(
    "ger", cases=lambda r, d: [labelled_sample("3 x 4", self=random_matrix(r, (3,), d), vec2=random_matrix(r, (4,), d))]
)
register_matrix_cases(
    "dot",
    cases=lambda r, d: [labelled_sample("4 . 4", self=random_matrix(r, (4,), d), tensor=random_matrix(r, (4,), d))],
)
register_matrix_cases(
    "vdot",
    cases=lambda r, d: [labelled_sample("4 . 4", self=random_matrix(r, (4,), d), other=random_matrix(r, (4,), d))],
)
register_matrix_cases("trace", cases=lambda r, d: [labelled_sample("3x4", self=random_matrix(r, (3, 4), d))])
register_matrix_cases(
    "cross",
    cases=lambda r, d: [
        labelled_sample("2x3 dim=None", self=random_matrix(r, (2, 3), d), other=random_matrix(r, (2, 3), d)),
        labelled_sample("3x2 bcast dim=0", self=random_matrix(r, (3, 2), d), other=random_matrix(r, (3, 1), d), dim=0),
    ],
)
register_matrix_cases(
    "linalg_cross",
    cases=lambda r, d: [
        labelled_sample("2x3", self=random_matrix(r, (2, 3), d), other=random_matrix(r, (2, 3), d)),
        labelled_sample("3x2 bcast dim=0", self=random_matrix(r, (3, 2), d), other=random_matrix(r, (3, 1), d), dim=0),
    ],
)
_SCALARS: tuple[dict[str, float], ...] = ({}, {"beta": 0.5, "alpha": 2.0}, {"beta": 0})
# Complex inputs also get complex beta and alpha: a formula missing their `.conj()` must fail.
_COMPLEX_SCALARS = {"beta": 0.5 - 1.0j, "alpha": 1.5 + 0.5j}


def _scalars(d, n=3):
    return _SCALARS[:n] + ((_COMPLEX_SCALARS,) if np.issubdtype(d, np.complexfloating) else ())


def _scaled_product_cases(label, self_shapes, n, **factors):
    """Samples of `beta * self + alpha * product(factors)` for each (beta, alpha) of
    `_scalars(d, n)`: self of `self_shapes` in turn (one shape: always that one), the factors of
    their given shapes."""

    def cases(r, d):
        scalars = _scalars(d, n)
        shapes = self_shapes if len(self_shapes) > 1 else self_shapes * len(scalars)
        return [
            labelled_sample(
                f"{label} {s}",
                self=random_matrix(r, shape, d),
                **{name: random_matrix(r, factor, d) for name, factor in factors.items()},
                **s,
            )
            for s, shape in zip(scalars, shapes)
        ]

    return cases


register_matrix_cases(
    "addmm", cases=_scaled_product_cases("3x2", [(3, 2), (2,), (3, 2), (3, 2)], 3, mat1=(3, 4), mat2=(4, 2))
)
register_matrix_cases("addbmm", cases=_scaled_product_cases("3x2", [(3, 2)], 2, batch1=(2, 3, 4), batch2=(2, 4, 2)))
register_matrix_cases(
    "baddbmm",
    cases=_scaled_product_cases("2x3x2", [(2, 3, 2), (3, 1), (2, 3, 2)], 2, batch1=(2, 3, 4), batch2=(2, 4, 2)),
)
register_matrix_cases("addmv", cases=_scaled_product_cases("3", [(3,)], 2, mat=(3, 4), vec=(4,)))
register_matrix_cases("addr", cases=_scaled_product_cases("3x4", [(3, 4)], 2, vec1=(3,), vec2=(4,)))


# -- Cholesky -------------------------------------------------------------------------------------


def hermitian_directions(vs):
    return [hermitian(vs[0])]


def _in_triangle(upper):
    return lambda vs: [vs[0], np.triu(vs[1]) if upper else np.tril(vs[1])]


register_matrix_cases(
    "cholesky",
    "linalg_cholesky_ex",
    cases=lambda r, d: [
        labelled_sample(f"spd {shape} upper={u}", tangents=hermitian_directions, self=spd(r, shape, d), upper=u)
        for shape, u in [((3, 3), False), ((2, 3, 3), True)]
    ],
)
register_matrix_cases(
    "cholesky_solve",
    cases=lambda r, d: [
        labelled_sample(
            f"3x2 upper={u}",
            tangents=_in_triangle(u),
            self=random_matrix(r, (2, 3, 2), d),
            input2=(mH_numpy(lower_factor(r, (2, 3, 3), d)) if u else lower_factor(r, (2, 3, 3), d)),
            upper=u,
        )
        for u in (False, True)
    ],
)
register_matrix_cases(
    "cholesky_inverse",
    cases=lambda r, d: [
        labelled_sample(
            f"3x3 upper={u}",
            tangents=lambda vs, u=u: [np.triu(vs[0]) if u else np.tril(vs[0])],
            self=(mH_numpy(lower_factor(r, (3, 3), d)) if u else lower_factor(r, (3, 3), d)),
            upper=u,
        )
        for u in (False, True)
    ],
)

# -- inverses, determinants, solves -----------------------------------------------------------------


def square_cases(batch=well_conditioned, label="2x3x3"):
    """Cases of a well-conditioned 3x3 matrix, then of `label`: a batch of two 3x3 matrices that
    `batch(rng, shape, dtype)` draws."""
    return lambda r, d: [
        labelled_sample("3x3", self=well_conditioned(r, (3, 3), d)),
        labelled_sample(label, self=batch(r, (2, 3, 3), d)),
    ]


register_matrix_cases("inverse", "linalg_inv_ex", "matrix_exp", cases=square_cases())
compiled_apart(
    "jax.scipy.linalg.expm's Pade branches and squarings, differentiated to third order: one program per "
    "(mode, sample) compiles in 28.4 s against 55.3 s for the entry's one program (one process, no cache, "
    "measured 2026-12-06 on the loaded 2-core machine)",
    "matrix_exp",
)
register_matrix_cases("logdet", "_det_lu_based_helper", cases=square_cases())
register_matrix_cases(
    "slogdet", cases=square_cases(lambda r, shape, d: -well_conditioned(r, shape, d), "2x3x3 negative det")
)


def _singular(r, d):
    a = well_conditioned(r, (3, 3), d)
    a[1] = 0  # an exact zero row: det is exactly 0, its gradient the adjugate's transpose
    return a


# The singular sample is real only: at a complex A with a zero singular value the null singular
# vectors' phases are independent, so JAX's svd jvp, through which the second order of
# det_backward's SVD branch is taken, is undefined there (first order is tested against torch).
register_matrix_cases(
    "det",
    cases=lambda r, d: (
        square_cases()(r, d) + ([labelled_sample("3x3 singular", self=_singular(r, d))] if d == np.float64 else [])
    ),
)
register_matrix_cases(
    "solve",
    cases=lambda r, d: [
        labelled_sample("2x3x2", self=random_matrix(r, (2, 3, 2), d), A=well_conditioned(r, (2, 3, 3), d)),
    ],
)


def _triangular(r, d, upper, shape=(2, 3, 3)):
    lower = lower_factor(r, shape, d)
    return np.swapaxes(lower, -1, -2) if upper else lower


register_matrix_cases(
    "triangular_solve",
    cases=lambda r, d: [
        labelled_sample(
            f"upper={u} transpose={t} unit={n}",
            self=random_matrix(r, (2, 3, 2), d),
            A=_triangular(r, d, u),
            upper=u,
            transpose=t,
            unitriangular=n,
        )
        for u, t, n in [(True, False, False), (False, True, False), (True, True, True)]
    ],
)

# -- LU ---------------------------------------------------------------------------------------------


def _lu_of(a):

    lu, piv = lu_factors(a)
    return np.asarray(lu), np.asarray(piv)


register_matrix_cases(
    "_lu_with_info",
    cases=lambda r, d: [
        labelled_sample("3x3", self=well_conditioned(r, (3, 3), d)),
        labelled_sample("2x3x3", self=random_matrix(r, (2, 3, 3), d) + 2 * np.eye(3)),
        labelled_sample("wide 3x5", self=random_matrix(r, (3, 5), d) + 2 * np.eye(3, 5)),
        labelled_sample("tall 2x5x3", self=random_matrix(r, (2, 5, 3), d) + 2 * np.eye(5, 3)),
    ],
)


def _lu_solve_cases(r, d):
    lu, piv = _lu_of(random_matrix(r, (2, 3, 3), d) + 2 * np.eye(3))
    return [labelled_sample("2x3x2", self=random_matrix(r, (2, 3, 2), d), LU_data=lu, LU_pivots=piv)]


def _lu_unpack_cases(r, d):
    lu, piv = _lu_of(random_matrix(r, (2, 3, 3), d))
    wide, wpiv = _lu_of(random_matrix(r, (3, 5), d))
    tall, tpiv = _lu_of(random_matrix(r, (2, 5, 3), d))
    return [
        labelled_sample("2x3x3", LU_data=lu, LU_pivots=piv),
        labelled_sample("3x3 no pivots", LU_data=lu[0], LU_pivots=piv[0], unpack_pivots=False),
        labelled_sample("wide 3x5", LU_data=wide, LU_pivots=wpiv),
        labelled_sample("tall 2x5x3", LU_data=tall, LU_pivots=tpiv),
    ]


register_matrix_cases("lu_solve", cases=_lu_solve_cases)
register_matrix_cases("lu_unpack", cases=_lu_unpack_cases)

# -- decompositions ------------------------------------------------------------------------------------


def _svd_outputs(k):
    return lambda outs: [outs[1], squares(outs[0][..., :k]), squares(outs[2][..., :k])]


def _polar(k):
    """U Vᴴ over the first k columns: invariant under a joint phase of u_i and v_i only, so it
    exercises the complex phase-gauge term that |U|² and |V|² do not see."""
    return lambda outs: [outs[0][..., :k] @ outs[2][..., :k].conj().swapaxes(-1, -2)]


register_matrix_cases(
    "svd",
    cases=lambda r, d: (
        [
            labelled_sample(
                f"{shape} some={some}",
                outputs=_svd_outputs(min(shape[-2:])),
                self=spread_singular_values(r, shape, d),
                some=some,
            )
            for shape, some in [((3, 3), True), ((2, 4, 3), True), ((4, 3), False), ((3, 4), False)]
        ]
        + [labelled_sample("3x3 S only", outputs=lambda outs: [outs[1]], self=spread_singular_values(r, (3, 3), d))]
        + [
            labelled_sample(
                f"{shape} some={some} U Vᴴ",
                outputs=_polar(min(shape[-2:])),
                self=spread_singular_values(r, shape, d),
                some=some,
            )
            for shape, some in [((2, 4, 3), True), ((3, 4), False)]
        ]
    ),
)


def hermitian_spread(r, d, shape):
    """A Hermitian matrix (or batch) with eigenvalues -1, 0, 1, ...: 1 apart."""
    q = np.linalg.qr(random_matrix(r, shape, d))[0]
    return (q * (np.arange(shape[-1]) - 1.0)) @ mH_numpy(q)


def eigen_outputs(outs):
    """The eigenvalues and the squared moduli of the eigenvectors (whose phases are free)."""
    return [outs[0], squares(outs[1])]


def eigh_cases(matrix_name, triangle_name, triangles, **options):
    """Cases of symeig-like ops: a 3x3 and a 2x3x3 `hermitian_spread` matrix, read in the
    `triangles` given (the argument `triangle_name`), Hermitian directions, `options` as given."""
    return lambda r, d: [
        labelled_sample(
            f"{shape} {triangle_name}={u}",
            outputs=eigen_outputs,
            tangents=hermitian_directions,
            **{matrix_name: hermitian_spread(r, d, shape), **options, triangle_name: u},
        )
        for shape, u in zip([(3, 3), (2, 3, 3)], triangles)
    ]


register_matrix_cases("symeig", cases=eigh_cases("self", "upper", (True, False), eigenvectors=True))


def _real_spectrum(r, d):
    p = np.eye(3) + 0.3 * random_matrix(r, (3, 3), d)
    return (p * np.array([-1.0, 0.5, 2.0])) @ np.linalg.inv(p)


register_matrix_cases(
    "eig",
    complex_=False,
    cases=lambda r, d: [
        labelled_sample(
            "3x3 real spectrum",
            outputs=lambda outs: [outs[0], squares(outs[1])],
            self=_real_spectrum(r, d),
            eigenvectors=True,
        )
    ],
)
register_matrix_cases(
    "qr",
    complex_=False,
    cases=lambda r, d: [
        labelled_sample(f"{shape} some={some}", self=spread_singular_values(r, shape, d), some=some)
        for shape, some in [((3, 3), True), ((2, 4, 3), True), ((3, 4), True), ((3, 4), False)]
    ],
)


# not_implemented in the seed specs: one sample each, for the forward and the verdict
register_matrix_cases(
    "geqrf", complex_=False, cases=lambda r, d: [labelled_sample("4x3", self=random_matrix(r, (4, 3), d))]
)
register_matrix_cases(
    "orgqr",
    complex_=False,
    cases=lambda r, d: [labelled_sample("4x3", **dict(zip(("self", "input2"), householder(r, d))))],
)
register_matrix_cases(
    "ormqr",
    cases=lambda r, d: [
        labelled_sample(
            f"4x3 on {'4x2' if left else '2x4'} left={left} transpose={transpose}",
            **dict(zip(("self", "input2"), householder(r, d))),
            input3=random_matrix(r, (4, 2) if left else (2, 4), d),
            left=left,
            transpose=transpose,
        )
        for left, transpose in [(True, False), (True, True), (False, False), (False, True)]
    ],
)
register_matrix_cases(
    "lstsq",
    complex_=False,
    cases=lambda r, d: [labelled_sample("4x3", self=random_matrix(r, (4, 2), d), A=random_matrix(r, (4, 3), d))],
)
register_matrix_cases(
    "linalg_lstsq",
    cases=lambda r, d: [
        labelled_sample("4x3, 4x2", self=random_matrix(r, (4, 3), d), b=random_matrix(r, (4, 2), d)),
        labelled_sample(
            "4x3, 4x2 gelsd (residuals)",
            self=random_matrix(r, (4, 3), d),
            b=random_matrix(r, (4, 2), d),
            driver="gelsd",
        ),
        labelled_sample(
            "2x4x3, 2x4 vectors gelss",
            self=random_matrix(r, (2, 4, 3), d),
            b=random_matrix(r, (2, 4), d),
            driver="gelss",
        ),
        labelled_sample("3x5, 3 (minimum norm)", self=random_matrix(r, (3, 5), d), b=random_matrix(r, (3,), d)),
    ],
)


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(Equivalent(lambda aten, a: aten.bmm(a["self"], a["mat2"]), "torch 2.13 has no _bmm: aten.bmm"), "_bmm")
parity_differs(
    ("vjp", "jvp"),
    "at an exactly singular matrix of rank n - 1 torch 2.13's linalg_det backward and forward AD give a zero "
    "derivative; "
    "the seed's det_backward gives the adjugate, which central finite differences of det confirm "
    "(0.29, 3.62, -0.13 in the zero row of the `3x3 singular` sample, where torch gives 0); jaxderiv's jvp is "
    "that formula transposed",
    "det",
)
parity_differs(
    ("complex",),
    "the seed's output_differentiability [false, true] gives sign no gradient; torch 2.13 "
    "differentiates sign, whose derivative is nonzero for complex inputs (zero for real ones)",
    "slogdet",
)
parity_differs(
    ("jvp", "complex"),
    "torch 2.13's cholesky_inverse_jvp computes -X dF X Fᴴ (+ its adjoint), which disagrees with "
    "finite differences of torch's own forward (1e-2 on the sample); jaxderiv's helper computes the derivative, "
    "-X dL Lᴴ X (+ its adjoint); with the seed files jaxderiv's jvp is the seed's backward formula transposed, "
    "which agrees with finite differences too",
    "cholesky_inverse",
    torch_spec=True,
)
parity_differs(
    ("jvp", "complex"),
    "torch 2.13's triangular_solve_jvp applies the whole tangent dA, not op(dA) restricted to "
    "the triangle the solve reads: with transpose=True it disagrees with finite differences of torch's own "
    "forward by 0.25-0.45; jaxderiv's helper (1e-10 from them) restricts and transposes dA; with the seed "
    "files jaxderiv's jvp is the seed's backward formula transposed, which agrees with finite differences too",
    "triangular_solve",
    torch_spec=True,
)
