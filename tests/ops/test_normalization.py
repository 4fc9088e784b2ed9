"""Batch, layer and group norm against PyTorch 2.13: outputs, saved statistics, gradients.

torch 2.13's native_layer_norm takes the normalized shape where the 1.7 spec takes M and N;
its mean and rstd keep the input's leading shape where 1.7 returns them flat.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
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
    op = jaxderiv.op("native_batch_norm")
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
    ours = jaxderiv.op("native_batch_norm_backward")(g, x, w, None, None, mean, invstd, True, 1e-5, (True, True, True))
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
    op = jaxderiv.op("native_batch_norm")
    first = lambda x: jax.vjp(lambda x: op(x, w, b, None, None, True, 0.1, 1e-5)[0], x)[1](jnp.asarray(ct))[0]  # noqa: E731
    gg = jax.grad(lambda x: jnp.sum(first(x) * v))(jnp.asarray(x))
    tx = torch.from_numpy(x).requires_grad_()
    out = aten.native_batch_norm.default(tx, _t(w), _t(b), None, None, True, 0.1, 1e-5)[0]
    (tf,) = torch.autograd.grad(out, tx, _t(ct), create_graph=True)
    (tgg,) = torch.autograd.grad((tf * _t(v)).sum(), tx)
    np.testing.assert_allclose(np.asarray(gg), tgg.numpy(), rtol=1e-8, atol=1e-10)


def test_batch_norm_jit_and_vmap():
    x = RNG.normal(size=(2, 4, 3))
    op = jaxderiv.op("native_batch_norm")
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
        lambda x, w, b: jaxderiv.op("native_layer_norm")(x, w, b, 6, 4, 1e-5),
        lambda x, w, b: aten.native_layer_norm.default(x, [4], w, b, 1e-5),
        (x, w, b),
        cts,
    )


def test_group_norm_matches_torch():
    x, w, b = RNG.normal(size=(2, 4, 3)), RNG.uniform(0.5, 1.5, 4), RNG.normal(size=4)
    cts = RNG.normal(size=(2, 4, 3))
    _output_vjp(
        lambda x, w, b: jaxderiv.op("native_group_norm")(x, w, b, 2, 4, 3, 2, 1e-5),
        lambda x, w, b: aten.native_group_norm.default(x, w, b, 2, 4, 3, 2, 1e-5),
        (x, w, b),
        cts,
    )


def test_weight_norm_matches_torch():
    v, g = RNG.normal(size=(3, 4)), RNG.uniform(0.5, 1.5, (3, 1))
    ct = RNG.normal(size=(3, 4))
    grads = jax.vjp(
        lambda v, g: jaxderiv.op("_weight_norm_cuda_interface")(v, g, 0)[0], jnp.asarray(v), jnp.asarray(g)
    )[1](jnp.asarray(ct))
    tv, tg = torch.from_numpy(v).requires_grad_(), torch.from_numpy(g).requires_grad_()
    out = aten._weight_norm.default(tv, tg, 0)
    for o, t in zip(grads, torch.autograd.grad(out, (tv, tg), _t(ct))):
        np.testing.assert_allclose(np.asarray(o), t.numpy(), rtol=1e-10)
