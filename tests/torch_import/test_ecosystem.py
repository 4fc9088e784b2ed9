"""An imported torch model in the JAX ecosystem: as a Flax NNX module (nnx.Optimizer, nnx.jit,
split/merge, inside a bigger model), its weights in safetensors files and Orbax checkpoints, a
transformers checkpoint from save_pretrained, and a jax.export artifact served without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")

import jaxderiv.nn as jnn  # noqa: E402
import jaxderiv.torch as jt  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"


def _mlp(dropout: float = 0.0, dtype=torch.float64) -> torch.nn.Module:
    torch.manual_seed(0)
    layers = [torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU()]
    layers += [torch.nn.Dropout(dropout)] if dropout else []
    return torch.nn.Sequential(*layers, torch.nn.Linear(16, 3)).to(dtype)


class TiedLM(torch.nn.Module):
    """An embedding and an output head that are one tensor, as GPT-2's."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 10, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.norm(self.embed(ids)))


def _batch(n=8, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=g, dtype=dtype), torch.randint(0, 3, (n,), generator=g)


def _to_torch(state_dict):
    return {k: torch.from_numpy(np.array(v)) for k, v in state_dict.items()}


def _loss(module, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(module(x), y).mean()


def test_nnx_module_trains_as_torch_does_and_round_trips():
    """nnx.Optimizer steps under nnx.jit give torch's SGD steps: weights and running statistics."""
    net, (x, y) = _mlp(), _batch()
    module = jt.to_nnx(jt.from_module(net.train(), x), eval_model=jt.from_module(net.eval(), x))
    assert isinstance(module.variable("0.weight"), nnx.Param)
    assert isinstance(module.variable("1.running_mean"), nnx.BatchStat)
    assert {path for path, _ in nnx.to_flat_state(nnx.state(module, nnx.BatchStat))} == {
        ("1", "running_mean"),
        ("1", "running_var"),
        ("1", "num_batches_tracked"),
    }
    optimizer = nnx.Optimizer(module, optax.sgd(0.1), wrt=nnx.Param)

    @nnx.jit
    def step(module, optimizer, x, y):
        loss, grads = nnx.value_and_grad(_loss)(module, x, y)
        optimizer.update(module, grads)
        return loss

    torch_opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.train()
    for i in range(3):
        x, y = _batch(seed=i)
        step(module, optimizer, jnp.asarray(x.numpy()), jnp.asarray(y.numpy()))
        torch_opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        torch_opt.step()
    ours = module.state_dict()
    assert set(ours) == set(net.state_dict())
    for name, value in net.state_dict().items():
        np.testing.assert_allclose(ours[name], value.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)
    assert int(ours["1.num_batches_tracked"]) == 3

    # eval mode runs the eval graph on the trained state: torch's eval outputs
    module.eval()
    x, _ = _batch(seed=9)
    expected = module(jnp.asarray(x.numpy()))
    fresh = _mlp()
    fresh.load_state_dict(_to_torch(module.state_dict()))
    np.testing.assert_allclose(expected, fresh.eval()(x).detach().numpy(), rtol=1e-12)
    # split/merge keeps everything, mode included
    graphdef, state = nnx.split(module)
    np.testing.assert_array_equal(nnx.merge(graphdef, state)(jnp.asarray(x.numpy())), expected)


def test_nnx_modes_and_dropout_rngs():
    net, (x, _) = _mlp(dropout=0.5), _batch()
    train = jt.from_module(net.train(), x)
    xj = jnp.asarray(x.numpy())
    a = jt.to_nnx(train, rngs=nnx.Rngs(dropout=3))
    b = jt.to_nnx(train, rngs=nnx.Rngs(dropout=3))
    first = a(xj)
    np.testing.assert_array_equal(first, b(xj))  # the same rngs: the same mask
    assert not np.array_equal(a(xj), first)  # the stream advances
    np.testing.assert_array_equal(a(xj, key=jax.random.key(1)), b(xj, key=jax.random.key(1)))
    with pytest.raises(ValueError, match="rngs=nnx.Rngs"):
        jt.to_nnx(train)(xj)
    a.eval()
    with pytest.raises(RuntimeError, match=r"exported in training mode \(.*native_dropout.*eval_model="):
        a(xj)
    a.set_attributes(use_running_average=False)
    with pytest.raises(ValueError, match="deterministic=True with use_running_average=False"):
        a(xj)
    # with the eval-mode import, .eval() is torch's eval: no dropout, running statistics
    both = jt.to_nnx(train, eval_model=jt.from_module(net.eval(), x), rngs=nnx.Rngs(dropout=0))
    both.eval()
    np.testing.assert_allclose(both(xj), net.eval()(x).detach().numpy(), rtol=1e-12)
    # an eval-mode import alone: its running statistics are read, never written, plain Variables
    frozen = jt.to_nnx(jt.from_module(net.eval(), x))
    stat = frozen.variable("1.running_mean")
    assert type(stat) is nnx.Variable and not isinstance(stat, nnx.BatchStat)
    np.testing.assert_allclose(frozen(xj), net(x).detach().numpy(), rtol=1e-12)
    # a graph without dropout or BatchNorm updates runs unchanged in both modes
    plain = jt.to_nnx(jt.from_module(torch.nn.Linear(6, 2).double(), x))
    out = plain(xj)
    plain.eval()
    np.testing.assert_array_equal(plain(xj), out)
    # the two imports must hold the same tensors
    with pytest.raises(ValueError, match=r"parameter '0.weight'.*float64\[16, 6\].*float64\[16, 5\]"):
        other = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU())
        other.append(torch.nn.Dropout(0.5)).append(torch.nn.Linear(16, 3))
        jt.to_nnx(train, eval_model=jt.from_module(other.double().eval(), torch.randn(4, 5, dtype=torch.float64)))


