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

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

torch = pytest.importorskip("torch")
aten = torch.ops.aten
B, I, H = 3, 4, 5


def _params(rng, gates, bias):
    p = {
        "x": rng.normal(size=(B, I)),
        "hx": rng.normal(size=(B, H)),
        "w_ih": rng.normal(size=(gates * H, I)) * 0.5,
        "w_hh": rng.normal(size=(gates * H, H)) * 0.5,
    }
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
    cell = SEEDS.op("_thnn_fused_lstm_cell")

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
    cell = SEEDS.op("_thnn_fused_gru_cell")

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
    cell = SEEDS.op("_thnn_fused_lstm_cell")

    def loss(x):
        hy, cy, _ = cell(x @ p["w_ih"].T, p["hx"] @ p["w_hh"].T, p["cx"], p["b_ih"], p["b_hh"])
        return jnp.sum(hy * hy) + jnp.sum(jnp.sin(cy))

    ours = jax.grad(lambda x: jnp.sum(jax.grad(loss)(x) ** 2))(jnp.asarray(p["x"]))
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    tx = t["x"].clone().requires_grad_()
    thy, tcy = torch.lstm_cell(tx, (t["hx"], t["cx"]), t["w_ih"], t["w_hh"], t["b_ih"], t["b_hh"])
    (g,) = torch.autograd.grad((thy * thy).sum() + tcy.sin().sum(), tx, create_graph=True)
    (gg,) = torch.autograd.grad((g**2).sum(), tx)
    np.testing.assert_allclose(np.asarray(ours), gg.numpy(), rtol=1e-10, atol=1e-12)


def test_fused_backwards_equal_the_differentiable_ones():
    """The workspace-reading backwards give what the recomputing ones give (and torch's gradients above)."""
    rng = np.random.default_rng(3)
    ig, hg, cx, bi, bh = (
        rng.normal(size=(B, 4 * H)),
        rng.normal(size=(B, 4 * H)),
        rng.normal(size=(B, H)),
        rng.normal(size=4 * H),
        rng.normal(size=4 * H),
    )
    gh, gc = rng.normal(size=(B, H)), rng.normal(size=(B, H))
    _, cy, ws = SEEDS.op("_thnn_fused_lstm_cell")(ig, hg, cx, bi, bh)
    for grad_hy, grad_cy in ((gh, gc), (gh, None), (None, gc)):
        fused = HELPERS["_thnn_fused_lstm_cell_backward"](grad_hy, grad_cy, cx, cy, ws, True)
        diff = HELPERS["_thnn_differentiable_lstm_cell_backward"](grad_hy, grad_cy, ig, hg, bi, bh, cx, cy)
        for a, b in zip(fused, diff):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    ig3, hg3, hx = ig[:, : 3 * H], hg[:, : 3 * H], cx
    _, ws = SEEDS.op("_thnn_fused_gru_cell")(ig3, hg3, hx, bi[: 3 * H], bh[: 3 * H])
    fused = HELPERS["_thnn_fused_gru_cell_backward"](gh, ws, True)
    diff = HELPERS["_thnn_differentiable_gru_cell_backward"](gh, ig3, hg3, hx, bi[: 3 * H], bh[: 3 * H])
    for a, b in zip(fused, diff):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_sequence_as_torch(batch_first):
    rng = np.random.default_rng(4)
    lengths = np.array([5, 3, 3, 1])
    x = rng.normal(size=(4, 5, 2) if batch_first else (5, 4, 2))
    data, sizes = SEEDS.op("_pack_padded_sequence")(x, lengths, batch_first)
    tx = torch.from_numpy(x).requires_grad_()
    tdata, tsizes = aten._pack_padded_sequence(tx, torch.from_numpy(lengths), batch_first)
    np.testing.assert_array_equal(np.asarray(data), tdata.detach().numpy())
    np.testing.assert_array_equal(np.asarray(sizes), tsizes.numpy())
    assert np.asarray(sizes).dtype == tsizes.numpy().dtype
    ct = rng.normal(size=tdata.shape)
    (tg,) = torch.autograd.grad(tdata, tx, torch.from_numpy(ct))
    g = jax.vjp(lambda x: SEEDS.op("_pack_padded_sequence")(x, lengths, batch_first)[0], jnp.asarray(x))[1](
        jnp.asarray(ct)
    )[0]
    np.testing.assert_array_equal(np.asarray(g), tg.numpy())


def test_pack_padded_sequence_rejects_unsorted_lengths_as_torch():
    x = np.zeros((3, 2, 1))
    with pytest.raises(ValueError, match="decreasing"):
        SEEDS.op("_pack_padded_sequence")(x, np.array([1, 3]), False)
    with pytest.raises(RuntimeError, match="decreasing"):
        aten._pack_padded_sequence(torch.from_numpy(x), torch.tensor([1, 3]), False)


# -- multi-layer networks: _cudnn_rnn / miopen_rnn against torch's CPU networks -------------------

