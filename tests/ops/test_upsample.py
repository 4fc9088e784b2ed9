"""Upsampling against PyTorch 2.13 in every mode, align_corners both ways, sizes and scales
(ATen's source-index rules, which differ from jax.image.resize), gradients through the spec."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
aten = torch.ops.aten

SHAPES = {1: (2, 2, 5), 2: (1, 2, 4, 5), 3: (1, 2, 3, 3, 4)}
MODES = [
    ("nearest1d", 1, False),
    ("linear1d", 1, True),
    ("nearest2d", 2, False),
    ("bilinear2d", 2, True),
    ("bicubic2d", 2, True),
    ("nearest3d", 3, False),
    ("trilinear3d", 3, True),
]
# integer factors (x3, x2, x1, /2) as well as fractional ones: nearest has a path for each
SIZES = {
    1: [(8,), (3,), (10,), (15,)],
    2: [(7, 9), (3, 2), (8, 10), (12, 5), (2, 15)],
    3: [(5, 4, 6), (2, 2, 3), (6, 3, 8)],
}


def _cases():
    for mode, n, corners in MODES:
        for ac in (False, True) if corners else (None,):
            for size in SIZES[n]:
                yield mode, n, ac, size, None
            yield mode, n, ac, None, (1.7,) * n
            yield mode, n, ac, None, (3.0,) * n


@pytest.mark.parametrize("mode,n,ac,size,scales", list(_cases()), ids=str)
def test_upsample_matches_torch(mode, n, ac, size, scales):
    rng = np.random.default_rng(0)
    x = rng.normal(size=SHAPES[n])
    if size is None:  # the .vec form: output size from scale factors
        name, args = f"upsample_{mode}.vec", ((None, ac, list(scales)) if ac is not None else (None, list(scales)))
        t_op = getattr(aten, f"upsample_{mode}").vec
    else:
        name, args = f"upsample_{mode}", ((size, ac) if ac is not None else (size,))
        t_op = getattr(aten, f"upsample_{mode}").default
    tx = torch.tensor(x, requires_grad=True)
    ty = t_op(tx, *args)
    ct = rng.normal(size=ty.shape)
    (t_grad,) = torch.autograd.grad(ty, tx, torch.tensor(ct))
    y, pullback = jax.vjp(lambda x: jaxderiv.op(name)(x, *args), jnp.asarray(x))
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pullback(jnp.asarray(ct))[0], t_grad.numpy(), rtol=1e-12, atol=1e-12)


def test_nearest_is_not_jax_image_resize():
    """ATen's nearest takes floor(dst * in/out); jax.image.resize rounds half-pixel centres."""
    x = jnp.arange(5.0)[None, None]
    ours = jaxderiv.op("upsample_nearest1d")(x, (3,))
    np.testing.assert_array_equal(ours, aten.upsample_nearest1d(torch.arange(5.0)[None, None].double(), [3]).numpy())
    assert not np.array_equal(ours, jax.image.resize(x, (1, 1, 3), "nearest"))


def test_jit_and_vmap_of_an_upsampling():
    x = jnp.asarray(np.random.default_rng(1).normal(size=(3, 2, 4, 5)))
    op = jaxderiv.op("upsample_bilinear2d")
    loss = lambda x: jnp.sum(op(x, (7, 9), False) ** 2)
    g = jax.jit(jax.grad(loss))(x)
    np.testing.assert_allclose(jax.vmap(jax.grad(loss))(x[:, None])[:, 0], g, rtol=1e-12)
