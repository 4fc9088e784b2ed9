"""Batch, layer and group norm against PyTorch 2.13: outputs, saved statistics, gradients.

torch 2.13's native_layer_norm takes the normalized shape where the 1.7 spec takes M and N;
its mean and rstd keep the input's leading shape where 1.7 returns them flat.

torch's own entries (the spec torch 2.13 ships) for weight norm, batch norm with and without
update, the export batch norms (_native_batch_norm_legit, its no_training and no_stats forms),
batch_norm_backward, fused RMS norm and native_layer_norm_backward: values, gradients of every
input and, where the entry has them, tangents and second derivatives; a deliberately wrong
formula must be caught.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import check_all, load_spec

torch = pytest.importorskip("torch")
from jaxderiv.check import parity as P  # noqa: E402
from jaxderiv.records import Sample  # noqa: E402
from torch_oracle import assert_same, assert_vjp_matches, to_torch  # noqa: E402

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

aten = torch.ops.aten
RNG = np.random.default_rng(0)


def _t(a):
    return None if a is None else torch.from_numpy(a)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_matches_torch(training, affine):
    x = RNG.normal(size=(4, 3, 2))
    w, b = (RNG.uniform(0.5, 1.5, 3), RNG.normal(size=3)) if affine else (None, None)
    rm, rv = RNG.normal(size=3), RNG.uniform(0.5, 1.5, 3)
    op = SEEDS.op("native_batch_norm")
    ours = op(x, w, b, rm, rv, training, 0.1, 1e-5)
    theirs = aten.native_batch_norm.default(_t(x), _t(w), _t(b), _t(rm.copy()), _t(rv.copy()), training, 0.1, 1e-5)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), t.numpy(), rtol=1e-10, atol=1e-12)
    diff = [x] + ([w, b] if affine else [])
    ct = RNG.normal(size=x.shape)

    def f(*p):
        return op(p[0], *(p[1:] if affine else (None, None)), rm, rv, training, 0.1, 1e-5)[0]

    grads = jax.vjp(f, *[jnp.asarray(p) for p in diff])[1](jnp.asarray(ct))
    tp = [torch.from_numpy(p).requires_grad_() for p in diff]
    tout = aten.native_batch_norm.default(
        tp[0], *(tp[1:] if affine else (None, None)), _t(rm.copy()), _t(rv.copy()), training, 0.1, 1e-5
    )[0]
    for g, tg in zip(grads, torch.autograd.grad(tout, tp, _t(ct))):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-9, atol=1e-12)


def test_batch_norm_backward_matches_torch():
    x, g = RNG.normal(size=(4, 3, 2)), RNG.normal(size=(4, 3, 2))
    w = RNG.uniform(0.5, 1.5, 3)
    mean, invstd = x.mean((0, 2)), 1 / np.sqrt(x.var((0, 2)) + 1e-5)
    ours = SEEDS.op("native_batch_norm_backward")(g, x, w, None, None, mean, invstd, True, 1e-5, (True, True, True))
    theirs = aten.native_batch_norm_backward.default(
        _t(g), _t(x), _t(w), None, None, _t(mean), _t(invstd), True, 1e-5, [True, True, True]
    )
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), t.numpy(), rtol=1e-10, atol=1e-12)


def test_batch_norm_double_backward_matches_torch():
    """Training mode: the backward formula calls native_batch_norm_backward, whose own entry's
    double-backward formula applies (save_mean/save_invstd depend on the input there)."""
    x, ct, v = RNG.normal(size=(4, 3, 2)), RNG.normal(size=(4, 3, 2)), RNG.normal(size=(4, 3, 2))
    w, b = RNG.uniform(0.5, 1.5, 3), RNG.normal(size=3)
    op = SEEDS.op("native_batch_norm")
    first = lambda x: jax.vjp(lambda x: op(x, w, b, None, None, True, 0.1, 1e-5)[0], x)[1](jnp.asarray(ct))[0]  # noqa: E731
    gg = jax.grad(lambda x: jnp.sum(first(x) * v))(jnp.asarray(x))
    tx = torch.from_numpy(x).requires_grad_()
    out = aten.native_batch_norm.default(tx, _t(w), _t(b), None, None, True, 0.1, 1e-5)[0]
    (tf,) = torch.autograd.grad(out, tx, _t(ct), create_graph=True)
    (tgg,) = torch.autograd.grad((tf * _t(v)).sum(), tx)
    np.testing.assert_allclose(np.asarray(gg), tgg.numpy(), rtol=1e-8, atol=1e-10)


def test_batch_norm_jit_and_vmap():
    x = RNG.normal(size=(2, 4, 3))
    op = SEEDS.op("native_batch_norm")
    g = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(op(x, None, None, None, None, True, 0.1, 1e-5)[0] ** 3))))(x)
    for k in range(2):
        tx = torch.from_numpy(x[k]).requires_grad_()
        (tg,) = torch.autograd.grad(
            (aten.native_batch_norm.default(tx, None, None, None, None, True, 0.1, 1e-5)[0] ** 3).sum(), tx
        )
        np.testing.assert_allclose(np.asarray(g[k]), tg.numpy(), rtol=1e-9, atol=1e-12)


def _output_vjp(ours_fn, torch_fn, xs, ct):
    """Gradients through the normalized output (torch 2.13 does not differentiate mean and rstd;
    the checker verifies those cotangents against finite differences)."""
    _, vjp = jax.vjp(ours_fn, *[jnp.asarray(x) for x in xs])
    ys = ours_fn(*xs)
    grads = vjp((jnp.asarray(ct), jnp.zeros_like(ys[1]), jnp.zeros_like(ys[2])))
    tx = [torch.from_numpy(x).requires_grad_() for x in xs]
    tgrads = torch.autograd.grad(torch_fn(*tx)[0], tx, torch.from_numpy(ct))
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-9, atol=1e-12)


def test_layer_norm_matches_torch():
    x, w, b = RNG.normal(size=(2, 3, 4)), RNG.uniform(0.5, 1.5, 4), RNG.normal(size=4)
    cts = RNG.normal(size=(2, 3, 4))
    _output_vjp(
        lambda x, w, b: SEEDS.op("native_layer_norm")(x, w, b, 6, 4, 1e-5),
        lambda x, w, b: aten.native_layer_norm.default(x, [4], w, b, 1e-5),
        (x, w, b),
        cts,
    )


def test_group_norm_matches_torch():
    x, w, b = RNG.normal(size=(2, 4, 3)), RNG.uniform(0.5, 1.5, 4), RNG.normal(size=4)
    cts = RNG.normal(size=(2, 4, 3))
    _output_vjp(
        lambda x, w, b: SEEDS.op("native_group_norm")(x, w, b, 2, 4, 3, 2, 1e-5),
        lambda x, w, b: aten.native_group_norm.default(x, w, b, 2, 4, 3, 2, 1e-5),
        (x, w, b),
        cts,
    )


def test_weight_norm_matches_torch():
    v, g = RNG.normal(size=(3, 4)), RNG.uniform(0.5, 1.5, (3, 1))
    ct = RNG.normal(size=(3, 4))
    grads = jax.vjp(lambda v, g: SEEDS.op("_weight_norm_cuda_interface")(v, g, 0)[0], jnp.asarray(v), jnp.asarray(g))[
        1
    ](jnp.asarray(ct))
    tv, tg = torch.from_numpy(v).requires_grad_(), torch.from_numpy(g).requires_grad_()
    out = aten._weight_norm.default(tv, tg, 0)
    for o, t in zip(grads, torch.autograd.grad(out, (tv, tg), _t(ct))):
        np.testing.assert_allclose(np.asarray(o), t.numpy(), rtol=1e-10)


# -- torch's own entries -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


# -- weight, batch and RMS norm ----------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
def test_weight_norm_interface(torch_registry, dim):
    v = RNG.normal(size=(3, 4))
    g = RNG.uniform(0.5, 1.5, size=(3, 1) if dim == 0 else (1, 4))
    assert_vjp_matches(
        RNG,
        lambda v, g: torch_registry.op("_weight_norm_interface")(v, g, dim),
        lambda v, g: aten._weight_norm_interface(v, g, dim),
        (v, g),
        (0, 1),
    )


@pytest.mark.parametrize("update", [True, False])
def test_batch_norm_with_and_without_update(torch_registry, update):
    x, w, b = RNG.normal(size=(4, 3, 2)), RNG.uniform(0.5, 1.5, size=3), RNG.normal(size=3)
    rm, rv = RNG.normal(size=3), RNG.uniform(0.5, 1.5, size=3)
    name = "_batch_norm_with_update" if update else "_batch_norm_no_update"
    theirs = lambda x, w, b, rm, rv: getattr(aten, name)(x, w, b, rm.clone(), rv.clone(), 0.1, 1e-5)  # noqa: E731
    assert_vjp_matches(RNG, lambda *a: torch_registry.op(name)(*a, 0.1, 1e-5), theirs, (x, w, b, rm, rv), (0, 1, 2))
    for k in (1, 2):  # the saved statistics: the batch's in training, empty otherwise
        assert_same(torch_registry.op(name)(x, w, b, rm, rv, 0.1, 1e-5)[k], theirs(*map(_t, (x, w, b, rm, rv)))[k])


@pytest.mark.parametrize("normalized,weight,eps", [((3, 4), True, None), ((4,), False, 1e-3), ((4,), True, 0.5)])
def test_fused_rms_norm_values_gradients_and_tangents(torch_registry, normalized, weight, eps):
    x = RNG.normal(size=(2, 3, 4))
    w = RNG.uniform(0.5, 1.5, size=normalized) if weight else None
    diff = (0, 2) if weight else (0,)
    fn = lambda x, n, w: torch_registry.op("_fused_rms_norm")(x, n, w, eps)  # noqa: E731
    tfn = lambda x, n, w: aten._fused_rms_norm(x, list(n), w, eps)  # noqa: E731
    for out in (0, 1):  # the output and rstd, each with its own cotangent
        assert_vjp_matches(RNG, fn, tfn, (x, normalized, w), diff, out=out)
    tx = RNG.normal(size=x.shape)
    _, jt = jax.jvp(lambda x: fn(x, normalized, w), (jnp.asarray(x),), (jnp.asarray(tx),))
    _, tt = torch.func.jvp(
        lambda x: tfn(x, normalized, None if w is None else to_torch(w)), (to_torch(x),), (to_torch(tx),)
    )
    for a, b in zip(jt, tt):
        assert_same(a, b)


# -- native_layer_norm_backward and layer norm's second derivative -----------------------------------


def test_fused_rms_norm_second_order(torch_registry):
    x, w, ct, v = (
        RNG.normal(size=(2, 5)),
        RNG.uniform(0.5, 1.5, size=5),
        RNG.normal(size=(2, 5)),
        RNG.normal(size=(2, 5)),
    )
    op = torch_registry.op("_fused_rms_norm")
    gg = jax.grad(lambda x: jnp.sum(jax.vjp(lambda x: op(x, (5,), w, 1e-3)[0], x)[1](jnp.asarray(ct))[0] * v))(
        jnp.asarray(x)
    )
    tx = to_torch(x).requires_grad_()
    (first,) = torch.autograd.grad(
        aten._fused_rms_norm(tx, [5], to_torch(w), 1e-3)[0], tx, to_torch(ct), create_graph=True
    )
    (want,) = torch.autograd.grad((first * to_torch(v)).sum(), tx)
    assert_same(gg, want, rtol=1e-9)


LAYER_NORM = [  # input shape, normalized_shape, weight, bias
    ((2, 3, 4), (4,), True, True),
    ((2, 3, 4), (3, 4), False, False),
    ((3, 5), (5,), True, False),
    ((0, 4), (4,), True, True),
]


@pytest.mark.parametrize("case", range(len(LAYER_NORM)))
def test_native_layer_norm_backward_values_and_gradients(torch_registry, case):
    """The gradients of every input but the saved statistics (not_implemented in the spec), as
    torch's layer_norm_double_backward gives them (it differentiates the statistics too)."""
    shape, normalized, weight, bias = LAYER_NORM[case]
    x, g = RNG.normal(size=shape), RNG.normal(size=shape)
    w = RNG.uniform(0.5, 1.5, size=normalized) if weight else None
    b = RNG.normal(size=normalized) if bias else None
    _, mean, rstd = aten.native_layer_norm(to_torch(x), list(normalized), None, None, 1e-5)
    mask = (True, weight, bias)  # torch's kernel rejects a mask that asks for an absent parameter's gradient
    op = torch_registry.op("native_layer_norm_backward")
    ours = lambda g, x, w: op(g, x, normalized, mean.numpy(), rstd.numpy(), w, b, mask)  # noqa: E731
    theirs = lambda g, x, w: aten.native_layer_norm_backward(
        g, x, list(normalized), mean, rstd, w, None if b is None else to_torch(b), list(mask)
    )  # noqa: E731
    for out in [k for k, m in enumerate(mask) if m]:
        assert_vjp_matches(RNG, ours, theirs, (g, x, w), (0, 1, 2) if weight else (0, 1), out=out, rtol=1e-9)


