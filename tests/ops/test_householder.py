"""Householder products, ormqr, linalg_lstsq and linalg_qr's helpers under torch 2.13's own spec,
against torch 2.13: values, vjp (jax_vjp(ct) == conj(torch_grad(conj(ct)))) and jvp, real and
complex, batched, with the edge inputs the ops allow (no reflectors, vector right-hand sides,
wide systems, every lstsq driver), and a wrong formula that the checker catches."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, check_all, load_spec
from jaxderiv.forward.householder import linalg_qr
from jaxderiv.helpers.householder import linalg_qr_backward, linalg_qr_jvp

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, random_like, to_numpy, to_torch  # noqa: E402

TORCH_SPEC = load_spec(from_torch=True)
REGISTRY = Registry(TORCH_SPEC)
C128 = np.complex128


def _rand(rng, shape, dtype=np.float64):
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _geqrf(rng, shape, dtype):
    a, tau = torch.geqrf(to_torch(_rand(rng, shape, dtype)))
    return to_numpy(a), to_numpy(tau)


def _as_tuple(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _compare(name, torch_fn, args, diff, outputs=None, kwargs=None, rtol=1e-9, atol=1e-11, jvp=True):
    """Forward values, vjp and jvp of REGISTRY.op(name)(*args) in the inputs at `diff` against
    torch_fn; `outputs` picks the outputs compared (the differentiable ones)."""
    op = REGISTRY.op(name)
    rng = np.random.default_rng(3)

    def call(fn, convert, xs):
        full = [convert(a) if isinstance(a, np.ndarray) else a for a in args]
        for i, x in zip(diff, xs):
            full[i] = x
        ys = _as_tuple(fn(*full, **(kwargs or {})))
        return tuple(ys[j] for j in (outputs or range(len(ys))))

    xs = [jnp.asarray(args[i]) for i in diff]
    ours, pullback = jax.vjp(lambda *xs: call(op, jnp.asarray, xs), *xs)
    txs = [to_torch(args[i]).requires_grad_() for i in diff]
    theirs = call(torch_fn, to_torch, txs)
    for y, t in zip(ours, theirs):
        assert_same(y, to_numpy(t), rtol, atol)
    cts = [random_like(rng, y) for y in ours]
    grads = pullback(tuple(jnp.asarray(c, y.dtype) for c, y in zip(cts, ours)))
    pairs = [(t, c) for t, c in zip(theirs, cts) if t.requires_grad and t.numel()]
    t_grads = torch.autograd.grad(
        [t for t, _ in pairs], txs, [to_torch(np.conj(c)).to(t.dtype) for t, c in pairs], allow_unused=True
    )
    for g, tg, x in zip(grads, t_grads, xs):
        expected = np.zeros(x.shape, x.dtype) if tg is None else np.conj(to_numpy(tg))
        assert_same(g, expected, rtol, atol)
    if jvp:
        tangents = [random_like(rng, x).astype(x.dtype) for x in xs]
        _, ours_t = jax.jvp(lambda *xs: call(op, jnp.asarray, xs), tuple(xs), tuple(map(jnp.asarray, tangents)))
        _, theirs_t = torch.func.jvp(
            lambda *xs: call(torch_fn, to_torch, xs),
            tuple(to_torch(x) for x in map(np.asarray, xs)),
            tuple(map(to_torch, tangents)),
        )
        for y, t in zip(ours_t, theirs_t):
            assert_same(y, to_numpy(t), rtol, atol)


# -- linalg_householder_product --------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, k, dtype", [((4, 3), 3, np.float64), ((2, 5, 3), 3, C128), ((5, 3), 2, np.float64), ((3, 3), 3, C128)]
)
def test_householder_product_matches_torch(shape, k, dtype):
    a, tau = _geqrf(np.random.default_rng(0), shape, dtype)
    _compare("linalg_householder_product", torch.linalg.householder_product, [a, tau[..., :k]], [0, 1])


def test_householder_product_without_reflectors_is_the_identity():
    a = np.random.default_rng(1).normal(size=(4, 3))
    op = REGISTRY.op("linalg_householder_product")
    assert_same(
        op(jnp.asarray(a), jnp.zeros((0,))),
        to_numpy(torch.linalg.householder_product(to_torch(a), torch.zeros(0, dtype=torch.float64))),
    )
    grads = jax.grad(lambda a, t: op(a, t).sum(), (0, 1))(jnp.asarray(a), jnp.zeros((0,)))
    assert np.all(np.asarray(grads[0]) == 0) and grads[1].shape == (0,)


def test_householder_product_refuses_more_reflectors_than_columns():
    with pytest.raises(RuntimeError):
        REGISTRY.op("linalg_householder_product")(jnp.ones((4, 2)), jnp.ones(3))
    with pytest.raises(RuntimeError):
        torch.linalg.householder_product(torch.ones(4, 2, dtype=torch.float64), torch.ones(3, dtype=torch.float64))


# -- ormqr -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, C128])
@pytest.mark.parametrize("left, transpose", [(True, False), (True, True), (False, False), (False, True)])
def test_ormqr_matches_torch(left, transpose, dtype):
    """torch has no forward-mode ormqr formula: the jvp (the transposed backward formula) is
    checked against torch's reverse mode through the adjoint identity instead."""
    rng = np.random.default_rng(2)
    a, tau = _geqrf(rng, (2, 5, 3), dtype)
    other = _rand(rng, (2, 5, 2) if left else (2, 2, 5), dtype)
    args = [a, tau, other, left, transpose]
    _compare("ormqr", torch.ormqr, args, [0, 1, 2], jvp=False)
    op = REGISTRY.op("ormqr")
    xs = tuple(map(jnp.asarray, (a, tau, other)))
    ts = tuple(jnp.asarray(random_like(rng, x)) for x in xs)
    ct = random_like(rng, np.asarray(op(*xs, left, transpose)))
    _, y_t = jax.jvp(lambda *xs: op(*xs, left, transpose), xs, ts)
    leaves = [to_torch(np.asarray(x)).requires_grad_() for x in xs]
    t_grads = torch.autograd.grad(torch.ormqr(*leaves, left, transpose), leaves, to_torch(ct))
    lhs = np.real(np.vdot(ct, np.asarray(y_t)))  # Re<ct, J t> == Σ Re<torch_grad_i, t_i>
    rhs = sum(np.real(np.vdot(to_numpy(g), np.asarray(t))) for g, t in zip(t_grads, ts))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9)


