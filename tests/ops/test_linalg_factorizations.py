"""torch 2.13's own linalg factorization entries (`_linalg_det`, `linalg_lu`, `_linalg_eigh`...)
built from torch's derivatives.yaml, against torch 2.13: what tests/check/test_parity.py does not compare.

The op database (forward/linalg_factorizations.py) holds their samples, real and
complex: batched, broadcast, wide and tall, vector right-hand sides, every `left` / `adjoint` /
`upper` / `unitriangular` form, Hermitian inputs, with gauge-invariant functions of the outputs
(`Sample.outputs`: eigenvalues and squared moduli of eigenvectors, S, |U|², |Vh|² and U Vh) and
admissible input directions (`Sample.tangents`: one triangle, Hermitian); and the vector norm's
kinks (the zero vector, zeros for ord < 2, ties of the +-inf norms, ord 0, a 0-d input).
test_parity compares every one of them with torch (forward values and dtypes, vjp, jvp; for
complex inputs jax_vjp(ct) == conj(torch_grad(conj(ct)))). This module adds: the entries build
from torch's file; inputs the records cannot hold (keyword-only dtype / atol / rtol, a float32
input, eigh reading one triangle of a non-Hermitian array), compared the same way; ATen's
auxiliary outputs; det at singular and 0x0 matrices; block_diag's degenerate inputs; refusals;
svd through its gauge-invariant functions; a wrong formula caught by the checker.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from torch_oracle import to_numpy, to_torch

from jaxderiv import Registry, load_spec
from jaxderiv.check import check_all
from jaxderiv.check import parity as P
from jaxderiv.check.parity import compare_op
from jaxderiv.records import Sample
from jaxderiv.errors import NotImplementedDerivative
from jaxderiv.check.mutate import entry_yaml

torch = pytest.importorskip("torch")
aten = torch.ops.aten
C128 = np.complex128
NAMES = [
    "_linalg_det",
    "_linalg_slogdet",
    "block_diag",
    "linalg_matrix_exp",
    "linalg_solve_triangular",
    "_linalg_solve_ex",
    "linalg_lu_factor_ex",
    "linalg_lu",
    "linalg_lu_solve",
    "linalg_vector_norm",
    "_linalg_svd",
    "_linalg_eigh",
    "linalg_eig",
    "linalg_pinv.atol_rtol_tensor",
]


@pytest.fixture(scope="module")
def registry():
    return Registry(load_spec(from_torch=True))


def _rand(rng, shape, dtype=np.float64):
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return np.asarray(x, dtype)


def _wc(rng, shape, dtype=np.float64):
    return 0.3 * _rand(rng, shape, dtype) + 2 * np.eye(shape[-2], shape[-1])


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _sq(x):
    return x * x.conj()


def _torch_op(name):
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


def _hermitian_spread(rng, n, dtype):
    q = np.linalg.qr(_rand(rng, (n, n), dtype))[0]
    return (q * (np.arange(n) - 1.0)) @ _mH(q)


def _eig_invariants(ys):
    return [ys[0], _sq(ys[1])]


R = np.random.default_rng(0)
_SINGULAR = _wc(R, (3, 3))
_SINGULAR[1] = 0
_RANK1 = np.outer(_rand(R, 3), _rand(R, 3))
_DROPS = np.diag([3.0, 1.0, 0.2]) @ _rand(R, (3, 4))  # singular values near 3, 1, 0.2
# Inputs the op records cannot hold. A kink tuple is positional, and these need keyword-only
# arguments (dtype, atol, rtol); a checker sample must be one that JAX's autodiff and finite
# differences can judge, and these are not: torch's pinv formula is the derivative of A's
# Moore-Penrose inverse, not of the truncated one atol / rtol make, and JAX's autodiff of eigh
# symmetrizes A, where UPLO="U" leaves the lower triangle unread.
BEYOND_RECORDS = [
    (
        "linalg_vector_norm",
        Sample(
            (_rand(R, (2, 3)).astype(np.float32), 2, None, False),
            {"dtype": np.dtype(np.float64)},
            "float32, dtype float64",
        ),
    ),
    ("linalg_pinv.atol_rtol_tensor", Sample((_DROPS,), {"atol": np.array(0.5)}, "atol drops a singular value")),
    ("linalg_pinv.atol_rtol_tensor", Sample((_DROPS,), {"rtol": np.array(0.2)}, "rtol drops a singular value")),
    (
        "_linalg_eigh",
        Sample(
            (np.triu(_hermitian_spread(R, 3, C128)), "U"),
            label="U reads one triangle (the lower one zero), complex",
            outputs=_eig_invariants,
            tangents=lambda vs: [np.triu(v) + np.conj(np.triu(v, 1)).T for v in vs],
        ),
    ),
]


@pytest.mark.parametrize("name", NAMES)
def test_entry_builds_from_torchs_file(registry, name):
    assert registry.op(name).formulas["vjp"].startswith("backward formula")


def _agrees(row):
    return row.ok and row.forward is True and row.vjp is True and row.jvp is True


@pytest.mark.parametrize("name, sample", BEYOND_RECORDS, ids=[f"{n}[{s.label}]" for n, s in BEYOND_RECORDS])
def test_against_torch_beyond_the_records(registry, name, sample):
    """test_parity's comparison (forward values and dtypes, vjp, jvp; gauge-invariant outputs and
    admissible directions where the sample says) on inputs the records cannot hold. float32
    input: torch's tangent stays float32 (and ATen rounds its float64 scale to float32 first):
    compared at parity's float32 tolerance."""
    float32 = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in sample.args)
    row = compare_op(registry.op(name), [sample], [], [], rtol=P.RTOL32 if float32 else None)
    assert _agrees(row), row.note


