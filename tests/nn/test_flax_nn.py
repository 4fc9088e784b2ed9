"""jaxderiv.nn against torch.nn 2.13 on the same weights: outputs, input and parameter gradients,
batch norm's running statistics, dropout masks, state dicts, training under nnx.jit / nnx.Optimizer;
and jaxderiv.check_function on layers' functions."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")
torch = pytest.importorskip("torch")

import jaxderiv  # noqa: E402
import jaxderiv.nn as jnn  # noqa: E402
from jaxderiv.nn import functional as F  # noqa: E402

F64 = dict(param_dtype=jnp.float64)
TOL = dict(rtol=1e-10, atol=1e-12)


def _state_dict(module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def _both(t_module, j_module, x, *, kink=False, seed=0):
    """(torch's output, input grad, param grads) and jaxderiv's, on the same weights and cotangent."""
    jnn.load_torch_state_dict(j_module, _state_dict(t_module))
    rng = np.random.default_rng(seed)
    tx = torch.tensor(x, requires_grad=np.issubdtype(x.dtype, np.floating))
    t_out = t_module(tx)
    ct = rng.normal(size=tuple(t_out.shape))
    params = dict(t_module.named_parameters())
    wrt = ([tx] if tx.requires_grad else []) + list(params.values())
    t_grads = torch.autograd.grad(t_out, wrt, torch.tensor(ct))
    t_gx = t_grads[0].numpy() if tx.requires_grad else None
    t_gp = {k: g.numpy() for k, g in zip(params, t_grads[len(wrt) - len(params) :])}

    def loss(m, x):
        return jnp.sum(m(x) * ct)

    argnums = nnx.DiffState(0, nnx.Param)
    # one compiled program per layer: cheaper than compiling each op of an eager call
    if tx.requires_grad:
        j_gp, j_gx = nnx.jit(nnx.grad(loss, argnums=(argnums, 1)))(j_module, jnp.asarray(x))
    else:
        j_gp, j_gx = nnx.jit(nnx.grad(loss, argnums=argnums))(j_module, jnp.asarray(x)), None
    j_out = nnx.jit(lambda m, x: m(x))(j_module, jnp.asarray(x))
    return (t_out.detach().numpy(), t_gx, t_gp), (
        np.asarray(j_out),
        j_gx,
        {k: np.asarray(v[...]) for k, v in _flat_params(j_gp).items()},
    )


def _flat_params(state) -> dict:
    return {".".join(str(p) for p in path): v for path, v in nnx.to_flat_state(state)}


def _assert_same(torch_result, jax_result):
    (t_out, t_gx, t_gp), (j_out, j_gx, j_gp) = torch_result, jax_result
    np.testing.assert_allclose(j_out, t_out, **TOL)
    if t_gx is not None:
        np.testing.assert_allclose(j_gx, t_gx, **TOL)
    assert sorted(j_gp) == sorted(t_gp)
    for k in t_gp:
        np.testing.assert_allclose(j_gp[k], t_gp[k], err_msg=k, **TOL)


def _rngs():
    return nnx.Rngs(0)


T = torch.nn
D = dict(dtype=torch.float64)

# (id, torch module, jaxderiv module, input shape)
LAYERS = [
    ("linear", lambda: T.Linear(5, 3, **D), lambda: jnn.Linear(5, 3, rngs=_rngs(), **F64), (4, 5)),
    (
        "linear-3d-nobias",
        lambda: T.Linear(5, 3, bias=False, **D),
        lambda: jnn.Linear(5, 3, bias=False, rngs=_rngs(), **F64),
        (2, 4, 5),
    ),
    (
        "conv1d",
        lambda: T.Conv1d(2, 4, 3, stride=2, padding=1, **D),
        lambda: jnn.Conv1d(2, 4, 3, stride=2, padding=1, rngs=_rngs(), **F64),
        (2, 2, 9),
    ),
    (
        "conv2d",
        lambda: T.Conv2d(3, 4, 3, padding=1, **D),
        lambda: jnn.Conv2d(3, 4, 3, padding=1, rngs=_rngs(), **F64),
        (2, 3, 6, 6),
    ),
    (
        "conv2d-groups-dilated",
        lambda: T.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(2, 1), groups=2, bias=False, **D),
        lambda: jnn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(2, 1), groups=2, bias=False, rngs=_rngs(), **F64),
        (2, 4, 9, 7),
    ),
    (
        "conv2d-same-unbatched",
        lambda: T.Conv2d(2, 3, 3, padding="same", **D),
        lambda: jnn.Conv2d(2, 3, 3, padding="same", rngs=_rngs(), **F64),
        (2, 5, 5),
    ),
    (
        "conv-transpose2d",
        lambda: T.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, **D),
        lambda: jnn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, rngs=_rngs(), **F64),
        (2, 4, 5, 5),
    ),
    (
        "conv-transpose2d-groups",
        lambda: T.ConvTranspose2d(4, 6, 2, stride=1, groups=2, **D),
        lambda: jnn.ConvTranspose2d(4, 6, 2, stride=1, groups=2, rngs=_rngs(), **F64),
        (1, 4, 3, 4),
    ),
    ("layer-norm", lambda: T.LayerNorm((4, 5), **D), lambda: jnn.LayerNorm((4, 5), **F64), (3, 4, 5)),
    ("group-norm", lambda: T.GroupNorm(2, 4, **D), lambda: jnn.GroupNorm(2, 4, **F64), (2, 4, 3, 3)),
    ("batch-norm1d-train", lambda: T.BatchNorm1d(3, **D), lambda: jnn.BatchNorm1d(3, **F64), (4, 3)),
    (
        "batch-norm1d-train-3d",
        lambda: T.BatchNorm1d(3, affine=False, **D),
        lambda: jnn.BatchNorm1d(3, affine=False, **F64),
        (4, 3, 5),
    ),
    ("batch-norm2d-train", lambda: T.BatchNorm2d(3, **D), lambda: jnn.BatchNorm2d(3, **F64), (2, 3, 4, 4)),
    (
        "max-pool2d",
        lambda: T.MaxPool2d(3, stride=2, padding=1),
        lambda: jnn.MaxPool2d(3, stride=2, padding=1),
        (2, 2, 7, 6),
    ),
    (
        "avg-pool2d",
        lambda: T.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        lambda: jnn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        (2, 2, 7, 6),
    ),
    ("adaptive-avg-pool2d", lambda: T.AdaptiveAvgPool2d((2, 3)), lambda: jnn.AdaptiveAvgPool2d((2, 3)), (2, 2, 7, 5)),
    ("relu", lambda: T.ReLU(), lambda: jnn.ReLU(), (3, 4)),
    ("gelu", lambda: T.GELU(), lambda: jnn.GELU(), (3, 4)),
    ("silu", lambda: T.SiLU(), lambda: jnn.SiLU(), (3, 4)),
    ("log-softmax", lambda: T.LogSoftmax(dim=1), lambda: jnn.LogSoftmax(1), (3, 4)),
    ("softmax", lambda: T.Softmax(dim=0), lambda: jnn.Softmax(0), (3, 4)),
]


@pytest.mark.parametrize("kink", [False, True], ids=["smooth", "kinks"])
@pytest.mark.parametrize("make_torch,make_jax,shape", [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(make_torch, make_jax, shape, kink):
    """Kinks: inputs rounded to integers, so relu sees exact zeros and max pooling sees ties."""
    torch.manual_seed(0)
    x = np.random.default_rng(1).normal(size=shape)
    if kink:
        x = np.round(x)
    _assert_same(*_both(make_torch(), make_jax(), x))


def test_batch_norm_eval_uses_running_stats():
    torch.manual_seed(0)
    t = T.BatchNorm2d(3, **D)
    with torch.no_grad():
        t.running_mean.copy_(torch.tensor([0.5, -1.0, 2.0]))
        t.running_var.copy_(torch.tensor([0.3, 2.0, 1.5]))
        t.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
    t.eval()
    j = jnn.BatchNorm2d(3, **F64)
    j.eval()
    assert j.use_running_average
    x = np.random.default_rng(2).normal(size=(2, 3, 4, 4))
    before = jnn.torch_state_dict(j)
    _assert_same(*_both(t, j, x))
    after = jnn.torch_state_dict(j)
    np.testing.assert_array_equal(after["running_mean"], [0.5, -1.0, 2.0])
    assert int(after["num_batches_tracked"]) == int(before["num_batches_tracked"]) == 0


@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
def test_batch_norm_running_stats_follow_torch(momentum):
    """Three training steps: running mean, running (unbiased) variance and the batch count agree."""
    t = T.BatchNorm1d(4, momentum=momentum, **D)
    j = jnn.BatchNorm1d(4, momentum=momentum, **F64)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.normal(loc=2.0, scale=3.0, size=(5, 4))
        t(torch.tensor(x))
        j(jnp.asarray(x))
    got = jnn.torch_state_dict(j)
    for key, want in _state_dict(t).items():
        np.testing.assert_allclose(got[key], want, err_msg=key, rtol=1e-12)
    assert int(got["num_batches_tracked"]) == 3


def test_batch_norm_updates_stats_inside_nnx_grad_and_jit():
    j = jnn.BatchNorm2d(2, **F64)
    x = jnp.asarray(np.random.default_rng(4).normal(size=(3, 2, 2, 2)))

    @nnx.jit
    def step(m, x):
        return nnx.grad(lambda m: jnp.sum(m(x) ** 3))(m)

    step(j, x)
    assert int(j.num_batches_tracked[...]) == 1
    np.testing.assert_allclose(j.running_mean[...], 0.1 * np.mean(np.asarray(x), axis=(0, 2, 3)), rtol=1e-12)


def test_embedding_padding_idx_and_repeats():
    torch.manual_seed(0)
    t = T.Embedding(10, 4, padding_idx=0, **D)
    j = jnn.Embedding(10, 4, padding_idx=0, rngs=_rngs(), **F64)
    np.testing.assert_array_equal(j.weight[...][0], 0.0)
    idx = np.array([[0, 3, 3], [9, 0, 1]])
    (t_out, _, t_gp), (j_out, _, j_gp) = _both(t, j, idx)
    np.testing.assert_allclose(j_out, t_out, **TOL)
    np.testing.assert_allclose(j_gp["weight"], t_gp["weight"], **TOL)
    assert np.all(j_gp["weight"][0] == 0) and np.any(j_gp["weight"][3] != 0)


def test_dropout_mask_from_key():
    """The same key draws the same mask; output and gradient are torch's for that mask."""
    x = np.random.default_rng(5).normal(size=(6, 7)) + 3.0  # no zeros in x: the mask is where the output is nonzero
    drop = jnn.Dropout(0.3, rngs=nnx.Rngs(dropout=7))
    key = jax.random.key(11)
    y1, y2 = drop(jnp.asarray(x), key=key), drop(jnp.asarray(x), key=key)
    np.testing.assert_array_equal(y1, y2)
    mask = np.asarray(y1) != 0
    assert 0 < mask.sum() < mask.size
    assert not np.array_equal(mask, np.asarray(drop(jnp.asarray(x), key=jax.random.key(12))) != 0)
    np.testing.assert_allclose(y1, np.where(mask, x / 0.7, 0.0), rtol=1e-14)
    # torch's dropout arithmetic on the same mask: grad = ct * mask / (1 - p)
    tx = torch.tensor(x, requires_grad=True)
    t_out = tx * torch.tensor(mask, dtype=torch.float64) / 0.7
    ct = np.random.default_rng(6).normal(size=x.shape)
    (t_g,) = torch.autograd.grad(t_out, tx, torch.tensor(ct))
    g = jax.grad(lambda x: jnp.sum(drop(x, key=key) * ct))(jnp.asarray(x))
    np.testing.assert_allclose(g, t_g.numpy(), rtol=1e-14)
    # the same seed in Rngs gives the same masks call after call; eval mode passes x through
    a, b = jnn.Dropout(0.3, rngs=nnx.Rngs(dropout=1)), jnn.Dropout(0.3, rngs=nnx.Rngs(dropout=1))
    np.testing.assert_array_equal(a(jnp.asarray(x)), b(jnp.asarray(x)))
    a.eval()
    np.testing.assert_array_equal(a(jnp.asarray(x)), x)


def _jax_model(dtype=jnp.float64):
    r = nnx.Rngs(0)
    return nnx.Sequential(
        jnn.Conv2d(1, 4, 3, padding=1, rngs=r, param_dtype=dtype),
        jnn.BatchNorm2d(4, param_dtype=dtype),
        jnn.ReLU(),
        jnn.MaxPool2d(2),
        jnn.Flatten(),
        jnn.Linear(16, 3, rngs=r, param_dtype=dtype),
    )


def _torch_model():
    return T.Sequential(
        T.Conv2d(1, 4, 3, padding=1, **D),
        T.BatchNorm2d(4, **D),
        T.ReLU(),
        T.MaxPool2d(2),
        T.Flatten(),
        T.Linear(16, 3, **D),
    )


def test_state_dict_keys_round_trip_through_torch():
    j = _jax_model()
    t = _torch_model()
    t.load_state_dict({k: torch.tensor(v) for k, v in jnn.torch_state_dict(j).items()})
    assert sorted(jnn.torch_state_dict(j)) == sorted(t.state_dict())
    x = np.random.default_rng(7).normal(size=(2, 1, 4, 4))
    np.testing.assert_allclose(
        nnx.jit(lambda m, x: m(x))(j, jnp.asarray(x)), t(torch.tensor(x)).detach().numpy(), **TOL
    )


def test_state_dict_keys_of_nested_lists_and_sequentials():
    """An attribute named `layers` (torch's ModuleList) keeps its name; only nnx.Sequential's own level is dropped."""

    class Net(nnx.Module):
        def __init__(self, r):
            self.layers = nnx.List([jnn.Linear(2, 2, rngs=r), jnn.Linear(2, 2, rngs=r)])
            self.head = nnx.Sequential(jnn.Linear(2, 3, rngs=r), jnn.ReLU(), jnn.BatchNorm1d(3))

    class TorchNet(T.Module):
        def __init__(self):
            super().__init__()
            self.layers = T.ModuleList([T.Linear(2, 2), T.Linear(2, 2)])
            self.head = T.Sequential(T.Linear(2, 3), T.ReLU(), T.BatchNorm1d(3))

    j, t = Net(_rngs()), TorchNet()
    assert sorted(jnn.torch_state_dict(j)) == sorted(t.state_dict())
    jnn.load_torch_state_dict(j, _state_dict(t))
    np.testing.assert_array_equal(j.head.layers[0].weight[...], t.head[0].weight.detach().numpy().astype(np.float32))


def test_load_state_dict_errors():
    j = jnn.Linear(3, 2, rngs=_rngs())
    with pytest.raises(KeyError, match="missing keys \\['bias'\\]"):
        jnn.load_torch_state_dict(j, {"weight": np.zeros((2, 3))})
    with pytest.raises(KeyError, match="unexpected keys \\['extra'\\]"):
        jnn.load_torch_state_dict(j, {"weight": np.zeros((2, 3)), "bias": np.zeros(2), "extra": np.zeros(1)})
    with pytest.raises(ValueError, match="weight: the state dict has shape \\(3, 2\\)"):
        jnn.load_torch_state_dict(j, {"weight": np.zeros((3, 2)), "bias": np.zeros(2)})
    jnn.load_torch_state_dict(j, {"weight": np.ones((2, 3))}, strict=False)
    assert j.weight.dtype == jnp.float32 and float(j.weight[...].sum()) == 6.0


def test_loaded_values_are_copies_of_the_state_dict():
    """torch's optimizer updates parameters in place; the loaded module must not see that."""
    t = T.Linear(3, 2, **D)
    j = jnn.Linear(3, 2, rngs=_rngs(), **F64)
    jnn.load_torch_state_dict(j, _state_dict(t))
    before = np.array(j.weight[...])
    with torch.no_grad():
        t.weight.add_(1.0)
    np.testing.assert_array_equal(j.weight[...], before)


def test_sgd_steps_under_nnx_jit_and_optimizer_match_torch():
    """Two SGD steps of a conv/batch-norm/relu/pool/linear model with cross entropy: losses and new weights agree."""
    j, t = _jax_model(), _torch_model()
    jnn.load_torch_state_dict(j, _state_dict(t))
    opt = nnx.Optimizer(j, optax.sgd(0.1), wrt=nnx.Param)
    t_opt = torch.optim.SGD(t.parameters(), lr=0.1)
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(6, 1, 4, 4)), rng.integers(0, 3, size=6)

    @nnx.jit
    def step(model, opt, x, y):
        loss, grads = nnx.value_and_grad(lambda m: F.cross_entropy(m(x), y))(model)
        opt.update(model, grads)
        return loss

    for _ in range(2):
        loss = step(j, opt, jnp.asarray(x), jnp.asarray(y))
        t_opt.zero_grad()
        t_loss = T.functional.cross_entropy(t(torch.tensor(x)), torch.tensor(y))
        t_loss.backward()
        t_opt.step()
        np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-10)
    got = jnn.torch_state_dict(j)
    for k, v in _state_dict(t).items():
        np.testing.assert_allclose(got[k], v, err_msg=k, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "make,shape",
    [
        (lambda r: jnn.Linear(8, 5, rngs=r), (5, 8)),
        (lambda r: jnn.Conv2d(3, 4, (3, 2), groups=1, rngs=r), (4, 3, 3, 2)),
        (lambda r: jnn.ConvTranspose2d(6, 4, 3, groups=2, rngs=r), (6, 2, 3, 3)),
    ],
)
def test_default_initialization_is_torchs(make, shape):
    """kaiming_uniform(a=sqrt(5)) fills ±1/sqrt(fan_in), fan_in = size(1) * kernel; bias the same bound."""
    m = make(nnx.Rngs(3))
    w, b = np.asarray(m.weight[...]), np.asarray(m.bias[...])
    assert w.shape == shape and w.dtype == np.float32
    bound = 1 / math.sqrt(shape[1] * math.prod(shape[2:]))
    for v in (w, b):
        assert np.all(np.abs(v) <= bound) and np.max(np.abs(v)) > 0.5 * bound
    assert np.std(w) == pytest.approx(bound / math.sqrt(3), rel=0.35)