# -- linalg_lstsq ----------------------------------------------------------------------------


_LSTSQ_CASES = [
    ((4, 3), (4, 2), None),  # gelsy: no residuals, no singular values
    ((4, 3), (4, 2), "gelsd"),  # residuals, differentiable
    ((3, 5), (3, 2), "gelsd"),  # wide: minimum-norm solution, no residuals
    ((2, 4, 3), (2, 4), "gelss"),  # a batch of vectors
    ((4, 3), (4,), "gels"),  # one vector, no rank
    ((3, 3), (3, 2), None),
]


@pytest.mark.parametrize(
    "a_shape, b_shape, driver, dtype",
    [c + (np.float64,) for c in _LSTSQ_CASES] + [c + (C128,) for c in _LSTSQ_CASES[:3]],
)
def test_linalg_lstsq_matches_torch(a_shape, b_shape, driver, dtype):
    rng = np.random.default_rng(4)
    A, B = _rand(rng, a_shape, dtype), _rand(rng, b_shape, dtype)
    fn = lambda A, B, driver=None: tuple(torch.linalg.lstsq(A, B, driver=driver))
    _compare("linalg_lstsq", fn, [A, B], [0, 1], outputs=[0, 1], kwargs={"driver": driver})
    ours = REGISTRY.op("linalg_lstsq")(jnp.asarray(A), jnp.asarray(B), driver=driver)
    theirs = torch.linalg.lstsq(to_torch(A), to_torch(B), driver=driver)
    for y, t in zip(ours[2:], theirs[2:]):  # rank and singular values, as the driver fills them
        assert_same(y, to_numpy(t), 1e-9, 1e-11)


def test_linalg_lstsq_residual_gradient_alone():
    """A loss on the residuals only: 2 (gL r) Xᴴ and -2 gL r, as torch's formula says."""
    rng = np.random.default_rng(5)
    A, B = _rand(rng, (5, 2)), _rand(rng, (5, 3))
    op = REGISTRY.op("linalg_lstsq")
    grads = jax.grad(lambda A, B: op(A, B, driver="gelsd")[1].sum(), (0, 1))(jnp.asarray(A), jnp.asarray(B))
    tA, tB = to_torch(A).requires_grad_(), to_torch(B).requires_grad_()
    torch.linalg.lstsq(tA, tB, driver="gelsd").residuals.sum().backward()
    assert_same(grads[0], to_numpy(tA.grad), 1e-9, 1e-11)
    assert_same(grads[1], to_numpy(tB.grad), 1e-9, 1e-11)


