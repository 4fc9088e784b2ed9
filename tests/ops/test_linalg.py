"""The linear-algebra family against PyTorch 2.13: forward values, vjp and jvp, jit and vmap.

Ops torch 2.13 no longer has (symeig, eig, solve, lstsq, _det_lu_based_helper, _bmm) are
compared with their torch.linalg successors. Gauge-dependent outputs are compared through
gauge-invariant functions (squared eigenvector entries). For complex inputs
jax_vjp(ct) == conj(torch_grad(conj(ct))).

Where ours and torch 2.13 differ, a test measures the difference and names its cause: the
spec's formula (complex cholesky's symmetrized gradient, 1.7's conj-free mv/ger), torch's
first-order det at a singular matrix, and two torch forward-mode formulas (cholesky_inverse,
triangular_solve with transpose=True) that disagree with finite differences.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
from jaxderiv.check import opdb  # noqa: E402
from jaxderiv.check import parity as P  # noqa: E402

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

aten = torch.ops.aten
C128 = np.complex128


def _rand(rng, shape, dtype=np.float64):
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _wc(rng, shape, dtype=np.float64):
    return 0.3 * _rand(rng, shape, dtype) + 2 * np.eye(shape[-1])


def _spd(rng, shape, dtype=np.float64):
    x = _rand(rng, shape, dtype)
    return x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _t(x):
    return torch.from_numpy(np.array(x))


def _n(x):
    return x.detach().resolve_conj().numpy()


def _close(a, b, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _compare(
    name,
    torch_fn,
    args,
    diff,
    dtype=np.float64,
    post=lambda y: y,
    torch_post=None,
    jvp=True,
    tangents=None,
    torch_jvp=True,
):
    """Forward, vjp and jvp of SEEDS.op(name)(*args) (outputs through `post`) against torch;
    `tangents` projects the jvp's input directions onto the admissible ones. With torch_jvp=False
    (torch's forward-mode formula is wrong, see the callers) the jvp is checked against torch's
    reverse mode instead: Re<ct, jvp(t)> == sum_i Re<vjp_torch(ct)_i, t_i>."""
    torch_post = torch_post or post
    op = SEEDS.op(name)
    rng = np.random.default_rng(7)

    def ours(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return post(op(*full))

    def theirs(*xs):
        full = [_t(a) if isinstance(a, np.ndarray) else a for a in args]
        for i, x in zip(diff, xs):
            full[i] = x
        return torch_post(torch_fn(*full))

    xs = [jnp.asarray(args[i]) for i in diff]
    txs = [_t(args[i]).requires_grad_() for i in diff]
    y, vjp = jax.vjp(ours, *xs)
    ty = theirs(*txs)
    _close(y, _n(ty))
    ct = _rand(rng, np.shape(y), np.asarray(y).dtype)
    for o, t in zip(vjp(jnp.asarray(ct)), torch.autograd.grad(ty, txs, _t(np.conj(ct)))):
        _close(o, np.conj(_n(t)))
    if jvp:
        ts = [_rand(rng, np.shape(x), dtype) for x in xs]
        ts = tangents(ts) if tangents else ts
        _, o = jax.jvp(ours, tuple(xs), tuple(jnp.asarray(t) for t in ts))
        if torch_jvp:
            _, t = torch.func.jvp(theirs, tuple(_t(args[i]) for i in diff), tuple(_t(t) for t in ts))
            _close(o, _n(t))
        else:
            fresh = [_t(args[i]).requires_grad_() for i in diff]
            gs = torch.autograd.grad(theirs(*fresh), fresh, _t(ct))
            pairing = sum(np.real(np.sum(np.conj(_n(g)) * t)) for g, t in zip(gs, ts))
            _close(np.real(np.sum(np.conj(ct) * np.asarray(o))), pairing)


def _sq(x):
    return x * x.conj()


# The products (mm, bmm, mv, dot, vdot, ger, trace, cross, addmm, addbmm, baddbmm, addmv, addr) are
# compared with torch on their records' samples, real and complex, by tests/check/test_parity.py.
R = np.random.default_rng(0)


def test_real_only_product_formulas_on_complex_inputs():
    """mv and ger exist only in the 1.7 file, whose formulas (mv: self: grad.ger(vec), vec:
    self.t().mv(grad); ger: self: grad.mv(vec2), vec2: grad.t().mv(self)) have no conj: on complex
    inputs they would give the formula's value, not torch 2.13's gradient, so a complex
    derivative is refused with an error naming the entry and its release; real ones work."""
    from jaxderiv.op import RealOnlyDerivative

    rng = np.random.default_rng(2)
    m, v, w, ct = (_rand(rng, s, C128) for s in [(3, 4), (4,), (3,), (3,)])
    with pytest.raises(RealOnlyDerivative, match=r"entry 'mv'.*PyTorch 1\.7"):
        jax.vjp(SEEDS.op("mv"), jnp.asarray(m), jnp.asarray(v))
    with pytest.raises(RealOnlyDerivative, match=r"entry 'ger'.*PyTorch 1\.7"):
        jax.vjp(SEEDS.op("ger"), jnp.asarray(w), jnp.asarray(v))
    g_self, g_vec = jax.vjp(SEEDS.op("mv"), jnp.asarray(m.real), jnp.asarray(v.real))[1](jnp.asarray(ct.real))
    _close(g_self, np.outer(ct.real, v.real))
    _close(g_vec, m.real.T @ ct.real)
    # what the formula would have given on complex is not torch's gradient
    tm = _t(m).requires_grad_()
    assert (
        np.abs(
            np.conj(_n(torch.autograd.grad(torch.mv(tm, _t(v)), tm, _t(np.conj(ct)))[0]))
            - np.conj(np.outer(np.conj(ct), v))
        ).max()
        > 1e-3
    )


def test_addmm_beta_zero_ignores_nan_self():
    out = SEEDS.op("addmm")(jnp.full((3, 2), jnp.nan), jnp.ones((3, 4)), jnp.ones((4, 2)), beta=0)
    assert not jnp.any(jnp.isnan(out))


FACTOR = [
    ("cholesky", lambda a: torch.linalg.cholesky(a), (_spd(R, (2, 3, 3)),), "herm"),
    ("cholesky_inverse", aten.cholesky_inverse.default, (np.linalg.cholesky(_spd(R, (3, 3))),), "tril"),
    (
        "cholesky_solve",
        aten.cholesky_solve.default,
        (_rand(R, (2, 3, 2)), np.linalg.cholesky(_spd(R, (2, 3, 3)))),
        "tril",
    ),
    ("inverse", aten.inverse.default, (_wc(R, (2, 3, 3)),), None),
    ("det", aten.det.default, (_wc(R, (2, 3, 3)),), None),
    ("logdet", aten.logdet.default, (_wc(R, (3, 3)),), None),
    ("matrix_exp", aten.matrix_exp.default, (_wc(R, (2, 3, 3)),), None),
    ("_det_lu_based_helper", lambda a: (torch.linalg.det(a),), (_wc(R, (3, 3)),), None),
    ("slogdet", lambda a: torch.linalg.slogdet(a), (-_wc(R, (3, 3)),), None),
]


def _herm(x):
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


# Admissible input directions: cholesky reads one triangle of a Hermitian matrix, and a factor
# input is moved within its triangle (the last argument of cholesky_solve / cholesky_inverse).
SPACES = {None: None, "herm": lambda ts: [_herm(ts[0])], "tril": lambda ts: ts[:-1] + [np.tril(ts[-1])]}


@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["f64", "c128"])
@pytest.mark.parametrize("name,fn,args,space", FACTOR, ids=[f[0] for f in FACTOR])
def test_factorizations_and_inverses_match_torch(name, fn, args, space, dtype):
    if dtype == C128 and name == "cholesky":
        pytest.skip("complex cholesky: test_complex_cholesky_gradient_is_the_hermitian_part_of_torchs")
    if dtype == C128:
        # a Cholesky factor's diagonal is real: LAPACK's potri (torch's cholesky_inverse) reads only its real part
        args = tuple(a.astype(C128) + (0.1j * np.tril(a, -1) if space == "tril" else 0) for a in args)
    pick = {"_det_lu_based_helper": lambda y: y[0], "slogdet": lambda y: y[1]}.get(name, lambda y: y)
    torch_pick = {"_det_lu_based_helper": lambda y: y[0], "slogdet": lambda y: y[1]}.get(name, lambda y: y)
    # torch 2.13's cholesky_inverse_jvp computes -X dF X Fᴴ + h.c. (X the inverse) where the
    # derivative of (F Fᴴ)⁻¹ is -X dF Fᴴ X + h.c.: its forward mode is checked through torch's vjp
    _compare(
        name,
        fn,
        args,
        tuple(range(len(args))),
        dtype,
        post=pick,
        torch_post=torch_pick,
        tangents=SPACES[space],
        torch_jvp=name != "cholesky_inverse",
    )


def test_complex_cholesky_gradient_is_the_hermitian_part_of_torchs():
    """The spec's cholesky_backward (1.7, 1.10) returns sym(L⁻ᴴ Φ(Lᴴ gL) L⁻¹), a Hermitian matrix;
    torch 2.13's drops the symmetrization and keeps L⁻ᴴ (i/2 Im diag(Lᴴ gL)) L⁻¹, an
    anti-Hermitian part that pairs to zero with every Hermitian direction. So ours equals the
    Hermitian part of torch's, and the two agree on every Hermitian input direction (jvp)."""
    rng = np.random.default_rng(3)
    a = _spd(rng, (2, 3, 3), C128)
    ct = _rand(rng, a.shape, C128)
    y, vjp = jax.vjp(SEEDS.op("cholesky"), jnp.asarray(a))
    ta = _t(a).requires_grad_()
    ty = torch.linalg.cholesky(ta)
    _close(y, _n(ty))
    ours = np.asarray(vjp(jnp.asarray(ct))[0])
    theirs = np.conj(_n(torch.autograd.grad(ty, ta, _t(np.conj(ct)))[0]))
    herm = (theirs + np.conj(np.swapaxes(theirs, -1, -2))) / 2
    _close(ours, herm)
    assert np.abs(theirs - herm).max() > 1e-3  # the anti-Hermitian part is there, and ours lacks it
    d = _rand(rng, a.shape, C128)
    d = d + np.conj(np.swapaxes(d, -1, -2))
    _, o = jax.jvp(SEEDS.op("cholesky"), (jnp.asarray(a),), (jnp.asarray(d),))
    _, t = torch.func.jvp(torch.linalg.cholesky, (_t(a),), (_t(d),))
    _close(o, _n(t))


def _cofactors(a):
    return np.array(
        [[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(3)] for i in range(3)]
    )


@pytest.mark.parametrize(
    "seed,dtype", [(0, np.float64), (1, np.float64), (0, C128)], ids=["detU_detV=-1", "detU_detV=+1", "c128"]
)
def test_det_of_a_singular_matrix_is_the_cofactor_matrix(seed, dtype):
    """det's gradient at an exactly singular A is its cofactor matrix (the adjugate's transpose).

    torch 2.13 computes it only when the backward is itself differentiable (create_graph=True:
    the SVD branch U diag(prod_{j!=i} s_j) Vᴴ scaled by conj(det U det Vᴴ)); its first-order
    backward solves with the LU factors and a right-hand side grad·conj(det) = 0, so it returns
    zeros. The 1.7 det_backward's SVD branch (prod_backward of the singular values) lacks the
    det U det Vᴴ factor, the wrong sign when it is -1; ours has it, as torch 2.13's does."""
    a = _rand(np.random.default_rng(seed), (3, 3), dtype)
    a[2] = 0
    u, _, vh = np.linalg.svd(a)
    if dtype == np.float64:
        assert np.sign(np.linalg.det(u) * np.linalg.det(vh)) == (-1 if seed == 0 else 1)
    ours = jax.vjp(SEEDS.op("det"), jnp.asarray(a))[1](jnp.ones((), dtype))[0]
    ta = _t(a).requires_grad_()
    (theirs,) = torch.autograd.grad(torch.det(ta), ta, torch.ones((), dtype=ta.dtype), create_graph=True)
    _close(ours, np.conj(_n(theirs)))  # the module's complex convention (docstring)
    _close(ours, _cofactors(a))
    tb = _t(a).requires_grad_()
    assert not torch.autograd.grad(torch.det(tb), tb, torch.ones((), dtype=tb.dtype))[
        0
    ].any()  # torch's first-order path, as the docstring says
    batched = jax.vjp(SEEDS.op("det"), jnp.stack([jnp.asarray(a), jnp.asarray(_wc(R, (3, 3), dtype))]))[1]
    _close(batched(jnp.ones(2, dtype))[0][0], _cofactors(a))


def test_singular_slogdet_gradient_is_infinite_like_torchs_svd_path():
    a = np.zeros((2, 2))
    g = jax.grad(lambda x: SEEDS.op("slogdet")(x)[1])(jnp.asarray(a))
    assert not np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["f64", "c128"])
