"""Distances and `_trilinear` against PyTorch 2.13: values, gradients through the spec's
formulas, and ATen's own `*_backward` ops. Kinks included: repeated points (distance 0,
subgradient 0), shared coordinates (p = 1) and tied largest differences (p = inf)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
aten = torch.ops.aten

P_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]


def _vjp(name, arrays, rest, ct):
    """(output, gradients of every array) of op `name` through its formulas."""
    op = jaxderiv.op(name)
    y, pullback = jax.vjp(lambda *xs: op(*xs, *rest), *map(jnp.asarray, arrays))
    return y, pullback(jnp.asarray(ct))


def _torch_vjp(fn, arrays, rest, ct):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts, *rest)
    return out.detach().numpy(), [g.numpy() for g in torch.autograd.grad(out, ts, torch.tensor(ct))]


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _with_kinks(rng, shape):
    """Points with a repeated row, a shared coordinate and a tie of largest differences."""
    x = rng.normal(size=shape)
    x[..., 1, :] = x[..., 0, :]  # a repeated point
    x[..., 2, 0] = x[..., 3, 0]  # a shared coordinate
    x[..., 3, 1] = x[..., 4, 1] + 1.0
    x[..., 3, 2] = x[..., 4, 2] - 1.0  # a tie for the largest difference
    return x


@pytest.mark.parametrize("kinks", [False, True], ids=["generic", "kinks"])
@pytest.mark.parametrize("p", P_VALUES)
def test_pdist_matches_torch(p, kinks):
    rng = np.random.default_rng(0)
    x = _with_kinks(rng, (5, 3)) if kinks else rng.normal(size=(5, 3))
    ct = rng.normal(size=10)
    y, (g,) = _vjp("_pdist_forward", [x], [p], ct)
    t_y, (t_g,) = _torch_vjp(aten._pdist_forward, [x], [p], ct)
    _close(y, t_y)
    _close(g, t_g)
    _close(
        jaxderiv.op("_pdist_backward")(jnp.asarray(ct), jnp.asarray(x), p, y),
        aten._pdist_backward(torch.tensor(ct), torch.tensor(x), p, torch.tensor(np.asarray(y))),
    )


@pytest.mark.parametrize("kinks", [False, True], ids=["generic", "kinks"])
@pytest.mark.parametrize("p", P_VALUES)
def test_cdist_matches_torch_with_batch_broadcast(p, kinks):
    rng = np.random.default_rng(1)
    x1 = _with_kinks(rng, (2, 5, 3)) if kinks else rng.normal(size=(2, 5, 3))
    x2 = x1[0, 1:5] + (0 if kinks else rng.normal(size=(4, 3)))  # kinks: points shared with x1
    ct = rng.normal(size=(2, 5, 4))
    y, g = _vjp("_cdist_forward", [x1, x2], [p, None], ct)
    t_y, t_g = _torch_vjp(aten._cdist_forward, [x1, x2], [p, None], ct)
    _close(y, t_y)
    for a, b in zip(g, t_g):
        _close(a, b)
    ours = jaxderiv.op("_cdist_backward")(jnp.asarray(ct), jnp.asarray(x1), jnp.asarray(x2), p, y)
    _close(
        ours, aten._cdist_backward(torch.tensor(ct), torch.tensor(x1), torch.tensor(x2), p, torch.tensor(np.asarray(y)))
    )


@pytest.mark.parametrize("mode", [None, 1, 2])
def test_cdist_compute_modes_match_torch(mode):
    """p = 2 over more than 25 rows: modes None and 1 use the matmul form, 2 the direct one."""
    rng = np.random.default_rng(2)
    x1, x2 = rng.normal(size=(30, 4)), rng.normal(size=(7, 4))
    ct = rng.normal(size=(30, 7))
    y, g = _vjp("_cdist_forward", [x1, x2], [2.0, mode], ct)
    t_y, t_g = _torch_vjp(aten._cdist_forward, [x1, x2], [2.0, mode], ct)
    _close(y, t_y, 1e-12)
    for a, b in zip(g, t_g):
        _close(a, b)


def test_cdist_gradients_equal_torch_cdist():
    """The public torch.cdist (which picks the op itself) and jaxderiv's entry agree."""
    rng = np.random.default_rng(3)
    x1, x2 = rng.normal(size=(3, 4, 2)), rng.normal(size=(3, 6, 2))
    ct = rng.normal(size=(3, 4, 6))
    for p in (1.0, 2.0, math.inf):
        y, g = _vjp("_cdist_forward", [x1, x2], [p, 2], ct)
        t_y, t_g = _torch_vjp(
            lambda a, b, p: torch.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist"), [x1, x2], [p], ct
        )
        _close(y, t_y)
        for a, b in zip(g, t_g):
            _close(a, b)


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 5, 4)), ((2, 3, 4), (5, 4))], ids=["batched", "broadcast"])
def test_euclidean_dist_matches_torch(shapes):
    rng = np.random.default_rng(4)
    x1, x2 = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    x2[..., 0, :] = x1[0, 0]  # a zero distance: ATen's subgradient 0
    ct = rng.normal(size=(2, 3, 5))
    y, g = _vjp("_euclidean_dist", [x1, x2], [], ct)
    t_y, t_g = _torch_vjp(aten._euclidean_dist, [x1, x2], [], ct)
    _close(y, t_y, 1e-7)  # sqrt of a rounding-level difference at the zero distance
    for a, b in zip(g, t_g):
        assert a.shape == b.shape
        _close(a, b, 1e-8)