class _Bigger(nnx.Module):
    """An imported torch model between two jaxderiv.nn layers."""

    def __init__(self, imported, *, rngs):
        self.lm = jt.to_nnx(imported)
        self.out = jnn.Linear(10, 2, param_dtype=jnp.float32, rngs=rngs)

    def __call__(self, ids):
        return self.out(self.lm(ids).mean(axis=1))


def test_nnx_inside_a_bigger_model_with_tied_weights():
    torch.manual_seed(0)
    lm = TiedLM()
    ids = torch.randint(0, 10, (4, 5))
    imported = jt.from_module(lm, ids)
    assert imported.aliases == {"head.weight": "embed.weight"}
    model = _Bigger(imported, rngs=nnx.Rngs(0))
    params = nnx.state(model, nnx.Param)
    names = {".".join(map(str, path)) for path, _ in nnx.to_flat_state(params)}
    assert names == {"lm.embed.weight", "lm.norm.weight", "lm.norm.bias", "out.weight", "out.bias"}  # one tied Param
    assert model.lm.variable("head.weight") is model.lm.variable("embed.weight")

    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    labels = jnp.array([0, 1, 0, 1])
    ids_j = jnp.asarray(ids.numpy())

    @nnx.jit
    def step(model, optimizer):
        loss, grads = nnx.value_and_grad(_loss)(model, ids_j, labels)
        optimizer.update(model, grads)
        return loss

    before = np.array(model.lm.variable("embed.weight")[...])
    losses = [float(step(model, optimizer)) for _ in range(3)]
    assert losses[-1] < losses[0]
    sd = model.lm.state_dict()
    assert not np.allclose(sd["embed.weight"], before)
    np.testing.assert_array_equal(sd["head.weight"], sd["embed.weight"])
    lm.load_state_dict(_to_torch(sd))
    assert lm.head.weight is lm.embed.weight
    np.testing.assert_allclose(model.lm(ids_j), lm(ids).detach().numpy(), rtol=1e-5, atol=1e-6)
    graphdef, state = nnx.split(model)
    np.testing.assert_array_equal(nnx.merge(graphdef, state)(ids_j), model(ids_j))
    # load_state_dict checks names and shapes
    with pytest.raises(ValueError, match=r"tensor 'norm.bias' in the state_dict has shape \[7\]"):
        model.lm.load_state_dict({**sd, "norm.bias": np.zeros(7, np.float32)})
    with pytest.raises(KeyError, match=r"missing \['norm.weight'\]"):
        model.lm.load_state_dict({k: v for k, v in sd.items() if k != "norm.weight"})