@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, True, False), (True, True, True)])
def test_triangular_solve_matches_torch(upper, transpose, unit, dtype):
    a = _rand(R, (2, 3, 3), dtype) + 3 * np.eye(3)
    a = np.triu(a) if upper else np.tril(a)
    fn = lambda b, A, *_: aten.triangular_solve.default(b, A, upper, transpose, unit)  # noqa: E731
    in_triangle = (lambda t: np.triu(t, int(unit))) if upper else (lambda t: np.tril(t, -int(unit)))
    # jvp: the transpose of the 1.7 backward formula, along directions within A's read triangle.
    # torch 2.13's triangular_solve_jvp solves op(A) dX = dB - dA X, with dA where op(dA) = dAᵀ
    # belongs when transpose=True: there it is checked through torch's vjp.
    _compare(
        "triangular_solve",
        fn,
        (_rand(R, (2, 3, 2), dtype), a, upper, transpose, unit),
        (0, 1),
        dtype,
        post=lambda y: y[0],
        tangents=lambda ts: [ts[0], in_triangle(ts[1])],
        torch_jvp=not transpose,
    )


@pytest.mark.parametrize("case", ["triangular_solve transpose", "cholesky_inverse"])
def test_where_torchs_forward_mode_is_wrong_ours_matches_finite_differences(case):
    """The two torch 2.13 forward-mode formulas the tests above check through torch's vjp instead:
    torch.func.jvp disagrees with central differences of torch's own forward; ours agrees."""
    rng = np.random.default_rng(5)
    if case == "cholesky_inverse":
        args = (np.linalg.cholesky(_spd(rng, (3, 3))),)
        ours = lambda x: SEEDS.op("cholesky_inverse")(x)  # noqa: E731
        theirs = lambda x: aten.cholesky_inverse.default(x)  # noqa: E731
        ts = (np.tril(rng.normal(size=(3, 3))),)
    else:
        args = (rng.normal(size=(3, 2)), np.tril(rng.normal(size=(3, 3))) + 3 * np.eye(3))
        ours = lambda b, a: SEEDS.op("triangular_solve")(b, a, False, True, False)[0]  # noqa: E731
        theirs = lambda b, a: aten.triangular_solve.default(b, a, False, True, False)[0]  # noqa: E731
        ts = (rng.normal(size=(3, 2)), np.tril(rng.normal(size=(3, 3))))
    h = 1e-6
    fd = (
        _n(theirs(*[_t(a + h * t) for a, t in zip(args, ts)])) - _n(theirs(*[_t(a - h * t) for a, t in zip(args, ts)]))
    ) / (2 * h)
    _, o = jax.jvp(ours, tuple(jnp.asarray(a) for a in args), tuple(jnp.asarray(t) for t in ts))
    _, t = torch.func.jvp(theirs, tuple(_t(a) for a in args), tuple(_t(t) for t in ts))
    _close(o, fd, rtol=1e-6, atol=1e-7)
    assert np.abs(_n(t) - fd).max() > 1e-2