def test_auxiliary_outputs_are_atens(registry):
    """The LU, pivots and info ATen returns beside the result: a real A's det factors Aᵀ."""
    a = _wc(np.random.default_rng(1), (2, 3, 3))
    for name in ("_linalg_det", "_linalg_slogdet", "linalg_lu_factor_ex", "linalg_lu"):
        ours, theirs = registry.op(name)(jnp.asarray(a)), _torch_op(name)(to_torch(a))
        for o, t in zip(ours, theirs):
            assert np.asarray(o).dtype == to_numpy(t).dtype, name
            np.testing.assert_allclose(np.asarray(o), to_numpy(t), atol=1e-12)
    ours, theirs = (
        registry.op("_linalg_solve_ex")(jnp.asarray(a), jnp.asarray(a[0])),
        aten._linalg_solve_ex(to_torch(a), to_torch(a[0])),
    )
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), to_numpy(t), atol=1e-12)


def _cofactors(a):
    n = a.shape[-1]
    return np.array(
        [[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)] for i in range(n)]
    )


@pytest.mark.parametrize("a", [_SINGULAR, _RANK1], ids=["zero row", "rank 1"])
def test_det_at_a_singular_matrix_is_the_cofactor_matrix(registry, a):
    """At a singular A, linalg_det_backward's SVD branch gives the cofactor matrix (zero when the
    rank is below n - 1). torch 2.13 takes that branch only when its backward is differentiable
    (create_graph=True); its first-order backward solves with the LU factors and returns zeros."""
    ours = jax.vjp(lambda x: registry.op("_linalg_det")(x)[0], jnp.asarray(a))[1](jnp.ones(()))[0]
    leaf = to_torch(a).requires_grad_()
    (theirs,) = torch.autograd.grad(aten._linalg_det(leaf)[0], leaf, create_graph=True)
    np.testing.assert_allclose(np.asarray(ours), to_numpy(theirs), atol=1e-12)
    np.testing.assert_allclose(np.asarray(ours), _cofactors(a), atol=1e-12)
    (first_order,) = torch.autograd.grad(aten._linalg_det(leaf)[0], leaf)
    np.testing.assert_allclose(to_numpy(first_order), np.zeros_like(a), atol=1e-12)


def test_empty_and_degenerate_inputs(registry):
    """0x0 determinants are 1 (gradient 0x0); block_diag of a 0-d, an empty and an int input."""
    det = registry.op("_linalg_det")
    value, grad = jax.value_and_grad(lambda a: det(a)[0])(jnp.zeros((0, 0)))
    assert float(value) == 1.0 and grad.shape == (0, 0)
    parts = [np.array(2), np.zeros((0, 2)), np.array([1, 2]), np.array([[1.5]], np.float32)]
    ours, theirs = (
        registry.op("block_diag")([jnp.asarray(p) for p in parts]),
        aten.block_diag([to_torch(p) for p in parts]),
    )
    assert np.asarray(ours).dtype == to_numpy(theirs).dtype
    np.testing.assert_array_equal(np.asarray(ours), to_numpy(theirs))