def test_dtype_and_param_dtype():
    m = jnn.Linear(3, 2, rngs=_rngs(), param_dtype=jnp.float32, dtype=jnp.float32)
    assert m(jnp.ones((1, 3), jnp.float64)).dtype == jnp.float32
    m = jnn.Linear(3, 2, rngs=_rngs(), param_dtype=jnp.float32)
    assert m(jnp.ones((1, 3), jnp.float64)).dtype == jnp.float64  # promoted, as flax's layers do
    assert jnn.BatchNorm2d(2, param_dtype=jnp.float16).running_var.dtype == jnp.float16


def test_train_eval_switch_every_layer():
    m = nnx.Sequential(jnn.BatchNorm1d(3), jnn.Dropout(0.5, rngs=nnx.Rngs(dropout=0)))
    m.eval()
    assert m.layers[0].use_running_average and m.layers[1].deterministic
    m.train()
    assert not m.layers[0].use_running_average and not m.layers[1].deterministic


# -- check_function on layers' functions ------------------------------------------------------


def test_check_function_passes_on_a_model_and_its_jnp_reference():
    layer = jnn.Linear(4, 3, rngs=_rngs())

    def block(m, x):
        return F.gelu(m(x)) + x[:, :3]

    def reference(m, x):
        return jax.nn.gelu(x @ m.weight[...].T + m.bias[...], approximate=False) + x[:, :3]

    x = jnp.asarray(np.random.default_rng(9).normal(size=(2, 4)))
    report = jaxderiv.check_function(
        block, layer, x, modes=("vjp", "jvp", "vjp_vjp"), directions=1, reference=reference, name="block"
    )
    assert bool(report) and [r.mode for r in report] == ["vjp", "jvp", "vjp_vjp"]
    assert all(r.status == "passed" and r.op == "block" and r.max_abs_err < 1e-6 for r in report)