def test_safetensors_by_name_bf16_tied_and_checked(tmp_path):
    pytest.importorskip("safetensors")
    from safetensors.numpy import load_file, save_file
    from safetensors.torch import load_model

    torch.manual_seed(0)
    lm = TiedLM().to(torch.bfloat16)
    ids = torch.randint(0, 10, (4, 5))
    model = jt.from_module(lm, ids)
    assert model.params["embed.weight"].dtype == jnp.bfloat16
    params = jax.tree.map(lambda p: (p * 2).astype(p.dtype), model.params)
    path = jt.save_safetensors(model, tmp_path, params)
    assert path == tmp_path / "model.safetensors"
    stored = load_file(path)
    assert set(stored) == {"embed.weight", "norm.weight", "norm.bias"}  # the tied name written once
    # torch reads it as its own file, filling the tied name
    fresh = TiedLM().to(torch.bfloat16)
    load_model(fresh, str(path))
    for name, value in fresh.state_dict().items():
        np.testing.assert_array_equal(
            value.float().numpy(), np.asarray(params[model.aliases.get(name, name)], np.float32)
        )
    loaded, buffers = jt.load_safetensors(model, path)
    for name in params:
        assert loaded[name].dtype == jnp.bfloat16
        np.testing.assert_array_equal(loaded[name], params[name])
    # a file written by torch with the other name of the tie reads the same
    save_file(
        {"head.weight": stored["embed.weight"], "norm.weight": stored["norm.weight"], "norm.bias": stored["norm.bias"]},
        tmp_path / "other.safetensors",
    )
    np.testing.assert_array_equal(
        jt.load_safetensors(model, tmp_path / "other.safetensors")[0]["embed.weight"], params["embed.weight"]
    )

    bad = dict(stored, **{"norm.bias": np.zeros(9, stored["norm.bias"].dtype)})
    save_file(bad, tmp_path / "shape.safetensors")
    with pytest.raises(
        ValueError, match=r"tensor 'norm.bias' in .*shape.safetensors has shape \[9\], the model's is \[8\]"
    ):
        jt.load_safetensors(model, tmp_path / "shape.safetensors")
    save_file(dict(stored, **{"norm.bias": np.zeros(8, np.float32)}), tmp_path / "dtype.safetensors")
    with pytest.raises(ValueError, match=r"tensor 'norm.bias' in .* is float32, the model's is bfloat16"):
        jt.load_safetensors(model, tmp_path / "dtype.safetensors")
    assert jt.load_safetensors(model, tmp_path / "dtype.safetensors", cast=True)[0]["norm.bias"].dtype == jnp.bfloat16
    save_file(dict(stored, extra=np.zeros(1, np.float32)), tmp_path / "extra.safetensors")
    with pytest.raises(KeyError, match=r"missing \[\], unexpected \['extra'\]"):
        jt.load_safetensors(model, tmp_path / "extra.safetensors")
    assert jt.load_safetensors(model, tmp_path / "extra.safetensors", strict=False)[0].keys() == params.keys()
    with pytest.raises(ValueError, match=r"tensor 'norm.weight' in the parameters to save has shape \[3\]"):
        jt.save_safetensors(model, tmp_path / "x.safetensors", {**params, "norm.weight": jnp.zeros(3, jnp.bfloat16)})


def test_orbax_checkpoint_params_buffers_and_optimizer_state(tmp_path):
    pytest.importorskip("orbax.checkpoint")
    net, (x, y) = _mlp(), _batch()
    model = jt.from_module(net.train(), x)
    opt = optax.adam(1e-2)

    @jax.jit
    def step(params, buffers, state, x, y):
        def loss(p):
            out, new = model.apply(p, buffers, x)
            return optax.softmax_cross_entropy_with_integer_labels(out, y).mean(), new

        (_, buffers), grads = jax.value_and_grad(loss, has_aux=True)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), buffers, state

    xj, yj = jnp.asarray(x.numpy()), jnp.asarray(y.numpy())
    params, buffers, state = model.params, model.buffers, opt.init(model.params)
    for _ in range(2):
        params, buffers, state = step(params, buffers, state, xj, yj)
    jt.save_checkpoint(tmp_path / "ckpt", params, buffers, state)
    r_params, r_buffers, r_state = jt.restore_checkpoint(tmp_path / "ckpt", model, opt.init(model.params))
    assert jax.tree.structure(r_state) == jax.tree.structure(state)
    for a, b in zip(jax.tree.leaves((params, buffers, state)), jax.tree.leaves((r_params, r_buffers, r_state))):
        np.testing.assert_array_equal(a, b)
    assert int(r_buffers["1.num_batches_tracked"]) == 2
    # training goes on from the restored state exactly as from the one in memory
    resumed = step(r_params, r_buffers, r_state, xj, yj)
    for a, b in zip(jax.tree.leaves(step(params, buffers, state, xj, yj)), jax.tree.leaves(resumed)):
        np.testing.assert_array_equal(a, b)
    assert jt.restore_checkpoint(tmp_path / "ckpt", model)[2] is None  # weights only
    # the checkpoint of another model is refused, naming the tensor
    wider = torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
    )
    other = jt.from_module(wider.double(), x)
    with pytest.raises(ValueError, match=r"tensor '3.bias' in checkpoint .* has shape \[3\], the model's is \[4\]"):
        jt.restore_checkpoint(tmp_path / "ckpt", other)
    with pytest.raises(ValueError, match="does not fit the optimizer state"):
        jt.restore_checkpoint(tmp_path / "ckpt", model, optax.sgd(0.1, momentum=0.9).init(model.params))


