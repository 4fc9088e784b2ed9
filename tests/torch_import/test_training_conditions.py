"""The importer in the conditions people train in: JAX's default 32-bit mode, randomness drawn
from apply's key (dropout, stochastic depth, rrelu, samplers), several batch sizes and sequence
lengths from one import, `nn.Upsample(scale_factor=...)`, bfloat16, and the errors a user meets
(a shape the graph does not allow, a data-dependent branch)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = nn.functional

import jaxderiv.torch as jt  # noqa: E402
from torch_models import edited_torch_spec, rel  # noqa: E402


def _seeded(module, dtype=torch.float64):
    torch.manual_seed(0)
    return module.to(dtype)


# -- JAX's default 32-bit mode ------------------------------------------------------------------


class Positions(nn.Module):
    """int64 positions from arange and a cumsum of a mask, an embedding, and an int64 buffer:
    what decoder LMs hold (transformers asserts the int64 dtype of such values)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4)
        self.register_buffer("offset", torch.tensor([1], dtype=torch.int64))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0) + (ids > 0).long().cumsum(-1) * 0 + self.offset
        torch._assert_tensor_metadata(pos, dtype=torch.int64)
        return self.emb(ids) + self.emb(pos)


def test_int64_values_run_as_jax_default_integer_in_32_bit_mode():
    m = _seeded(Positions(), torch.float32)
    ids = torch.randint(0, 8, (2, 5))
    with jax.enable_x64(False):
        model = jt.from_module(m, ids)
        assert model.buffers["offset"].dtype == jnp.int32
        out = jax.jit(model)(jnp.asarray(ids.numpy()))
        assert out.dtype == jnp.float32
        assert rel(out, m(ids).detach().numpy()) < 1e-6


def test_an_int64_tensor_that_does_not_fit_32_bits_is_refused_by_name():
    m = Positions()
    m.offset.fill_(2**40)
    with (
        jax.enable_x64(False),
        pytest.raises(ValueError, match=r"offset \(torch.int64\) holds values .*jax_enable_x64"),
    ):
        jt.from_module(m, torch.randint(0, 8, (2, 5)))


# -- randomness from apply's key ---------------------------------------------------------------


class DropPath(nn.Module):
    """timm's stochastic depth: a residual branch kept per sample with probability 1 - p."""

    def __init__(self, p=0.25):
        super().__init__()
        self.p, self.fc = p, nn.Linear(8, 8)

    def forward(self, x):
        keep = x.new_empty((x.shape[0], 1)).bernoulli_(1 - self.p)
        return x + self.fc(x) * keep / (1 - self.p)


def test_stochastic_depth_draws_its_mask_from_the_key():
    m = _seeded(DropPath()).train()
    x = torch.randn(4000, 8, dtype=torch.float64)
    model = jt.from_module(m, x)
    assert "aten::bernoulli.p" in {s.op for s in model.program.steps if s.kind == "random"}
    xs = jnp.asarray(x.numpy())
    branch = jax.jit(lambda k: model(xs, key=k) - xs)
    kept = np.asarray(jnp.any(branch(jax.random.key(0)) != 0, axis=1))
    assert abs(kept.mean() - 0.75) < 0.03  # keep rate 1 - p, 4000 draws
    assert not np.array_equal(kept, np.asarray(jnp.any(branch(jax.random.key(1)) != 0, axis=1)))
    with pytest.raises(ValueError, match="pass key="):
        model(xs)


@pytest.mark.parametrize(
    "fn, random_op",
    [
        (lambda x: F.dropout(x, 0.3, True), "aten::native_dropout"),
        (lambda x: F.alpha_dropout(x, 0.3, True), "aten::bernoulli.p"),
        (lambda x: F.dropout1d(x.unsqueeze(-1), 0.3, True).squeeze(-1), "aten::bernoulli.p"),
        (lambda x: F.rrelu(x, training=True), "aten::rrelu_with_noise_functional"),
        (lambda x: x * torch.bernoulli(torch.sigmoid(x)), "aten::bernoulli"),
        (lambda x: torch.normal(x, 0.5), "aten::normal.Tensor_float"),
        (lambda x: x + torch.empty_like(x).uniform_(-1, 1), "aten::uniform"),
        (lambda x: x[torch.randperm(x.shape[0])], "aten::randperm"),
    ],
    ids=["dropout", "alpha_dropout", "feature_dropout", "rrelu", "bernoulli", "normal", "uniform", "randperm"],
)
def test_random_nodes_agree_with_torch_on_the_same_draws(fn, random_op):
    """compare() hands torch's random nodes JAX's draws: values and gradients then agree, node
    by node; and the jitted gradient of a step taking the key as an argument runs."""

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            return fn(self.fc(x))

    m = _seeded(M()).train()
    x = torch.randn(5, 6, dtype=torch.float64)
    model = jt.from_module(m, x)
    assert random_op in {s.op for s in model.program.steps if s.kind == "random"}
    comparison = jt.compare(m, x, model=model, key=jax.random.key(3))
    assert comparison.ok, str(comparison)
    step = jax.jit(jax.grad(lambda p, k: jnp.sum(model.apply(p, model.buffers, jnp.asarray(x.numpy()), key=k)[0] ** 2)))
    grads = step(model.params, jax.random.key(0))
    assert all(np.isfinite(np.asarray(g)).all() for g in grads.values())