def test_check_function_reports_a_wrong_rule():
    @jax.custom_jvp
    def wrong_sin(x):
        return jnp.sin(x)

    wrong_sin.defjvp(lambda primals, tangents: (jnp.sin(primals[0]), 1.1 * jnp.cos(primals[0]) * tangents[0]))
    report = jaxderiv.check_function(lambda x: F.relu(wrong_sin(x)), jnp.array([0.3, 0.7, 1.1]))
    assert not report
    assert {r.status for r in report} == {"failed"}
    assert "finite-difference" in report.rows[0].reason and "finite differences" in report.rows[1].reason


def test_check_function_reference_disagreement_and_kinks():
    """At |x|'s kink torch's rule (0, which central differences agree with) and JAX's (1) differ: the reference check says so."""
    x = jnp.array([0.0, 1.5])
    report = jaxderiv.check_function(lambda x: jaxderiv.aten.abs.default(x), x, modes=("vjp",), reference=jnp.abs)
    assert report.rows[0].status == "failed" and "JAX autodiff of the forward" in report.rows[0].reason


def test_check_function_argument_handling():
    report = jaxderiv.check_function(lambda i: jnp.ones(2) * i, jnp.array(3))
    assert {r.status for r in report} == {"not_applicable"}
    with pytest.raises(ValueError, match="unknown mode"):
        jaxderiv.check_function(jnp.sin, jnp.ones(2), modes=("hvp",))