def test_transformers_pretrained_checkpoint(tmp_path):
    """save_pretrained -> from_pretrained -> import: the safetensors file reads into the same params;
    trained params written back are what from_pretrained loads, tied lm_head included."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=1,
        n_head=2,
        n_embd=16,
        vocab_size=32,
        n_positions=16,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path)
    module = transformers.GPT2LMHeadModel.from_pretrained(tmp_path).train()
    ids = torch.randint(0, 32, (2, 6))
    model = jt.from_module(module, ids, labels=ids)
    assert model.aliases == {"lm_head.weight": "transformer.wte.weight"}
    params, buffers = jt.load_safetensors(model, tmp_path)
    assert params.keys() == model.params.keys() and buffers.keys() == model.buffers.keys()
    for name in params:
        np.testing.assert_array_equal(params[name], model.params[name], err_msg=name)
    module.save_pretrained(tmp_path / "sharded", max_shard_size="4KB")  # shards and their index
    assert len(list((tmp_path / "sharded").glob("model-*.safetensors"))) > 1
    sharded, _ = jt.load_safetensors(model, tmp_path / "sharded")
    for name in params:
        np.testing.assert_array_equal(sharded[name], model.params[name], err_msg=name)

    opt = optax.adam(1e-2)
    ids_j = jnp.asarray(ids.numpy())

    @jax.jit
    def step(params, state):
        grads = jax.grad(lambda p: model.apply(p, buffers, ids_j, labels=ids_j)[0]["loss"])(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    state = opt.init(params)
    for _ in range(2):
        params, state = step(params, state)
    jt.save_safetensors(model, tmp_path, params)
    reloaded = transformers.GPT2LMHeadModel.from_pretrained(tmp_path)
    assert reloaded.lm_head.weight is reloaded.transformer.wte.weight
    sd = model.state_dict(params)
    for name, value in reloaded.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), sd[name], err_msg=name)
    logits = jax.jit(lambda p: model.apply(p, buffers, ids_j, labels=ids_j)[0]["logits"])(params)
    np.testing.assert_allclose(logits, reloaded.eval()(ids).logits.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_export_inference_refuses_what_cannot_serve():
    net, (x, _) = _mlp(), _batch()
    with pytest.raises(ValueError, match=r"needs an eval-mode graph, this one updates buffers \['1.running_mean'"):
        jt.export_inference(jt.from_module(net.train(), x), x)
    static = jt.from_module(net.eval(), x, dynamic_shapes=None)
    with pytest.raises(ValueError, match=r"input 0 \(input\) was exported with a static size 8 on axis 0"):
        jt.export_inference(static, x)
    assert jt.export_inference(static, x, batch_axis=None).in_avals[0].shape == (8, 6)


# JAX defaults (float32, x64 off), as users run: train the NNX module, export the eval graph
# with a symbolic batch, then run the artifact in an interpreter where torch cannot be imported.
_EXPORT = """
import json, sys
blocked = ("flax", "orbax", "safetensors", "optax")
for name in blocked:
    sys.modules[name] = None  # first, jaxderiv.torch imports without them
import jaxderiv.torch as jt
assert callable(jt.save_safetensors) and callable(jt.export_inference)
try:
    jt.to_nnx
    raise SystemExit("to_nnx without flax")
except ImportError as e:
    assert "flax" in str(e), e
for name in blocked:
    del sys.modules[name]
import jax, jax.numpy as jnp, numpy as np, optax, torch
from flax import nnx
assert not jax.config.jax_enable_x64
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                          torch.nn.Linear(16, 3))
x = torch.randn(8, 6)
batch = ({0: torch.export.Dim("batch", max=1024)},)  # torch.export's spelling of a dynamic batch
eval_graph = jt.from_module(net.eval(), x, dynamic_shapes=batch)
module = jt.to_nnx(jt.from_module(net.train(), x), eval_model=eval_graph, rngs=nnx.Rngs(dropout=0))
optimizer = nnx.Optimizer(module, optax.adam(1e-2), wrt=nnx.Param)
y = jnp.arange(8) % 3

