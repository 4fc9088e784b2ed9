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


def test_mkldnn_reshape_as_torch():
    """`_mkldnn_reshape` of a tensor in MKL-DNN's layout: the values of the dense reshape, the
    gradient reshaped back (its formula, `grad.reshape_symint(self.sym_sizes())`)."""
    x = np.random.default_rng(4).normal(size=(2, 3, 2)).astype(np.float32)
    ct = np.random.default_rng(5).normal(size=(4, 3)).astype(np.float32)
    out, vjp = jax.vjp(lambda x: jaxderiv.op("_mkldnn_reshape")(x, [4, -1]), jnp.asarray(x))
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no MKL-DNN")
    tout = torch.ops.aten._mkldnn_reshape(torch.from_numpy(x).to_mkldnn(), [4, -1]).to_dense()
    np.testing.assert_array_equal(np.asarray(out), tout.numpy())
    np.testing.assert_array_equal(np.asarray(vjp(jnp.asarray(ct))[0]), ct.reshape(x.shape))


def test_pin_memory_is_the_identity_with_its_gradient():
    x = jnp.asarray(np.random.default_rng(6).normal(size=(3,)))
    out, vjp = jax.vjp(jaxderiv.op("_pin_memory"), x)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(vjp(2 * x)[0]), 2 * np.asarray(x))
