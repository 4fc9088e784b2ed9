"""Forward implementations of the Householder ops: linalg_householder_product (and linalg_qr).

Q = H_1 ... H_k with H_i = I - tau_i v_i v_iᴴ, v_i column i of the input below the diagonal
and v_i[i] = 1 (LAPACK's orgqr/ormqr). The reflectors are applied one at a time rather than
through lax's householder_product: that one has no JAX derivative, and the checker needs one
as its reference.
"""

from __future__ import annotations

import jax.numpy as jnp

from . import impl
from ._linalg_samples import householder, register_matrix_cases, labelled_sample, spread_singular_values


def check_float_operands(name, *xs):
    """LAPACK's routines take one floating or complex dtype for all operands, as ATen checks."""
    dtypes = {jnp.result_type(x) for x in xs}
    if len(dtypes) > 1 or not jnp.issubdtype(next(iter(dtypes)), jnp.inexact):
        raise RuntimeError(
            f"{name}: expected floating point or complex operands of one dtype, got {sorted(map(str, dtypes))}"
        )


def reflector_vectors(input):
    """The v_i as columns: the strict lower triangle of `input`, ones on the diagonal."""
    m, n = input.shape[-2:]
    return jnp.tril(input, -1) + jnp.eye(m, n, dtype=input.dtype)


def apply_reflectors(input, tau, other, left=True, adjoint=False):
    """op(Q) other (left) or other op(Q), op(Q) = Qᴴ when adjoint: ATen's ormqr."""
    k = tau.shape[-1]
    V = reflector_vectors(input)
    dtype = jnp.result_type(input, tau, other)
    C = jnp.asarray(other, dtype)
    # Q C = H_1 (... (H_k C)); Qᴴ C = H_kᴴ (... (H_1ᴴ C)); C Q = ((C H_1) ...) H_k.
    order = range(k - 1, -1, -1) if left != adjoint else range(k)
    for i in order:
        v = V[..., :, i]
        t = jnp.conj(tau[..., i]) if adjoint else tau[..., i]
        if left:
            C = C - (t[..., None] * v)[..., :, None] * (jnp.conj(v)[..., None, :] @ C)
        else:
            C = C - (C @ v[..., :, None]) * (t[..., None] * jnp.conj(v))[..., None, :]
    return C


@impl("linalg_householder_product")
def linalg_householder_product(input, tau):
    """The first n columns of H_1 ... H_k (LAPACK's orgqr), for an m x n input, m >= n >= k."""
    check_float_operands("torch.linalg.householder_product", input, tau)
    m, n = input.shape[-2:]
    if m < n or n < tau.shape[-1]:
        raise RuntimeError(
            "torch.linalg.householder_product: expected input.shape[-2] >= input.shape[-1] >= tau.shape[-1]"
        )
    eye = jnp.broadcast_to(jnp.eye(m, n, dtype=input.dtype), input.shape)
    return apply_reflectors(input, tau, eye).astype(input.dtype)


@impl("linalg_qr")
def linalg_qr(A, mode="reduced"):
    """Householder QR as LAPACK's geqrf/orgqr compute it; mode 'r' returns an empty Q.

    Not registered as linalg_qr's forward yet: its formula names the gradients of both outputs
    (grad_Q, grad_R), and Op treats such a multi-output entry as differentiable in its first
    output only, so R's gradient would be dropped."""
    if mode == "r":
        return jnp.zeros((0,), A.dtype), jnp.linalg.qr(A, mode="r")
    if mode not in ("reduced", "complete"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    return jnp.linalg.qr(A, mode=mode)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker samples of the Householder ops (forward/householder.py): linalg_householder_product
# and linalg_qr, made with linalg.py's helpers.
#
# linalg_householder_product is given LAPACK's geqrf reflectors of a random matrix (NumPy's raw
# QR), as orgqr and ormqr are, once with fewer reflectors than columns. linalg_qr gets matrices
# whose singular values are 1 apart (square, tall, wide and batched; reduced and complete), so
# R's diagonal stays clear of zero; Q and R are compared themselves, as qr's are (linalg.py).
# Complex samples where the entry's formula takes them (`register_matrix_cases`).
register_matrix_cases(
    "linalg_householder_product",
    cases=lambda r, d: [
        labelled_sample("4x3", **dict(zip(("input", "tau"), householder(r, d)))),
        labelled_sample(
            "5x3, 2 reflectors", **dict(zip(("input", "tau"), (lambda a, t: (a, t[:2]))(*householder(r, d, (5, 3)))))
        ),
    ],
)
register_matrix_cases(
    "linalg_qr",
    cases=lambda r, d: [
        labelled_sample(f"{shape} {mode}", self=spread_singular_values(r, shape, d), mode=mode)
        for shape, mode in [((4, 3), "reduced"), ((2, 3, 3), "reduced"), ((3, 4), "reduced"), ((3, 4), "complete")]
    ],
)