# -- recurrent layers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, torch_cls, kwargs",
    [
        (jnn.LSTM, torch.nn.LSTM, {}),
        (jnn.GRU, torch.nn.GRU, {}),
        (jnn.RNN, torch.nn.RNN, {"nonlinearity": "tanh"}),
        (jnn.RNN, torch.nn.RNN, {"nonlinearity": "relu"}),
    ],
    ids=["LSTM", "GRU", "RNN-tanh", "RNN-relu"],
)
@pytest.mark.parametrize("batch_first, bias", [(True, True), (False, False)])
def test_recurrent_layers_match_torch(cls, torch_cls, kwargs, batch_first, bias):
    """Two bidirectional layers with torch's weights: outputs, final states and every gradient."""
    m = cls(
        3,
        4,
        num_layers=2,
        bias=bias,
        batch_first=batch_first,
        bidirectional=True,
        param_dtype=jnp.float64,
        rngs=_rngs(),
        **kwargs,
    )
    t = torch_cls(3, 4, num_layers=2, bias=bias, batch_first=batch_first, bidirectional=True, **kwargs).double()
    jnn.load_torch_state_dict(m, {k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(3).normal(size=(2, 5, 3) if batch_first else (5, 2, 3))

    def loss(m, x):
        out, state = m(x)
        states = state if isinstance(state, tuple) else (state,)
        return jnp.sum(out * jnp.cos(out)) + sum(jnp.sum(s**2) for s in states)

    value, (g_model, g_x) = nnx.value_and_grad(loss, argnums=(0, 1))(m, jnp.asarray(x))
    tx = torch.from_numpy(x).requires_grad_()
    tout, tstate = t(tx)
    tstates = tstate if isinstance(tstate, tuple) else (tstate,)
    tloss = (tout * tout.cos()).sum() + sum((s**2).sum() for s in tstates)
    names = [n for n, _ in t.named_parameters()]
    tgrads = torch.autograd.grad(tloss, [tx, *t.parameters()])
    np.testing.assert_allclose(float(value), float(tloss.detach()), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g_x), tgrads[0].numpy(), rtol=1e-10, atol=1e-12)
    for name, tg in zip(names, tgrads[1:]):
        np.testing.assert_allclose(
            np.asarray(getattr(g_model, name)[...]), tg.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )


def test_lstm_unbatched_input_and_initial_state():
    m = jnn.LSTM(3, 4, param_dtype=jnp.float64, rngs=_rngs())
    t = torch.nn.LSTM(3, 4).double()
    jnn.load_torch_state_dict(m, {k: v.detach().numpy() for k, v in t.state_dict().items()})
    x, h0, c0 = (np.random.default_rng(k).normal(size=s) for k, s in enumerate([(5, 3), (1, 4), (1, 4)]))
    out, (h, c) = m(jnp.asarray(x), (jnp.asarray(h0), jnp.asarray(c0)))
    tout, (th, tc) = t(torch.from_numpy(x), (torch.from_numpy(h0), torch.from_numpy(c0)))
    for a, b in ((out, tout), (h, th), (c, tc)):
        np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("batch_first, padded, average", [(False, False, True), (True, True, False)])
def test_multihead_attention_matches_torch(batch_first, padded, average):
    """Output, attention weights and every gradient against torch.nn.MultiheadAttention."""
    m = jnn.MultiheadAttention(8, 2, batch_first=batch_first, param_dtype=jnp.float64, rngs=_rngs())
    t = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    jnn.load_torch_state_dict(m, {k: v.detach().numpy() for k, v in t.state_dict().items()})
    rng = np.random.default_rng(5)
    shape = (3, 4, 8) if batch_first else (4, 3, 8)
    q, k, v = (rng.normal(size=shape) for _ in range(3))
    mask = np.array([[False, False, False, True], [False, True, False, False], [False] * 4]) if padded else None

    def loss(m, q, k, v):
        out, w = m(q, k, v, key_padding_mask=mask, average_attn_weights=average)
        return jnp.sum(jnp.sin(out)) + jnp.sum(w**2)

    value, (g_m, *g_in) = nnx.value_and_grad(loss, argnums=(0, 1, 2, 3))(m, *(jnp.asarray(a) for a in (q, k, v)))
    tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
    tout, tw = t(
        tq, tk, tv, key_padding_mask=None if mask is None else torch.from_numpy(mask), average_attn_weights=average
    )
    tloss = tout.sin().sum() + (tw**2).sum()
    tgrads = torch.autograd.grad(tloss, [tq, tk, tv, *t.parameters()])
    np.testing.assert_allclose(float(value), float(tloss.detach()), rtol=1e-12)
    for g, tg in zip(g_in, tgrads[:3]):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-10, atol=1e-12)
    grads = {
        "in_proj_weight": g_m.in_proj_weight,
        "in_proj_bias": g_m.in_proj_bias,
        "out_proj.weight": g_m.out_proj.weight,
        "out_proj.bias": g_m.out_proj.bias,
    }
    for (name, _), tg in zip(t.named_parameters(), tgrads[3:]):
        np.testing.assert_allclose(np.asarray(grads[name][...]), tg.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
