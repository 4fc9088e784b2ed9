"""Pooling against PyTorch 2.13: values, ATen's flat indices, gradients through the spec's
formulas. Ties included: max pooling routes the gradient to the first maximum, and
overlapping windows accumulate at a shared maximum.

torch's own entries (the spec torch 2.13 ships) for _adaptive_avg_pool3d, max_pool2d and
max_pool2d_backward: values and gradients, padding and dilation included."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, assert_vjp_matches, to_torch  # noqa: E402

aten = torch.ops.aten


def _grad(name, x, args, ct):
    """(output, jaxderiv's vjp for self) of op `name` (first output only)."""
    op = jaxderiv.op(name)
    first = lambda x: (lambda y: y[0] if isinstance(y, tuple) else y)(op(x, *args))
    y, pullback = jax.vjp(first, jnp.asarray(x))
    return y, pullback(jnp.asarray(ct))[0]


def _torch(name, x, args):
    base, _, overload = name.partition(".")
    tx = torch.tensor(x, requires_grad=True)
    out = getattr(getattr(aten, base), overload or "default")(
        tx, *[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    )
    return tx, out


CASES = [
    ("avg_pool2d", (2, 2, 6, 7), ((3, 3), (2, 2), (1, 1), False, True, None)),
    ("avg_pool2d", (2, 2, 6, 7), ((2, 3), (2, 1), (1, 1), True, False, None)),
    ("avg_pool2d", (2, 6, 7), ((2, 2), (), (0, 0), True, True, 3)),
    ("avg_pool3d", (1, 2, 4, 5, 3), ((2, 3, 2), (1, 2, 2), (1, 1, 0), True, False, None)),
    ("max_pool2d_with_indices", (2, 2, 6, 7), ((3, 3), (2, 2), (1, 1), (1, 1), False)),
    ("max_pool2d_with_indices", (2, 6, 7), ((2, 3), (2, 1), (1, 1), (2, 1), True)),
    ("max_pool3d_with_indices", (1, 2, 4, 5, 3), ((2, 2, 2), (1, 2, 2), (1, 1, 0), (1, 1, 1), True)),
    ("_adaptive_avg_pool2d", (2, 2, 7, 5), ((3, 4),)),
    ("adaptive_avg_pool3d", (1, 2, 4, 5, 3), ((3, 2, 2),)),
    ("adaptive_max_pool2d", (2, 2, 7, 5), ((3, 4),)),
    ("adaptive_max_pool3d", (1, 2, 4, 5, 3), ((3, 2, 2),)),
]


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("name,shape,args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_pooling_matches_torch(name, shape, args, ties):
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=shape)) if ties else rng.normal(size=shape)
    tx, out = _torch(name, x, args)
    t_val = out[0] if isinstance(out, tuple) else out
    ct = rng.normal(size=t_val.shape)
    (t_grad,) = torch.autograd.grad(t_val, tx, torch.tensor(ct))
    y, g = _grad(name, x, args, ct)
    np.testing.assert_allclose(y, t_val.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, t_grad.numpy(), rtol=1e-12, atol=1e-12)
    if isinstance(out, tuple):
        np.testing.assert_array_equal(jaxderiv.op(name)(jnp.asarray(x), *args)[1], out[1].numpy())


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_takes_its_samples_as_an_argument(n):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 2, 7, 6, 5)[: n + 2])
    samples = rng.uniform(size=(2, 2, n))
    args = ((2,) * n, (4, 3, 2)[:n], samples)
    tx, (t_val, t_idx) = _torch(f"fractional_max_pool{n}d", x, args)
    ct = rng.normal(size=t_val.shape)
    (t_grad,) = torch.autograd.grad(t_val, tx, torch.tensor(ct))
    y, g = _grad(f"fractional_max_pool{n}d", x, args[:2] + (jnp.asarray(samples),), ct)
    np.testing.assert_allclose(y, t_val.detach().numpy())
    np.testing.assert_allclose(g, t_grad.numpy(), rtol=1e-12)


def test_max_unpool_and_double_backward_match_torch():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 2, 6, 6))
    v, i = aten.max_pool2d_with_indices(torch.tensor(x), [2, 2], [2, 2])
    tv = v.clone().requires_grad_(True)
    out = aten.max_unpool2d(tv, i, [6, 6])
    ct = rng.normal(size=out.shape)
    (t_grad,) = torch.autograd.grad(out, tv, torch.tensor(ct))
    op = jaxderiv.op("max_unpool2d")
    y, pullback = jax.vjp(lambda v: op(v, jnp.asarray(i.numpy()), (6, 6)), jnp.asarray(v.numpy()))
    np.testing.assert_array_equal(y, out.detach().numpy())
    np.testing.assert_allclose(pullback(jnp.asarray(ct))[0], t_grad.numpy())
    # max pooling's double backward reads the grad at each index
    bw = jaxderiv.op("max_pool2d_with_indices_backward")
    go = rng.normal(size=v.shape)
    f = lambda go: bw(go, jnp.asarray(x), (2, 2), (2, 2), (0, 0), (1, 1), False, jnp.asarray(i.numpy()))
    _, pullback = jax.vjp(f, jnp.asarray(go))
    np.testing.assert_allclose(
        pullback(jnp.asarray(ct))[0],
        np.take_along_axis(ct.reshape(2, 2, -1), i.numpy().reshape(2, 2, -1), 2).reshape(v.shape),
    )


