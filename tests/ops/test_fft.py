"""FFT kernels against PyTorch 2.13: `_fft_r2c`/`_fft_c2r`/`_fft_c2c` against torch.ops.aten
(values and gradients, every normalization, batched, complex), and PyTorch 1.7's
`_fft_with_size`, gone from torch 2.13, against torch.fft on the same numbers with complex
values held as a trailing dim of size 2 (torch.view_as_real)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
aten = torch.ops.aten
NORMS = {0: "backward", 1: "ortho", 2: "forward"}  # the forward transform's scaling per mode
TORCH_SPEC = jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))  # the only file with the _fft_* entries


def _rand(rng, shape, complex_):
    x = rng.normal(size=shape)
    return x + 1j * rng.normal(size=shape) if complex_ else x


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _compare(name, x, rest, rng):
    """Output and the gradient of a real loss <Re y, a> + <Im y, b>: JAX's is torch's conjugate."""
    op = TORCH_SPEC.op(name)
    y = op(jnp.asarray(x), *rest)
    ct = _rand(rng, y.shape, jnp.iscomplexobj(y))
    loss = lambda x: jnp.sum(jnp.real(op(x, *rest) * jnp.conj(ct)))
    g = jax.grad(loss)(jnp.asarray(x))
    tx = torch.tensor(x, requires_grad=True)
    ty = getattr(aten, name)(tx, *rest)
    (tg,) = torch.autograd.grad(torch.sum(torch.real(ty * torch.tensor(ct).conj())), tx)
    _close(y, ty.detach().numpy())
    _close(g, np.conj(tg.numpy()))


@pytest.mark.parametrize("norm", [0, 1, 2])
@pytest.mark.parametrize("shape,dim", [((2, 5), (1,)), ((3, 4, 6), (2, 0)), ((2, 3, 2, 3), (1, 2, 3))])
def test_c2c_matches_torch(shape, dim, norm):
    rng = np.random.default_rng(0)
    for forward in (True, False):
        _compare("_fft_c2c", _rand(rng, shape, True), (list(dim), norm, forward), rng)


@pytest.mark.parametrize("norm", [0, 1, 2])
@pytest.mark.parametrize("shape,dim", [((2, 5), (1,)), ((3, 4, 6), (2, 0)), ((2, 3, 4), (1, 2))])
def test_r2c_matches_torch(shape, dim, norm):
    rng = np.random.default_rng(1)
    for onesided in (True, False):
        _compare("_fft_r2c", _rand(rng, shape, False), (list(dim), norm, onesided), rng)


@pytest.mark.parametrize("norm", [0, 1, 2])
@pytest.mark.parametrize(
    "shape,dim,n", [((2, 3), (1,), 5), ((2, 4), (1,), 6), ((3, 4, 3), (1, 2), 4), ((3, 2, 3), (2, 0), 5)]
)
def test_c2r_matches_torch(shape, dim, n, norm):
    """Non-Hermitian inputs included: the imaginary parts of self-mirrored entries are ignored."""
    rng = np.random.default_rng(2)
    _compare("_fft_c2r", _rand(rng, shape, True), (list(dim), norm, n), rng)


# -- PyTorch 1.7's _fft_with_size against torch.fft ---------------------------------------------


def _old(x, *args):
    op = jaxderiv.op("_fft_with_size.norm_modes")
    return op(jnp.asarray(x), *args)


def _old_vs_torch(x, args, torch_fn, rng):
    y, pullback = jax.vjp(lambda x: _old(x, *args), jnp.asarray(x))
    ct = rng.normal(size=y.shape)
    (g,) = pullback(jnp.asarray(ct))
    tx = torch.tensor(x, requires_grad=True)
    ty = torch_fn(tx)
    (tg,) = torch.autograd.grad(ty, tx, torch.tensor(ct))
    _close(y, ty.detach().numpy())
    _close(g, tg.numpy())


@pytest.mark.parametrize("norm", [0, 1, 2])
@pytest.mark.parametrize("inverse", [False, True])
def test_fft_with_size_c2c_matches_torch_fft(norm, inverse):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 4, 2))
    mode = NORMS[norm] if not inverse else {0: "forward", 1: "ortho", 2: "backward"}[norm]
    fn = torch.fft.ifftn if inverse else torch.fft.fftn
    args = (2, True, True, inverse, (3, 4), norm, False, x.shape)
    _old_vs_torch(x, args, lambda t: torch.view_as_real(fn(torch.view_as_complex(t), dim=(1, 2), norm=mode)), rng)


@pytest.mark.parametrize("norm", [0, 1, 2])
@pytest.mark.parametrize("onesided", [True, False])
def test_fft_with_size_r2c_matches_torch_fft(norm, onesided):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 5))
    fn = torch.fft.rfftn if onesided else torch.fft.fftn
    out = (2, 3, 3 if onesided else 5, 2)
    args = (2, False, True, False, (3, 5), norm, onesided, out)
    _old_vs_torch(x, args, lambda t: torch.view_as_real(fn(t, dim=(1, 2), norm=NORMS[norm])), rng)


@pytest.mark.parametrize("norm", [0, 1, 2])
@pytest.mark.parametrize("n", [4, 5])
def test_fft_with_size_c2r_matches_torch_fft(norm, n):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, n // 2 + 1, 2))
    mode = {0: "forward", 1: "ortho", 2: "backward"}[norm]  # the inverse transform's scaling
    args = (2, True, False, True, (3, n), norm, True, (2, 3, n))
    _old_vs_torch(x, args, lambda t: torch.fft.irfftn(torch.view_as_complex(t), s=(3, n), dim=(1, 2), norm=mode), rng)


def test_fft_with_size_under_jit_and_vmap():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(4, 6))
    args = (1, False, True, False, (6,), 1, True, (4, 2, 2))
    f = jax.jit(lambda x: _old(x, *args))
    per_row = jax.vmap(lambda r: _old(r[None], 1, False, True, False, (6,), 1, True, (1, 4, 2))[0])(x)
    _close(f(x), per_row)
    _close(f(x), torch.view_as_real(torch.fft.rfft(torch.tensor(x), norm="ortho")).numpy())
