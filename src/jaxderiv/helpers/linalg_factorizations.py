"""FunctionsManual helpers of torch.linalg's factorization formulas, from the matrix calculus.

Conventions as in helpers/linalg.py: grad_A = dL/d(conj A), so transposes are conjugate
transposes. Backward helpers compute A⁻¹ from A itself, never from a saved LU: the LU is a
non-differentiable output, and a second derivative must see A⁻¹ move with A. Forward-mode
helpers, which are not differentiated twice by a formula, solve with the saved LU as ATen does.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ..errors import NotImplementedDerivative
from ..forward import linalg_factorizations as flf
from ..forward.linalg import unpack
from ..namespace import helper
from ..tensor_utils import mH, solve_triangular_right
from .linalg import batched_where, matrix_diagonal, diag_embed, eye_like, svd_factors
from .reductions import norm_backward
from .forward_mode import norm_jvp


def _trace(x):
    return jnp.sum(matrix_diagonal(x), -1)


# -- determinants ---------------------------------------------------------------------------


@helper("linalg_det_backward")
def linalg_det_backward(grad, det, A, LU, pivots):
    """grad times the conjugate cofactor matrix: conj(det) grad A⁻ᴴ, or where A is numerically
    singular (σ_min <= n eps σ_max, where A⁻¹ is lost) its SVD form
    conj(det U det Vᴴ) grad U diag(prod_{j!=i} s_j) Vᴴ, exact for any A."""
    if grad is None:
        return None
    n = A.shape[-1]
    if n == 0:
        return jnp.zeros_like(A)
    U, S, V = svd_factors(A)
    eps = jnp.finfo(S.dtype).eps
    singular = S[..., -1] <= n * eps * S[..., 0]
    safe = batched_where(singular, eye_like(A), A)
    regular = (grad * jnp.conj(det))[..., None, None] * mH(jnp.linalg.inv(safe))
    others = jnp.prod(jnp.where(jnp.eye(n, dtype=bool), 1, S[..., None, :]), -1)  # prod_{j!=i} s_j
    phase = jnp.linalg.det(U) * jnp.conj(jnp.linalg.det(V))
    cofactors = (grad * jnp.conj(phase))[..., None, None] * ((U * others[..., None, :].astype(A.dtype)) @ mH(V))
    return batched_where(singular, cofactors, regular)


def _lu_solve_saved(LU, pivots, B, use_A_T):
    """A⁻¹ B from the LU a determinant saved: of Aᵀ when use_A_T (then A⁻¹ = (Aᵀ)⁻ᵀ). A zero
    pivot is nudged by eps, as ATen does, so that a singular A gives a finite tangent."""
    eps = jnp.finfo(jnp.real(jnp.zeros((), LU.dtype)).dtype).eps
    d = matrix_diagonal(LU)
    LU = LU + diag_embed(jnp.where(d == 0, eps, 0).astype(LU.dtype))
    if use_A_T:  # (Aᵀ)ᵀ⁻¹ B = conj((Aᵀ)⁻ᴴ conj(B))
        return jnp.conj(flf.lu_solve(LU, pivots, jnp.conj(B), True, True))
    return flf.lu_solve(LU, pivots, B)


@helper("linalg_det_jvp")
def linalg_det_jvp(dA, det, LU, pivots, use_A_T):
    """d det = det tr(A⁻¹ dA)."""
    return _trace(_lu_solve_saved(LU, pivots, dA, use_A_T)) * det


@helper("slogdet_jvp")
def slogdet_jvp(LU, pivots, dA, sign, use_A_T):
    """(d sign, d logabsdet) = (i Im tr(A⁻¹ dA) sign, Re tr(A⁻¹ dA)); a real sign is constant."""
    t = _trace(_lu_solve_saved(LU, pivots, dA, use_A_T))
    if jnp.iscomplexobj(LU):
        return 1j * jnp.imag(t) * sign, jnp.real(t)
    return jnp.zeros_like(sign), t


# -- block diagonal, matrix exponential -------------------------------------------------------


@helper("block_diag_backward")
def block_diag_backward(grad, sizes, dtypes):
    """Each input's diagonal block of grad, in its own shape; a real input gets the real part."""
    out, r, c = [], 0, 0
    for shape, dtype in zip(sizes, dtypes):
        rows, cols = (1,) * (2 - len(shape)) + tuple(shape)
        g = grad[r : r + rows, c : c + cols].reshape(tuple(shape))
        out.append(jnp.real(g) if jnp.iscomplexobj(g) and not jnp.issubdtype(dtype, jnp.complexfloating) else g)
        r, c = r + rows, c + cols
    return out