T, N, L = 4, 3, 2
MODES = {
    0: ("rnn_relu", torch._VF.rnn_relu),
    1: ("rnn_tanh", torch._VF.rnn_tanh),
    2: ("lstm", torch._VF.lstm),
    3: ("gru", torch._VF.gru),
}


def _network(mode, bias, batch_first, seed=0):
    """Weights in cuDNN's list order (torch's _flat_weights: w_ih, w_hh, b_ih, b_hh per layer and
    direction), input and initial states, as float64 torch tensors that require gradients."""
    torch.manual_seed(seed)
    cls = {2: torch.nn.LSTM, 3: torch.nn.GRU}.get(mode, torch.nn.RNN)
    kw = {} if mode >= 2 else {"nonlinearity": "relu" if mode == 0 else "tanh"}
    module = cls(I, H, num_layers=L, bidirectional=True, bias=bias, batch_first=batch_first, **kw).double()
    t = {
        "x": torch.randn((N, T, I) if batch_first else (T, N, I), dtype=torch.float64),
        "hx": torch.randn(2 * L, N, H, dtype=torch.float64),
    }
    if mode == 2:
        t["cx"] = torch.randn(2 * L, N, H, dtype=torch.float64)
    t = {k: v.requires_grad_() for k, v in t.items()}
    return [w.detach().clone().requires_grad_() for w in module._flat_weights], t


def _torch_network(mode, weights, t, bias, batch_first):
    fn = MODES[mode][1]
    if mode == 2:
        out, hy, cy = fn(t["x"], (t["hx"], t["cx"]), weights, bias, L, 0.0, True, True, batch_first)
        return [out, hy, cy]
    out, hy = fn(t["x"], t["hx"], weights, bias, L, 0.0, True, True, batch_first)
    return [out, hy]


def _jnp(t):
    return jnp.asarray(t.detach().numpy())


@pytest.mark.parametrize("bias,batch_first", [(True, False), (False, True)])
@pytest.mark.parametrize("mode", [0, 1, 2, 3], ids=lambda m: MODES[m][0])
def test_cudnn_rnn_two_layer_bidirectional_as_torch(mode, bias, batch_first):
    weights, t = _network(mode, bias, batch_first)
    expected = _torch_network(mode, weights, t, bias, batch_first)
    cts = [torch.randn_like(e) for e in expected]
    wrt = [t["x"], *weights, t["hx"]] + ([t["cx"]] if mode == 2 else [])
    expected_grads = torch.autograd.grad(expected, wrt, cts)
    op = SEEDS.op("_cudnn_rnn")

    def network(x, ws, hx, cx):
        out = op(x, ws, 4 if bias else 2, None, hx, cx, mode, H, L, batch_first, 0.0, True, True, (), None)
        return out[:3] if mode == 2 else out[:2]

    cx = _jnp(t["cx"]) if mode == 2 else None
    outs, vjp = jax.vjp(network, _jnp(t["x"]), [_jnp(w) for w in weights], _jnp(t["hx"]), cx)
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(np.asarray(o), e.detach().numpy(), rtol=1e-12, atol=1e-12)
    gx, gw, ghx, gcx = vjp(tuple(_jnp(c) for c in cts))
    got = [gx, *gw, ghx] + ([gcx] if mode == 2 else [])
    assert len(got) == len(expected_grads)
    for k, (g, e) in enumerate(zip(got, expected_grads)):
        np.testing.assert_allclose(np.asarray(g), e.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"gradient {k}")


def test_cudnn_rnn_jit_and_miopen_rnn_agree():
    """The LSTM under jit(grad), and MIOpen's schema (no weight_buf) giving the same network."""
    weights, t = _network(2, True, False, seed=1)
    expected = _torch_network(2, weights, t, True, False)
    loss_t = sum(e.square().sum() for e in expected)
    expected_grads = torch.autograd.grad(loss_t, weights)
    for name in ("_cudnn_rnn", "miopen_rnn"):
        op = SEEDS.op(name)
        buf = (None,) if name == "_cudnn_rnn" else ()

        def loss(ws):
            out = op(_jnp(t["x"]), ws, 4, *buf, _jnp(t["hx"]), _jnp(t["cx"]), 2, H, L, False, 0.0, True, True, (), None)
            return sum(jnp.sum(jnp.square(o)) for o in out[:3])

        value, grads = jax.jit(jax.value_and_grad(loss))([_jnp(w) for w in weights])
        np.testing.assert_allclose(float(value), loss_t.item(), rtol=1e-12)
        for g, e in zip(grads, expected_grads):
            np.testing.assert_allclose(np.asarray(g), e.numpy(), rtol=1e-10, atol=1e-12)


