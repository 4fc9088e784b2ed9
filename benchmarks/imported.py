"""Imported torch models: the jitted train step against torch eager and against JAX's own rules.

    python benchmarks/imported.py [--quick] [--out FILE.md] [--models mlp,cnn,lstm,gpt2,bert]

Per model, in one run, the median step time of
  - jaxderiv: `jaxderiv.torch.from_module`, jax.jit(value_and_grad + optax.adam update);
  - torch eager: forward, loss.backward(), torch.optim.Adam.step(), same thread count;
  - JAX's own rules: the same imported graph with every ATen node running jaxderiv's forward
    implementation directly, differentiated by jax.grad (a reference; the library never does this);
and the compile time of the jitted step (first call). Float32, CPU. jaxderiv's step and JAX's
own rules' are timed alternately. Also the LSTM's compile and step time against sequence length,
its time steps run as one scan and unrolled (torch.export unrolls the recurrence into one cell
per step).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import jaxderiv.torch as jt  # noqa: E402

LR = 1e-3


def _mlp():
    m = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    )
    return m, (torch.randn(128, 64),)


def _cnn():
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    )
    return m, (torch.randn(32, 3, 32, 32),)


class _LSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(16, 64, batch_first=True)
        self.head = torch.nn.Linear(64, 4)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def _lstm(steps=12):
    return _LSTM(), (torch.randn(16, steps, 16),)


def _transformers(name):
    import transformers

    if name == "gpt2":
        cfg = transformers.GPT2Config(
            n_layer=2,
            n_head=4,
            n_embd=64,
            vocab_size=512,
            n_positions=64,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            use_cache=False,
        )
        m = transformers.GPT2LMHeadModel(cfg)
    else:
        cfg = transformers.BertConfig(
            num_hidden_layers=2,
            num_attention_heads=4,
            hidden_size=64,
            intermediate_size=256,
            vocab_size=512,
            max_position_embeddings=64,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
        m = transformers.BertForSequenceClassification(cfg)
    return m, (torch.randint(0, 512, (8, 32)),)


MODELS = {
    "mlp": _mlp,
    "cnn": _cnn,
    "lstm": _lstm,
    "gpt2": lambda: _transformers("gpt2"),
    "bert": lambda: _transformers("bert"),
}


def _first(o):
    while isinstance(o, (dict, tuple, list)):
        o = next(iter(o.values())) if isinstance(o, dict) else o[0]
    return o


def own_rules(model: jt.ImportedModel) -> jt.ImportedModel:
    """The same graph with each entry node running its forward implementation unwrapped, so
    that jax.grad differentiates the forward with JAX's rules (the benchmark's reference)."""
    steps = []
    for s in model.program.steps:
        op = s.fn
        if s.kind == "entry":

            def raw(*args, _op=op, **kwargs):
                return _op.impl(*_op.bind(args, kwargs).values())

            s = dataclasses.replace(s, fn=raw)
        steps.append(s)
    return dataclasses.replace(model, program=dataclasses.replace(model.program, steps=tuple(steps)))


def jax_step(model):
    opt = optax.adam(LR)

    def loss(params, buffers, *xs):
        out, buffers = model.apply(params, buffers, *xs)
        return jnp.mean(jnp.square(_first(out).astype(jnp.float32))), buffers

    @jax.jit
    def step(params, buffers, state, *xs):
        (value, buffers), grads = jax.value_and_grad(loss, has_aux=True)(params, buffers, *xs)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), buffers, state, value

    return step, opt.init(model.params)


class _Stepper:
    """A model's jitted train step, compiled on construction, then stepped and timed."""

    def __init__(self, model, xs):
        self.step, self.state = jax_step(model)
        self.params, self.buffers, self.xs = model.params, model.buffers, xs
        self.compile_s = self()
        self.times: list[float] = []

    def __call__(self) -> float:
        t0 = time.perf_counter()
        self.params, self.buffers, self.state, v = self.step(self.params, self.buffers, self.state, *self.xs)
        jax.block_until_ready((self.params, v))
        return time.perf_counter() - t0


