"""FunctionsManual helpers of the Householder and least-squares formulas, from their matrix calculus:
linalg_qr, linalg_householder_product, ormqr and linalg_lstsq, both modes.

Gradients are conjugate Wirtinger (grad_A = dL/d conj(A)), so adjoints use ᴴ. A reflector
product Q = H_1 ... H_k, H_i = I - tau_i v_i v_iᴴ, is differentiated one reflector at a time:
dQ = Σ_i H_1..H_{i-1} dH_i H_{i+1}..H_k, with the partial products kept up to date by
multiplying with H_i and with H_i⁻¹ = H(sigma_i), sigma_i = tau_i / (tau_i ‖v_i‖² - 1).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..errors import NotImplementedDerivative
from ..forward.householder import apply_reflectors, reflector_vectors
from ..namespace import helper
from ..tensor_utils import mH, solve_triangular_right


def _zeros_if_none(t, like):
    return jnp.zeros_like(like) if t is None else t


def _diag_embed(v):
    return v[..., :, None] * jnp.eye(v.shape[-1], dtype=v.dtype)


# -- least squares through the pseudoinverse ---------------------------------------------------


def _pinv(A):
    """torch.linalg.pinv's default cutoff: singular values below eps * max(m, n) * σ_max are zero."""
    real = jnp.real(A).dtype
    return jnp.linalg.pinv(A, rtol=np.finfo(real).eps * max(A.shape[-2:]))


def _pinv_jvp(A, pinvA, dA):
    """d(A⁺) at constant rank: -A⁺ dA A⁺ + A⁺A⁺ᴴ dAᴴ (I - A A⁺) + (I - A⁺A) dAᴴ A⁺ᴴ A⁺."""
    dAh, pinvAh = mH(dA), mH(pinvA)
    left_null = dAh - dAh @ A @ pinvA  # dAᴴ (I - A A⁺)
    right_null = dAh - pinvA @ (A @ dAh)  # (I - A⁺A) dAᴴ
    return -pinvA @ dA @ pinvA + pinvA @ (pinvAh @ left_null) + right_null @ (pinvAh @ pinvA)


def _pinv_backward(grad, pinvA, A):
    """The adjoint of _pinv_jvp: -A⁺ᴴ G A⁺ᴴ + (I - A A⁺) Gᴴ A⁺ A⁺ᴴ + A⁺ᴴ A⁺ Gᴴ (I - A⁺A)."""
    gh, pinvAh = mH(grad), mH(pinvA)
    return (
        -pinvAh @ grad @ pinvAh
        + (gh - A @ (pinvA @ gh)) @ (pinvA @ pinvAh)
        + (pinvAh @ pinvA) @ (gh - (gh @ pinvA) @ A)
    )


def _is_vector_rhs(A, B):
    """ATen's linalg_solve_is_vector_rhs: B is one vector, or a batch of them shaped A.shape[:-1]."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


@helper("linalg_lstsq_solution_jvp")
def linalg_lstsq_solution_jvp(A, B, dA, dB):
    """X = A⁺ B: dX = d(A⁺) B + A⁺ dB."""
    vector = _is_vector_rhs(A, B)
    B_ = B[..., None] if vector else B
    dA = _zeros_if_none(dA, A)
    dB_ = jnp.zeros_like(B_) if dB is None else (dB[..., None] if vector else dB)
    pinvA = _pinv(A)
    dX = _pinv_jvp(A, pinvA, dA) @ B_ + pinvA @ dB_
    return dX[..., 0] if vector else dX


@helper("linalg_lstsq_residuals_jvp")
def linalg_lstsq_residuals_jvp(A, B, dA, dB, X, L):
    """L = ‖A X - B‖² per column; X minimizes it, so (Danskin) dL = 2 Re Σ r ⊙ conj(dA X - dB)."""
    if L.size == 0:
        return L
    vector = _is_vector_rhs(A, B)
    as_matrix = (lambda t: t[..., None]) if vector else (lambda t: t)
    B_, X_ = as_matrix(B), as_matrix(X)
    dA = _zeros_if_none(dA, A)
    dB_ = jnp.zeros_like(B_) if dB is None else as_matrix(dB)
    r = A @ X_ - B_
    return 2 * jnp.sum(jnp.real(r * jnp.conj(dA @ X_ - dB_)), -2)


@helper("linalg_lstsq_backward")
def linalg_lstsq_backward(gX, gL, A, B, X, grad_input_mask):
    """The adjoint of both jvps above: through A⁺ for the solution, 2 (gL r) Xᴴ and -2 gL r
    for the residuals; an empty residual (gelsy, or m <= n) gives nothing."""
    want_A, want_B = grad_input_mask[0], grad_input_mask[1]
    has_gL = gL is not None and gL.size > 0
    if (gX is None and not has_gL) or not (want_A or want_B):
        return None, None
    vector = _is_vector_rhs(A, B)
    as_matrix = (lambda t: t[..., None]) if vector else (lambda t: t)
    as_given = (lambda t: t[..., 0]) if vector else (lambda t: t)
    B_ = as_matrix(B)
    grad_A = grad_B = None
    if gX is not None:
        gX_ = as_matrix(gX)
        pinvA = _pinv(A)
        if want_A:
            grad_A = _pinv_backward(gX_ @ mH(B_), pinvA, A)
        if want_B:
            grad_B = as_given(mH(pinvA) @ gX_)
    if has_gL:
        X_ = as_matrix(X)
        gLr = gL[..., None, :] * (A @ X_ - B_)
        if want_A:
            grad_A = 2 * gLr @ mH(X_) + (0 if grad_A is None else grad_A)
        if want_B:
            grad_B = as_given(-2 * gLr) + (0 if grad_B is None else grad_B)
    return (grad_A if want_A else None), (grad_B if want_B else None)


# -- QR ---------------------------------------------------------------------------------------


def _qr_mode(mode):
    """(compute_q, reduced) of a linalg.qr mode."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    return mode != "r", mode != "complete"