@pytest.mark.parametrize("case", range(3))
def test_native_layer_norm_second_derivative(torch_registry, case):
    """Through native_layer_norm's backward formula, which calls the native_layer_norm_backward
    entry: every input's second-order gradient against torch's."""
    shape, normalized, weight, bias = LAYER_NORM[case]
    x, ct, v = RNG.normal(size=shape), RNG.normal(size=shape), RNG.normal(size=shape)
    w = RNG.uniform(0.5, 1.5, size=normalized) if weight else None
    b = RNG.normal(size=normalized) if bias else None
    op = torch_registry.op("native_layer_norm")
    grad_x = lambda x, w, ct: jax.vjp(lambda x, w: op(x, normalized, w, b, 1e-5)[0], x, w)[1](ct)  # noqa: E731
    argnums = (0, 1, 2) if weight else (0, 2)
    score = lambda x, w, ct: sum(jnp.sum(gr * u) for gr, u in zip(grad_x(x, w, ct), (v, 1.0)) if gr is not None)  # noqa: E731
    got = jax.grad(score, argnums=argnums)(jnp.asarray(x), None if w is None else jnp.asarray(w), jnp.asarray(ct))
    tx, tct = to_torch(x).requires_grad_(), to_torch(ct).requires_grad_()
    tw = to_torch(w).requires_grad_() if weight else None
    leaves = [tx] + ([tw] if weight else [])
    firsts = torch.autograd.grad(
        aten.native_layer_norm(tx, list(normalized), tw, None if b is None else to_torch(b), 1e-5)[0],
        leaves,
        tct,
        create_graph=True,
    )
    total = (firsts[0] * to_torch(v)).sum() + (firsts[1].sum() if weight else 0)
    want = torch.autograd.grad(total, leaves + [tct])
    for a, e in zip(got, want):
        assert_same(a, e, rtol=1e-9, atol=1e-10)