def time_jax(model, xs, repeats):
    """(median step time, compile time) of one model's step, timed by itself."""
    stepper = _Stepper(model, xs)
    return statistics.median(stepper() for _ in range(repeats)), stepper.compile_s


def time_jax_pair(a, b, xs, repeats):
    """Two models' steps timed alternately, each first in turn: a shared machine's slow
    moments fall on both (timed in blocks, two runs of one program differed by up to 1.4x).
    Returns ((median, compile) of a, (median, compile) of b)."""
    pair = (_Stepper(a, xs), _Stepper(b, xs))
    for i in range(repeats):
        for s in pair if i % 2 else pair[::-1]:
            s.times.append(s())
    return tuple((statistics.median(s.times), s.compile_s) for s in pair)


def time_torch(module, inputs, repeats):
    opt = torch.optim.Adam(module.parameters(), lr=LR)

    def step():
        loss = torch.mean(torch.square(_first(module(*inputs)).float()))
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(name, repeats):
    torch.manual_seed(0)
    module, inputs = MODELS[name]()
    module.train()
    t0 = time.perf_counter()
    model = jt.from_module(module, *inputs)
    import_s = time.perf_counter() - t0
    xs = [jnp.asarray(x.numpy()) for x in inputs]
    (ours, compile_s), (native, native_compile_s) = time_jax_pair(model, own_rules(model), xs, repeats)
    eager = time_torch(module, inputs, repeats)
    return {
        "model": name,
        "nodes": len(model.program.steps),
        "ops": len({s.op for s in model.program.steps}),
        "import_s": import_s,
        "ours_s": ours,
        "own_rules_s": native,
        "torch_s": eager,
        "vs_torch": ours / eager,
        "vs_own_rules": ours / native,
        "compile_s": compile_s,
        "own_rules_compile_s": native_compile_s,
    }


def lstm_compile(lengths, repeats=10):
    """Compile time and step time of the LSTM train step by sequence length, with the unrolled
    time steps run as one scan (the default) and unrolled (`roll_loops=False`)."""
    rows = []
    for n in lengths:
        torch.manual_seed(0)
        module, inputs = _lstm(n)
        xs = [jnp.asarray(x.numpy()) for x in inputs]
        row = {"steps": n}
        for roll in (True, False):
            model = jt.from_module(module, *inputs, roll_loops=roll)
            step_s, compile_s = time_jax(model, xs, repeats)
            tag = "rolled" if roll else "unrolled"
            row |= {"nodes": len(model.program.steps), f"{tag}_compile_s": compile_s, f"{tag}_step_s": step_s}
        rows.append(row)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out")
    a = p.parse_args(argv)
    repeats = 10 if a.quick else 200
    rows = [bench(n, repeats) for n in a.models.split(",")]
    lstm = lstm_compile([4, 8] if a.quick else [4, 8, 16, 32, 64], repeats=10 if a.quick else 30)
    lines = [
        f"torch threads: {torch.get_num_threads()}; JAX devices: {jax.devices()}",
        "",
        "| model | nodes | distinct ops | jaxderiv step (ms) | JAX's own rules (ms) | torch eager (ms) | vs torch eager | vs JAX's own rules | compile (s) | own rules' compile (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['nodes']} | {r['ops']} | {1e3 * r['ours_s']:.2f} | {1e3 * r['own_rules_s']:.2f} | {1e3 * r['torch_s']:.2f} | "
            f"{r['vs_torch']:.2f} | {r['vs_own_rules']:.2f} | {r['compile_s']:.1f} | {r['own_rules_compile_s']:.1f} |"
        )
    lines += [
        "",
        "| LSTM sequence length | graph nodes | compile, as a scan (s) | compile, unrolled (s) | step, as a scan (ms) | step, unrolled (ms) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['steps']} | {r['nodes']} | {r['rolled_compile_s']:.1f} | {r['unrolled_compile_s']:.1f} | "
        f"{1e3 * r['rolled_step_s']:.2f} | {1e3 * r['unrolled_step_s']:.2f} |"
        for r in lstm
    ]
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return rows, lstm


if __name__ == "__main__":
    main()
