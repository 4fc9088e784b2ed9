"""Checker inputs of the linear-algebra ops: well-posed matrices, batched where ATen accepts them.

SPD matrices for Cholesky, well-conditioned ones for inverses and solves, spread singular
values and eigenvalues for the spectral ops, and a singular matrix (an exact zero row) for
det's dedicated branch. Gauge freedom, as `Sample.outputs` / `Sample.tangents` say:
  - svd: S and the squared entries of U and V's first k columns (sign-invariant; the free
    columns of a full U or V are dropped), and U Vᴴ (invariant under a joint phase only);
  - symeig and eig: the eigenvalues and the squared entries of the eigenvectors;
  - qr: Q and R themselves: a real QR has only a discrete sign gauge, constant nearby;
  - cholesky and symeig read one triangle and their formulas assume a Hermitian input: input
    directions are Hermitian; a triangular factor input (cholesky_solve, cholesky_inverse) is
    perturbed within its triangle.
Real only where the spec's formula is: entries written inline without conj (1.7's bmm, mv, ger,
addmv, addr, addbmm, baddbmm, cross, inverse: see _INLINE) get no complex samples; qr_backward
and eig_backward are real matrix calculus (eig's needs real eigenvalues).
LU samples are square, wide and tall: the 1.10 LU formulas cover every shape.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...expr import Attr, Call, Name, iter_nodes
from ...normalize import derivative
from ...tensor_utils import mH
from ..opdb import (
    Equivalent,
    compiled_apart,
    complex_ok,
    parity_differs,
    parity_in_float32,
    parity_samples,
    samples,
    torch_equivalent,
)
from ..samples import Sample


def _rand(rng, shape, dtype):
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _mH(x):
    """tensor_utils.mH computed in NumPy: a sample stays a NumPy array."""
    return mH(x, xp=np)


def _well_conditioned(rng, shape, dtype):
    n = shape[-1]
    return _rand(rng, shape, dtype) * 0.3 + 2 * np.eye(n, dtype=dtype)


def _spd(rng, shape, dtype):
    x = _rand(rng, shape, dtype)
    return x @ _mH(x) + shape[-1] * np.eye(shape[-1], dtype=dtype)


def _lower_factor(rng, shape, dtype):
    """A Cholesky factor: lower triangular with a real positive diagonal (LAPACK's potri and
    potrs, torch's cholesky_inverse and cholesky_solve, read only the diagonal's real part)."""
    return np.tril(_rand(rng, shape, dtype) * 0.3, -1) + (2 + 0.3 * np.abs(rng.normal(size=shape[-1]))) * np.eye(
        shape[-1], dtype=dtype
    )


def _spread_singular_values(rng, shape, dtype):
    """Q1 diag(1.5, 2.5, ...) Q2ᴴ: singular values 1 apart."""
    m, n = shape[-2:]
    k = min(m, n)
    q1 = np.linalg.qr(_rand(rng, shape[:-2] + (m, m), dtype))[0][..., :k]
    q2 = np.linalg.qr(_rand(rng, shape[:-2] + (n, n), dtype))[0][..., :k]
    return (q1 * (1.5 + np.arange(k))) @ _mH(q2)


def _hermitian(x):
    return (x + _mH(x)) / 2


def _squares(x):
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


def _register(*names, cases, complex_=True):
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


def _s(label, outputs=None, tangents=None, **kwargs):
    return Sample((), kwargs, label, outputs=outputs, tangents=tangents)


# -- products -------------------------------------------------------------------------------------
_register("mm", cases=lambda r, d: [_s("3x4 @ 4x2", self=_rand(r, (3, 4), d), mat2=_rand(r, (4, 2), d))])
_register("bmm", cases=lambda r, d: [_s("2x3x4 @ 2x4x2", self=_rand(r, (2, 3, 4), d), mat2=_rand(r, (2, 4, 2), d))])
_register("_bmm", cases=lambda r, d: [_s("2x3x4 @ 2x4x2", self=_rand(r, (2, 3, 4), d), mat2=_rand(r, (2, 4, 2), d))])
# Grouped products (mixture-of-experts layers): each operand layout ATen accepts, an empty
# group, and rows past the last offset (in no group).
_register(
    "_grouped_mm",
    cases=lambda r, d: [
        _s(
            "6x4 rows grouped 2,0,3 (+1 past) @ 3x4x5",
            self=_rand(r, (6, 4), d),
            mat2=_rand(r, (3, 4, 5), d),
            offs=np.array([2, 2, 5], np.int32),
        ),
        _s(
            "2x3x4 @ 4x5 columns grouped 2,3",
            self=_rand(r, (2, 3, 4), d),
            mat2=_rand(r, (4, 5), d),
            offs=np.array([2, 5], np.int32),
        ),
        _s(
            "3x5 @ 5x2 contraction grouped 3,2",
            self=_rand(r, (3, 5), d),
            mat2=_rand(r, (5, 2), d),
            offs=np.array([3, 5], np.int32),
        ),
        _s("2x3x4 @ 2x4x2 batched", self=_rand(r, (2, 3, 4), d), mat2=_rand(r, (2, 4, 2), d)),
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
_register(
    "matmul",
    cases=lambda r, d: [
        _s("3x4 @ 4x2", self=_rand(r, (3, 4), d), other=_rand(r, (4, 2), d)),
        _s("4 @ 4", self=_rand(r, (4,), d), other=_rand(r, (4,), d)),
        _s("4 @ 2x4x3", self=_rand(r, (4,), d), other=_rand(r, (2, 4, 3), d)),
        _s("2x1x3x4 @ 4", self=_rand(r, (2, 1, 3, 4), d), other=_rand(r, (4,), d)),
        _s("2x1x3x4 @ 5x4x2 (batch broadcast)", self=_rand(r, (2, 1, 3, 4), d), other=_rand(r, (5, 4, 2), d)),
    ],
)
_register("mv", cases=lambda r, d: [_s("3x4 @ 4", self=_rand(r, (3, 4), d), vec=_rand(r, (4,), d))])
_register("ger", cases=lambda r, d: [_s("3 x 4", self=_rand(r, (3,), d), vec2=_rand(r, (4,), d))])
_register("dot", cases=lambda r, d: [_s("4 . 4", self=_rand(r, (4,), d), tensor=_rand(r, (4,), d))])
_register("vdot", cases=lambda r, d: [_s("4 . 4", self=_rand(r, (4,), d), other=_rand(r, (4,), d))])
_register("trace", cases=lambda r, d: [_s("3x4", self=_rand(r, (3, 4), d))])
_register(
    "cross",
    cases=lambda r, d: [
        _s("2x3 dim=None", self=_rand(r, (2, 3), d), other=_rand(r, (2, 3), d)),
        _s("3x2 bcast dim=0", self=_rand(r, (3, 2), d), other=_rand(r, (3, 1), d), dim=0),
    ],
)
_register(
    "linalg_cross",
    cases=lambda r, d: [
        _s("2x3", self=_rand(r, (2, 3), d), other=_rand(r, (2, 3), d)),
        _s("3x2 bcast dim=0", self=_rand(r, (3, 2), d), other=_rand(r, (3, 1), d), dim=0),
    ],
)
_SCALARS: tuple[dict[str, float], ...] = ({}, {"beta": 0.5, "alpha": 2.0}, {"beta": 0})
# Complex inputs also get complex beta and alpha: a formula missing their `.conj()` must fail.
_COMPLEX_SCALARS = {"beta": 0.5 - 1.0j, "alpha": 1.5 + 0.5j}


def _scalars(d, n=3):
    return _SCALARS[:n] + ((_COMPLEX_SCALARS,) if np.issubdtype(d, np.complexfloating) else ())


_register(
    "addmm",
    cases=lambda r, d: [
        _s(f"3x2 {s}", self=_rand(r, shape, d), mat1=_rand(r, (3, 4), d), mat2=_rand(r, (4, 2), d), **s)
        for s, shape in zip(_scalars(d), [(3, 2), (2,), (3, 2), (3, 2)])
    ],
)
_register(
    "addbmm",
    cases=lambda r, d: [
        _s(f"3x2 {s}", self=_rand(r, (3, 2), d), batch1=_rand(r, (2, 3, 4), d), batch2=_rand(r, (2, 4, 2), d), **s)
        for s in _scalars(d, 2)
    ],
)
_register(
    "baddbmm",
    cases=lambda r, d: [
        _s(f"2x3x2 {s}", self=_rand(r, shape, d), batch1=_rand(r, (2, 3, 4), d), batch2=_rand(r, (2, 4, 2), d), **s)
        for s, shape in zip(_scalars(d, 2), [(2, 3, 2), (3, 1), (2, 3, 2)])
    ],
)
_register(
    "addmv",
    cases=lambda r, d: [
        _s(f"3 {s}", self=_rand(r, (3,), d), mat=_rand(r, (3, 4), d), vec=_rand(r, (4,), d), **s)
        for s in _scalars(d, 2)
    ],
)
_register(
    "addr",
    cases=lambda r, d: [
        _s(f"3x4 {s}", self=_rand(r, (3, 4), d), vec1=_rand(r, (3,), d), vec2=_rand(r, (4,), d), **s)
        for s in _scalars(d, 2)
    ],
)

# -- Cholesky -------------------------------------------------------------------------------------


def _hermitian_directions(vs):
    return [_hermitian(vs[0])]


def _in_triangle(upper):
    return lambda vs: [vs[0], np.triu(vs[1]) if upper else np.tril(vs[1])]


_register(
    "cholesky",
    "linalg_cholesky_ex",
    cases=lambda r, d: [
        _s(f"spd {shape} upper={u}", tangents=_hermitian_directions, self=_spd(r, shape, d), upper=u)
        for shape, u in [((3, 3), False), ((2, 3, 3), True)]
    ],
)
_register(
    "cholesky_solve",
    cases=lambda r, d: [
        _s(
            f"3x2 upper={u}",
            tangents=_in_triangle(u),
            self=_rand(r, (2, 3, 2), d),
            input2=(_mH(_lower_factor(r, (2, 3, 3), d)) if u else _lower_factor(r, (2, 3, 3), d)),
            upper=u,
        )
        for u in (False, True)
    ],
)
_register(
    "cholesky_inverse",
    cases=lambda r, d: [
        _s(
            f"3x3 upper={u}",
            tangents=lambda vs, u=u: [np.triu(vs[0]) if u else np.tril(vs[0])],
            self=(_mH(_lower_factor(r, (3, 3), d)) if u else _lower_factor(r, (3, 3), d)),
            upper=u,
        )
        for u in (False, True)
    ],
)

# -- inverses, determinants, solves -----------------------------------------------------------------
_register(
    "inverse",
    "linalg_inv_ex",
    "matrix_exp",
    cases=lambda r, d: [
        _s("3x3", self=_well_conditioned(r, (3, 3), d)),
        _s("2x3x3", self=_well_conditioned(r, (2, 3, 3), d)),
    ],
)
compiled_apart(
    "jax.scipy.linalg.expm's Pade branches and squarings, differentiated to third order: one program per "
    "(mode, sample) compiles in 28.4 s against 55.3 s for the entry's one program (one process, no cache, "
    "measured 2026-12-06 on the loaded 2-core machine)",
    "matrix_exp",
)
_register(
    "logdet",
    "_det_lu_based_helper",
    cases=lambda r, d: [
        _s("3x3", self=_well_conditioned(r, (3, 3), d)),
        _s("2x3x3", self=_well_conditioned(r, (2, 3, 3), d)),
    ],
)
_register(
    "slogdet",
    cases=lambda r, d: [
        _s("3x3", self=_well_conditioned(r, (3, 3), d)),
        _s("2x3x3 negative det", self=-_well_conditioned(r, (2, 3, 3), d)),
    ],
)


def _singular(r, d):
    a = _well_conditioned(r, (3, 3), d)
    a[1] = 0  # an exact zero row: det is exactly 0, its gradient the adjugate's transpose
    return a


# The singular sample is real only: at a complex A with a zero singular value the null singular
# vectors' phases are independent, so JAX's svd jvp, through which the second order of
# det_backward's SVD branch is taken, is undefined there (first order is tested against torch).
_register(
    "det",
    cases=lambda r, d: (
        [
            _s("3x3", self=_well_conditioned(r, (3, 3), d)),
            _s("2x3x3", self=_well_conditioned(r, (2, 3, 3), d)),
        ]
        + ([_s("3x3 singular", self=_singular(r, d))] if d == np.float64 else [])
    ),
)
_register(
    "solve",
    cases=lambda r, d: [
        _s("2x3x2", self=_rand(r, (2, 3, 2), d), A=_well_conditioned(r, (2, 3, 3), d)),
    ],
)


def _triangular(r, d, upper, shape=(2, 3, 3)):
    lower = _lower_factor(r, shape, d)
    return np.swapaxes(lower, -1, -2) if upper else lower


_register(
    "triangular_solve",
    cases=lambda r, d: [
        _s(
            f"upper={u} transpose={t} unit={n}",
            self=_rand(r, (2, 3, 2), d),
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
    from ...forward.linalg import _lu

    lu, piv = _lu(a)
    return np.asarray(lu), np.asarray(piv)


_register(
    "_lu_with_info",
    cases=lambda r, d: [
        _s("3x3", self=_well_conditioned(r, (3, 3), d)),
        _s("2x3x3", self=_rand(r, (2, 3, 3), d) + 2 * np.eye(3)),
        _s("wide 3x5", self=_rand(r, (3, 5), d) + 2 * np.eye(3, 5)),
        _s("tall 2x5x3", self=_rand(r, (2, 5, 3), d) + 2 * np.eye(5, 3)),
    ],
)


def _lu_solve_cases(r, d):
    lu, piv = _lu_of(_rand(r, (2, 3, 3), d) + 2 * np.eye(3))
    return [_s("2x3x2", self=_rand(r, (2, 3, 2), d), LU_data=lu, LU_pivots=piv)]


def _lu_unpack_cases(r, d):
    lu, piv = _lu_of(_rand(r, (2, 3, 3), d))
    wide, wpiv = _lu_of(_rand(r, (3, 5), d))
    tall, tpiv = _lu_of(_rand(r, (2, 5, 3), d))
    return [
        _s("2x3x3", LU_data=lu, LU_pivots=piv),
        _s("3x3 no pivots", LU_data=lu[0], LU_pivots=piv[0], unpack_pivots=False),
        _s("wide 3x5", LU_data=wide, LU_pivots=wpiv),
        _s("tall 2x5x3", LU_data=tall, LU_pivots=tpiv),
    ]


_register("lu_solve", cases=_lu_solve_cases)
_register("lu_unpack", cases=_lu_unpack_cases)

# -- decompositions ------------------------------------------------------------------------------------


def _svd_outputs(k):
    return lambda outs: [outs[1], _squares(outs[0][..., :k]), _squares(outs[2][..., :k])]


def _polar(k):
    """U Vᴴ over the first k columns: invariant under a joint phase of u_i and v_i only, so it
    exercises the complex phase-gauge term that |U|² and |V|² do not see."""
    return lambda outs: [outs[0][..., :k] @ outs[2][..., :k].conj().swapaxes(-1, -2)]


_register(
    "svd",
    cases=lambda r, d: (
        [
            _s(
                f"{shape} some={some}",
                outputs=_svd_outputs(min(shape[-2:])),
                self=_spread_singular_values(r, shape, d),
                some=some,
            )
            for shape, some in [((3, 3), True), ((2, 4, 3), True), ((4, 3), False), ((3, 4), False)]
        ]
        + [_s("3x3 S only", outputs=lambda outs: [outs[1]], self=_spread_singular_values(r, (3, 3), d))]
        + [
            _s(
                f"{shape} some={some} U Vᴴ",
                outputs=_polar(min(shape[-2:])),
                self=_spread_singular_values(r, shape, d),
                some=some,
            )
            for shape, some in [((2, 4, 3), True), ((3, 4), False)]
        ]
    ),
)


def _symmetric_spread(r, d, shape):
    q = np.linalg.qr(_rand(r, shape, d))[0]
    return (q * (np.arange(shape[-1]) - 1.0)) @ _mH(q)


_register(
    "symeig",
    cases=lambda r, d: [
        _s(
            f"{shape} upper={u}",
            outputs=lambda outs: [outs[0], _squares(outs[1])],
            tangents=_hermitian_directions,
            self=_symmetric_spread(r, d, shape),
            eigenvectors=True,
            upper=u,
        )
        for shape, u in [((3, 3), True), ((2, 3, 3), False)]
    ],
)


def _real_spectrum(r, d):
    p = np.eye(3) + 0.3 * _rand(r, (3, 3), d)
    return (p * np.array([-1.0, 0.5, 2.0])) @ np.linalg.inv(p)


_register(
    "eig",
    complex_=False,
    cases=lambda r, d: [
        _s(
            "3x3 real spectrum",
            outputs=lambda outs: [outs[0], _squares(outs[1])],
            self=_real_spectrum(r, d),
            eigenvectors=True,
        )
    ],
)
_register(
    "qr",
    complex_=False,
    cases=lambda r, d: [
        _s(f"{shape} some={some}", self=_spread_singular_values(r, shape, d), some=some)
        for shape, some in [((3, 3), True), ((2, 4, 3), True), ((3, 4), True), ((3, 4), False)]
    ],
)


def _householder(r, d, shape=(4, 3)):
    """LAPACK's geqrf reflectors of a random matrix (what orgqr, ormqr and linalg_householder_product are given)."""
    a, tau = np.linalg.qr(_rand(r, shape, d), mode="raw")
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)), tau


