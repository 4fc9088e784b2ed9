"""Imported torch models trained sharded: each sharding plan at 1, 2, 4 and 8 devices.

For each model (a transformers Llama and BERT, a CNN with BatchNorm, an LSTM) and plan
(`data_parallel`, `fsdp`, `tensor_parallel`, `tp+fsdp` on a 2-D data x model mesh) and device
count: whether the loss and every gradient equal one device's (the largest relative difference),
the collectives in the compiled HLO, parameter bytes per device, XLA's per-device argument and
temporary bytes (`compiled.memory_analysis()`), compile and step time, and their ratios to 1 device.

It runs unchanged on a machine with several GPUs (or a TPU host): the meshes take the first
1, 2, 4, 8 of `jax.devices()`. Without accelerators it simulates 8 CPU devices (the flag is set
here, before JAX starts); CPU devices share the same cores, so there the figures show
correctness, layout and memory, not speed.

Run: python benchmarks/scaleout_imported.py [--quick] [--x64] [--models llama,bert,cnn,lstm]
     [--counts 1,2,4,8] [--layers 2 --hidden 32] [--out DIR]
"""

from __future__ import annotations

import os

if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # CPU only; before JAX starts
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import torch  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import jaxderiv.torch as jt  # noqa: E402
from timing import machine  # noqa: E402

COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "collective-permute", "all-to-all")


class LMLoss(torch.nn.Module):
    """Next-token cross entropy in the model's dtype (transformers' own loss casts the logits to float32)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, ids):
        logits = self.lm(ids).logits
        return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


class CNN(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1, self.bn1 = torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.BatchNorm2d(width)
        self.conv2, self.bn2 = torch.nn.Conv2d(width, 2 * width, 3, padding=1), torch.nn.BatchNorm2d(2 * width)
        self.fc = torch.nn.Linear(2 * width, 10)

    def forward(self, x, y):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.nn.functional.max_pool2d(torch.relu(self.bn2(self.conv2(h))), 2)
        return torch.nn.functional.cross_entropy(self.fc(h.mean((2, 3))), y)


class RNN(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.lstm, self.fc = torch.nn.LSTM(8, hidden, batch_first=True), torch.nn.Linear(hidden, 4)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.fc(self.lstm(x)[0][:, -1]), y)


def _rms_norm_in_dtype(self, h):  # LlamaRMSNorm without its float32 cast, for a float64 model
    return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def make(name: str, args, dtype):
    """(torch module returning its loss or a ModelOutput with .loss, example batch as numpy, kwargs names)."""
    import transformers

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    b, h, layers = args.batch, args.hidden, args.layers
    ids = torch.randint(0, 64, (b, 16), generator=g)
    if name == "llama":
        if dtype == torch.float64:
            transformers.models.llama.modeling_llama.LlamaRMSNorm.forward = _rms_norm_in_dtype
        cfg = transformers.LlamaConfig(
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            hidden_size=h,
            intermediate_size=2 * h,
            vocab_size=64,
            max_position_embeddings=32,
            use_cache=False,
        )
        return LMLoss(transformers.LlamaForCausalLM(cfg)).to(dtype).train(), (ids,)
    if name == "bert":
        cfg = transformers.BertConfig(
            num_hidden_layers=layers,
            num_attention_heads=4,
            hidden_size=h,
            intermediate_size=2 * h,
            vocab_size=64,
            max_position_embeddings=32,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_labels=3,
        )
        return transformers.BertForSequenceClassification(cfg).to(dtype).train(), (
            ids,
            torch.randint(0, 3, (b,), generator=g),
        )
    if name == "cnn":
        x = torch.randn(b, 3, 16, 16, generator=g, dtype=dtype)
        return CNN(h // 4).to(dtype).train(), (x, torch.randint(0, 10, (b,), generator=g))
    x = torch.randn(b, 6, 8, generator=g, dtype=dtype)
    return RNN(h).to(dtype).train(), (x, torch.randint(0, 4, (b,), generator=g))


def imported(name, args, dtype):
    module, batch = make(name, args, dtype)
    if hasattr(module, "config"):  # BERT: its own loss from labels
        model = jt.from_module(module, batch[0], labels=batch[1])

        def loss(p, b, ids, labels):
            out, new_buffers = model.apply(p, b, ids, labels=labels)
            return out["loss"], new_buffers
    else:
        model = jt.from_module(module, *batch)
        loss = lambda p, b, *xs: model.apply(p, b, *xs)
    return model, loss, tuple(t.numpy() for t in batch)


def plans(name: str, n: int):
    """(label, plan, mesh shape, axis names) of each plan at n devices."""
    out = [("data_parallel", jt.data_parallel(), (n,), ("data",)), ("fsdp", jt.fsdp(), (n,), ("data",))]
    if name in ("llama", "bert"):
        out.append(("tensor_parallel", jt.tensor_parallel("model"), (n,), ("model",)))
        if n >= 4:
            two_d = jt.tensor_parallel("model", data_axis="data", fsdp=True)
            out.append(("tp+fsdp", two_d, (2, n // 2), ("data", "model")))
    elif name == "cnn":  # Megatron's names are a transformer's: split the conv channels instead
        rules = ((r"conv\d\.(weight|bias)", P("model")),)
        out.append(("channels", jt.ShardingPlan(rules, batch=P()), (n,), ("model",)))
    else:
        out.append(("lstm gates", jt.ShardingPlan(((r"lstm\.(weight|bias)_", P("model")),)), (n,), ("model",)))
    return out


def measure(model, loss_fn, batch, plan, mesh, repeats):
    opt = optax.sgd(0.01, momentum=0.9)
    state = jt.shard(model, mesh, plan)
    params, buffers = state
    opt_state = state.put(opt.init(params))

    def step(params, buffers, opt_state, *batch):
        (loss, new_buffers), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, buffers, *batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return loss, grads, optax.apply_updates(params, updates), new_buffers, opt_state

    shardings = (state.replicated, *state.shardings((params, params, buffers, opt_state)))
    args = (params, buffers, opt_state, *state.shard_batch(*batch))
    t0 = time.perf_counter()
    compiled = jax.jit(step, out_shardings=shardings).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    hlo = compiled.as_text()
    loss, grads, *_ = jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    mem = compiled.memory_analysis()
    return {
        "loss": np.asarray(loss),
        "grads": {k: np.asarray(v) for k, v in grads.items()},
        "collectives": {c: n for c in COLLECTIVES if (n := len(re.findall(rf"\b{c}(-start)?\(", hlo)))},
        "param_bytes": max(state.device_bytes().values()),
        "argument_bytes": getattr(mem, "argument_size_in_bytes", None),
        "temp_bytes": getattr(mem, "temp_size_in_bytes", None),
        "compile_s": compile_s,
        "step_s": statistics.median(times),
    }


def error(got, ref) -> float:
    """Largest difference relative to each tensor's largest value (at least 1e-2 of the largest gradient)."""
    errs = [float(abs(got["loss"] - ref["loss"]) / abs(ref["loss"]))]
    scale = max(float(np.max(np.abs(v))) for v in ref["grads"].values())
    for k, v in ref["grads"].items():
        errs.append(float(np.max(np.abs(got["grads"][k] - v))) / max(float(np.max(np.abs(v))), 1e-2 * scale, 1e-300))
    return max(errs)