@helper("block_diag_jvp")
def block_diag_jvp(tensors):
    """The inputs' forward gradients (the list's `.tangents`) placed as the inputs are."""
    return flf.block_diag(list(tensors.tangents))


@helper("linalg_matrix_exp_differential")
def linalg_matrix_exp_differential(self, grad, adjoint):
    """The Fréchet derivative of exp at A (at Aᴴ when adjoint) applied to grad: the top-right
    block of exp([[X, grad], [0, X]])."""
    n = self.shape[-1]
    X = mH(self) if adjoint else self
    X, grad = jnp.broadcast_arrays(X, grad.astype(X.dtype))
    zeros = jnp.zeros_like(X)
    block = jnp.concatenate([jnp.concatenate([X, grad], -1), jnp.concatenate([zeros, X], -1)], -2)
    return jsl.expm(block)[..., :n, n:]


# -- solves ---------------------------------------------------------------------------------


def _triangle(x, upper, unitriangular):
    k = 1 if unitriangular else 0
    return jnp.triu(x, k) if upper else jnp.tril(x, -k)


@helper("linalg_solve_triangular_backward")
def linalg_solve_triangular_backward(grad, A, X, upper, left, unitriangular, output_mask):
    """A X = B: gB = A⁻ᴴ gX, gA = -gB Xᴴ (X A = B: gB = gX A⁻ᴴ, gA = -Xᴴ gB), gA kept to the
    triangle A is read from."""
    if grad is None:
        return None, None
    gB = flf.linalg_solve_triangular(mH(A), grad, not upper, left, unitriangular)
    gA = None
    if output_mask[0]:
        gA = _triangle(-(gB @ mH(X)) if left else -(mH(X) @ gB), upper, unitriangular)
    return gA, (gB if output_mask[1] else None)


@helper("linalg_solve_triangular_forward_AD")
def linalg_solve_triangular_forward_AD(A_t, B_t, A, X, upper, left, unitriangular):
    """dX = A⁻¹ (dB - dA X) (left) or (dB - X dA) A⁻¹, dA within A's triangle."""
    dA = _triangle(A_t, upper, unitriangular)
    return flf.linalg_solve_triangular(A, B_t - (dA @ X if left else X @ dA), upper, left, unitriangular)


def _as_matrix(x, vector):
    """A vector right-hand side (ATen's linalg_solve_is_vector_rhs) as a column."""
    return x[..., None] if vector else x


def _as_vector(x, vector):
    return x[..., 0] if vector else x


@helper("linalg_solve_backward")
def linalg_solve_backward(gX, X, A, LU, pivots, left, B_requires_grad):
    """X = A⁻¹ B: gB = A⁻ᴴ gX, gA = -gB Xᴴ; X = B A⁻¹: gB = gX A⁻ᴴ, gA = -Xᴴ gB."""
    if gX is None:
        return None, None
    vector = flf.is_vector_rhs(LU, X)
    g, Xm = _as_matrix(gX, vector), _as_matrix(X, vector)
    Ah = mH(A)
    gB = jnp.linalg.solve(Ah, g) if left else mH(jnp.linalg.solve(A, mH(g)))
    gA = -(gB @ mH(Xm)) if left else -(mH(Xm) @ gB)
    return gA, (_as_vector(gB, vector) if B_requires_grad else None)


@helper("linalg_solve_jvp")
def linalg_solve_jvp(dA, dB, X, LU, pivots, left):
    """dX = A⁻¹ (dB - dA X) (left) or (dB - X dA) A⁻¹."""
    vector = flf.is_vector_rhs(LU, X)
    dBm, Xm = _as_matrix(dB, vector), _as_matrix(X, vector)
    rhs = dBm - (dA @ Xm if left else Xm @ dA)
    return _as_vector(flf.lu_solve(LU, pivots, rhs, left), vector)


