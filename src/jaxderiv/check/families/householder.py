"""Checker samples of the Householder ops (forward/householder.py): linalg_householder_product
and linalg_qr, made with linalg.py's helpers.

linalg_householder_product is given LAPACK's geqrf reflectors of a random matrix (NumPy's raw
QR), as orgqr and ormqr are, once with fewer reflectors than columns. linalg_qr gets matrices
whose singular values are 1 apart (square, tall, wide and batched; reduced and complete), so
R's diagonal stays clear of zero; Q and R are compared themselves, as qr's are (linalg.py).
Complex samples where the entry's formula takes them (linalg.py's `_register`).
"""

from __future__ import annotations

from .linalg import _householder, _register, _s, _spread_singular_values

_register(
    "linalg_householder_product",
    cases=lambda r, d: [
        _s("4x3", **dict(zip(("input", "tau"), _householder(r, d)))),
        _s("5x3, 2 reflectors", **dict(zip(("input", "tau"), (lambda a, t: (a, t[:2]))(*_householder(r, d, (5, 3)))))),
    ],
)
_register(
    "linalg_qr",
    cases=lambda r, d: [
        _s(f"{shape} {mode}", self=_spread_singular_values(r, shape, d), mode=mode)
        for shape, mode in [((4, 3), "reduced"), ((2, 3, 3), "reduced"), ((3, 4), "reduced"), ((3, 4), "complete")]
    ],
)