def test_rrelu_in_training_draws_slopes_in_its_range_and_its_gradient_is_them():
    m = _seeded(nn.RReLU(0.1, 0.3)).train()
    x = -torch.rand(2000, dtype=torch.float64) - 0.5
    model = jt.from_module(m, x)
    xs = jnp.asarray(x.numpy())
    slopes = np.asarray(model(xs, key=jax.random.key(0)) / xs)
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    grad = jax.grad(lambda x: jnp.sum(model(x, key=jax.random.key(0))))(xs)
    np.testing.assert_allclose(np.asarray(grad), slopes, rtol=1e-12)


def test_compare_with_dropout_sees_an_edited_dropout_formula(tmp_path):
    """The check can fail: a registry whose native_dropout gradient is scaled twice differs
    from torch at the dropout node."""
    registry = edited_torch_spec(
        tmp_path,
        "infinitely_differentiable_native_dropout_backward(grad, result1, (!train.has_value()",
        "infinitely_differentiable_native_dropout_backward(2 * grad, result1, (!train.has_value()",
    )
    m = _seeded(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))).train()
    x = torch.randn(3, 4, dtype=torch.float64)
    comparison = jt.compare(m, x, registry=registry)
    assert not comparison.ok
    assert comparison.first_grad_divergence is not None and comparison.first_value_divergence is None


class LayerDrop(nn.Module):
    """Residual blocks skipped at random in training, as transformers' OPT, BART and Whisper
    decoders do: a Python branch on a tensor's value, at two places (an encoder's and a
    decoder's loop), and a check of a value that only eager mode makes (as transformers skips
    its mask checks while exporting)."""

    def __init__(self, p):
        super().__init__()
        self.p, self.fc, self.fc2 = p, nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        if not torch.compiler.is_exporting() and bool((x == 0).all()):
            raise ValueError("an all-zero input")
        if not (self.training and torch.rand([]) < self.p):  # the branch torch.export cannot follow
            x = x + self.fc(x)
        if not (self.training and torch.rand([]) < self.p):
            x = x + self.fc2(x)
        return x


def test_a_data_dependent_branch_is_refused_naming_the_line_and_the_ways_through():
    m = LayerDrop(0.0).train()
    with pytest.raises(jt.DataDependentBranchError, match=r"(?s)test_training_conditions.py:\d+ in forward.*eval mode"):
        jt.from_module(m, torch.randn(2, 3), branches="error")


def test_a_data_dependent_branch_takes_the_examples_path_with_a_warning():
    m = _seeded(LayerDrop(0.0)).train()
    x = torch.randn(4, 3, dtype=torch.float64)
    state = {k: v.clone() for k, v in m.state_dict().items()}
    rng = torch.random.get_rng_state()
    with pytest.warns(UserWarning, match=r"test_training_conditions.py:\d+ in forward.*example's path \(False\)"):
        model = jt.from_module(m, x)
    assert len({s.source for s in model.program.steps if s.op == "aten::addmm"}) == 2  # both blocks kept
    assert torch.equal(torch.random.get_rng_state(), rng)  # the eager run's draws are not the user's
    assert all(torch.equal(v, state[k]) for k, v in m.state_dict().items())
    assert rel(model(jnp.asarray(x.numpy())), m(x).detach().numpy()) < 1e-12  # p = 0: the block always runs


# -- one import, many shapes ---------------------------------------------------------------------


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x, y):
        return self.fc(x).reshape(x.shape[0], -1) + y


def test_one_import_runs_other_batch_sizes_and_refuses_what_the_graph_does_not_allow():
    m = _seeded(TwoInputs())
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    model = jt.from_module(m, x, y)
    run = jax.jit(model)
    for batch in (2, 5, 9):
        xb, yb = torch.randn(batch, 3, dtype=torch.float64), torch.randn(batch, 4, dtype=torch.float64)
        assert rel(run(jnp.asarray(xb.numpy()), jnp.asarray(yb.numpy())), m(xb, yb).detach().numpy()) < 1e-12
    with pytest.raises(jt.ShapeError, match=r"input 'x' dimension 1 is 5; the import fixes it to 3"):
        model(jnp.ones((2, 5)), jnp.ones((2, 4)))
    with pytest.raises(jt.ShapeError, match=r"input 'y' dimension 0 is 3, but input 'x' dimension 0 is 4"):
        model(jnp.ones((4, 3)), jnp.ones((3, 4)))
    static = jt.from_module(m, x, y, dynamic_shapes=None)
    with pytest.raises(jt.ShapeError, match=r"dimension 0 is 5; the import fixes it to 2 \(exported with static"):
        static(jnp.ones((5, 3)), jnp.ones((5, 4)))


