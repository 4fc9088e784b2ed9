"""Upsampling against PyTorch 2.13 in every mode, align_corners both ways, sizes and scales
(ATen's source-index rules, which differ from jax.image.resize), gradients through the spec.

torch's own entries (the spec torch 2.13 ships) for nearest-exact and antialiased (bilinear,
bicubic, Lanczos) upsampling and their backward ops: values, gradients and tangents."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, assert_vjp_matches, to_torch  # noqa: E402

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


# -- torch's own entries -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


RNG = np.random.default_rng(0)


# -- nearest-exact -----------------------------------------------------------------------------------


NEAREST_EXACT = [  # input shape, output_size, scales
    ((2, 2, 5), (8,), (None,)),
    ((2, 2, 6), (4,), (None,)),  # downsampling: every 1.5th pixel centre
    ((1, 2, 4, 5), (7, 9), (None, None)),
    ((1, 2, 4, 5), (8, 7), (2.0, 1.5)),  # explicit scales set the source positions
    ((1, 1, 3, 3, 4), (5, 4, 6), (None, None, None)),
    ((1, 1, 3, 3, 4), (1, 2, 2), (None, None, None)),
]


@pytest.mark.parametrize("case", range(len(NEAREST_EXACT)))
def test_upsample_nearest_exact_and_its_backward(torch_registry, case):
    shape, size, scales = NEAREST_EXACT[case]
    n = len(size)
    x = RNG.normal(size=shape)
    name = f"_upsample_nearest_exact{n}d"
    assert_vjp_matches(
        RNG,
        lambda x: torch_registry.op(name)(x, size, *scales),
        lambda x: getattr(aten, name)(x, list(size), *scales),
        (x,),
        (0,),
    )
    g = RNG.normal(size=shape[:2] + size)
    assert_vjp_matches(
        RNG,
        lambda g: torch_registry.op(name + "_backward")(g, size, shape, *scales),
        lambda g: getattr(aten, name + "_backward")(g, list(size), list(shape), *scales),
        (g,),
        (0,),
    )


# -- antialiased bilinear, bicubic and Lanczos -------------------------------------------------------


def test_upsample_nearest_exact_integer_input(torch_registry):
    x = RNG.integers(0, 255, size=(1, 1, 3, 5)).astype(np.uint8)
    ours = np.asarray(torch_registry.op("_upsample_nearest_exact2d")(x, (5, 3)))
    theirs = aten._upsample_nearest_exact2d(to_torch(x), [5, 3]).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


ANTIALIASED = [  # input shape, output_size, align_corners, scales
    ((1, 2, 4, 5), (7, 9), False, (None, None)),
    ((1, 2, 9, 11), (4, 5), False, (None, None)),  # downsampling: the filter averages several inputs
    ((2, 1, 9, 11), (4, 5), True, (None, None)),
    ((1, 1, 10, 7), (3, 7), False, (0.3, None)),  # a given scale, and an unchanged dim
    ((1, 1, 5, 6), (1, 1), False, (None, None)),  # one output: the mean-like average of the plane
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("case", range(len(ANTIALIASED)))
def test_antialiased_upsample_and_its_backward(torch_registry, mode, case):
    shape, size, corners, scales = ANTIALIASED[case]
    name = f"_upsample_{mode}2d_aa"
    x, g = RNG.normal(size=shape), RNG.normal(size=shape[:2] + size)
    assert_vjp_matches(
        RNG,
        lambda x: torch_registry.op(name)(x, size, corners, *scales),
        lambda x: getattr(aten, name)(x, list(size), corners, *scales),
        (x,),
        (0,),
    )
    assert_vjp_matches(
        RNG,
        lambda g: torch_registry.op(name + "_backward")(g, size, shape, corners, *scales),
        lambda g: getattr(aten, name + "_backward")(g, list(size), list(shape), corners, *scales),
        (g,),
        (0,),
    )
    t = RNG.normal(size=shape)
    _, jt = jax.jvp(lambda x: torch_registry.op(name)(x, size, corners, *scales), (jnp.asarray(x),), (jnp.asarray(t),))
    _, tt = torch.func.jvp(
        lambda x: getattr(aten, name)(x, list(size), corners, *scales), (to_torch(x),), (to_torch(t),)
    )
    assert_same(jt, tt)


def test_antialiased_upsample_float32(torch_registry):
    x = RNG.normal(size=(1, 2, 9, 7)).astype(np.float32)
    ours = torch_registry.op("_upsample_bicubic2d_aa")(x, (4, 3), False)
    assert ours.dtype == jnp.float32
    assert_same(ours, aten._upsample_bicubic2d_aa(to_torch(x), [4, 3], False), rtol=1e-5, atol=1e-6)
