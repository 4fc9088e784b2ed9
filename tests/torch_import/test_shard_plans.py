"""Imported torch models trained sharded with `jaxderiv.torch.shard`: each plan equals one device.

The device count is fixed when JAX starts, so the checks run in fresh interpreters with
XLA_FLAGS=--xla_force_host_platform_device_count=8: one runs every float64 model x plan pair
(loss, every gradient, the parameters and buffers after three optax steps, each against the same
model on one device of that process), one a float32 model with x64 off, and two run one step as
two processes of 4 devices each over gloo. Each reports back as JSON.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("optax")

from jax.sharding import AbstractMesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import jaxderiv.torch as jt  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"

# Models, the train step and the comparison, shared by every subprocess.
COMMON = r'''
import json, re, sys, time
import jax, jax.numpy as jnp, numpy as np, optax, torch
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental import multihost_utils
import jaxderiv.torch as jt

COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "collective-permute", "all-to-all")


class LMLoss(torch.nn.Module):
    """Next-token cross entropy in the model's dtype (transformers' own loss casts logits to float32)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, ids):
        logits = self.lm(ids).logits
        return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def _rms_norm_in_dtype(self, h):  # LlamaRMSNorm without its float32 cast, for a float64 model
    return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def batches(*makers, n=3):
    g = torch.Generator().manual_seed(1)
    return [tuple(make(g) for make in makers) for _ in range(n)]


def llama(dtype=torch.float64):
    import transformers

    if dtype == torch.float64:
        transformers.models.llama.modeling_llama.LlamaRMSNorm.forward = _rms_norm_in_dtype
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                                   intermediate_size=64, vocab_size=64, max_position_embeddings=16, use_cache=False)
    data = batches(lambda g: torch.randint(0, 64, (8, 8), generator=g))
    return LMLoss(transformers.LlamaForCausalLM(cfg)).to(dtype).train(), data


def bert():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                                  vocab_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0, num_labels=3)
    data = batches(lambda g: torch.randint(0, 64, (8, 8), generator=g), lambda g: torch.randint(0, 3, (8,), generator=g))
    return transformers.BertForSequenceClassification(cfg).double().train(), data


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
        self.conv2, self.bn2 = torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x, y):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.nn.functional.max_pool2d(torch.relu(self.bn2(self.conv2(h))), 2)
        return torch.nn.functional.cross_entropy(self.fc(h.mean((2, 3))), y)


class RNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = torch.nn.LSTM(6, 16, batch_first=True), torch.nn.Linear(16, 4)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.fc(self.lstm(x)[0][:, -1]), y)


def cnn():
    torch.manual_seed(0)
    data = batches(lambda g: torch.randn(8, 3, 8, 8, generator=g, dtype=torch.float64),
                   lambda g: torch.randint(0, 10, (8,), generator=g))
    return CNN().double().train(), data


def lstm():
    torch.manual_seed(0)
    data = batches(lambda g: torch.randn(8, 5, 6, generator=g, dtype=torch.float64),
                   lambda g: torch.randint(0, 4, (8,), generator=g))
    return RNN().double().train(), data


def imported(make):
    module, data = make()
    if hasattr(module, "config"):  # BERT: (ids, labels), its own loss
        model = jt.from_module(module, data[0][0], labels=data[0][1])

        def loss(p, b, ids, labels):
            out, new_buffers = model.apply(p, b, ids, labels=labels)
            return out["loss"], new_buffers
    else:  # the module returns its loss
        model = jt.from_module(module, *data[0])
        loss = lambda p, b, *xs: model.apply(p, b, *xs)
    return model, loss, [tuple(np.asarray(t.numpy()) for t in b) for b in data]


def mesh(shape, names, devices=None):
    devices = jax.devices() if devices is None else devices
    return Mesh(np.array(devices[: int(np.prod(shape))]).reshape(shape), names)