@nnx.jit
def step(module, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: optax.softmax_cross_entropy_with_integer_labels(m(x), y).mean())(module)
    optimizer.update(module, grads)
    return loss

losses = [float(step(module, optimizer, jnp.asarray(x.numpy()))) for _ in range(5)]
assert module.variable("0.weight")[...].dtype == jnp.float32 and losses[-1] < losses[0], losses
net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in module.state_dict().items()})
net.eval()
exported = jt.export_inference(eval_graph, x, params=module.weights()[0], buffers=module.weights()[1])
open(sys.argv[1], "wb").write(exported.serialize())
module.eval()
xs = {n: np.random.default_rng(n).normal(size=(n, 6)).astype(np.float32) for n in (3, 11)}
out = {n: net(torch.from_numpy(v)).detach().numpy().tolist() for n, v in xs.items()}
nnx_out = np.asarray(module(jnp.asarray(xs[3]))).tolist()
state = module.state_dict()
weights = [float(np.abs(state[k] - v.numpy()).max()) for k, v in net.state_dict().items()]
print(json.dumps({"x": {n: v.tolist() for n, v in xs.items()}, "torch": out, "nnx": nnx_out,
                  "in": str(exported.in_avals), "weights": weights}))
"""


_SERVE = """
import sys
sys.modules["torch"] = None  # any import of torch now fails
import json
import jax, numpy as np
data = json.loads(open(sys.argv[2]).read())
exported = jax.export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
out = {n: np.asarray(exported.call(np.asarray(x, np.float32))).tolist() for n, x in data["x"].items()}
try:
    import torch  # noqa: F401
    raise SystemExit("torch was importable")
except ImportError:
    pass
assert not any(m == "jaxderiv" or m.startswith(("jaxderiv.", "torch.")) for m in sys.modules)
print(json.dumps(out))
"""


def _python(code: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64",)}
    env.update(PYTHONPATH=str(SRC), JAX_PLATFORMS="cpu")
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_nnx_float32_then_serve_without_torch(tmp_path):
    pytest.importorskip("flatbuffers")  # jax.export's serialization
    artifact, data = tmp_path / "model.jax", tmp_path / "data.json"
    made = _python(_EXPORT, str(artifact))
    assert made["in"] == "(ShapedArray(float32[batch,6]),)"
    assert max(made["weights"]) == 0.0  # the trained weights went to torch unchanged
    np.testing.assert_allclose(made["nnx"], made["torch"]["3"], rtol=1e-5, atol=1e-6)
    data.write_text(json.dumps(made))
    served = _python(_SERVE, str(artifact), str(data))
    for n in ("3", "11"):  # two batch sizes from one artifact
        got = np.asarray(served[n])
        assert got.shape == (int(n), 3)
        np.testing.assert_allclose(got, made["torch"][n], rtol=1e-5, atol=1e-6)


_SHARDED_CHECKPOINT = """
import sys, json
import jax, jax.numpy as jnp, numpy as np, optax, torch
import jaxderiv.torch as jt
from jax.sharding import Mesh
torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
model = jt.from_module(module, torch.randn(4, 8))
mesh = Mesh(np.array(jax.devices()), ("data",))
state = jt.shard(model, mesh, jt.fsdp("data"))
opt = optax.adam(1e-2)
opt_state = state.put(opt.init(state.params))
jt.save_checkpoint(sys.argv[1], state.params, state.buffers, opt_state)
params, buffers, restored = jt.restore_checkpoint(
    sys.argv[1], model, opt_state, params=state.params, buffers=state.buffers
)
print(json.dumps({
    "devices": len(jax.devices()),
    "same_sharding": all(params[k].sharding == state.params[k].sharding for k in params),
    "sharded": any(len(params[k].sharding.device_set) > 1 and params[k].addressable_shards[0].data.size < params[k].size
                   for k in params),
    "equal": all(bool(jnp.array_equal(params[k], state.params[k])) for k in params),
    "opt_equal": all(bool(jnp.array_equal(a, b)) for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(opt_state))),
}))
"""


def test_orbax_restores_sharded_arrays_sharded(tmp_path):
    """A checkpoint of FSDP-sharded params and optimizer state, on 4 host devices, restores
    onto the same shardings with the same values (JAX's default 32-bit mode, a fresh process)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env.update(PYTHONPATH=str(src), JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=4")
    run = subprocess.run(
        [sys.executable, "-c", _SHARDED_CHECKPOINT, str(tmp_path / "ckpt")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {"devices": 4, "same_sharding": True, "sharded": True, "equal": True, "opt_equal": True}