@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["f64", "c128"])
def test_solve_matches_torch_linalg_solve(dtype):
    _compare(
        "solve",
        lambda b, a: (torch.linalg.solve(a, b),),
        (_rand(R, (2, 3, 2), dtype), _wc(R, (2, 3, 3), dtype)),
        (0, 1),
        dtype,
        post=lambda y: y[0],
        torch_post=lambda y: y[0],
    )


@pytest.mark.parametrize("shape", [(2, 3, 3), (3, 5), (2, 5, 3)], ids=["square", "wide", "tall"])
@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["f64", "c128"])
def test_lu_family_matches_torch(dtype, shape):
    a = (
        _wc(R, shape, dtype) + _rand(R, shape, dtype)
        if shape[-1] == shape[-2]
        else _rand(R, shape, dtype) + 2 * np.eye(*shape[-2:])
    )
    lu, piv, info = SEEDS.op("_lu_with_info")(jnp.asarray(a))
    tlu, tpiv = torch.linalg.lu_factor(_t(a))
    _close(lu, _n(tlu))
    assert np.array_equal(np.asarray(piv), _n(tpiv)) and np.asarray(piv).dtype == np.int32 and not np.any(info)
    _compare(
        "_lu_with_info",
        lambda x: torch.linalg.lu_factor(x).LU,
        (a,),
        (0,),
        dtype,
        post=lambda y: y[0],
        torch_post=lambda y: y,
    )
    for k in (1, 2):
        _compare(
            "lu_unpack",
            lambda l, p: torch.lu_unpack(l, p)[k],
            (np.asarray(lu), np.asarray(piv)),
            (0,),
            dtype,
            post=lambda y: y[k],
            torch_post=lambda y: y,
        )
    if shape[-1] != shape[-2]:
        return
    b = _rand(R, (2, 3, 2), dtype)
    _compare(
        "lu_solve", lambda b, l, p: torch.linalg.lu_solve(l, p, b), (b, np.asarray(lu), np.asarray(piv)), (0, 1), dtype
    )