def train(model, loss_fn, data, m, plan, opt):
    """Three optax steps on mesh m by plan: losses, the first gradients, the final state, HLO, bytes, times."""
    state = jt.shard(model, m, plan)
    params, buffers = state
    opt_state = state.put(opt.init(params))

    def step(params, buffers, opt_state, *batch):
        (loss, new_buffers), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, buffers, *batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return loss, grads, optax.apply_updates(params, updates), new_buffers, opt_state

    shardings = (state.replicated, *state.shardings((params, params, buffers, opt_state)))
    t0 = time.perf_counter()
    compiled = jax.jit(step, out_shardings=shardings).lower(params, buffers, opt_state, *state.shard_batch(*data[0])).compile()
    compile_s = time.perf_counter() - t0
    hlo = compiled.as_text()
    losses, first, times = [], None, []
    for batch in data:
        batch = state.shard_batch(*batch)
        t0 = time.perf_counter()
        loss, grads, params, buffers, opt_state = jax.block_until_ready(compiled(params, buffers, opt_state, *batch))
        times.append(time.perf_counter() - t0)
        losses.append(loss)
        first = grads if first is None else first
    host = lambda tree: {k: gather(v) for k, v in tree.items()}
    return dict(losses=np.asarray([gather(l) for l in losses]), grads=host(first), params=host(params), buffers=host(buffers),
                collectives={c: n for c in COLLECTIVES if (n := len(re.findall(rf"\b{c}(-start)?\(", hlo)))},
                bytes=max(state.device_bytes().values()), compile_s=compile_s, step_s=min(times), specs=state.specs)


def gather(a):
    """A global array's value on this host (over every process)."""
    return np.asarray(a) if a.is_fully_addressable else np.asarray(multihost_utils.process_allgather(a, tiled=True))


def error(got, ref):
    """The largest difference, relative to each tensor's largest value (at least 1e-2 of the largest of its
    kind: a gradient that is zero but for rounding, a conv bias before BatchNorm, is compared at that scale)."""
    errs = [float(np.max(np.abs(got["losses"] - ref["losses"])) / np.max(np.abs(ref["losses"])))]
    for part in ("grads", "params", "buffers"):
        scale = max([float(np.max(np.abs(v))) for v in ref[part].values()] + [0.0])
        for k, v in ref[part].items():
            floor = max(float(np.max(np.abs(v))), 1e-2 * scale, 1e-300)
            errs.append(float(np.max(np.abs(got[part][k].astype(np.float64) - v))) / floor)
    return max(errs)


def out(**values):
    print(json.dumps(values, default=str))