def run(args) -> dict:
    dtype = torch.float64 if args.x64 else torch.float32
    devices = jax.devices()
    counts = [n for n in args.counts if n <= len(devices)]
    rows = []
    for name in args.models:
        model, loss_fn, batch = imported(name, args, dtype)
        ref = measure(model, loss_fn, batch, jt.data_parallel(), Mesh(np.array(devices[:1]), ("data",)), args.repeats)
        for n in counts:
            for label, plan, shape, names in plans(name, n):
                mesh = Mesh(np.array(devices[:n]).reshape(shape), names)
                got = measure(model, loss_fn, batch, plan, mesh, args.repeats)
                row = {
                    "model": name,
                    "plan": label,
                    "devices": n,
                    "mesh": dict(mesh.shape),
                    "error": error(got, ref),
                    "collectives": got["collectives"],
                    "param_bytes": got["param_bytes"],
                    "param_fraction": got["param_bytes"] / ref["param_bytes"],
                    "argument_bytes": got["argument_bytes"],
                    "temp_bytes": got["temp_bytes"],
                    "compile_s": got["compile_s"],
                    "step_s": got["step_s"],
                    "compile_ratio": got["compile_s"] / ref["compile_s"],
                    "step_ratio": got["step_s"] / ref["step_s"],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return {"machine": machine(), "dtype": str(dtype), "rows": rows}


def markdown(result) -> str:
    m = result["machine"]
    lines = [
        f"{m['backend']} ({m['devices']} devices; {m['cpu']}, {m['cores_usable']} cores), jax {m['jax']}, "
        f"{result['dtype']}",
        "",
        "| model | plan | devices | mesh | max rel. error vs 1 device | collectives in the HLO | "
        "param bytes / device (vs 1) | step time ratio | compile time ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        coll = ", ".join(f"{k} {v}" for k, v in r["collectives"].items()) or "none"
        mesh = " x ".join(f"{k} {v}" for k, v in r["mesh"].items())
        lines.append(
            f"| {r['model']} | {r['plan']} | {r['devices']} | {mesh} | {r['error']:.1e} | {coll} | "
            f"{r['param_bytes']} ({r['param_fraction']:.3f}) | {r['step_ratio']:.2f} | {r['compile_ratio']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="llama only, at 1 and 8 devices, 3 repeats")
    parser.add_argument("--x64", action="store_true", help="float64 models (equality to rounding)")
    parser.add_argument("--models", default="llama,bert,cnn,lstm")
    parser.add_argument("--counts", default="1,2,4,8")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", help="write scaleout_imported.json and .md to this folder")
    args = parser.parse_args(argv)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    args.models = ["llama"] if args.quick else args.models.split(",")
    args.counts = [1, 8] if args.quick else [int(c) for c in args.counts.split(",")]
    args.repeats = 3 if args.quick else args.repeats
    result = run(args)
    table = markdown(result)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "scaleout_imported.json").write_text(json.dumps(result, indent=1))
        (out / "scaleout_imported.md").write_text(table)
    return result


if __name__ == "__main__":
    main()