def test_lu_unpack_permutation_matches_torch_and_has_no_gradient():
    """P is a function of the pivots only: torch gives it no grad_fn; the spec's
    lu_unpack_backward ignores its gradient, so ours is zero."""
    a = _rand(R, (2, 4, 4)) + np.eye(4)
    lu, piv = torch.linalg.lu_factor(_t(a))
    op = SEEDS.op("lu_unpack")
    _close(op(jnp.asarray(_n(lu)), jnp.asarray(_n(piv)))[0], _n(torch.lu_unpack(lu, piv)[0]))
    g = jax.grad(lambda x: jnp.sum(op(x, jnp.asarray(_n(piv)))[0] * 3.0))(jnp.asarray(_n(lu)))
    assert not torch.lu_unpack(lu.requires_grad_(), piv)[0].requires_grad and not np.any(np.asarray(g))


def test_cholesky_ex_and_inv_ex_report_info():
    spd = jnp.asarray(_spd(R, (3, 3)))
    L, info = SEEDS.op("linalg_cholesky_ex")(spd, upper=True)
    _close(L, _n(torch.linalg.cholesky(_t(spd), upper=True)))
    inv, info2 = SEEDS.op("linalg_inv_ex")(spd)
    _close(inv, np.linalg.inv(spd))
    assert info.dtype == info2.dtype == jnp.int32 and int(info) == int(info2) == 0


