"""Fused recurrent cells and packed sequences against torch 2.13.

ATen's `_thnn_fused_*_cell` kernels are CUDA-only, so the cells are compared with
torch.lstm_cell / torch.gru_cell, which compute the same cell from input, state and
weights: the gate pre-activations are input @ W_ih.T and hx @ W_hh.T. Values and gradients
(through the spec's differentiable cell backward) w.r.t. every input, with and without biases.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.namespace import HELPERS

torch = pytest.importorskip("torch")
aten = torch.ops.aten
B, I, H = 3, 4, 5


def _params(rng, gates, bias):
    p = {"x": rng.normal(size=(B, I)), "hx": rng.normal(size=(B, H)), "w_ih": rng.normal(size=(gates * H, I)) * 0.5,
         "w_hh": rng.normal(size=(gates * H, H)) * 0.5}
    if bias:
        p["b_ih"], p["b_hh"] = rng.normal(size=(gates * H,)), rng.normal(size=(gates * H,))
    return p


def _torch_grads(outputs, inputs, cts):
    grads = torch.autograd.grad(outputs, list(inputs.values()), [torch.from_numpy(c) for c in cts])
    return {k: g.numpy() for k, g in zip(inputs, grads)}


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell_as_torch(bias):
    rng = np.random.default_rng(0)
    p = _params(rng, 4, bias)
    p["cx"] = rng.normal(size=(B, H))
    cts = [rng.normal(size=(B, H)), rng.normal(size=(B, H))]
    cell = jaxderiv.op("_thnn_fused_lstm_cell")

    def ours(p):
        hy, cy, _ = cell(p["x"] @ p["w_ih"].T, p["hx"] @ p["w_hh"].T, p["cx"], p.get("b_ih"), p.get("b_hh"))
        return hy, cy

    (hy, cy), vjp = jax.vjp(ours, {k: jnp.asarray(v) for k, v in p.items()})
    t = {k: torch.from_numpy(v).requires_grad_() for k, v in p.items()}
    thy, tcy = torch.lstm_cell(t["x"], (t["hx"], t["cx"]), t["w_ih"], t["w_hh"], t.get("b_ih"), t.get("b_hh"))
    np.testing.assert_allclose(np.asarray(hy), thy.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(cy), tcy.detach().numpy(), rtol=1e-12, atol=1e-12)
    expected = _torch_grads([thy, tcy], t, cts)
    got = vjp(tuple(jnp.asarray(c) for c in cts))[0]
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), expected[k], rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_as_torch(bias):
    rng = np.random.default_rng(1)
    p = _params(rng, 3, bias)
    ct = rng.normal(size=(B, H))
    cell = jaxderiv.op("_thnn_fused_gru_cell")

    def ours(p):
        return cell(p["x"] @ p["w_ih"].T, p["hx"] @ p["w_hh"].T, p["hx"], p.get("b_ih"), p.get("b_hh"))[0]

    hy, vjp = jax.vjp(ours, {k: jnp.asarray(v) for k, v in p.items()})
    t = {k: torch.from_numpy(v).requires_grad_() for k, v in p.items()}
    thy = torch.gru_cell(t["x"], t["hx"], t["w_ih"], t["w_hh"], t.get("b_ih"), t.get("b_hh"))
    np.testing.assert_allclose(np.asarray(hy), thy.detach().numpy(), rtol=1e-12, atol=1e-12)
    expected = _torch_grads([thy], t, [ct])
    got = vjp(jnp.asarray(ct))[0]
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), expected[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_lstm_cell_second_order_as_torch():
    """The gradient of a gradient goes through the differentiable backward's own derivative."""
    rng = np.random.default_rng(2)
    p = _params(rng, 4, True)
    p["cx"] = rng.normal(size=(B, H))
    cell = jaxderiv.op("_thnn_fused_lstm_cell")

    def loss(x):
        hy, cy, _ = cell(x @ p["w_ih"].T, p["hx"] @ p["w_hh"].T, p["cx"], p["b_ih"], p["b_hh"])
        return jnp.sum(hy * hy) + jnp.sum(jnp.sin(cy))

    ours = jax.grad(lambda x: jnp.sum(jax.grad(loss)(x) ** 2))(jnp.asarray(p["x"]))
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    tx = t["x"].clone().requires_grad_()
    thy, tcy = torch.lstm_cell(tx, (t["hx"], t["cx"]), t["w_ih"], t["w_hh"], t["b_ih"], t["b_hh"])
    (g,) = torch.autograd.grad((thy * thy).sum() + tcy.sin().sum(), tx, create_graph=True)
    (gg,) = torch.autograd.grad((g ** 2).sum(), tx)
    np.testing.assert_allclose(np.asarray(ours), gg.numpy(), rtol=1e-10, atol=1e-12)


