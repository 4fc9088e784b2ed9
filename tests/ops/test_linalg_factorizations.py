"""torch 2.13's own linalg factorization entries (`_linalg_det`, `linalg_lu`, `_linalg_eigh`...)
built from torch's derivatives.yaml, against torch 2.13: forward values, vjp and jvp.

Gauge-dependent outputs (eigenvectors, singular vectors) are compared through gauge-invariant
functions: squared moduli of the vectors, and U Vh. For complex inputs
jax_vjp(ct) == conj(torch_grad(conj(ct))). Edge inputs: singular and 0x0 matrices for det,
the zero vector and ties for vector norms, wide and tall LU, vector right-hand sides.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from torch_oracle import to_numpy, to_torch

from jaxderiv import Registry, load_spec
from jaxderiv.check import check_all
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


@dataclasses.dataclass
class Case:
    name: str
    args: tuple  # positional arguments, in schema order
    kwargs: dict = dataclasses.field(default_factory=dict)
    diff: tuple = (0,)  # positions of the differentiable tensor arguments
    outs: tuple = (0,)  # the outputs compared (differentiable ones)
    post: object = None  # gauge-invariant function of the compared outputs, on either side
    tangents: object = None  # projection of input directions (one triangle, Hermitian)
    label: str = ""
    rtol: float = 1e-8  # float32 inputs: a few ulps (ATen rounds its float64 scale to float32 first)

    @property
    def id(self):
        return self.name + (f"[{self.label}]" if self.label else "")


def _compare(op, case: Case, rtol=1e-8, atol=1e-10):
    """Forward values, vjp and jvp of jaxderiv's op against torch's, on case's inputs."""
    post = case.post or (lambda ys: ys)
    torch_fn = _torch_op(case.name)

    def pick(ys):
        ys = ys if isinstance(ys, (tuple, list)) else (ys,)
        return tuple(post([ys[k] for k in case.outs]))

    def ours(*xs):
        args = list(case.args)
        for i, x in zip(case.diff, xs):
            args[i] = x
        return pick(op(*args, **case.kwargs))

    def theirs(*xs):
        args = [to_torch(a) for a in case.args]
        for i, x in zip(case.diff, xs):
            args[i] = x
        return pick(torch_fn(*args, **{k: to_torch(v) for k, v in case.kwargs.items()}))

    rng = np.random.default_rng(3)
    xs = [jnp.asarray(case.args[i]) for i in case.diff]
    ys, pullback = jax.vjp(ours, *xs)
    txs = [to_torch(case.args[i]).requires_grad_() for i in case.diff]
    tys = theirs(*txs)
    for y, t in zip(ys, tys):
        np.testing.assert_allclose(np.asarray(y), to_numpy(t), rtol=rtol, atol=atol)
    cts = [_rand(rng, np.shape(y), np.asarray(y).dtype) for y in ys]
    grads = pullback(tuple(jnp.asarray(c) for c in cts))
    tgrads = torch.autograd.grad(tys, txs, [to_torch(np.conj(c)) for c in cts], allow_unused=True)
    tgrads = [np.zeros(x.shape, x.dtype) if t is None else np.conj(to_numpy(t)) for t, x in zip(tgrads, xs)]
    project = case.tangents or (lambda vs: vs)
    for g, t in zip(project([np.asarray(g) for g in grads]), project(tgrads)):
        np.testing.assert_allclose(g, t, rtol=rtol, atol=atol)
    ts = project([_rand(rng, np.shape(x), np.asarray(x).dtype) for x in xs])
    _, ours_t = jax.jvp(ours, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    _, their_t = torch.func.jvp(
        theirs, tuple(to_torch(case.args[i]) for i in case.diff), tuple(to_torch(t) for t in ts)
    )
    for o, t in zip(ours_t, their_t):
        np.testing.assert_allclose(np.asarray(o), to_numpy(t), rtol=rtol, atol=atol)


def _tri(rng, n, upper, dtype=np.float64):
    low = np.tril(0.3 * _rand(rng, (n, n), dtype), -1) + np.diag(rng.uniform(1.5, 2.5, n))
    return _mH(low) if upper else low


def _lu(a):
    lu, piv = torch.linalg.lu_factor(torch.from_numpy(a))
    return lu.numpy(), piv.numpy()


def _hermitian_spread(rng, n, dtype):
    q = np.linalg.qr(_rand(rng, (n, n), dtype))[0]
    return (q * (np.arange(n) - 1.0)) @ _mH(q)


def _eig_invariants(ys):
    return [ys[0], _sq(ys[1])] if len(ys) == 2 else ys


def _hermitian(vs):
    return [(v + np.conj(np.swapaxes(v, -1, -2))) / 2 for v in vs]


def _in_triangle(upper, unit=False):
    k = 1 if unit else 0
    return lambda vs: [np.triu(vs[0], k) if upper else np.tril(vs[0], -k), *vs[1:]]


R = np.random.default_rng(0)
_SINGULAR = _wc(R, (3, 3))
_SINGULAR[1] = 0
_RANK1 = np.outer(_rand(R, 3), _rand(R, 3))
_LU_SQ, _PIV_SQ = _lu(_wc(R, (2, 3, 3)))
_LU_C, _PIV_C = _lu(_wc(R, (3, 3), C128))
CASES = [
    Case("_linalg_det", (_wc(R, (2, 3, 3)),), label="batched"),
    Case("_linalg_det", (_wc(R, (3, 3), C128),), label="complex"),
    Case("_linalg_slogdet", (-_wc(R, (2, 3, 3)),), outs=(1,), label="negative det"),
    Case("_linalg_slogdet", (_wc(R, (3, 3), C128),), outs=(0, 1), label="complex sign and logabsdet"),
    Case("linalg_matrix_exp", (_rand(R, (2, 3, 3), C128),), label="batched complex"),
    Case(
        "linalg_solve_triangular",
        (_tri(R, 3, True), _rand(R, (2, 3, 2))),
        {"upper": True},
        diff=(0, 1),
        tangents=_in_triangle(True),
        label="upper left, batch broadcast",
    ),
    Case(
        "linalg_solve_triangular",
        (_tri(R, 3, False, C128), _rand(R, (2, 3), C128)),
        {"upper": False, "left": False, "unitriangular": True},
        diff=(0, 1),
        tangents=_in_triangle(False, True),
        label="lower right unitriangular complex",
    ),
    Case("_linalg_solve_ex", (_wc(R, (3, 3)), _rand(R, (2, 3, 2))), diff=(0, 1), label="batch broadcast"),
    Case(
        "_linalg_solve_ex", (_wc(R, (2, 3, 3), C128), _rand(R, (2, 3), C128)), diff=(0, 1), label="vector rhs complex"
    ),
    Case("_linalg_solve_ex", (_wc(R, (3, 3)), _rand(R, (2, 3))), {"left": False}, diff=(0, 1), label="right"),
    Case("linalg_lu_factor_ex", (_wc(R, (2, 3, 3)),), label="square"),
    Case("linalg_lu_factor_ex", (_wc(R, (3, 5), C128),), label="wide complex"),
    Case("linalg_lu_factor_ex", (_wc(R, (5, 3)),), label="tall"),
    Case("linalg_lu", (_wc(R, (3, 5)),), outs=(1, 2), label="wide"),
    Case("linalg_lu", (_wc(R, (2, 5, 3), C128),), outs=(1, 2), label="tall complex"),
    *[
        Case(
            "linalg_lu_solve",
            (_LU_SQ, _PIV_SQ, _rand(R, (2, 3, 2) if left else (2, 2, 3))),
            {"left": left, "adjoint": adj},
            diff=(0, 2),
            label=f"left={left} adjoint={adj}",
        )
        for left, adj in [(True, False), (False, True)]
    ],
    Case(
        "linalg_lu_solve",
        (_LU_C, _PIV_C, _rand(R, (3, 2), C128)),
        {"adjoint": True},
        diff=(0, 2),
        label="complex adjoint",
    ),
    Case("linalg_vector_norm", (_rand(R, (2, 3, 2), C128), 3.5, [-1, 0], True), label="complex ord 3.5 negative dims"),
    Case("linalg_vector_norm", (np.array([[0.0, 0.0], [1.0, -2.0]]), 2, [1]), label="zero row (kink)"),
    Case(
        "linalg_vector_norm", (np.array([[0.0, 1.0, -3.0], [3.0, -3.0, 1.0]]), 1, [1]), label="ord 1 with a zero (kink)"
    ),
    Case(
        "linalg_vector_norm", (np.array([[3.0, -3.0, 1.0], [0.5, 2.0, 0.0]]), float("inf"), [1]), label="ord inf ties"
    ),
    Case(
        "linalg_vector_norm", (np.array([[3.0, -3.0, 1.0], [0.5, 2.0, 0.0]]), float("-inf")), label="ord -inf at a zero"
    ),
    Case("linalg_vector_norm", (np.array([0.0, 1.5, -2.0]), 0.5), label="ord 0.5 with a zero (kink)"),
    Case("linalg_vector_norm", (np.array([0.0, 1.5, -2.0]), 0), label="ord 0"),
    Case("linalg_vector_norm", (np.array(-1.5),), label="0-d"),
    Case(
        "linalg_vector_norm",
        (_rand(R, (2, 3)).astype(np.float32), 2, None, False),
        {"dtype": np.dtype(np.float64)},
        label="dtype float64",
        rtol=1e-6,
    ),
    Case(
        "_linalg_eigh",
        (_hermitian_spread(R, 3, np.float64),),
        outs=(0, 1),
        post=_eig_invariants,
        tangents=_hermitian,
        label="L",
    ),
    Case(
        "_linalg_eigh",
        (np.triu(_hermitian_spread(R, 3, C128)), "U"),
        outs=(0, 1),
        post=_eig_invariants,
        label="U reads one triangle",
        tangents=lambda vs: [np.triu(v) + np.conj(np.triu(v, 1)).T for v in vs],
    ),
    Case(
        "linalg_eig",
        (
            (np.eye(3) + 0.3 * _rand(R, (3, 3)))
            @ np.diag([-1.0, 0.5, 2.0])
            @ np.linalg.inv(np.eye(3) + 0.3 * _rand(R, (3, 3))),
        ),
        outs=(0, 1),
        post=_eig_invariants,
        label="real input",
    ),
    Case("linalg_eig", (_rand(R, (2, 3, 3), C128),), outs=(0, 1), post=_eig_invariants, label="complex batched"),
    Case("linalg_eig", (np.array([[0.0, -2.0], [1.0, 0.5]]),), outs=(0,), label="complex pair of a real matrix"),
    Case("linalg_pinv.atol_rtol_tensor", (_rand(R, (2, 3, 4)),), label="wide"),
    Case("linalg_pinv.atol_rtol_tensor", (_rand(R, (4, 3), C128),), label="tall complex"),
    Case(
        "linalg_pinv.atol_rtol_tensor",
        (np.diag([3.0, 1.0, 0.2]) @ _rand(R, (3, 4)),),
        {"atol": np.array(0.5)},
        label="atol drops a value",
    ),
    Case(
        "linalg_pinv.atol_rtol_tensor",
        (np.diag([3.0, 1.0, 0.2]) @ _rand(R, (3, 4)),),
        {"rtol": np.array(0.2)},
        label="rtol drops a value",
    ),
    Case(
        "linalg_pinv.atol_rtol_tensor",
        (_hermitian_spread(R, 3, np.float64) + 0.3 * np.eye(3),),
        {"hermitian": True},
        tangents=_hermitian,
        label="hermitian",
    ),
]


@pytest.mark.parametrize("name", NAMES)
def test_entry_builds_from_torchs_file(registry, name):
    assert registry.op(name).formulas["vjp"].startswith("backward formula")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_against_torch(registry, case):
    _compare(registry.op(case.name), case, rtol=case.rtol)


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

    for a, full in [
        (_rand(rng, (2, 4, 3)), False),
        (_rand(rng, (3, 5), C128), False),
        (_rand(rng, (3, 3)), True),
        (_rand(rng, (4, 3)), True),
    ]:
        _compare(op, Case("_linalg_svd", (a, full), outs=(0, 1, 2), post=invariants))
    # S alone (torch.linalg.svdvals differentiates through this entry)
    _compare(op, Case("_linalg_svd", (_rand(rng, (4, 3)),), outs=(1,)))


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