def _check_qr_differentiable(mode, m, n):
    compute_q, reduced = _qr_mode(mode)
    if not compute_q:
        raise NotImplementedDerivative(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
        )
    if not reduced and m > n:
        raise NotImplementedDerivative(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )


@helper("linalg_qr_jvp")
def linalg_qr_jvp(dA, Q, R, mode):
    """dA = dQ R + Q dR. Tall or square: with C = Qᴴ dA R⁻¹ (skew-Hermitian Qᴴ dQ plus upper
    triangular dR R⁻¹), dR R⁻¹ = triu(C + Cᴴ) with half its diagonal, dQ = dA R⁻¹ - Q dR R⁻¹.
    Wide: Qᴴ dQ is the skew-Hermitian matrix whose strict lower triangle (and imaginary
    diagonal) is that of Qᴴ dA_1 R_1⁻¹, and dR = Qᴴ dA - Qᴴ dQ R."""
    m, n = dA.shape[-2:]
    _check_qr_differentiable(mode, m, n)
    if m >= n:
        dARinv = solve_triangular_right(dA, R, lower=False, through="mT")
        C = mH(Q) @ dARinv
        S = jnp.triu(C + mH(C))
        dRRinv = S - 0.5 * _diag_embed(jnp.diagonal(S, 0, -2, -1))
        return dARinv - Q @ dRRinv, dRRinv @ R
    QhdA = mH(Q) @ dA
    C = solve_triangular_right(QhdA[..., :m], R[..., :m], lower=False, through="mT")
    if jnp.iscomplexobj(C):
        lower = jnp.tril(C, -1) + 1j * _diag_embed(jnp.imag(jnp.diagonal(C, 0, -2, -1)))
        skew = lower - mH(lower)
        skew = skew - 0.5 * _diag_embed(jnp.diagonal(skew, 0, -2, -1))
    else:
        lower = jnp.tril(C, -1)
        skew = lower - mH(lower)
    return Q @ skew, QhdA - skew @ R


@helper("linalg_qr_backward")
def linalg_qr_backward(gQ, gR, Q, R, mode):
    """The adjoint of linalg_qr_jvp. With M = gR Rᴴ - Qᴴ gQ: tall or square,
    gA = (gQ + Q (triu(M) + triu(M)ᴴ with half the diagonal's real part)) R⁻ᴴ;
    wide, gA = [Q tril(Mᴴ - M, imaginary diagonal halved) R_1⁻ᴴ | 0] + Q gR."""
    m, n = Q.shape[-2], R.shape[-1]
    _check_qr_differentiable(mode, m, n)
    if gQ is None and gR is None:
        return None
    M = 0
    if gR is not None:
        M = gR @ mH(R)
    if gQ is not None:
        M = M - mH(Q) @ gQ
    M = jnp.broadcast_to(M, R.shape[:-2] + (R.shape[-2],) * 2).astype(jnp.result_type(Q, R))
    if m >= n:
        T = jnp.triu(M)
        sym = T + mH(T)
        diag = jnp.diagonal(sym, 0, -2, -1)
        sym = sym - 0.5 * _diag_embed(jnp.real(diag).astype(sym.dtype))
        gA = Q @ sym
        if gQ is not None:
            gA = gA + gQ
        return solve_triangular_right(gA, mH(R), lower=True, through="mT")
    X = -M
    skew = jnp.tril(X - mH(X))
    if jnp.iscomplexobj(skew):
        skew = skew - 0.5j * _diag_embed(jnp.imag(jnp.diagonal(skew, 0, -2, -1)))
    gA1 = solve_triangular_right(Q @ skew, mH(R[..., :m]), lower=True, through="mT")
    gA = jnp.concatenate([gA1, jnp.zeros(gA1.shape[:-1] + (n - m,), gA1.dtype)], -1)
    if gR is not None:
        gA = gA + Q @ gR
    return gA


# -- products of Householder reflectors ------------------------------------------------------


def _reflect(v, t, K, left=True):
    """(I - t v vᴴ) K (left) or K (I - t v vᴴ); v (..., m), t (...)."""
    if left:
        return K - (t[..., None] * v)[..., :, None] * (jnp.conj(v)[..., None, :] @ K)
    return K - (K @ (t[..., None] * v)[..., :, None]) * jnp.conj(v)[..., None, :]