def _svd_post(k):
    return lambda y: (y[1], _sq(y[0][..., :k]), _sq(y[2][..., :k]))


@pytest.mark.parametrize(
    "shape,some,dtype",
    [((3, 3), True, np.float64), ((2, 4, 3), True, np.float64), ((3, 4), False, np.float64), ((2, 4, 3), True, C128)],
)
def test_svd_gauge_invariant_gradients_match_torch(shape, some, dtype):
    q1 = np.linalg.qr(_rand(R, shape[:-2] + (shape[-2],) * 2, dtype))[0]
    q2 = np.linalg.qr(_rand(R, shape[:-2] + (shape[-1],) * 2, dtype))[0]
    k = min(shape[-2:])
    a = (q1[..., :k] * (1.5 + np.arange(k))) @ np.conj(np.swapaxes(q2[..., :k], -1, -2))
    post = _svd_post(k)
    _compare(
        "svd",
        lambda x, *_: tuple(torch.svd(x, some=some)),
        (a, some),
        (0,),
        dtype,
        post=lambda y: post(y)[0] + post(y)[1].real.sum() + post(y)[2].real.sum(),
    )


@pytest.mark.parametrize(
    "shape,some,dtype", [((2, 4, 3), True, C128), ((3, 4), False, C128), ((3, 3), True, np.float64)]
)
def test_svd_polar_factor_matches_torch(shape, some, dtype):
    """U Vᴴ is invariant only under a joint phase of u_i and v_i: it exercises the complex
    phase-gauge term U diag(i Im diag(Uᴴ gU) / s) Vᴴ, which |U|² and |V|² never reach."""
    q1 = np.linalg.qr(_rand(R, shape[:-2] + (shape[-2],) * 2, dtype))[0]
    q2 = np.linalg.qr(_rand(R, shape[:-2] + (shape[-1],) * 2, dtype))[0]
    k = min(shape[-2:])
    a = (q1[..., :k] * (1.5 + np.arange(k))) @ np.conj(np.swapaxes(q2[..., :k], -1, -2))
    _compare(
        "svd",
        lambda x, *_: tuple(torch.svd(x, some=some)),
        (a, some),
        (0,),
        dtype,
        post=lambda y: y[0][..., :k] @ y[2][..., :k].conj().swapaxes(-1, -2),
        torch_post=lambda y: y[0][..., :k] @ y[2][..., :k].mH,
    )