'''

# Every float64 model x plan against the same model on one device: one interpreter, 8 devices.
FLOAT64 = r"""
jax.config.update("jax_enable_x64", True)
opt = optax.sgd(0.1, momentum=0.9)  # Adam's 1/sqrt(v) would blow a zero-but-for-rounding gradient up to O(lr)
D8 = mesh((8,), ("data",))
DM = mesh((2, 4), ("data", "model"))
cases = {
    "llama": (llama, [("data_parallel", D8, jt.data_parallel()), ("fsdp", D8, jt.fsdp()),
                      ("tensor_parallel", mesh((4,), ("model",)), jt.tensor_parallel()),
                      ("tp+fsdp 2x4", DM, jt.tensor_parallel("model", data_axis="data", fsdp=True))]),
    "bert": (bert, [("fsdp", D8, jt.fsdp()), ("tp 2x4", DM, jt.tensor_parallel("model", data_axis="data"))]),
    "cnn": (cnn, [("data_parallel", D8, jt.data_parallel()), ("fsdp", D8, jt.fsdp()),
                  ("conv channels 2x4", DM, jt.ShardingPlan(((r"conv\d\.(weight|bias)", P("model")),), batch=P("data")))]),
    "lstm": (lstm, [("fsdp", D8, jt.fsdp()),
                    ("lstm gates 2x4", DM, jt.ShardingPlan(((r"lstm\.(weight|bias)_", P("model")),), batch=P("data")))]),
}
rows, extra = [], {}
for name, (make, plans) in cases.items():
    model, loss, data = imported(make)
    ref = train(model, loss, data, mesh((1,), ("data",)), jt.data_parallel(), opt)
    for plan_name, m, plan in plans:
        got = train(model, loss, data, m, plan, opt)
        rows.append(dict(model=name, plan=plan_name, mesh=dict(m.shape), error=error(got, ref), collectives=got["collectives"],
                         bytes=got["bytes"], ref_bytes=ref["bytes"], compile_ratio=got["compile_s"] / ref["compile_s"],
                         step_ratio=got["step_s"] / ref["step_s"], specs={k: str(v) for k, v in got["specs"].items()}))
    if name == "llama":
        tp = jt.shard(model, mesh((4,), ("model",)), jt.tensor_parallel())
        spelled = jt.shard(model, mesh((4,), ("model",)), {"*.embed_tokens": "rowwise", "*.[qkv]_proj": "colwise",
                                                           "*.o_proj": "rowwise", "*.gate_proj": "colwise",
                                                           "*.up_proj": "colwise", "*.down_proj": "rowwise",
                                                           "lm.lm_head": "colwise"})
        extra["torch_spelling_equal"] = tp.specs == spelled.specs
        try:
            jt.shard(model, mesh((3,), ("model",)), jt.tensor_parallel())
        except ValueError as e:
            extra["indivisible"] = str(e)
        s = jt.shard(model, D8, jt.fsdp())
        extra["fsdp_leaf_bytes"] = {k: [sh.data.nbytes for sh in v.addressable_shards] for k, v in s.params.items()}
out(rows=rows, **extra)
"""

# A float32 model with x64 off: the same plans at float32's rounding.
FLOAT32 = r"""
assert not jax.config.jax_enable_x64
opt = optax.sgd(0.1, momentum=0.9)
model, loss, data = imported(lambda: llama(torch.float32))
ref = train(model, loss, data, mesh((1,), ("data",)), jt.data_parallel(), opt)
rows = []
for plan_name, m, plan in [("tp+fsdp 2x4", mesh((2, 4), ("data", "model")), jt.tensor_parallel("model", data_axis="data", fsdp=True))]:
    got = train(model, loss, data, m, plan, opt)
    assert all(g.dtype == np.float32 for g in got["grads"].values())
    rows.append(dict(model="llama float32", plan=plan_name, error=error(got, ref), collectives=got["collectives"]))
out(rows=rows)
"""

# One of two processes with 4 devices each: FSDP over all 8 (the CNN: BatchNorm's statistics of the
# global batch, the weights all-gathered across processes), against one local device.
PROCESS = r"""
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.config.update("jax_enable_x64", True)
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{PORT}", num_processes=2, process_id=PID)
assert jax.device_count() == 8 and jax.local_device_count() == 4, (jax.device_count(), jax.local_device_count())
opt = optax.sgd(0.1, momentum=0.9)
model, loss, data = imported(cnn)
got = train(model, loss, data, mesh((8,), ("data",)), jt.fsdp(), opt)
ref = train(model, loss, data, mesh((1,), ("data",), jax.local_devices()), jt.data_parallel(), opt)
out(process=jax.process_index(), error=error(got, ref), collectives=got["collectives"], bytes=got["bytes"],
    losses=got["losses"].tolist())
jax.distributed.shutdown()
"""


def _env(devices: int, x64: bool = False) -> dict:
    return {
        **os.environ,
        # LLVM's cheaper optimization level halves the compile time; one device and many compile alike
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices} --xla_backend_optimization_level=0",
        "PYTHONPATH": str(SRC),
        "JAX_PLATFORMS": "cpu",
        "JAX_ENABLE_X64": "1" if x64 else "0",
        "PYTHONWARNINGS": "ignore",
    }


def _run(body: str, devices: int = 8) -> dict:
    code = COMMON + textwrap.dedent(body)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(devices), timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def float64():
    return _run(FLOAT64)


def _row(result, model, plan):
    return next(r for r in result["rows"] if r["model"] == model and r["plan"] == plan)


CASES = [
    ("llama", "data_parallel"),
    ("llama", "fsdp"),
    ("llama", "tensor_parallel"),
    ("llama", "tp+fsdp 2x4"),
    ("bert", "fsdp"),
    ("bert", "tp 2x4"),
    ("cnn", "data_parallel"),
    ("cnn", "fsdp"),
    ("cnn", "conv channels 2x4"),
    ("lstm", "fsdp"),
    ("lstm", "lstm gates 2x4"),
]


@pytest.mark.parametrize("model, plan", CASES, ids=[f"{m}-{p}" for m, p in CASES])
def test_sharded_equals_one_device_float64(float64, model, plan):
    """Loss, every gradient, and parameters and buffers after three optax steps: to 1e-12."""
    row = _row(float64, model, plan)
    assert row["error"] < 1e-12, row


def test_collectives_the_plans_imply(float64):
    """FSDP all-gathers the weights; the gradient's reduction (a reduce-scatter, which XLA's CPU
    backend runs as an all-reduce then a slice) and Megatron's row-parallel sums are all-reduces."""
    for model, plan in CASES:
        found = _row(float64, model, plan)["collectives"]
        assert found.get("all-reduce"), (model, plan, found)
        if "fsdp" in plan:
            assert found.get("all-gather"), (model, plan, found)


def test_fsdp_parameter_bytes_per_device(float64):
    """ZeRO-3 holds about 1/8 of the parameters on each of 8 devices."""
    for model in ("llama", "bert", "cnn", "lstm"):
        row = _row(float64, model, "fsdp")
        assert row["bytes"] <= row["ref_bytes"] / 8 * 1.1, row
    # every Llama parameter splits 8 ways: each device holds exactly an eighth
    for name, shards in float64["fsdp_leaf_bytes"].items():
        assert len(set(shards)) == 1 and len(shards) == 8, name


def test_megatron_layout(float64):
    specs = _row(float64, "llama", "tensor_parallel")["specs"]
    layer = "lm.model.layers.0."
    assert specs[layer + "self_attn.q_proj.weight"] == str(P("model", None))
    assert specs[layer + "self_attn.o_proj.weight"] == str(P(None, "model"))
    assert specs[layer + "mlp.down_proj.weight"] == str(P(None, "model"))
    assert specs[layer + "input_layernorm.weight"] == str(P(None))
    assert specs["lm.model.embed_tokens.weight"] == str(P("model", None))
    two_d = _row(float64, "llama", "tp+fsdp 2x4")["specs"]
    assert two_d[layer + "self_attn.q_proj.weight"] == str(P("model", "data"))
    assert float64["torch_spelling_equal"]


def test_indivisible_split_names_parameter_shape_and_axis(float64):
    message = float64["indivisible"]
    assert "embed_tokens.weight" in message and "(64, 32)" in message and "'model'" in message and "size 3" in message


def test_float32_with_x64_off():
    result = _run(FLOAT32)
    for row in result["rows"]:
        assert row["error"] < 1e-5, row


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_of_four_devices():
    """FSDP over 2 processes x 4 devices (gloo) equals one device, in both processes."""
    try:
        from jax._src.lib import _jax

        assert hasattr(_jax, "make_gloo_tcp_collectives")
    except (ImportError, AssertionError):
        pytest.skip("this jaxlib has no gloo CPU collectives")
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", COMMON + textwrap.dedent(PROCESS).replace("PORT", str(port)).replace("PID", str(i))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(4, x64=True),
        )
        for i in range(2)
    ]
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-4000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert sorted(r["process"] for r in results) == [0, 1]
    assert results[0]["losses"] == results[1]["losses"]
    for r in results:
        assert r["error"] < 1e-12, r
        assert r["collectives"].get("all-gather") and r["collectives"].get("all-reduce"), r


# --- plans, in this process (no devices needed) --------------------------------------------------


def test_plan_specs_for_gpt2_and_bert_names():
    mesh = AbstractMesh((2, 4), ("data", "model"))
    tp = jt.tensor_parallel("model", data_axis="data")
    # GPT-2's Conv1D stores (in, out): column-parallel splits its second dimension
    assert tp.spec("transformer.h.0.attn.c_attn.weight", (32, 96), mesh) == P(None, "model")
    assert tp.spec("transformer.h.0.attn.c_attn.bias", (96,), mesh) == P("model")
    assert tp.spec("transformer.h.0.mlp.c_proj.weight", (128, 32), mesh) == P("model", None)
    assert tp.spec("transformer.h.0.mlp.c_proj.bias", (32,), mesh) == P(None)
    assert tp.spec("transformer.h.0.ln_1.weight", (32,), mesh) == P(None)
    # BERT: query/key/value and intermediate column-, both output.dense row-parallel
    assert tp.spec("bert.encoder.layer.0.attention.self.query.weight", (32, 32), mesh) == P("model", None)
    assert tp.spec("bert.encoder.layer.0.attention.output.dense.weight", (32, 32), mesh) == P(None, "model")
    assert tp.spec("bert.encoder.layer.0.intermediate.dense.bias", (64,), mesh) == P("model")
    assert tp.spec("bert.encoder.layer.0.output.dense.weight", (32, 64), mesh) == P(None, "model")
    assert tp.spec("bert.pooler.dense.weight", (32, 32), mesh) == P(None, None)
    # a tied weight is matched by any of its names
    assert tp.spec("transformer.wte.weight", (64, 32), mesh, aliases=["lm_head.weight"]) == P("model", None)
    hidden = jt.tensor_parallel("model", embedding="hidden")
    assert hidden.spec("model.embed_tokens.weight", (64, 32), mesh) == P(None, "model")


def test_fsdp_picks_the_largest_divisible_dimension():
    mesh = AbstractMesh((8,), ("data",))
    plan = jt.fsdp()
    assert plan.spec("w", (16, 64), mesh) == P(None, "data")
    assert plan.spec("w", (12, 16), mesh) == P(None, "data")
    assert plan.spec("w", (12, 6), mesh) == P(None, None)  # nothing divides: replicated
    assert plan.spec("running_var", (), mesh) == P()
    two_d = jt.tensor_parallel("model", data_axis="data", fsdp=True)
    assert two_d.spec("h.0.mlp.up_proj.weight", (64, 32), AbstractMesh((2, 4), ("data", "model"))) == P("model", "data")


def test_plan_errors_name_the_parameter():
    mesh = AbstractMesh((4,), ("model",))
    bad = jt.ShardingPlan(((r"norm", P("model")),))
    with pytest.raises(ValueError, match=r"'final_norm.weight' of shape \(6,\).*'model' of size 4"):
        bad.spec("final_norm.weight", (6,), mesh)
    with pytest.raises(ValueError, match=r"'x.weight'.*'data' is not an axis"):
        jt.fsdp("data").spec("x.weight", (8,), mesh)
    with pytest.raises(ValueError, match="2 dimensions for a tensor of 1"):
        jt.ShardingPlan(((r"b", P(None, "model")),)).spec("b", (8,), mesh)
    with pytest.raises(ValueError, match="unknown parallel style"):
        jt.torch_plan({"*.q_proj": "diagonal"}, _FakeModel())


def test_torch_spelling_strings_and_objects():
    model = _FakeModel()
    model.params = {
        "h.0.q_proj.weight": np.zeros((8, 4)),
        "h.0.q_proj.bias": np.zeros(8),
        "h.0.o_proj.weight": np.zeros((4, 8)),
    }
    mesh = AbstractMesh((4,), ("model",))
    try:
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

        styles = [("colwise", "rowwise"), (ColwiseParallel(), RowwiseParallel())]
    except ImportError:  # a torch built without distributed
        styles = [("colwise", "rowwise")]
    for col, row in styles:
        plan = jt.torch_plan({"*.q_proj": col, "h.*.o_proj": row}, model)
        specs = {name: plan.spec(name, v.shape, mesh) for name, v in model.params.items()}
        assert specs == {
            "h.0.q_proj.weight": P("model", None),
            "h.0.q_proj.bias": P("model"),
            "h.0.o_proj.weight": P(None, "model"),
        }


class _FakeModel:
    params = {"a.q_proj.weight": np.zeros((4, 4))}
    aliases: dict = {}

    class exported:  # no graph: no embeddings
        class graph_signature:
            inputs_to_parameters: dict = {}

        class graph:
            nodes: list = []