# -- batch norm for export, and batch_norm_backward --------------------------------------------------


def _outputs_and_vjp_match(ours, theirs, args, diff, out=0):
    """Every output's values, and the vjp of output `out` for the `diff` positions of args."""
    y = ours(*args)
    targs = [to_torch(a).requires_grad_(i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    ty = theirs(*targs)
    for a, b in zip(y, ty):
        assert_same(a, b)
    ct = RNG.normal(size=np.shape(y[out]))

    def f(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        return ours(*full)[out]

    got = jax.vjp(f, *[jnp.asarray(args[i]) for i in diff])[1](jnp.asarray(ct))
    want = torch.autograd.grad(ty[out], [targs[i] for i in diff], to_torch(ct))
    for g, w in zip(got, want):
        assert_same(g, w)


def _entry(name):
    return load_spec(from_torch=True)[name]


def _bn_inputs(shape, affine):
    x = RNG.normal(size=shape)
    c = shape[1]
    w, b = (RNG.uniform(0.5, 1.5, size=c), RNG.normal(size=c)) if affine else (None, None)
    return x, w, b, RNG.normal(size=c), RNG.uniform(0.5, 1.5, size=c)


@pytest.mark.parametrize("shape", [(4, 3, 2), (5, 2), (2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_legit(torch_registry, shape, affine, training):
    x, w, b, rm, rv = _bn_inputs(shape, affine)
    diff = (0, 1, 2) if affine else (0,)
    theirs = lambda *a: aten._native_batch_norm_legit(
        *a[:3], a[3].clone(), a[4].clone(), *a[5:]
    )  # torch updates the stats in place
    _outputs_and_vjp_match(
        torch_registry.op("_native_batch_norm_legit"), theirs, (x, w, b, rm, rv, training, 0.1, 1e-5), diff
    )


@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm_legit_no_training(torch_registry, affine):
    x, w, b, rm, rv = _bn_inputs((4, 3, 2), affine)
    _outputs_and_vjp_match(
        torch_registry.op("_native_batch_norm_legit_no_training"),
        aten._native_batch_norm_legit_no_training,
        (x, w, b, rm, rv, 0.1, 1e-3),
        (0, 1, 2) if affine else (0,),
    )


@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm_legit_no_stats(torch_registry, affine):
    x, w, b, _, _ = _bn_inputs((4, 3, 2), affine)
    op = torch_registry.op("_native_batch_norm_legit.no_stats")
    _outputs_and_vjp_match(
        op, aten._native_batch_norm_legit.no_stats, (x, w, b, True, 0.1, 1e-5), (0, 1, 2) if affine else (0,)
    )
    with pytest.raises(RuntimeError, match="running statistics"):
        op(x, w, b, False, 0.1, 1e-5)


def test_native_batch_norm_legit_tangent_and_second_order(torch_registry):
    """The result0 formula (batch_norm_jvp) against torch's forward AD, and the double backward."""
    x, w, b, rm, rv = _bn_inputs((4, 3, 2), True)
    tx, tw, tb = RNG.normal(size=x.shape), RNG.normal(size=3), RNG.normal(size=3)
    op = torch_registry.op("_native_batch_norm_legit")
    f = lambda x, w, b: op(x, w, b, rm, rv, True, 0.1, 1e-5)[0]
    _, got = jax.jvp(
        f, (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b)), (jnp.asarray(tx), jnp.asarray(tw), jnp.asarray(tb))
    )
    tf = lambda x, w, b: aten._native_batch_norm_legit(
        x, w, b, to_torch(rm).clone(), to_torch(rv).clone(), True, 0.1, 1e-5
    )[0]
    _, want = torch.func.jvp(tf, (to_torch(x), to_torch(w), to_torch(b)), (to_torch(tx), to_torch(tw), to_torch(tb)))
    assert_same(got, want)
    ct = RNG.normal(size=x.shape)
    hx = jax.grad(lambda x, w: jnp.sum(jax.vjp(lambda x: f(x, w, b), x)[1](jnp.asarray(ct))[0] ** 2), argnums=(0, 1))(
        jnp.asarray(x), jnp.asarray(w)
    )
    tx_, tw_ = to_torch(x).requires_grad_(), to_torch(w).requires_grad_()
    (gx,) = torch.autograd.grad(tf(tx_, tw_, to_torch(b)), tx_, to_torch(ct), create_graph=True)
    for g, t in zip(hx, torch.autograd.grad((gx**2).sum(), (tx_, tw_))):
        assert_same(g, t, rtol=1e-8)


@pytest.mark.parametrize("mode", ["update", "running", "no running stats"])
def test_batch_norm_backward_values(torch_registry, mode):
    x, w, _, rm, rv = _bn_inputs((4, 3, 2), True)
    g = RNG.normal(size=x.shape)
    if mode == "running":
        args = (g, x, w, rm, rv, None, None, False, 1e-5, [True] * 3, np.zeros(0, np.uint8))
    else:
        _, sm, sv, reserve = aten._batch_norm_with_update(
            to_torch(x), to_torch(w), None, to_torch(rm).clone(), to_torch(rv).clone(), 0.1, 1e-5
        )
        stats = (rm, rv) if mode == "update" else (None, None)
        args = (g, x, w, *stats, sm.numpy(), sv.numpy(), mode == "update", 1e-5, [True] * 3, reserve.numpy())
    ours = torch_registry.op("batch_norm_backward")(*args)
    targs = [to_torch(a) if isinstance(a, np.ndarray) else a for a in args]
    if mode == "no running stats":  # torch 2.13's batch_norm_backward crashes here: its native equivalent
        theirs = aten.native_batch_norm_backward(*targs[:7], True, *targs[8:10])
    else:
        theirs = aten.batch_norm_backward(*targs)
    for a, b in zip(ours, theirs):
        assert_same(a, b)


def test_batch_norm_backward_double_backward(torch_registry):
    """Evaluation mode (no saved statistics, whose formulas are not_implemented): the gradients
    of <outputs, cotangents> with respect to grad_out, input and weight, against torch."""
    x, w, _, rm, rv = _bn_inputs((4, 3, 2), True)
    g = RNG.normal(size=x.shape)
    reserve = np.zeros(0, np.uint8)
    args = (g, x, w, rm, rv, None, None, False, 1e-5, [True] * 3, reserve)
    op = torch_registry.op("batch_norm_backward")
    cts = [RNG.normal(size=s) for s in (x.shape, (3,), (3,))]
    f = lambda g, x, w: sum(jnp.sum(o * c) for o, c in zip(op(g, x, w, *args[3:]), cts))
    got = jax.grad(f, argnums=(0, 1, 2))(jnp.asarray(g), jnp.asarray(x), jnp.asarray(w))
    tg, tx, tw = (to_torch(a).requires_grad_() for a in (g, x, w))
    out = aten.batch_norm_backward(
        tg, tx, tw, to_torch(rm), to_torch(rv), None, None, False, 1e-5, [True] * 3, to_torch(reserve)
    )
    want = torch.autograd.grad(sum((o * to_torch(c)).sum() for o, c in zip(out, cts)), (tg, tx, tw), allow_unused=True)
    for a, b in zip(got, want):
        assert_same(a, np.zeros(np.shape(a)) if b is None else b)


# -- the checker catches wrong formulas --------------------------------------------------------------


@pytest.mark.parametrize(
    "name, key, wrong",
    [
        ("_native_batch_norm_legit", "input, weight, bias", ("result1, result2, training", "result1, result2, false")),
        (
            "_native_batch_norm_legit.no_stats",
            "input, weight, bias",
            ("grad, input, weight", "grad * 2, input, weight"),
        ),
        (
            "rrelu_with_noise_functional",
            "self",
            ("rrelu_with_noise_backward(grad, self, noise, lower, upper, training, false)", "grad"),
        ),
    ],
)
def test_checker_catches_a_wrong_formula(write_spec, name, key, wrong):
    """torch's own formula passes; the same entry with the formula altered fails."""
    entry = _entry(name)
    formulas = {", ".join(f.names): f.text for f in entry.backward}
    lines = (
        [f"- name: {entry.schema}"]
        + [f'  {k}: "{v}"' for k, v in formulas.items()]
        + ["  noise: non_differentiable"] * (name.startswith("rrelu"))
    )
    good = check_all(write_spec("\n".join(lines) + "\n"), ops=[name], modes=("vjp",))
    assert {r.status for r in good} == {"passed"}, good.summary()
    formulas[key] = formulas[key].replace(*wrong)
    assert wrong[1] in formulas[key]
    lines = (
        [f"- name: {entry.schema}"]
        + [f'  {k}: "{v}"' for k, v in formulas.items()]
        + ["  noise: non_differentiable"] * (name.startswith("rrelu"))
    )
    bad = check_all(write_spec("\n".join(lines) + "\n"), ops=[name], modes=("vjp",))
    assert "failed" in {r.status for r in bad}, bad.summary()


# ==================================================================================================
# torch's own native_layer_norm over two dims (torch_registry above: the spec torch 2.13 ships).
# tests/check/test_parity.py compares the entry with torch on its record's samples, which
# normalize over one dim; a kink tuple in torch's schema cannot be declared, as the seed's
# schema (M and N) is another. This test adds a normalized shape of two dims with weight and
# bias: values, vjp and jvp (layer_norm_jvp), as test_parity compares them.
# ==================================================================================================


def test_native_layer_norm_over_two_dims(torch_registry):
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    row = P.compare_op(torch_registry.op("native_layer_norm"), [Sample((x, [3, 4], w, b, 1e-5))], [], [])
    assert row.ok and row.forward and row.vjp and row.jvp, row.note