def test_a_sequence_length_the_model_fixes_is_reported_at_import():
    class PythonLoop(nn.Module):
        def forward(self, ids):
            out = ids[:, 0]
            for i in range(1, ids.shape[1]):  # torch.export unrolls it: the length is fixed
                out = out + ids[:, i]
            return out

    with pytest.warns(UserWarning, match=r"kept input 'ids' dimension 1 \(= 4\) at the example's size"):
        model = jt.from_module(PythonLoop(), torch.randint(0, 5, (3, 4)))
    assert model.shapes.describe().endswith(", 4]")


def test_dynamic_shapes_in_torch_exports_own_spelling():
    from torch.export import Dim

    m = _seeded(TwoInputs())
    batch = Dim("batch", min=2, max=8)
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    model = jt.from_module(m, x, y, dynamic_shapes=({0: batch}, {0: batch}))
    assert model(jnp.ones((8, 3)), jnp.ones((8, 4))).shape == (8, 4)
    with pytest.raises(jt.ShapeError, match=r"input 'x' dimension 0 is 9; the import allows s\d+ in 2..8"):
        model(jnp.ones((9, 3)), jnp.ones((9, 4)))


def test_a_decoder_lm_runs_two_batch_sizes_and_two_sequence_lengths_from_one_import():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        hidden_size=16,
        intermediate_size=32,
        vocab_size=50,
        max_position_embeddings=32,
        use_cache=False,
    )
    m = _seeded(transformers.LlamaForCausalLM(cfg), torch.float32).eval()
    model = jt.from_module(m, torch.randint(0, 50, (2, 6)))
    with jax.enable_x64(False):
        for shape in [(2, 6), (3, 6), (2, 11), (5, 3)]:
            ids = torch.randint(0, 50, shape)
            out = jax.jit(model)(jnp.asarray(ids.numpy()))["logits"]
            assert rel(out, m(ids).logits.detach().numpy()) < 1e-5, shape


# -- overloads training graphs hold -------------------------------------------------------------


@pytest.mark.parametrize(
    "dims, mode, entry",
    [
        (2, "bilinear", "upsample_bilinear2d"),
        (2, "nearest", "upsample_nearest2d"),
        (2, "bicubic", "upsample_bicubic2d"),
        (1, "linear", "upsample_linear1d"),
        (3, "trilinear", "upsample_trilinear3d"),
        (2, "nearest-exact", "_upsample_nearest_exact2d"),
    ],
)
def test_upsample_with_a_scale_factor_runs_the_entry_autograd_uses(dims, mode, entry):
    extra = {"align_corners": False} if mode in ("bilinear", "bicubic", "linear", "trilinear") else {}
    conv = getattr(nn, f"Conv{dims}d")(2, 2, 3, padding=1)
    m = _seeded(nn.Sequential(conv, nn.Upsample(scale_factor=1.7, mode=mode, **extra)))
    x = torch.randn((2, 2) + (5,) * dims, dtype=torch.float64)
    model = jt.from_module(m, x)
    assert f"aten::{entry}" in {s.op for s in model.program.steps}
    comparison = jt.compare(m, x, model=model, rtol=1e-12)
    assert comparison.ok, str(comparison)


def test_upsample_gradient_follows_the_entry_formula(tmp_path):
    registry = edited_torch_spec(
        tmp_path,
        "self: upsample_bilinear2d_backward_symint(grad, output_size,",
        "self: upsample_bilinear2d_backward_symint(-grad, output_size,",
    )
    m = _seeded(nn.Upsample(scale_factor=2, mode="bilinear"))
    x = torch.randn(1, 1, 3, 3, dtype=torch.float64)
    model = jt.from_module(m, x, registry=registry)
    grad = jax.grad(lambda x: jnp.sum(model(x)))(jnp.asarray(x.numpy()))
    np.testing.assert_allclose(np.asarray(grad), -4.0 * np.ones((1, 1, 3, 3)), rtol=1e-12)


# -- low precision --------------------------------------------------------------------------------


def test_a_bfloat16_model_trains_with_torchs_bfloat16_gradients():
    m = _seeded(nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3)), torch.bfloat16)
    x = torch.randn(4, 8).to(torch.bfloat16)
    with jax.enable_x64(False):
        model = jt.from_module(m, x)
        assert {v.dtype for v in model.params.values()} == {jnp.dtype(jnp.bfloat16)}
        grads = jax.grad(
            lambda p: jnp.sum(
                model.apply(p, model.buffers, jnp.asarray(x.float().numpy(), jnp.bfloat16))[0].astype(jnp.float32)
            )
        )(model.params)
    m(x).float().sum().backward()
    for name, p in m.named_parameters():
        assert rel(np.asarray(grads[name], np.float32), p.grad.float().numpy()) < 2e-2, name


def test_a_parameter_torch_does_not_train_is_state_not_a_parameter():
    m = _seeded(nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 2)))
    m[0].weight.requires_grad_(False)  # Whisper's sinusoidal positions, a frozen backbone
    ids = torch.randint(0, 5, (2, 4))
    model = jt.from_module(m, ids)
    assert set(model.params) == {"1.weight", "1.bias"} and "0.weight" in model.buffers
    assert set(model.state_dict()) == set(m.state_dict())
    assert rel(model(jnp.asarray(ids.numpy())), m(ids).detach().numpy()) < 1e-12
