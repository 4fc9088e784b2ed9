"""Grid sampling and affine grids against PyTorch 2.13: values and gradients for every
interpolation and padding mode, corners aligned or not, batched, float64. Grids include the
kinks: whole and half pixels, points on the clip bounds and far outside. The double backward
of the newer spec's backward entries is compared with torch's second derivatives."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.forward.grid import grid_for

torch = pytest.importorskip("torch")
aten = torch.ops.aten
TORCH_SPEC = jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))  # the only file with the backward entries

SHAPES = {2: ((2, 3, 4, 5), (3, 4)), 3: ((2, 2, 3, 4, 5), (2, 3, 2))}  # (input, grid points per batch)
CASES = [(2, m, p, a) for m in (0, 1, 2) for p in (0, 1, 2) for a in (False, True)] + [
    (3, m, p, a) for m in (0, 1) for p in (0, 1, 2) for a in (False, True)
]


def _kinky_grid(rng, shape, points, align_corners):
    """Random points, then every other one at a kink: a whole or half pixel, a bound, or far out."""
    n = len(shape) - 2
    grid = rng.uniform(-1.2, 1.2, (shape[0], *points, n))
    flat = grid.reshape(-1, n)
    for i in range(0, len(flat), 2):
        for c in range(n):
            size = shape[-1 - c]
            pixel = rng.choice([0.0, size - 1.0, 1.0, 1.5, -0.5, size - 0.5, -1.0, size, -3.7])
            flat[i, c] = 2 * pixel / (size - 1) - 1 if align_corners else (2 * pixel + 1) / size - 1
    return flat.reshape(grid.shape)


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _vjp(op, args, ct, argnums):
    y, pullback = jax.vjp(
        lambda *xs: op(*[xs[argnums.index(i)] if i in argnums else a for i, a in enumerate(args)]),
        *[jnp.asarray(args[i]) for i in argnums],
    )
    return y, pullback(jnp.asarray(ct))


def _torch_vjp(fn, args, ct, argnums):
    targs = [
        torch.tensor(a, requires_grad=i in argnums) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)
    ]
    y = fn(*targs)
    return y, torch.autograd.grad(y, [targs[i] for i in argnums], torch.tensor(ct))


@pytest.mark.parametrize("n,mode,padding,corners", CASES, ids=str)
def test_sampler_matches_torch(n, mode, padding, corners):
    rng = np.random.default_rng(n * 100 + mode * 10 + padding)
    shape, points = SHAPES[n]
    x, grid = rng.normal(size=shape), _kinky_grid(rng, shape, points, corners)
    args = (x, grid, mode, padding, corners)
    ct = rng.normal(size=shape[:2] + points)
    t_y, t_grads = _torch_vjp(getattr(aten, f"grid_sampler_{n}d"), args, ct, [0, 1])
    y, grads = _vjp(jaxderiv.op(f"grid_sampler_{n}d"), args, ct, [0, 1])
    _close(y, t_y.detach())
    for g, t in zip(grads, t_grads):
        _close(g, t)


@pytest.mark.parametrize("mode,padding,corners", [c[1:] for c in CASES if c[0] == 2], ids=str)
def test_cpu_fallback_matches_torch(mode, padding, corners):
    """The scalar CPU kernel, which torch runs on float32 only."""
    rng = np.random.default_rng(7 + mode * 10 + padding)
    shape, points = SHAPES[2]
    f32 = lambda a: a.astype(np.float32)
    args = (f32(rng.normal(size=shape)), f32(_kinky_grid(rng, shape, points, corners)), mode, padding, corners)
    ct = f32(rng.normal(size=shape[:2] + points))
    t_y, t_grads = _torch_vjp(aten._grid_sampler_2d_cpu_fallback, args, ct, [0, 1])
    y, grads = _vjp(jaxderiv.op("_grid_sampler_2d_cpu_fallback"), args, ct, [0, 1])
    assert y.dtype == jnp.float32
    _close(y, t_y.detach(), tol=1e-5)
    for g, t in zip(grads, t_grads):
        _close(g, t, tol=1e-4)


def test_cudnn_sampler_is_bilinear_zeros_aligned():
    """cuDNN's sampler has no CPU kernel in torch: its oracle is grid_sampler_2d(…, 0, 0, True)."""
    rng = np.random.default_rng(3)
    shape, points = SHAPES[2]
    x, grid = rng.normal(size=shape), rng.uniform(-1.2, 1.2, (2, *points, 2))
    ct = rng.normal(size=shape[:2] + points)
    t_y, t_grads = _torch_vjp(aten.grid_sampler_2d, (x, grid, 0, 0, True), ct, [0, 1])
    y, grads = _vjp(jaxderiv.op("cudnn_grid_sampler"), (x, grid), ct, [0, 1])
    _close(y, t_y.detach())
    for g, t in zip(grads, t_grads):
        _close(g, t)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 2, 3, 4, 5), (1, 1, 1, 2, 1)], ids=str)