@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["f64", "c128"])
def test_symeig_matches_torch_linalg_eigh(dtype):
    q = np.linalg.qr(_rand(R, (3, 3), dtype))[0]
    s = (q * np.array([-1.0, 0.5, 2.0])) @ np.conj(q.T)
    sym = lambda y: y[0] + _sq(y[1]).real.sum(0)  # noqa: E731
    _compare(
        "symeig",
        lambda x, *_: torch.linalg.eigh(x, UPLO="U"),
        (s, True),
        (0,),
        dtype,
        post=sym,
        tangents=lambda ts: [_herm(ts[0])],
    )


def test_eig_matches_torch_linalg_eig():
    """Real input with a real spectrum: the legacy eig's domain (eig_backward rejects complex
    eigenvalues, and the legacy op takes no complex input)."""
    p = np.eye(3) + 0.3 * _rand(R, (3, 3))
    a = (p * np.array([-1.0, 0.5, 2.0])) @ np.linalg.inv(p)
    ours = lambda y: y[0][:, 0] + _sq(y[1]).sum(0)  # noqa: E731
    theirs = lambda y: y[0].real + _sq(y[1]).real.sum(0)  # noqa: E731
    _compare("eig", lambda x, *_: torch.linalg.eig(x), (a, True), (0,), post=ours, torch_post=lambda y: theirs(y))