# -- LU -------------------------------------------------------------------------------------


def _solve_lower_unit(L, B, trans="N"):
    return jsl.solve_triangular(L, B, lower=True, trans=trans, unit_diagonal=True)


@helper("linalg_lu_backward")
def linalg_lu_backward(L_grad, U_grad, P, L, U, pivot):
    """A = P L U, L m x k, U k x n: A_grad = P [L1⁻ᴴ Φ U1⁻ᴴ, and the rest], with
    Φ = tril₋₁(L1ᴴ gL1 - gU2 U2ᴴ) + triu(gU1 U1ᴴ - L2ᴴ gL2) (the wide and tall terms present
    when A is wide or tall); a wide A's right block is L1⁻ᴴ gU2, a tall A's bottom block gL2 U1⁻ᴴ."""
    if L_grad is None and U_grad is None:
        return None
    m, k, n = L.shape[-2], L.shape[-1], U.shape[-1]
    gL = jnp.zeros_like(L) if L_grad is None else L_grad
    gU = jnp.zeros_like(U) if U_grad is None else U_grad
    L1, U1 = L[..., :k, :], U[..., :, :k]
    lower, upper = mH(L1) @ gL[..., :k, :], gU[..., :, :k] @ mH(U1)
    if n > k:
        lower = lower - gU[..., :, k:] @ mH(U[..., :, k:])
    if m > k:
        upper = upper - mH(L[..., k:, :]) @ gL[..., k:, :]
    phi = jnp.tril(lower, -1) + jnp.triu(upper)
    gA = solve_triangular_right(_solve_lower_unit(L1, phi, "C"), U1, lower=False, adjoint=True)
    if n > k:
        gA = jnp.concatenate([gA, _solve_lower_unit(L1, gU[..., :, k:], "C")], -1)
    if m > k:
        gA = jnp.concatenate([gA, solve_triangular_right(gL[..., k:, :], U1, lower=False, adjoint=True)], -2)
    return P @ gA


@helper("linalg_lu_jvp")
def linalg_lu_jvp(dA, P, L, U, pivot):
    """(dL, dU) of A = P L U: φ = L1⁻¹ (Pᵀ dA)₁ U1⁻¹, dL1 = L1 tril₋₁(φ), dU1 = triu(φ) U1; a wide
    A's dU2 = L1⁻¹ ((Pᵀ dA)₂ - dL1 U2), a tall A's dL2 = ((Pᵀ dA)₂ - L2 dU1) U1⁻¹."""
    m, k, n = L.shape[-2], L.shape[-1], U.shape[-1]
    B = jnp.swapaxes(P, -1, -2) @ dA
    L1, U1 = L[..., :k, :], U[..., :, :k]
    phi = solve_triangular_right(_solve_lower_unit(L1, B[..., :k, :k]), U1, lower=False)
    dL, dU = L1 @ jnp.tril(phi, -1), jnp.triu(phi) @ U1
    if n > k:
        dU = jnp.concatenate([dU, _solve_lower_unit(L1, B[..., :, k:] - dL @ U[..., :, k:])], -1)
    if m > k:
        dL = jnp.concatenate([dL, solve_triangular_right(B[..., k:, :] - L[..., k:, :] @ dU, U1, lower=False)], -2)
    return dL, dU


@helper("lu_factor_ex_backward")
def lu_factor_ex_backward(grad, LU, pivots, pivot):
    """grad read as L's gradient below the diagonal and U's on and above it."""
    if grad is None:
        return None
    P, L, U = unpack(LU, pivots)
    k = min(LU.shape[-2:])
    return linalg_lu_backward(jnp.tril(grad[..., :, :k], -1), jnp.triu(grad[..., :k, :]), P, L, U, pivot)