@pytest.mark.parametrize("corners", [False, True])
def test_affine_grid_matches_torch(size, corners):
    rng = np.random.default_rng(len(size))
    n = len(size) - 2
    theta = rng.normal(size=(size[0], n, n + 1))
    ct = rng.normal(size=(*size[:1], *size[2:], n))
    t_y, (t_g,) = _torch_vjp(aten.affine_grid_generator, (theta, list(size), corners), ct, [0])
    y, (g,) = _vjp(jaxderiv.op("affine_grid_generator"), (theta, size, corners), ct, [0])
    _close(y, t_y.detach())
    _close(g, t_g)


def test_cudnn_affine_grid_is_aligned():
    rng = np.random.default_rng(4)
    theta, ct = rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 4, 5, 2))
    t_y, (t_g,) = _torch_vjp(aten.affine_grid_generator, (theta, [2, 3, 4, 5], True), ct, [0])
    y, (g,) = _vjp(jaxderiv.op("cudnn_affine_grid_generator"), (theta, 2, 3, 4, 5), ct, [0])
    _close(y, t_y.detach())
    _close(g, t_g)


DOUBLE = [(2, m, p, a) for m in (0, 1, 2) for p in (0, 1, 2) for a in (False, True) if (m + p + a) % 2 == 0]
DOUBLE += [(3, m, p, a) for m in (0, 1) for p in (0, 2) for a in (False, True)]


@pytest.mark.parametrize("n,mode,padding,corners", DOUBLE, ids=str)
def test_double_backward_matches_torch(n, mode, padding, corners):
    """The backward entry's vjp (grid_sampler_{n}d_double_backward) is torch's second derivative.
    Smooth points only: at a kink torch's double backward and the math need not agree."""
    rng = np.random.default_rng(11 + n + mode * 10 + padding)
    shape, points = SHAPES[n]
    x, grid = rng.normal(size=shape), grid_for(rng, shape[2:], (shape[0], *points), corners)
    g_out = rng.normal(size=shape[:2] + points)
    cts = (rng.normal(size=shape), rng.normal(size=grid.shape))
    tg, tx, tgrid = (torch.tensor(a, requires_grad=True) for a in (g_out, x, grid))
    t_gi, t_gg = getattr(aten, f"grid_sampler_{n}d_backward")(tg, tx, tgrid, mode, padding, corners, [True, True])
    t_second = torch.autograd.grad(
        (t_gi, t_gg), (tg, tx, tgrid), tuple(torch.tensor(c) for c in cts), allow_unused=True
    )
    op = TORCH_SPEC.op(f"grid_sampler_{n}d_backward")
    backward = lambda g, x, grid: op(g, x, grid, mode, padding, corners, (True, True))
    (gi, gg), pullback = jax.vjp(backward, *(jnp.asarray(a) for a in (g_out, x, grid)))
    _close(gi, t_gi.detach())
    _close(gg, t_gg.detach())
    for ours, theirs in zip(pullback(tuple(jnp.asarray(c) for c in cts)), t_second):
        _close(ours, np.zeros(ours.shape) if theirs is None else theirs, tol=1e-10)


def test_jit_and_vmap_of_a_sampler():
    rng = np.random.default_rng(5)
    x, grid = jnp.asarray(rng.normal(size=(3, 2, 4, 5))), jnp.asarray(rng.uniform(-1, 1, (3, 3, 4, 2)))
    op = jaxderiv.op("grid_sampler_2d")
    loss = lambda x, g: jnp.sum(op(x, g, 2, 2, False) ** 2)
    gx, gg = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, grid)
    vx, vg = jax.vmap(jax.grad(loss, argnums=(0, 1)))(x[:, None], grid[:, None])
    _close(vx[:, 0], gx)
    _close(vg[:, 0], gg)


@pytest.mark.parametrize(
    "mode,padding,corners", [(m, p, a) for m in (0, 1, 2) for p in (1, 2) for a in (False, True)], ids=str
)
def test_single_pixel_rows(mode, padding, corners):
    """An input one pixel high: reflection over a zero span (corners aligned) maps everything to 0."""
    rng = np.random.default_rng(13)
    x, grid = rng.normal(size=(2, 2, 1, 3)), rng.uniform(-1.5, 1.5, (2, 2, 3, 2))
    ct = rng.normal(size=(2, 2, 2, 3))
    t_y, t_grads = _torch_vjp(aten.grid_sampler_2d, (x, grid, mode, padding, corners), ct, [0, 1])
    y, grads = _vjp(jaxderiv.op("grid_sampler_2d"), (x, grid, mode, padding, corners), ct, [0, 1])
    _close(y, t_y.detach())
    for g, t in zip(grads, t_grads):
        _close(g, t)
