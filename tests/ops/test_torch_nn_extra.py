"""torch 2.13's remaining nn entries against torch 2.13: the export batch norms
(_native_batch_norm_legit, its no_training and no_stats forms) and batch_norm_backward,
_embedding_bag_backward, the unique family with counts, dims and consecutive runs, and
rrelu_with_noise_functional.

Each op runs from torch's packaged derivatives.yaml: values, and the gradients of every
differentiable input with a random cotangent; a deliberately wrong formula must be caught.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, check_all, load_spec

torch = pytest.importorskip("torch")
aten = torch.ops.aten
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def ops():
    return Registry(load_spec(from_torch=True))


def _t(x):
    return torch.from_numpy(np.asarray(x))


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=rtol, atol=atol)
    assert np.shape(ours) == np.shape(theirs)


def _grads_match(ours, theirs, args, diff, out=0):
    """Every output's values, and the vjp of output `out` for the `diff` positions of args."""
    y = ours(*args)
    targs = [_t(a).requires_grad_(i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    ty = theirs(*targs)
    for a, b in zip(y, ty):
        _close(a, b)
    ct = RNG.normal(size=np.shape(y[out]))

    def f(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        return ours(*full)[out]

    got = jax.vjp(f, *[jnp.asarray(args[i]) for i in diff])[1](jnp.asarray(ct))
    want = torch.autograd.grad(ty[out], [targs[i] for i in diff], _t(ct))
    for g, w in zip(got, want):
        _close(g, w)


def _entry(name):
    return load_spec(from_torch=True)[name]


# -- batch norm for export ------------------------------------------------------------------------


def _bn_inputs(shape, affine):
    x = RNG.normal(size=shape)
    c = shape[1]
    w, b = (RNG.uniform(0.5, 1.5, size=c), RNG.normal(size=c)) if affine else (None, None)
    return x, w, b, RNG.normal(size=c), RNG.uniform(0.5, 1.5, size=c)


@pytest.mark.parametrize("shape", [(4, 3, 2), (5, 2), (2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_legit(ops, shape, affine, training):
    x, w, b, rm, rv = _bn_inputs(shape, affine)
    diff = (0, 1, 2) if affine else (0,)
    theirs = lambda *a: aten._native_batch_norm_legit(
        *a[:3], a[3].clone(), a[4].clone(), *a[5:]
    )  # torch updates the stats in place
    _grads_match(ops.op("_native_batch_norm_legit"), theirs, (x, w, b, rm, rv, training, 0.1, 1e-5), diff)


@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm_legit_no_training(ops, affine):
    x, w, b, rm, rv = _bn_inputs((4, 3, 2), affine)
    _grads_match(
        ops.op("_native_batch_norm_legit_no_training"),
        aten._native_batch_norm_legit_no_training,
        (x, w, b, rm, rv, 0.1, 1e-3),
        (0, 1, 2) if affine else (0,),
    )


@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm_legit_no_stats(ops, affine):
    x, w, b, _, _ = _bn_inputs((4, 3, 2), affine)
    op = ops.op("_native_batch_norm_legit.no_stats")
    _grads_match(op, aten._native_batch_norm_legit.no_stats, (x, w, b, True, 0.1, 1e-5), (0, 1, 2) if affine else (0,))
    with pytest.raises(RuntimeError, match="running statistics"):
        op(x, w, b, False, 0.1, 1e-5)


def test_native_batch_norm_legit_tangent_and_second_order(ops):
    """The result0 formula (batch_norm_jvp) against torch's forward AD, and the double backward."""
    x, w, b, rm, rv = _bn_inputs((4, 3, 2), True)
    tx, tw, tb = RNG.normal(size=x.shape), RNG.normal(size=3), RNG.normal(size=3)
    op = ops.op("_native_batch_norm_legit")
    f = lambda x, w, b: op(x, w, b, rm, rv, True, 0.1, 1e-5)[0]
    _, got = jax.jvp(
        f, (jnp.asarray(x), jnp.asarray(w), jnp.asarray(b)), (jnp.asarray(tx), jnp.asarray(tw), jnp.asarray(tb))
    )
    tf = lambda x, w, b: aten._native_batch_norm_legit(x, w, b, _t(rm).clone(), _t(rv).clone(), True, 0.1, 1e-5)[0]
    _, want = torch.func.jvp(tf, (_t(x), _t(w), _t(b)), (_t(tx), _t(tw), _t(tb)))
    _close(got, want)
    ct = RNG.normal(size=x.shape)
    hx = jax.grad(lambda x, w: jnp.sum(jax.vjp(lambda x: f(x, w, b), x)[1](jnp.asarray(ct))[0] ** 2), argnums=(0, 1))(
        jnp.asarray(x), jnp.asarray(w)
    )
    tx_, tw_ = _t(x).requires_grad_(), _t(w).requires_grad_()
    (gx,) = torch.autograd.grad(tf(tx_, tw_, _t(b)), tx_, _t(ct), create_graph=True)
    for g, t in zip(hx, torch.autograd.grad((gx**2).sum(), (tx_, tw_))):
        _close(g, t, rtol=1e-8)


# -- batch_norm_backward ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["update", "running", "no running stats"])
def test_batch_norm_backward_values(ops, mode):
    x, w, _, rm, rv = _bn_inputs((4, 3, 2), True)
    g = RNG.normal(size=x.shape)
    if mode == "running":
        args = (g, x, w, rm, rv, None, None, False, 1e-5, [True] * 3, np.zeros(0, np.uint8))
    else:
        _, sm, sv, reserve = aten._batch_norm_with_update(_t(x), _t(w), None, _t(rm).clone(), _t(rv).clone(), 0.1, 1e-5)
        stats = (rm, rv) if mode == "update" else (None, None)
        args = (g, x, w, *stats, sm.numpy(), sv.numpy(), mode == "update", 1e-5, [True] * 3, reserve.numpy())
    ours = ops.op("batch_norm_backward")(*args)
    targs = [_t(a) if isinstance(a, np.ndarray) else a for a in args]
    if mode == "no running stats":  # torch 2.13's batch_norm_backward crashes here: its native equivalent
        theirs = aten.native_batch_norm_backward(*targs[:7], True, *targs[8:10])
    else:
        theirs = aten.batch_norm_backward(*targs)
    for a, b in zip(ours, theirs):
        _close(a, b)


def test_batch_norm_backward_double_backward(ops):
    """Evaluation mode (no saved statistics, whose formulas are not_implemented): the gradients
    of <outputs, cotangents> with respect to grad_out, input and weight, against torch."""
    x, w, _, rm, rv = _bn_inputs((4, 3, 2), True)
    g = RNG.normal(size=x.shape)
    reserve = np.zeros(0, np.uint8)
    args = (g, x, w, rm, rv, None, None, False, 1e-5, [True] * 3, reserve)
    op = ops.op("batch_norm_backward")
    cts = [RNG.normal(size=s) for s in (x.shape, (3,), (3,))]
    f = lambda g, x, w: sum(jnp.sum(o * c) for o, c in zip(op(g, x, w, *args[3:]), cts))
    got = jax.grad(f, argnums=(0, 1, 2))(jnp.asarray(g), jnp.asarray(x), jnp.asarray(w))
    tg, tx, tw = (_t(a).requires_grad_() for a in (g, x, w))
    out = aten.batch_norm_backward(tg, tx, tw, _t(rm), _t(rv), None, None, False, 1e-5, [True] * 3, _t(reserve))
    want = torch.autograd.grad(sum((o * _t(c)).sum() for o, c in zip(out, cts)), (tg, tx, tw), allow_unused=True)
    for a, b in zip(got, want):
        _close(a, np.zeros(np.shape(a)) if b is None else b)


# -- _embedding_bag_backward -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("scale, padding_idx", [(False, -1), (True, -1), (False, 2), (True, 4)])
def test_embedding_bag_backward(ops, mode, scale, padding_idx):
    """Bags with an empty one and repeated indices; the bag layout is torch's forward's."""
    w = _t(RNG.normal(size=(5, 3)))
    idx, offsets = torch.tensor([0, 2, 4, 2, 1, 3]), torch.tensor([0, 2, 2, 5])
    psw = _t(RNG.uniform(0.5, 1.5, size=6)) if mode == 0 else None
    _, offset2bag, bag_size, max_indices = aten._embedding_bag(
        w, idx, offsets, scale, mode, False, psw, False, padding_idx
    )
    g = _t(RNG.normal(size=(4, 3)))
    args = (g, idx, offsets, offset2bag, bag_size, max_indices, 5, scale, mode, False, psw, padding_idx)
    ours = ops.op("_embedding_bag_backward")(*[a.numpy() if isinstance(a, torch.Tensor) else a for a in args])
    if not scale or mode == 2:  # max mode has no frequency scaling
        _close(ours, aten._embedding_bag_backward(*args))
        return
    # torch 2.13's CPU kernel divides the k-th distinct index's row by the count of the k-th
    # sorted index (with repeats), not by its own count: scaled here from its unscaled result.
    unscaled = aten._embedding_bag_backward(*args[:7], False, *args[8:]).numpy()
    counts = np.maximum(np.bincount(idx.numpy(), minlength=5), 1)[:, None]
    _close(ours, unscaled / counts)
    assert not np.allclose(aten._embedding_bag_backward(*args).numpy(), unscaled / counts)


# -- unique ------------------------------------------------------------------------------------------


_X = np.array([[3.0, 1.0, 3.0], [3.0, 1.0, 3.0], [2.0, -1.0, 2.0], [3.0, 1.0, 3.0]])
_INPUTS = [
    _X,
    _X.astype(np.int64),
    np.array([2, 2, 7, 2, -1, -1]),
    np.array(4.0),
    np.zeros((0,)),
    np.array([[True, False], [True, False]]),
]


def _same(ours, theirs):
    for a, b in zip(ours, theirs):
        assert np.asarray(a).dtype == b.numpy().dtype
        _close(a, b)


@pytest.mark.parametrize("x", _INPUTS, ids=lambda x: f"{x.dtype}{x.shape}")
@pytest.mark.parametrize("flags", [(False, False), (True, False), (True, True)])
def test_unique2_and_unique_consecutive(ops, x, flags):
    _same(ops.op("_unique2")(x, True, *flags), aten._unique2(_t(x), True, *flags))
    _same(ops.op("unique_consecutive")(x, *flags, None), aten.unique_consecutive(_t(x), *flags, None))


@pytest.mark.parametrize("x", [_X, _X.astype(np.int64), _X.reshape(2, 2, 3)], ids=["float", "int", "3d"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("flags", [(False, False), (True, True)])
def test_unique_along_a_dim(ops, x, dim, flags):
    _same(ops.op("unique_dim")(x, dim, True, *flags), aten.unique_dim(_t(x), dim, True, *flags))
    _same(ops.op("unique_dim_consecutive")(x, dim, *flags), aten.unique_dim_consecutive(_t(x), dim, *flags))
    _same(ops.op("unique_consecutive")(x, *flags, dim), aten.unique_consecutive(_t(x), *flags, dim))


def test_unique_refuses_jit(ops):
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda x: ops.op("unique_dim")(x, 0)[0])(jnp.asarray(_X))


# -- rrelu_with_noise_functional -----------------------------------------------------------------------


@pytest.mark.parametrize("lower, upper", [(0.1, 0.3), (0.2, 0.2)])
@pytest.mark.parametrize("training", [False, True])
def test_rrelu_with_noise_functional(ops, training, lower, upper):
    """In training, torch draws the slopes: ours is given the ones torch drew (its noise_out),
    and must return the same output and slopes; the kink (x = 0) included."""
    x = np.array([-1.5, 2.0, 0.0, -0.25, 0.7, -3.0])
    noise = np.full(x.shape, 0.7)
    tx = _t(x).requires_grad_()
    out, drawn = aten.rrelu_with_noise_functional(tx, _t(noise), lower, upper, training)
    if training:
        noise = drawn.numpy()
    op = ops.op("rrelu_with_noise_functional")
    y, slopes = op(x, noise, lower, upper, training)
    _close(y, out)
    _close(slopes, drawn)
    # torch's formula uses the noise passed in, not the one it draws: given ours, the gradients agree
    tx = _t(x).requires_grad_()
    out = aten.rrelu_with_noise_functional(tx, _t(noise), lower, upper, training)[0]
    ct = RNG.normal(size=x.shape)
    (got,) = jax.vjp(lambda x: op(x, noise, lower, upper, training)[0], jnp.asarray(x))[1](jnp.asarray(ct))
    _close(got, torch.autograd.grad(out, tx, _t(ct))[0])


# -- the checker catches wrong formulas ------------------------------------------------------------------


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
