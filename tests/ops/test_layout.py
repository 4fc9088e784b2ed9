"""Layout conversions on dense arrays against torch 2.13: to_dense and to_mkldnn keep the
values (torch's round trip through MKL-DNN's layout does too), and pass gradients through."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_to_dense_as_torch(dtype):
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(dtype)
    ct = np.random.default_rng(1).normal(size=(2, 3)).astype(dtype)
    out, vjp = jax.vjp(jaxderiv.op("to_dense"), jnp.asarray(x))
    tx = torch.from_numpy(x).requires_grad_()
    tout = tx.to_dense()
    (tg,) = torch.autograd.grad(tout, tx, torch.from_numpy(ct))
    np.testing.assert_array_equal(np.asarray(out), tout.detach().numpy())
    np.testing.assert_array_equal(np.asarray(vjp(jnp.asarray(ct))[0]), tg.numpy())


def test_to_mkldnn_round_trip_as_torch():
    x = np.random.default_rng(2).normal(size=(2, 3, 4)).astype(np.float32)
    ct = np.random.default_rng(3).normal(size=x.shape).astype(np.float32)
    to_mkldnn, to_dense = jaxderiv.op("to_mkldnn"), jaxderiv.op("to_dense")
    out, vjp = jax.vjp(lambda x: to_dense(to_mkldnn(x)), jnp.asarray(x))
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no MKL-DNN")
    tx = torch.from_numpy(x).requires_grad_()
    tout = tx.to_mkldnn().to_dense()
    (tg,) = torch.autograd.grad(tout, tx, torch.from_numpy(ct))
    np.testing.assert_array_equal(np.asarray(out), tout.detach().numpy())
    np.testing.assert_array_equal(np.asarray(vjp(jnp.asarray(ct))[0]), tg.numpy())
    _, tangent = jax.jvp(to_mkldnn, (jnp.asarray(x),), (jnp.asarray(ct),))
    np.testing.assert_array_equal(np.asarray(tangent), ct)


def test_to_mkldnn_rejects_integers_as_torch():
    with pytest.raises(TypeError):
        jaxderiv.op("to_mkldnn")(jnp.arange(3))
    with pytest.raises(RuntimeError):
        torch.arange(3).to_mkldnn()