def test_cudnn_rnn_backward_undefined_grads_and_mask():
    """The backward op reads an undefined grad_output as zeros and leaves masked entries undefined:
    with only grad_hy, its input gradient is torch's gradient of <hy, grad_hy>."""
    from jaxderiv.forward import implementation

    weights, t = _network(3, True, False, seed=2)
    _, hy = _torch_network(3, weights, t, True, False)
    ct = torch.randn_like(hy)
    gx, ghx = torch.autograd.grad(hy, [t["x"], t["hx"]], ct)
    backward = implementation("_cudnn_rnn_backward")
    dx, dhx, dcx, dw = backward(
        _jnp(t["x"]),
        [_jnp(w) for w in weights],
        4,
        None,
        _jnp(t["hx"]),
        None,
        None,
        None,
        _jnp(ct),
        None,
        3,
        H,
        L,
        False,
        0.0,
        True,
        True,
        (),
        None,
        None,
        (True, True, False, False),
    )
    assert dcx is None and dw is None
    np.testing.assert_allclose(np.asarray(dx), gx.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(dhx), ghx.numpy(), rtol=1e-10, atol=1e-12)


def test_cudnn_rnn_second_order_as_torch():
    """The backward op's own derivative (JAX's, of the BPTT implementation) against torch's double backward."""
    weights, t = _network(1, True, False, seed=3)
    out, hy = _torch_network(1, weights, t, True, False)
    (gx,) = torch.autograd.grad((out.square().sum() + hy.sum()), t["x"], create_graph=True)
    (expected,) = torch.autograd.grad(gx.square().sum(), weights[0])
    op = SEEDS.op("_cudnn_rnn")

    def input_grad(w0, x):
        def loss(x):
            out, hy = op(
                x,
                [w0] + [_jnp(w) for w in weights[1:]],
                4,
                None,
                _jnp(t["hx"]),
                None,
                1,
                H,
                L,
                False,
                0.0,
                True,
                True,
                (),
                None,
            )[:2]
            return jnp.sum(jnp.square(out)) + jnp.sum(hy)

        return jax.grad(loss)(x)

    got = jax.grad(lambda w0: jnp.sum(jnp.square(input_grad(w0, _jnp(t["x"])))))(_jnp(weights[0]))
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-9, atol=1e-11)


def test_cudnn_rnn_rejects_what_it_does_not_support():
    weights, t = _network(1, True, False)
    op = SEEDS.op("_cudnn_rnn")
    args = [
        _jnp(t["x"]),
        [_jnp(w) for w in weights],
        4,
        None,
        _jnp(t["hx"]),
        None,
        1,
        H,
        L,
        False,
        0.0,
        True,
        True,
        (),
        None,
    ]
    with pytest.raises(NotImplementedError, match="packed"):
        op(*args[:13], (4, 4, 4), None)
    with pytest.raises(NotImplementedError, match="dropout"):
        op(*args[:10], 0.5, True, *args[12:])
    with pytest.raises(ValueError, match="mode"):
        op(*args[:6], 7, *args[7:])


@pytest.mark.parametrize(
    "has_biases, reverse, batch_first, lead",
    [(True, False, False, ()), (False, True, False, (1,)), (True, True, True, ()), (False, False, True, (1,))],
)
def test_onednn_lstm_layer_as_torch(has_biases, reverse, batch_first, lead):
    """`mkldnn_rnn_layer` (float32, oneDNN's CPU kernel): outputs and every gradient through the
    spec's `mkldnn_rnn_layer_differentiable_backward`, bias gradients included where the layer
    has none (torch's kernel returns the gate gradients summed); batch_first is passed on, the
    input stays time-major."""
    rng = np.random.default_rng(30)
    f32 = np.float32
    x = rng.normal(size=(3, 2, I)).astype(f32)
    ws = [rng.normal(size=(4 * H, I)).astype(f32), rng.normal(size=(4 * H, H)).astype(f32)]
    ws += [rng.normal(size=4 * H).astype(f32) for _ in range(2)] if has_biases else [np.zeros(4 * H, f32)] * 2
    hx, cx = (rng.normal(size=lead + (2, H)).astype(f32) for _ in range(2))
    args, rest = [x, *ws, hx, cx], (reverse, [], 2, H, 1, has_biases, False, batch_first, True)
    op = jaxderiv.op("mkldnn_rnn_layer")
    outs, vjp = jax.vjp(lambda *a: op(*a, *rest)[:3], *map(jnp.asarray, args))
    cts = [rng.normal(size=np.shape(o)).astype(f32) for o in outs]
    leaves = [torch.from_numpy(a).requires_grad_() for a in args]
    t_outs = aten.mkldnn_rnn_layer(*leaves, *rest)[:3]
    t_grads = torch.autograd.grad(t_outs, leaves, [torch.from_numpy(c) for c in cts])
    for ours, theirs in zip(outs, t_outs):
        np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    for ours, theirs in zip(vjp(tuple(map(jnp.asarray, cts))), t_grads):
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_onednn_rnn_layer_is_an_lstm():
    x, w = jnp.zeros((3, 2, I)), jnp.zeros((3 * H, I))
    with pytest.raises(ValueError, match="LSTM"):
        jaxderiv.op("mkldnn_rnn_layer")(
            x,
            w,
            jnp.zeros((3 * H, H)),
            None,
            None,
            jnp.zeros((2, H)),
            jnp.zeros((2, H)),
            False,
            [],
            3,
            H,
            1,
            False,
            False,
            False,
            True,
        )