TRILINEAR = [  # (shapes, expand1, expand2, expand3, sumdim, unroll_dim)
    (((3, 2), (4, 2, 5), (3, 5)), (1, 3), (0,), (1, 2), (2, 3), 1),  # F.bilinear's call
    (((2, 3), (3, 4), (2, 4)), (2,), (0,), (1,), (1,), 0),
    (((2, 3), (2, 3), (2, 3)), (), (), (), (), 1),  # a plain triple product
]


@pytest.mark.parametrize("case", TRILINEAR, ids=["bilinear", "shared-sum", "elementwise"])
def test_trilinear_matches_torch(case):
    shapes, *rest = case
    rng = np.random.default_rng(5)
    xs = [rng.normal(size=s) for s in shapes]
    ct = rng.normal(size=np.shape(jaxderiv.op("_trilinear")(*xs, *rest)))
    y, g = _vjp("_trilinear", xs, rest, ct)
    t_y, t_g = _torch_vjp(aten._trilinear, xs, rest, ct)
    _close(y, t_y, 1e-12)
    for a, b in zip(g, t_g):
        _close(a, b, 1e-12)


def test_bilinear_layer_under_jit_and_vmap():
    """F.bilinear(x1, x2, W) is _trilinear(x1, W, x2, [1,3], [0], [1,2], [2,3]) (+ bias)."""
    rng = np.random.default_rng(6)
    x1, w, x2 = rng.normal(size=(3, 2)), rng.normal(size=(4, 2, 5)), rng.normal(size=(3, 5))
    op = jaxderiv.op("_trilinear")
    loss = lambda x1, w, x2: jnp.sum(op(x1, w, x2, (1, 3), (0,), (1, 2), (2, 3)) ** 2)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(x1, w, x2)
    ts = [torch.tensor(a, requires_grad=True) for a in (x1, w, x2)]
    t_loss = (torch.nn.functional.bilinear(ts[0], ts[2], ts[1]) ** 2).sum()
    for a, b in zip(grads, torch.autograd.grad(t_loss, ts)):
        _close(a, b, 1e-12)
    per_row = jax.vmap(lambda a, b: op(a[None], w, b[None], (1, 3), (0,), (1, 2), (2, 3))[0])(x1, x2)
    _close(per_row, torch.nn.functional.bilinear(ts[0], ts[2], ts[1]).detach().numpy(), 1e-12)