# not_implemented in the seed specs: one sample each, for the forward and the verdict
_register("geqrf", complex_=False, cases=lambda r, d: [_s("4x3", self=_rand(r, (4, 3), d))])
_register("orgqr", complex_=False, cases=lambda r, d: [_s("4x3", **dict(zip(("self", "input2"), _householder(r, d))))])
_register(
    "ormqr",
    cases=lambda r, d: [
        _s(
            f"4x3 on {'4x2' if left else '2x4'} left={left} transpose={transpose}",
            **dict(zip(("self", "input2"), _householder(r, d))),
            input3=_rand(r, (4, 2) if left else (2, 4), d),
            left=left,
            transpose=transpose,
        )
        for left, transpose in [(True, False), (True, True), (False, False), (False, True)]
    ],
)
_register("lstsq", complex_=False, cases=lambda r, d: [_s("4x3", self=_rand(r, (4, 2), d), A=_rand(r, (4, 3), d))])
_register(
    "linalg_lstsq",
    cases=lambda r, d: [
        _s("4x3, 4x2", self=_rand(r, (4, 3), d), b=_rand(r, (4, 2), d)),
        _s("4x3, 4x2 gelsd (residuals)", self=_rand(r, (4, 3), d), b=_rand(r, (4, 2), d), driver="gelsd"),
        _s("2x4x3, 2x4 vectors gelss", self=_rand(r, (2, 4, 3), d), b=_rand(r, (2, 4), d), driver="gelss"),
        _s("3x5, 3 (minimum norm)", self=_rand(r, (3, 5), d), b=_rand(r, (3,), d)),
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