def test_qr_matches_torch():
    _compare(
        "qr",
        lambda x: torch.linalg.qr(x),
        (_rand(R, (2, 4, 3)),),
        (0,),
        post=lambda y: y[0].sum(-1) + y[1].sum(-2).sum(-1, keepdims=True),
    )


def test_not_implemented_entries_say_so():
    x = jnp.asarray(_rand(R, (4, 3)))
    with pytest.raises(jaxderiv.NotImplementedDerivative):
        jax.grad(lambda x: SEEDS.op("geqrf")(x)[0].sum())(x)
    a, tau = SEEDS.op("geqrf")(x)
    ta, ttau = torch.geqrf(_t(x))
    _close(a, _n(ta))
    _close(SEEDS.op("orgqr")(a, tau), _n(torch.linalg.householder_product(ta, ttau)))
    c = _rand(R, (4, 2))
    _close(SEEDS.op("ormqr")(a, tau, jnp.asarray(c), True, True), _n(torch.ormqr(ta, ttau, _t(c), True, True)))
    _close(SEEDS.op("linalg_lstsq")(x, jnp.asarray(c))[0], _n(torch.linalg.lstsq(_t(x), _t(c)).solution))


def test_pivots_and_info_get_no_gradient():
    assert SEEDS.op("_lu_with_info").output_differentiable(jnp.eye(3)) == (True, False, False)
    assert SEEDS.op("slogdet").output_differentiable(jnp.eye(3)) == (False, True)


def test_jit_and_vmap_on_each_subgroup():
    a = jnp.asarray(_wc(R, (2, 3, 3)))
    solve = SEEDS.op("triangular_solve")
    lu = SEEDS.op("_lu_with_info")
    subgroups = {  # products, inverses, factorizations, solves
        "mm": lambda m: SEEDS.op("mm")(m, m),
        "inverse": SEEDS.op("inverse"),
        "cholesky": lambda m: SEEDS.op("cholesky")(m @ m.T + 3 * jnp.eye(3)),
        "lu": lambda m: lu(m)[0],
        "triangular_solve": lambda m: solve(m[:, :2], jnp.tril(m), False)[0],
    }
    for name, f in subgroups.items():
        g = jax.jit(jax.grad(lambda m: jnp.sum(f(m) ** 2)))
        _close(jax.vmap(g)(a), jnp.stack([g(m) for m in a]))
    svd = SEEDS.op("svd")
    g = jax.jit(jax.vmap(jax.grad(lambda m: jnp.sum(svd(m)[1]))))
    _close(g(a), np.stack([np.linalg.svd(np.asarray(m))[0] @ np.linalg.svd(np.asarray(m))[2] for m in a]))


@pytest.mark.parametrize("shape", [(5, 0), (0, 5), (2, 0, 3), (0, 0)])
def test_geqrf_with_an_empty_dimension_has_torchs_empty_tau(shape):
    """min(m, n) = 0: no reflectors ("Need at least one array to stack" before)."""
    x = np.zeros(shape)
    for reg in (SEEDS, jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))):
        a, tau = reg.op("geqrf")(jnp.asarray(x))
        ta, ttau = aten.geqrf(torch.tensor(x))
        assert (a.shape, tau.shape, tau.dtype) == (tuple(ta.shape), tuple(ttau.shape), jnp.float64)


def test_geqrf_batched_matches_torch():
    """A batch of matrices: one reflector product per matrix (OpInfo's (2, 2, 5, 4) sample crashed)."""
    import torch

    a = np.random.default_rng(3).standard_normal((2, 2, 5, 4))
    qr, tau = SEEDS.op("geqrf")(jnp.asarray(a))
    qr_t, tau_t = torch.geqrf(torch.from_numpy(a))
    np.testing.assert_allclose(qr, qr_t.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tau, tau_t.numpy(), rtol=1e-10, atol=1e-12)