def test_linalg_lstsq_under_jit_and_vmap():
    rng = np.random.default_rng(6)
    A, B = _rand(rng, (3, 4, 2)), _rand(rng, (3, 4, 2))
    op = REGISTRY.op("linalg_lstsq")
    f = jax.jit(jax.vmap(jax.grad(lambda A, B: op(A, B)[0].sum(), (0, 1))))
    gA, gB = f(jnp.asarray(A), jnp.asarray(B))
    tA, tB = to_torch(A).requires_grad_(), to_torch(B).requires_grad_()
    torch.linalg.lstsq(tA, tB).solution.sum().backward()
    assert_same(gA, to_numpy(tA.grad), 1e-9, 1e-11)
    assert_same(gB, to_numpy(tB.grad), 1e-9, 1e-11)


def test_linalg_lstsq_rejects_an_unknown_driver():
    with pytest.raises(RuntimeError, match="driver"):
        REGISTRY.op("linalg_lstsq")(jnp.ones((3, 2)), jnp.ones((3, 1)), driver="gesv")


# -- linalg_qr's forward and helpers ----------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, C128])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 3), (0, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_linalg_qr_forward_matches_torch(shape, mode, dtype):
    """LAPACK's signs (geqrf's R diagonal), and an empty Q in mode 'r'."""
    A = _rand(np.random.default_rng(9), shape, dtype)
    for ours, theirs in zip(linalg_qr(jnp.asarray(A), mode), torch.linalg.qr(to_torch(A), mode=mode)):
        assert_same(ours, to_numpy(theirs), 1e-9, 1e-12)


_QR_CASES = [
    (shape, mode, dtype, "both")
    for shape, mode in [
        ((4, 3), "reduced"),
        ((2, 3, 3), "reduced"),
        ((3, 5), "reduced"),
        ((3, 5), "complete"),
        ((3, 3), "complete"),
    ]
    for dtype in (np.float64, C128)
]
_QR_CASES += [(shape, "reduced", C128, which) for shape in ((4, 3), (3, 5)) for which in ("Q", "R")]


@pytest.mark.parametrize("shape, mode, dtype, which", _QR_CASES)
def test_linalg_qr_helpers_match_torch(shape, mode, dtype, which):
    """linalg_qr_backward and linalg_qr_jvp on torch's own Q and R, against torch's autograd."""
    rng = np.random.default_rng(7)
    A = _rand(rng, shape, dtype)
    tA = to_torch(A).requires_grad_()
    Q, R = torch.linalg.qr(tA, mode=mode)
    gQ = None if which == "R" else random_like(rng, to_numpy(Q))
    gR = None if which == "Q" else np.triu(random_like(rng, to_numpy(R)))
    outs = [(y, g) for y, g in ((Q, gQ), (R, gR)) if g is not None]
    (t_grad,) = torch.autograd.grad([y for y, _ in outs], [tA], [to_torch(g) for _, g in outs])
    ours = linalg_qr_backward(
        *(None if g is None else jnp.asarray(g) for g in (gQ, gR)),
        jnp.asarray(to_numpy(Q)),
        jnp.asarray(to_numpy(R)),
        mode,
    )
    assert_same(ours, to_numpy(t_grad), 1e-9, 1e-11)  # helpers take and give torch's convention
    dA = _rand(rng, shape, dtype)
    _, (dQ, dR) = torch.func.jvp(lambda A: torch.linalg.qr(A, mode=mode), (to_torch(A),), (to_torch(dA),))
    oQ, oR = linalg_qr_jvp(jnp.asarray(dA), jnp.asarray(to_numpy(Q)), jnp.asarray(to_numpy(R)), mode)
    assert_same(oQ, to_numpy(dQ), 1e-9, 1e-11)
    assert_same(oR, to_numpy(dR), 1e-9, 1e-11)