@helper("lu_factor_ex_jvp")
def lu_factor_ex_jvp(dA, LU, pivots, pivot):
    """dL strictly below the diagonal plus dU on and above it, packed as LU is."""
    dL, dU = linalg_lu_jvp(dA, *unpack(LU, pivots), pivot)
    k = min(LU.shape[-2:])
    out = jnp.zeros(dL.shape[:-1] + dU.shape[-1:], dL.dtype)
    return out.at[..., :, :k].add(dL).at[..., :k, :].add(dU)


def _unpacked_A(LU, pivots):
    P, L, U = unpack(LU, pivots)
    return P, L, U, P @ L @ U


@helper("linalg_lu_solve_LU")
def linalg_lu_solve_LU(gX, LU, pivots, X, left, adjoint):
    """The gradient of the packed LU: A_grad of X = op(A)⁻¹ B (or B op(A)⁻¹) sent through
    A = P L U, L's part strictly below the diagonal, U's on and above it."""
    if gX is None:
        return None
    P, L, U, A = _unpacked_A(LU, pivots)
    if left and not adjoint:  # X = A⁻¹ B: -A⁻ᴴ gX Xᴴ
        gA = -jnp.linalg.solve(mH(A), gX) @ mH(X)
    elif left:  # X = A⁻ᴴ B: -X gXᴴ A⁻ᴴ
        gA = -X @ mH(jnp.linalg.solve(A, gX))
    elif not adjoint:  # X = B A⁻¹: -Xᴴ gX A⁻ᴴ
        gA = -mH(X) @ mH(jnp.linalg.solve(A, mH(gX)))
    else:  # X = B A⁻ᴴ: -A⁻ᴴ gXᴴ X
        gA = -jnp.linalg.solve(mH(A), mH(gX)) @ X
    pa = jnp.swapaxes(P, -1, -2) @ gA
    return jnp.tril(pa @ mH(U), -1) + jnp.triu(mH(L) @ pa)


@helper("linalg_lu_solve_jvp")
def linalg_lu_solve_jvp(X, LU, pivots, dLU, dB, left, adjoint):
    """dX = op(A)⁻¹ (dB - op(dA) X) (left) or (dB - X op(dA)) op(A)⁻¹, dA = P (dL U + L dU)."""
    P, L, U = unpack(LU, pivots)
    dA = P @ (jnp.tril(dLU, -1) @ U + L @ jnp.triu(dLU))
    op_dA = mH(dA) if adjoint else dA
    return flf.lu_solve(LU, pivots, dB - (op_dA @ X if left else X @ op_dA), left, adjoint)


# -- norms ----------------------------------------------------------------------------------


def _dims(dim):
    return () if dim is None else dim


@helper("linalg_vector_norm_backward")
def linalg_vector_norm_backward(grad, self, ord, result, dim, keepdim):
    return norm_backward(grad, self, ord, result, _dims(dim), keepdim)


@helper("linalg_vector_norm_jvp")
def linalg_vector_norm_jvp(self_p, self_t, ord, result, dim, keepdim):
    return norm_jvp(self_p, self_t, ord, result, _dims(dim), keepdim)


# -- spectral -------------------------------------------------------------------------------


def _gaps(S):
    """E_ij = S_j² - S_i², 1 on the diagonal."""
    S2 = S * S
    n = S.shape[-1]
    return jnp.where(jnp.eye(n, dtype=bool), 1, S2[..., None, :] - S2[..., :, None])