def test_block_diag_gradients(registry):
    """Each input gets its own block of the gradient, a real input the real part of a complex one."""
    rng = np.random.default_rng(2)
    parts = [_rand(rng, (2, 3)), _rand(rng, ()), _rand(rng, (2,), C128), _rand(rng, (0, 2)), _rand(rng, (1, 2))]
    op = registry.op("block_diag")
    y, pullback = jax.vjp(lambda *xs: op(list(xs)), *[jnp.asarray(p) for p in parts])
    leaves = [to_torch(p).requires_grad_() for p in parts]
    ty = aten.block_diag(leaves)
    np.testing.assert_allclose(np.asarray(y), to_numpy(ty))
    ct = _rand(rng, y.shape, C128)
    for g, t in zip(pullback(jnp.asarray(ct)), torch.autograd.grad(ty, leaves, to_torch(np.conj(ct)))):
        np.testing.assert_allclose(np.asarray(g), np.conj(to_numpy(t)))
    ts = [_rand(rng, p.shape, p.dtype) for p in parts]
    _, ours_t = jax.jvp(
        lambda *xs: op(list(xs)), tuple(jnp.asarray(p) for p in parts), tuple(jnp.asarray(t) for t in ts)
    )
    _, their_t = torch.func.jvp(
        lambda *xs: aten.block_diag(list(xs)), tuple(to_torch(p) for p in parts), tuple(to_torch(t) for t in ts)
    )
    np.testing.assert_allclose(np.asarray(ours_t), to_numpy(their_t))


@pytest.mark.parametrize(
    "name, args",
    [
        ("_linalg_det", (np.eye(2, dtype=np.int64),)),
        ("linalg_vector_norm", (np.arange(3),)),
        ("_linalg_det", (np.ones((2, 3)),)),
    ],
)
def test_invalid_inputs_raise_as_in_torch(registry, name, args):
    with pytest.raises(RuntimeError):
        _torch_op(name)(*[to_torch(a) for a in args])
    with pytest.raises(RuntimeError):
        registry.op(name)(*[jnp.asarray(a) for a in args])


def test_a_vector_right_hand_side_is_a_column(registry):
    """ATen reads a 1-d B as a column: X A = b fails in both."""
    a, b = _wc(np.random.default_rng(6), (3, 3)), np.ones(3)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        aten._linalg_solve_ex(to_torch(a), to_torch(b), left=False)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        registry.op("_linalg_solve_ex")(jnp.asarray(a), jnp.asarray(b), left=False)


def test_eigenvalues_alone_have_no_derivative_as_in_torch(registry):
    """_linalg_eigh(compute_v=False): the values agree, and the formula, which needs the
    eigenvectors, raises as torch's does."""
    a = _hermitian_spread(np.random.default_rng(7), 3, np.float64)
    op = registry.op("_linalg_eigh")
    np.testing.assert_allclose(
        np.asarray(op(jnp.asarray(a), "L", False)[0]),
        to_numpy(aten._linalg_eigh(to_torch(a), "L", False)[0]),
        atol=1e-12,
    )
    with pytest.raises(NotImplementedDerivative):
        jax.grad(lambda x: op(x, "L", False)[0].sum())(jnp.asarray(a))
    leaf = to_torch(a).requires_grad_()
    with pytest.raises(RuntimeError):
        aten._linalg_eigh(leaf, "L", False)[0].sum().backward()


def _torch_entry(name):
    return load_spec(from_torch=True)[name]


def test_svd_through_gauge_invariant_functions(registry):
    """_linalg_svd's formulas (6-argument svd_backward, linalg_svd_jvp) against torch, through
    S, |U|², |Vh|² and U Vh (invariant under the joint phase of u_i and v_i only). Its formula
    names the gradients grad_U, grad_S, grad_Vh: every output is differentiable."""
    op = registry.op("_linalg_svd")
    assert op.output_differentiable(jnp.eye(3)) == (True, True, True)
    rng = np.random.default_rng(4)

    def invariants(ys):
        U, S, Vh = ys
        k = S.shape[-1]
        return [S, _sq(U[..., :k]), _sq(Vh[..., :k, :]), U[..., :k] @ Vh[..., :k, :]]

    samples = [
        Sample((a, full), outputs=invariants, label=f"{a.shape} full_matrices={full}")
        for a, full in [
            (_rand(rng, (2, 4, 3)), False),
            (_rand(rng, (3, 5), C128), False),
            (_rand(rng, (3, 3)), True),
            (_rand(rng, (4, 3)), True),
        ]
    ]
    # S alone (torch.linalg.svdvals differentiates through this entry)
    samples.append(Sample((_rand(rng, (4, 3)),), outputs=lambda ys: [ys[1]], label="S alone"))
    row = compare_op(op, samples, [], [])
    assert _agrees(row), row.note


