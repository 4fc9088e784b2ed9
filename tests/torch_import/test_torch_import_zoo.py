"""The importer on real architectures, float64: loss, every parameter and input gradient,
buffer updates and a jvp against torch 2.13, with kink inputs on purpose."""

import jax
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from torch_models import against_torch  # noqa: E402

jax.config.update("jax_enable_x64", True)
RTOL = 1e-6


def _assert_close(e, buffers=True):
    assert e.loss < RTOL, e.loss
    assert e.max_grad < RTOL, (e.params, e.inputs)
    assert e.jvp < RTOL, e.jvp
    if buffers:
        assert all(v < RTOL for v in e.buffers.values()), e.buffers


def _seeded(module):
    torch.manual_seed(0)
    return module.double()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))

    def forward(self, x):
        return self.net(x).abs()


def test_mlp_with_relu_and_abs_kinks():
    m = _seeded(MLP())
    with torch.no_grad():
        m.net[0].bias.zero_()
        m.net[2].bias.fill_(0.0)
    x = torch.randn(5, 4, dtype=torch.float64)
    x[0] = 0.0  # every first-layer unit sits exactly at ReLU's kink for this row
    e = against_torch(m, (x,))
    _assert_close(e)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def test_cnn_batchnorm_training_mode_updates_running_stats():
    m = _seeded(CNN()).train()
    x = torch.randn(3, 2, 6, 6, dtype=torch.float64)
    e = against_torch(m, (x,))
    assert set(e.buffers) == {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}
    _assert_close(e)


def test_max_pool_ties_take_torchs_choice():
    m = _seeded(nn.Sequential(nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4, 2)))
    x = torch.ones(1, 1, 4, 4, dtype=torch.float64)  # every window is a four-way tie
    e = against_torch(m, (x,), jvp=False)
    _assert_close(e)


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(3, 5, batch_first=True)
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_recurrent_classifier(cell):
    m = _seeded(Recurrent(getattr(nn, cell)))
    x = torch.randn(2, 4, 3, dtype=torch.float64)
    _assert_close(against_torch(m, (x,)))


def test_transformer_encoder_layer():
    m = _seeded(
        nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    ).train()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    _assert_close(against_torch(m, (x,)))


# -- Hugging Face transformers, small configs, random weights (nothing downloaded) --------------

transformers = pytest.importorskip("transformers")

VOCAB = 50


def _gpt2():
    cfg = transformers.GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=16,
        vocab_size=VOCAB,
        n_positions=16,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
    )
    return transformers.GPT2LMHeadModel(cfg), (torch.randint(0, VOCAB, (2, 6)),), {}


def _bert():
    cfg = transformers.BertConfig(
        num_hidden_layers=2,
        num_attention_heads=2,
        hidden_size=16,
        intermediate_size=32,
        vocab_size=VOCAB,
        max_position_embeddings=16,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return transformers.BertForSequenceClassification(cfg), (torch.randint(0, VOCAB, (2, 6)),), {}


def _vit():
    cfg = transformers.ViTConfig(
        num_hidden_layers=2,
        num_attention_heads=2,
        hidden_size=16,
        intermediate_size=32,
        image_size=8,
        patch_size=4,
        num_channels=3,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=3,
    )
    return transformers.ViTForImageClassification(cfg), (torch.randn(2, 3, 8, 8, dtype=torch.float64),), {}


def _llama():
    cfg = transformers.LlamaConfig(
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        hidden_size=16,
        intermediate_size=32,
        vocab_size=VOCAB,
        max_position_embeddings=16,
        use_cache=False,
    )
    return transformers.LlamaForCausalLM(cfg), (torch.randint(0, VOCAB, (2, 6)),), {}


def _t5():
    cfg = transformers.T5Config(
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        d_model=16,
        d_kv=8,
        d_ff=32,
        vocab_size=VOCAB,
        dropout_rate=0.0,
        use_cache=False,
    )
    return (
        transformers.T5ForConditionalGeneration(cfg),
        (torch.randint(0, VOCAB, (2, 6)),),
        {"decoder_input_ids": torch.randint(0, VOCAB, (2, 4))},
    )


# Llama's RMSNorm and T5's layer norm and relative-position buckets compute in float32 inside a
# float64 model (`.to(torch.float32)` in their code): both sides round there, differently by an ulp.
FLOAT32_INSIDE = 1e-5


@pytest.mark.parametrize(
    "make, rtol",
    [(_gpt2, RTOL), (_bert, RTOL), (_vit, RTOL), (_llama, FLOAT32_INSIDE), (_t5, FLOAT32_INSIDE)],
    ids=["gpt2", "bert", "vit", "llama", "t5"],
)
def test_transformers_model(make, rtol):
    torch.manual_seed(0)
    module, inputs, kw = make()
    e = against_torch(module.double().train(), inputs, **kw)
    assert e.loss < rtol and e.max_grad < rtol and e.jvp < rtol, (e.loss, e.max_grad, e.jvp, e.params)
    if make is _gpt2:  # lm_head.weight is wte.weight: one parameter, its gradient the sum of both uses
        assert e.model.aliases == {"lm_head.weight": "transformer.wte.weight"}
    if make is _t5:
        assert set(e.model.aliases.values()) == {"shared.weight"}