def test_fused_backwards_equal_the_differentiable_ones():
    """The workspace-reading backwards give what the recomputing ones give (and torch's gradients above)."""
    rng = np.random.default_rng(3)
    ig, hg, cx, bi, bh = rng.normal(size=(B, 4 * H)), rng.normal(size=(B, 4 * H)), rng.normal(size=(B, H)), rng.normal(size=4 * H), rng.normal(size=4 * H)
    gh, gc = rng.normal(size=(B, H)), rng.normal(size=(B, H))
    _, cy, ws = jaxderiv.op("_thnn_fused_lstm_cell")(ig, hg, cx, bi, bh)
    for grad_hy, grad_cy in ((gh, gc), (gh, None), (None, gc)):
        fused = HELPERS["_thnn_fused_lstm_cell_backward"](grad_hy, grad_cy, cx, cy, ws, True)
        diff = HELPERS["_thnn_differentiable_lstm_cell_backward"](grad_hy, grad_cy, ig, hg, bi, bh, cx, cy)
        for a, b in zip(fused, diff):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    ig3, hg3, hx = ig[:, : 3 * H], hg[:, : 3 * H], cx
    _, ws = jaxderiv.op("_thnn_fused_gru_cell")(ig3, hg3, hx, bi[: 3 * H], bh[: 3 * H])
    fused = HELPERS["_thnn_fused_gru_cell_backward"](gh, ws, True)
    diff = HELPERS["_thnn_differentiable_gru_cell_backward"](gh, ig3, hg3, hx, bi[: 3 * H], bh[: 3 * H])
    for a, b in zip(fused, diff):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_sequence_as_torch(batch_first):
    rng = np.random.default_rng(4)
    lengths = np.array([5, 3, 3, 1])
    x = rng.normal(size=(4, 5, 2) if batch_first else (5, 4, 2))
    data, sizes = jaxderiv.op("_pack_padded_sequence")(x, lengths, batch_first)
    tx = torch.from_numpy(x).requires_grad_()
    tdata, tsizes = aten._pack_padded_sequence(tx, torch.from_numpy(lengths), batch_first)
    np.testing.assert_array_equal(np.asarray(data), tdata.detach().numpy())
    np.testing.assert_array_equal(np.asarray(sizes), tsizes.numpy())
    assert np.asarray(sizes).dtype == tsizes.numpy().dtype
    ct = rng.normal(size=tdata.shape)
    (tg,) = torch.autograd.grad(tdata, tx, torch.from_numpy(ct))
    g = jax.vjp(lambda x: jaxderiv.op("_pack_padded_sequence")(x, lengths, batch_first)[0], jnp.asarray(x))[1](jnp.asarray(ct))[0]
    np.testing.assert_array_equal(np.asarray(g), tg.numpy())


def test_pack_padded_sequence_rejects_unsorted_lengths_as_torch():
    x = np.zeros((3, 2, 1))
    with pytest.raises(ValueError, match="decreasing"):
        jaxderiv.op("_pack_padded_sequence")(x, np.array([1, 3]), False)
    with pytest.raises(RuntimeError, match="decreasing"):
        aten._pack_padded_sequence(torch.from_numpy(x), torch.tensor([1, 3]), False)