def test_seed_spelling_of_slogdet_backward_is_unchanged():
    """The seed's 4-argument slogdet_backward (one gradient, of logabsdet) beside torch's 6-argument one."""
    import jaxderiv

    a = _wc(np.random.default_rng(5), (3, 3))
    g = jax.grad(lambda x: jaxderiv.op("slogdet")(x)[1])(jnp.asarray(a))
    np.testing.assert_allclose(np.asarray(g), np.linalg.inv(a).T, rtol=1e-12)


@pytest.mark.parametrize(
    "name, key, wrong",
    [
        ("_linalg_slogdet", "A", "slogdet_backward(grad_sign, grad_logabsdet, A, sign, LU, pivots).conj()"),
        ("linalg_vector_norm", "result", "linalg_vector_norm_jvp(self_p, self_t, 2, result, dim, keepdim)"),
    ],
)
def test_a_wrong_formula_is_caught(tmp_path, name, key, wrong):
    """The checker passes the entry as torch ships it and fails an edited formula."""
    entry = _torch_entry(name)
    right, bad = tmp_path / "right_v2_13.yaml", tmp_path / "wrong_v2_13.yaml"
    right.write_text(entry_yaml(entry))
    bad.write_text(entry_yaml(entry, {key: wrong}))
    mode = "jvp" if key == "result" else "vjp"
    assert {r.status for r in check_all(str(right), ops=[name], modes=[mode]).rows} == {"passed"}
    assert [r.status for r in check_all(str(bad), ops=[name], modes=[mode]).rows] == ["failed"]


# -- torch 2.14's linalg_polar and linalg_matrix_sqrth (torch 2.13, the oracle here, lacks them) ---
def _newest_entry(name):
    from jaxderiv.spec import load_spec as load, newest_spec_file

    return load(newest_spec_file())[name]


@pytest.mark.parametrize("shape, dtype", [((3, 3), np.float64), ((2, 4, 3), np.float64), ((3, 3), C128)])
def test_polar_factors_match_scipys(shape, dtype):
    """A = U H, U with orthonormal columns, H Hermitian positive semi-definite: scipy.linalg.polar's."""
    import jaxderiv
    import scipy.linalg

    a = _rand(np.random.default_rng(1), shape, dtype)
    U, H = jaxderiv.default_registry().op("linalg_polar")(jnp.asarray(a))
    for k in np.ndindex(shape[:-2]):
        u, h = scipy.linalg.polar(a[k])
        np.testing.assert_allclose(np.asarray(U)[k], u, atol=1e-12)
        np.testing.assert_allclose(np.asarray(H)[k], h, atol=1e-12)


def test_matrix_sqrth_matches_scipys_sqrtm_and_reads_the_lower_triangle():
    import jaxderiv
    import scipy.linalg

    rng = np.random.default_rng(2)
    q = np.linalg.qr(_rand(rng, (4, 4), C128))[0]
    a = (q * np.array([0.5, 1.0, 2.0, 4.0])) @ q.conj().T
    op = jaxderiv.default_registry().op("linalg_matrix_sqrth")
    np.testing.assert_allclose(np.asarray(op(jnp.asarray(a))), scipy.linalg.sqrtm(a), atol=1e-12)
    upper_ignored = np.tril(a) + np.triu(np.full((4, 4), 7.0), 1)
    np.testing.assert_allclose(np.asarray(op(jnp.asarray(upper_ignored))), scipy.linalg.sqrtm(a), atol=1e-12)


@pytest.mark.parametrize(
    "name, key, wrong",
    [
        ("linalg_polar", "A", "linalg_polar_backward(grad_U, grad_H, A, U, H) * 2"),
        ("linalg_polar", "U, H", "linalg_polar_jvp(A_t.mT(), A_p, U, H)"),
        ("linalg_matrix_sqrth", "self", "linalg_matrix_sqrth_differential(self, grad.mT())"),
        ("linalg_matrix_sqrth", "result", "linalg_matrix_sqrth_differential(self_p, self_t) * 0.5"),
    ],
)
def test_torch_2_14s_polar_and_sqrth_formulas_pass_and_a_wrong_one_fails(tmp_path, name, key, wrong):
    """torch 2.14.1's entries (helpers from the matrix calculus, torch's source not shipped in the
    wheel) pass the checker in the edited mode, on real and complex inputs; an edited formula fails."""
    entry = _newest_entry(name)
    right, bad = tmp_path / "right.yaml", tmp_path / "wrong.yaml"
    right.write_text(entry_yaml(entry))
    bad.write_text(entry_yaml(entry, {key: wrong}))
    mode = "vjp" if key in ("A", "self") else "jvp"
    assert {r.status for r in check_all(str(right), ops=[name], modes=[mode]).rows} == {"passed"}
    assert "failed" in {r.status for r in check_all(str(bad), ops=[name], modes=[mode]).rows}