# ==================================================================================================
# torch's own cholesky_inverse (torch_registry: the spec torch 2.13 ships). The op database and
# tests/check/test_parity.py compare every entry of this family with torch on its record's samples;
# for cholesky_inverse under torch's file the jvp differs, as its record declares (torch 2.13's
# cholesky_inverse_jvp is not the derivative). This test adds the oracle that holds there:
# torch's backward formula transposed (torch.autograd.functional.jvp), which jaxderiv's jvp of
# torch's result formula (jaxderiv's cholesky_inverse_jvp helper) equals, for either triangle.
# ==================================================================================================


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_jvp_is_the_jvp_of_torchs_backward(torch_registry, upper):
    known = P.known_difference("cholesky_inverse", torch_spec=True)
    assert known is not None and "jvp" in known.columns  # else test_parity compares the jvp with torch.func.jvp
    rng = np.random.default_rng(4)
    factor = np.tril(0.3 * rng.normal(size=(3, 3)), -1) + np.diag(rng.uniform(1.0, 2.0, size=3))
    tangent = np.tril(rng.normal(size=(3, 3)))  # the factor's triangle is all the op reads
    factor, tangent = (factor.T, tangent.T) if upper else (factor, tangent)
    op = torch_registry.op("cholesky_inverse")
    _, ours = jax.jvp(lambda f: op(f, upper), (jnp.asarray(factor),), (jnp.asarray(tangent),))
    _, theirs = torch.autograd.functional.jvp(lambda f: aten.cholesky_inverse(f, upper), _t(factor), _t(tangent))
    _close(ours, _n(theirs))


# `_grouped_mm`'s layouts against torch are its record's `parity_samples` (forward/linalg.py:
# each operand layout, every group filled, as torch 2.13's CPU kernel needs), compared in float32
# as the record declares; torch 2.14.1's entry is only in the default spec, which the parity
# tests do not run, so this test runs the parity run's comparison on them.
GROUPED = opdb.record("_grouped_mm").parity_samples


@pytest.mark.parametrize("sample", GROUPED, ids=[s.label for s in GROUPED])
def test_grouped_mm_matches_torchs_values_and_gradients(sample):
    """torch 2.14.1's `_grouped_mm` entry (mixture-of-experts products) against torch 2.13's CPU
    kernel and its autograd, float32: forward and both gradients from the spec's helpers."""
    assert len(GROUPED) == 4  # each operand layout ATen accepts
    row = P.compare_op(jaxderiv.default_registry().op("_grouped_mm"), [sample], [], [])
    assert row.forward is True and row.vjp is True and row.ok, row.note
    assert row.how.startswith("float32")


def test_grouped_mm_refuses_what_aten_refuses():
    op = jaxderiv.default_registry().op("_grouped_mm")
    a, b = jnp.ones((4, 4), jnp.float32), jnp.ones((2, 4, 8), jnp.float32)
    with pytest.raises(RuntimeError, match="offs is required"):
        op(a, b)
    with pytest.raises(RuntimeError, match="bias not supported"):
        op(a, b, jnp.array([2, 4], jnp.int32), jnp.ones((2, 8), jnp.float32))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_the_triangle_lapack_reads(upper):
    """ATen's potrf reads the lower triangle, or the upper one with upper=True: on an input
    Hermitian only up to rounding (a float32 A Aᴴ) the two factors differ, and jaxderiv's is
    torch's (it read the lower triangle for both before the float32 OpInfo replay found it)."""
    rng = np.random.default_rng(40)
    a = rng.normal(size=(4, 4))
    a = a @ a.T + np.eye(4)
    a[0, 3] += 0.25  # the upper triangle states another matrix than the lower one
    for name in ("cholesky", "linalg_cholesky_ex"):
        got = np.asarray(jax.tree.leaves(jaxderiv.op(name)(jnp.asarray(a), upper=upper))[0])
        want = getattr(torch.ops.aten, name)(torch.from_numpy(a), upper=upper)
        want = want[0] if isinstance(want, tuple) else want
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-13, atol=1e-13)