@helper("linalg_svd_jvp")
def linalg_svd_jvp(dA, U, S, Vh, full_matrices):
    """With dP = Uᴴ dA V: dS = Re diag(dP), Uᴴ dU = sym(dP S) / E, Vᴴ dV = sym(S dP) / E, the
    complex phase i Im diag(dP) / S split half to U and half to V, and (I - U Uᴴ) dA V S⁻¹,
    S⁻¹ Uᴴ dA (I - V Vᴴ) for a tall or wide A; a full U's or Vh's extra vectors get zero."""
    m, n = dA.shape[-2:]
    k = S.shape[-1]
    U_, Vh_ = U[..., :k], Vh[..., :k, :]
    V = mH(Vh_)
    dP = mH(U_) @ dA @ V
    complex_ = jnp.iscomplexobj(dA)
    dS = jnp.real(matrix_diagonal(dP)) if complex_ else matrix_diagonal(dP)
    dP = dP - diag_embed(dS.astype(dP.dtype))
    E = _gaps(S).astype(dP.dtype)
    s = S.astype(dP.dtype)

    def sym(x):
        return x + mH(x)

    dU = U_ @ (sym(dP * s[..., None, :]) / E)
    dVh = -(sym(s[..., :, None] * dP) / E) @ Vh_
    if complex_:
        half = matrix_diagonal(dP) / (2 * s)
        dU = dU + U_ * half[..., None, :]
        dVh = dVh + half[..., :, None] * Vh_
    if m > k:
        dAV = dA @ V
        dU = dU + (dAV - U_ @ (mH(U_) @ dAV)) / s[..., None, :]
    if n > k:
        UhdA = mH(U_) @ dA
        dVh = dVh + (UhdA - (UhdA @ V) @ Vh_) / s[..., :, None]
    if full_matrices:  # the free vectors completing U and Vh to square matrices: tangent 0
        dU = jnp.concatenate([dU, jnp.zeros(dU.shape[:-1] + (m - k,), dU.dtype)], -1)
        dVh = jnp.concatenate([dVh, jnp.zeros(dVh.shape[:-2] + (n - k, n), dVh.dtype)], -2)
    return dU, dS, dVh


def _require_vectors(name, V):
    if V.ndim < 2:
        raise NotImplementedDerivative(f"{name}: the eigenvectors were not computed (compute_v=False): no derivative")


@helper("linalg_eig_backward")
def linalg_eig_backward(gL, gV, L, V, is_hermitian, symeig_eigenvectors=True):
    """A_grad = V⁻ᴴ (diag(gL) + (Vᴴ gV projected) / conj(E)) Vᴴ, E_ij = λ_j - λ_i; the projection
    is onto skew-Hermitian matrices (Hermitian A) or removes Re diag(Vᴴ gV) with V's column norms."""
    if gL is None and gV is None:
        return None
    _require_vectors("linalg_eig_backward", V)
    Vh = mH(V)
    if gV is None:
        gA = diag_embed(gL.astype(V.dtype))
    else:
        VhgV = Vh @ gV
        if is_hermitian:
            VhgV = 0.5 * (VhgV - mH(VhgV))
        else:
            VhgV = VhgV - Vh @ (V * jnp.real(matrix_diagonal(VhgV)).astype(V.dtype)[..., None, :])
        Lc = jnp.conj(L)
        n = L.shape[-1]
        Econj = jnp.where(jnp.eye(n, dtype=bool), 1, Lc[..., None, :] - Lc[..., :, None]).astype(V.dtype)
        gA = VhgV / Econj
        if gL is not None:
            gA = jnp.where(jnp.eye(n, dtype=bool), diag_embed(gL.astype(V.dtype)), gA)
    if is_hermitian:
        return V @ gA @ Vh
    return jnp.linalg.solve(Vh, gA @ Vh)


@helper("linalg_eig_jvp")
def linalg_eig_jvp(dA, L, V, is_hermitian):
    """dP = V⁻¹ dA V: dL = diag(dP) (real part when Hermitian), dV = V (dP / E off the diagonal),
    less V diag(Re(Vᴴ V dX)) for a general A, whose eigenvectors keep unit norm."""
    _require_vectors("linalg_eig_jvp", V)
    if is_hermitian:
        dP = mH(V) @ dA.astype(V.dtype) @ V
    else:
        dP = jnp.linalg.solve(V, dA.astype(V.dtype) @ V)
    dL = matrix_diagonal(dP)
    if is_hermitian and jnp.iscomplexobj(dA):
        dL = jnp.real(dL)
    dL = dL.astype(L.dtype) if is_hermitian else dL
    n = L.shape[-1]
    eye = jnp.eye(n, dtype=bool)
    E = jnp.where(eye, 1, L[..., None, :] - L[..., :, None]).astype(V.dtype)
    dX = jnp.where(eye, 0, dP / E)
    if is_hermitian:
        return dL, V @ dX
    return dL, V @ (dX - diag_embed(jnp.real(matrix_diagonal(mH(V) @ V @ dX)).astype(V.dtype)))