def test_jit_and_vmap_of_a_pooling():
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(3, 2, 6, 6)))
    op = jaxderiv.op("max_pool2d_with_indices")
    loss = lambda x: jnp.sum(op(x, (2, 2), (2, 2))[0] ** 2)
    g = jax.jit(jax.grad(loss))(x)
    np.testing.assert_allclose(jax.vmap(jax.grad(loss))(x[:, None])[:, 0], g)


# -- 0-size batches (OpInfo samples): reshape's -1 divided by a zero size --------------------------

EMPTY_BATCH = [
    ("_adaptive_avg_pool2d", np.zeros((0, 3, 6, 6)), ([2, 3],)),
    ("_adaptive_avg_pool3d", np.zeros((0, 2, 4, 4, 4)), ([2, 3, 2],)),
    ("adaptive_max_pool2d", np.zeros((0, 3, 6, 6)), ([2, 3],)),
    ("max_pool2d_with_indices", np.zeros((0, 3, 6, 6)), ([2, 2],)),
]


@pytest.mark.parametrize("name,x,args", EMPTY_BATCH, ids=[n for n, _, _ in EMPTY_BATCH])
def test_zero_size_batch_gives_torchs_empty_outputs_and_gradient(name, x, args):
    reg = jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))
    op = reg.op(name)
    ours = op(jnp.asarray(x), *args)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = getattr(aten, name)(torch.tensor(x), *args)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert [o.shape for o in ours] == [tuple(t.shape) for t in theirs]
    first = lambda x: (lambda y: y[0] if isinstance(y, tuple) else y)(op(x, *args))  # noqa: E731
    assert jax.grad(lambda x: jnp.sum(first(x)))(jnp.asarray(x)).shape == x.shape


# -- torch's own entries -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


RNG = np.random.default_rng(0)


def test_adaptive_avg_pool3d_and_its_backward(torch_registry):
    x = RNG.normal(size=(1, 2, 4, 5, 3))
    assert_vjp_matches(
        RNG,
        lambda x: torch_registry.op("_adaptive_avg_pool3d")(x, (3, 2, 2)),
        lambda x: aten._adaptive_avg_pool3d(x, [3, 2, 2]),
        (x,),
        (0,),
    )
    g = RNG.normal(size=(1, 2, 3, 2, 2))
    assert_vjp_matches(
        RNG,
        lambda g, x: torch_registry.op("_adaptive_avg_pool3d_backward")(g, x),
        aten._adaptive_avg_pool3d_backward,
        (g, x),
        (0,),
    )


def test_max_pool2d_ties_and_padding(torch_registry):
    """Tied maxima: torch's gradient goes to the first index of each window."""
    tied = np.kron(np.array([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None]
    assert_vjp_matches(
        RNG,
        lambda x: torch_registry.op("max_pool2d")(x, (2, 2), (2, 2)),
        lambda x: aten.max_pool2d(x, [2, 2], [2, 2]),
        (tied,),
        (0,),
    )
    x = RNG.permutation(50).reshape(2, 1, 5, 5) * 0.1
    assert_vjp_matches(
        RNG,
        lambda x: torch_registry.op("max_pool2d")(x, (2, 3), (2, 1), (1, 1), (2, 1), True),
        lambda x: aten.max_pool2d(x, [2, 3], [2, 1], [1, 1], [2, 1], True),
        (x,),
        (0,),
    )


# -- max_pool2d_backward: the backward op max_pool2d calls -------------------------------------------


def _pool_backward(g, x, *geometry):
    _, idx = aten.max_pool2d_with_indices(x, *geometry)
    return aten.max_pool2d_with_indices_backward(g, x, *geometry, idx)


@pytest.mark.parametrize("case", ["ties", "padded"])
def test_max_pool2d_backward_values_and_derivatives(torch_registry, case):
    """The first maximum of a window takes the gradient (ties); the gradient for self is zero;
    the one for grad_output raises, as the spec's error_for_max_pool2d_double_backward does."""
    from jaxderiv.errors import NotImplementedDerivative

    if case == "ties":
        x, geometry = (
            np.kron(np.array([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None],
            ((2, 2), (2, 2), (0, 0), (1, 1), False),
        )
    else:
        x, geometry = RNG.permutation(50).reshape(2, 1, 5, 5) * 0.1, ((2, 3), (2, 1), (1, 1), (2, 1), True)
    pool = torch_registry.op("max_pool2d")
    g = RNG.normal(size=pool(x, *geometry).shape)
    op = torch_registry.op("max_pool2d_backward")
    tg = [list(a) if isinstance(a, tuple) else a for a in geometry]
    assert_same(op(g, x, *geometry), _pool_backward(to_torch(g), to_torch(x), *tg))
    gx = jax.grad(lambda x: jnp.sum(op(jnp.asarray(g), x, *geometry) ** 2))(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(gx), 0)  # self: zeros_like(self)
    with pytest.raises(NotImplementedDerivative, match="error_for_max_pool2d_double_backward"):
        jax.grad(lambda g: jnp.sum(op(g, jnp.asarray(x), *geometry) ** 2))(jnp.asarray(g))
    # max_pool2d's second derivative through its cotangent goes through that entry, and raises too
    with pytest.raises(NotImplementedDerivative):
        jax.grad(lambda ct: jnp.sum(jax.vjp(lambda x: pool(x, *geometry), jnp.asarray(x))[1](ct)[0] ** 2))(
            jnp.asarray(g)
        )