@pytest.mark.parametrize("shape, mode", [((4, 3), "r"), ((4, 3), "complete")])
def test_linalg_qr_helpers_refuse_where_torch_does(shape, mode):
    from jaxderiv.errors import NotImplementedDerivative

    A = np.random.default_rng(8).normal(size=shape)
    Q, R = torch.linalg.qr(to_torch(A).requires_grad_(), mode=mode)
    with pytest.raises(RuntimeError, match="differentiat|not differentiable"):
        R.sum().backward()
    k = min(shape)
    with pytest.raises(NotImplementedDerivative):
        linalg_qr_backward(None, jnp.ones(R.shape), jnp.ones((shape[0], k)), jnp.asarray(to_numpy(R)), mode)
    with pytest.raises(NotImplementedDerivative):
        linalg_qr_jvp(jnp.ones(shape), jnp.ones((shape[0], k)), jnp.asarray(to_numpy(R)), mode)


# -- the checker catches a wrong formula -------------------------------------------------------


@pytest.mark.parametrize(
    "name, key, formula, status",
    [
        (
            "linalg_householder_product",
            "input, tau",
            "householder_product_backward(grad, result, input, tau)",
            "passed",
        ),
        (
            "linalg_householder_product",
            "input, tau",
            "householder_product_backward(grad, result, input, tau * 2)",
            "failed",
        ),
        (
            "ormqr",
            "self, input2, input3",
            "ormqr_backward(grad, result, self, input2, input3, left, transpose, grad_input_mask)",
            "passed",
        ),
        (
            "ormqr",
            "self, input2, input3",
            "ormqr_backward(grad, result, self, input2, input3, left, !transpose, grad_input_mask)",
            "failed",
        ),
    ],
)
def test_checker_judges_the_reflector_formulas(write_spec, name, key, formula, status):
    """torch's formula passes; a doubled tau or a flipped transpose fails."""
    path = write_spec(f"- name: {TORCH_SPEC[name].schema}\n  {key}: {formula}\n")
    report = check_all(path, ops=[name], modes=("vjp",), sample=0)
    assert {r.status for r in report} == {status}, report.summary()


@pytest.mark.parametrize(
    "name, torch_fn, shapes",
    [
        ("linalg_householder_product", torch.linalg.householder_product, [(3, 2), (2,)]),
        ("ormqr", torch.ormqr, [(3, 2), (2,), (3, 2)]),
        ("linalg_lstsq", torch.linalg.lstsq, [(3, 2), (3, 1)]),
    ],
)
@pytest.mark.parametrize("dtypes", [(np.int64,), (np.float32, np.float64)], ids=["integer", "mixed"])
def test_integer_and_mixed_dtypes_are_refused_as_torch_does(name, torch_fn, shapes, dtypes):
    arrays = [np.ones(s, dtypes[i % len(dtypes)]) for i, s in enumerate(shapes)]
    with pytest.raises(RuntimeError):
        torch_fn(*map(to_torch, arrays))
    with pytest.raises(RuntimeError):
        REGISTRY.op(name)(*map(jnp.asarray, arrays))


@pytest.mark.parametrize(
    "name, torch_fn, shapes",
    [
        ("linalg_householder_product", torch.linalg.householder_product, [(3, 0), (0,)]),
        ("ormqr", torch.ormqr, [(3, 0), (0,), (3, 2)]),
        ("linalg_lstsq", lambda A, B: torch.linalg.lstsq(A, B).solution, [(0, 3), (0, 2)]),
        ("linalg_lstsq", lambda A, B: torch.linalg.lstsq(A, B).solution, [(4, 0), (4, 2)]),
    ],
)
def test_empty_operands_match_torch(name, torch_fn, shapes):
    arrays = [np.arange(np.prod(s), dtype=np.float64).reshape(s) + 1 for s in shapes]
    ours = _as_tuple(REGISTRY.op(name)(*map(jnp.asarray, arrays)))[0]
    assert_same(ours, to_numpy(torch_fn(*map(to_torch, arrays))))


def test_householder_product_under_jit_and_vmap():
    a, tau = _geqrf(np.random.default_rng(10), (3, 4, 3), np.float64)
    op = REGISTRY.op("linalg_householder_product")
    ga, gt = jax.jit(jax.vmap(jax.grad(lambda a, t: op(a, t).sum(), (0, 1))))(jnp.asarray(a), jnp.asarray(tau))
    ta, tt = to_torch(a).requires_grad_(), to_torch(tau).requires_grad_()
    torch.linalg.householder_product(ta, tt).sum().backward()
    assert_same(ga, to_numpy(ta.grad), 1e-9, 1e-11)
    assert_same(gt, to_numpy(tt.grad), 1e-9, 1e-11)