# -- pseudoinverse --------------------------------------------------------------------------


@helper("pinv_backward")
def pinv_backward(grad, pinvA, A):
    """-A⁺ᴴ G A⁺ᴴ + (I - A A⁺) Gᴴ A⁺ A⁺ᴴ + A⁺ᴴ A⁺ Gᴴ (I - A⁺ A), G = grad (A of constant rank)."""
    if grad is None:
        return None
    P, Ph, Gh = pinvA, mH(pinvA), mH(grad)
    K = Gh @ P
    return -(Ph @ grad @ Ph) + K @ Ph - A @ (P @ (K @ Ph)) + (Ph @ P) @ (Gh - K @ A)


@helper("pinv_jvp")
def pinv_jvp(A, pinvA, dA):
    """dA⁺ = -A⁺ dA A⁺ + A⁺ A⁺ᴴ dAᴴ (I - A A⁺) + (I - A⁺ A) dAᴴ A⁺ᴴ A⁺."""
    P, Ph, dAh = pinvA, mH(pinvA), mH(dA)
    first = -(P @ dA @ P)
    second = P @ (Ph @ dAh) - P @ ((Ph @ dAh) @ A) @ P
    third = dAh @ (Ph @ P) - P @ (A @ (dAh @ (Ph @ P)))
    return first + second + third


# -- matrix square root and polar decomposition ------------------------------------------------


def _sylvester_hermitian(K, w, V):
    """X with X H + H X = K for H = V diag(w) Vᴴ (w > 0): V ((Vᴴ K V) / (w_i + w_j)) Vᴴ. The map
    is self-adjoint, so the same function gives a forward tangent and a backward gradient."""
    Vh = mH(V)
    return V @ ((Vh @ K @ V) / (w[..., :, None] + w[..., None, :]).astype(V.dtype)) @ Vh


@helper("linalg_matrix_sqrth_differential")
def linalg_matrix_sqrth_differential(A, E):
    """dX with X dX + dX X = E, X = √A: the differential of the square root at A applied to E
    (torch 2.14's formula uses it for both modes: the map is self-adjoint)."""
    w, V = jnp.linalg.eigh(A, UPLO="L", symmetrize_input=False)
    return _sylvester_hermitian(E.astype(V.dtype), jnp.sqrt(w), V)


@helper("linalg_polar_jvp")
def linalg_polar_jvp(dA, A, U, H):
    """(dU, dH) of A = U H: M = Uᴴ dA; Ω = Uᴴ dU (skew-Hermitian) solves Ω H + H Ω = M - Mᴴ;
    dH = M - Ω H; dU = U Ω + (I - U Uᴴ) dA H⁻¹ (the last term zero for a square A)."""
    w, V = jnp.linalg.eigh(H)
    dA = dA.astype(U.dtype)
    M = mH(U) @ dA
    Omega = _sylvester_hermitian(M - mH(M), w, V)
    dH = M - Omega @ H
    dU = U @ Omega
    if U.shape[-2] != U.shape[-1]:
        outside = dA - U @ M
        dU = dU + (outside @ V / w.astype(V.dtype)[..., None, :]) @ mH(V)
    return dU, dH


@helper("linalg_polar_backward")
def linalg_polar_backward(gU, gH, A, U, H):
    """The adjoint of linalg_polar_jvp: gA = U (gH + Y - Yᴴ) + (I - U Uᴴ) gU H⁻¹, where Y solves
    Y H + H Y = Uᴴ gU - gH H (undefined gradients are zeros)."""
    if gU is None and gH is None:
        return None
    w, V = jnp.linalg.eigh(H)
    gU = jnp.zeros_like(U) if gU is None else gU.astype(U.dtype)
    gH = jnp.zeros_like(H) if gH is None else gH.astype(U.dtype)
    UhgU = mH(U) @ gU
    Y = _sylvester_hermitian(UhgU - gH @ H, w, V)
    gA = U @ (gH + Y - mH(Y))
    if U.shape[-2] != U.shape[-1]:
        gA = gA + ((gU - U @ UhgU) @ V / w.astype(V.dtype)[..., None, :]) @ mH(V)
    return gA
