"""Sample makers the linear-algebra families share (linalg.py, householder.py,
linalg_factorizations.py): well-posed matrices and `register_matrix_cases`, which declares their cases."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..expr import Attr, Call, Name, iter_nodes
from ..normalize import derivative
from ..records import Sample, complex_ok, samples
from ..tensor_utils import mH


def random_matrix(rng, shape, dtype):
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def mH_numpy(x):
    """tensor_utils.mH computed in NumPy: a sample stays a NumPy array."""
    return mH(x, xp=np)


def well_conditioned(rng, shape, dtype):
    n = shape[-1]
    return random_matrix(rng, shape, dtype) * 0.3 + 2 * np.eye(n, dtype=dtype)


def spd(rng, shape, dtype):
    x = random_matrix(rng, shape, dtype)
    return x @ mH_numpy(x) + shape[-1] * np.eye(shape[-1], dtype=dtype)


def lower_factor(rng, shape, dtype):
    """A Cholesky factor: lower triangular with a real positive diagonal (LAPACK's potri and
    potrs, torch's cholesky_inverse and cholesky_solve, read only the diagonal's real part)."""
    return np.tril(random_matrix(rng, shape, dtype) * 0.3, -1) + (
        2 + 0.3 * np.abs(rng.normal(size=shape[-1]))
    ) * np.eye(shape[-1], dtype=dtype)


def spread_singular_values(rng, shape, dtype):
    """Q1 diag(1.5, 2.5, ...) Q2ᴴ: singular values 1 apart."""
    m, n = shape[-2:]
    k = min(m, n)
    q1 = np.linalg.qr(random_matrix(rng, shape[:-2] + (m, m), dtype))[0][..., :k]
    q2 = np.linalg.qr(random_matrix(rng, shape[:-2] + (n, n), dtype))[0][..., :k]
    return (q1 * (1.5 + np.arange(k))) @ mH_numpy(q2)


def hermitian(x):
    return (x + mH_numpy(x)) / 2


def squares(x):
    return x * x.conj()


# Entries whose formulas are inline matrix algebra rather than a FunctionsManual helper. PyTorch
# 1.7 wrote them without conj (real matrix calculus: `grad.bmm(mat2.transpose(1, 2))`); 1.10
# conjugates. Complex samples are drawn only for a version whose text conjugates.
_INLINE = {"bmm", "_bmm", "addbmm", "baddbmm", "addmv", "addr", "cross", "inverse", "mv", "ger"}


def _formula_takes_complex(op):
    """An inline formula takes complex inputs where its tree calls .conj() (or conj(...))."""
    return op.name not in _INLINE or any(_calls_conj(derivative(f).parsed) for f in op.entry.backward)


def _calls_conj(tree) -> bool:
    return tree is not None and any(
        isinstance(n, Call) and "conj" in (n.func.name if isinstance(n.func, (Attr, Name)) else "")
        for n in iter_nodes(tree)
    )


def register_matrix_cases(*names, cases, complex_=True):
    """`cases(rng, dtype) -> [Sample]`, registered for each op of names."""

    @samples(*names)
    def make(op, rng, dtype=np.float64):
        if np.issubdtype(dtype, np.complexfloating) and not _formula_takes_complex(op):
            return []
        made = cases(rng, dtype)
        first = op.schema.arguments[0].name
        if first != "self":  # newer schemas rename it (linalg_inv_ex's `A`)
            made = [
                dataclasses.replace(s, kwargs={first if k == "self" else k: v for k, v in s.kwargs.items()})
                for s in made
            ]
        return made

    if complex_:
        complex_ok(*names)


def labelled_sample(label, outputs=None, tangents=None, **kwargs):
    return Sample((), kwargs, label, outputs=outputs, tangents=tangents)


def householder(r, d, shape=(4, 3)):
    """LAPACK's geqrf reflectors of a random matrix (what orgqr, ormqr and linalg_householder_product are given)."""
    a, tau = np.linalg.qr(random_matrix(r, shape, d), mode="raw")
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)), tau