def _inverse_taus(V, tau):
    """sigma_i with H(sigma_i) = H(tau_i)⁻¹: tau_i / (tau_i ‖v_i‖² - 1) (exists for geqrf's reflectors)."""
    k = tau.shape[-1]
    norms = jnp.sum(jnp.abs(V[..., :, :k]) ** 2, -2)
    return tau / (tau * norms - 1.0)


@helper("householder_product_backward")
def householder_product_backward(grad, result, input, tau, flip_order=False):
    """With Q = H_1 ... H_k and K_i = H_{i+1}..H_k Q_gradᴴ H_1..H_{i-1} (here from K = result gradᴴ):
    v_i_grad = -conj(tau_i) K_iᴴ v_i - tau_i K_i v_i, tau_i_grad = -conj(v_iᴴ K_i v_i); K_{i+1} =
    H_{i+1}⁻¹ K_i H_i. flip_order walks i = k..1 with the roles of the two sides swapped
    (ormqr's products applied from the right)."""
    if grad is None or input.size == 0 or tau.size == 0:
        return None, None
    k = tau.shape[-1]
    V = reflector_vectors(input)
    sigma = _inverse_taus(V, tau)
    K = result @ mH(grad)
    order = list(range(k - 1, -1, -1)) if flip_order else list(range(k))
    left = not flip_order
    K = _reflect(V[..., :, order[0]], sigma[..., order[0]], K, left)
    input_grad = jnp.zeros(input.shape, K.dtype)
    tau_grad = jnp.zeros(tau.shape, K.dtype)
    for step, i in enumerate(order):
        v, t = V[..., :, i], tau[..., i]
        vHK = (jnp.conj(v)[..., None, :] @ K)[..., 0, :]
        Kv = (K @ v[..., :, None])[..., 0]
        input_grad = input_grad.at[..., :, i].set(jnp.conj(-t[..., None] * vHK) - t[..., None] * Kv)
        tau_grad = tau_grad.at[..., i].set(-jnp.conj(jnp.sum(vHK * v, -1)))
        if step + 1 < k:
            nxt = order[step + 1]
            K = _reflect(V[..., :, nxt], sigma[..., nxt], K, left)
            K = _reflect(v, t, K, not left)
    return jnp.tril(input_grad, -1).astype(jnp.result_type(input, grad)), tau_grad.astype(jnp.result_type(tau, grad))


@helper("householder_product_jvp")
def householder_product_jvp(dV, dtau, prod, V, tau):
    """dQ = Σ_i H_1..H_{i-1} (-dtau_i v_i v_iᴴ - tau_i dv_i v_iᴴ - tau_i v_i dv_iᴴ) H_{i+1}..H_k [:, :n],
    the right factor obtained from Q by peeling H_i⁻¹ off its left."""
    k = tau.shape[-1]
    Vr = reflector_vectors(V)
    dVr = jnp.tril(_zeros_if_none(dV, V), -1)
    dtau = _zeros_if_none(dtau, tau)
    sigma = _inverse_taus(Vr, tau)
    m = V.shape[-2]
    H_plus = prod
    H_minus = jnp.broadcast_to(jnp.eye(m, dtype=prod.dtype), prod.shape[:-2] + (m, m))
    dprod = jnp.zeros_like(prod)

    def outer_times(u, w, t, K):  # -t u wᴴ K
        return -(t[..., None] * u)[..., :, None] * (jnp.conj(w)[..., None, :] @ K)

    for i in range(k):
        v, dv = Vr[..., :, i], dVr[..., :, i]
        H_plus = _reflect(v, sigma[..., i], H_plus)
        dH = (
            outer_times(v, v, dtau[..., i], H_plus)
            + outer_times(dv, v, tau[..., i], H_plus)
            + outer_times(v, dv, tau[..., i], H_plus)
        )
        dprod = dprod + H_minus @ dH
        H_minus = _reflect(v, tau[..., i], H_minus, left=False)
    return dprod


@helper("ormqr_backward")
def ormqr_backward(grad, result, self, input2, input3, left, transpose, grad_input_mask):
    """other_grad = op(Q)ᴴ grad (ormqr with transpose flipped); the reflectors' gradients by
    householder_product_backward, with grad and result as the product sees them."""
    if grad is None:
        return None, None, None
    self_grad = tau_grad = other_grad = None
    if grad_input_mask[2]:
        other_grad = apply_reflectors(self, input2, grad, left, not transpose)
    if grad_input_mask[0] or grad_input_mask[1]:
        if left != transpose:
            g, r = (grad, result) if not transpose else (mH(grad), mH(result))
            self_grad, tau_grad = householder_product_backward(g, r, self, input2)
        else:
            g, r = (mH(result), mH(grad)) if not transpose else (result, grad)
            self_grad, tau_grad = householder_product_backward(g, r, self, input2, flip_order=True)
    return self_grad, tau_grad, other_grad
