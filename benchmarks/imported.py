"""Imported torch models: the jitted train step against torchax, JAX's own rules and torch eager.

    python benchmarks/imported.py [--quick] [--out FILE.md] [--models mlp,cnn,lstm,gpt2,bert,llama,vit,resnet]
    python benchmarks/imported.py --hlo gpt2      # XLA's view of each side's step: op counts, cost, memory

Per model, in one run, the median step time of
  - jaxderiv: `jaxderiv.torch.from_module`, jax.jit(value_and_grad + optax.adam update);
  - torchax (the peer, optional): the same torch.export program run by torchax's own
    `torchax.export.exported_program_to_jax`, differentiated by JAX (torchax's design), in the
    same jitted value_and_grad + optax.adam step;
  - JAX's own rules: the same imported graph with every ATen node running jaxderiv's forward
    implementation directly, differentiated by jax.grad (a reference; the library never does this);
  - torch eager: forward, loss.backward(), torch.optim.Adam.step(), same thread count;
and, of each jitted step, the compile time (trace + lower + XLA compile, each the median of
fresh steps built in turns) and XLA's temp memory
(`compiled.memory_analysis().temp_size_in_bytes`). Float32, CPU, JAX's default 32-bit mode. The
jitted steps are timed alternately in one process, the order rotating each round; the ratio
columns are medians of the per-round ratios, with their interquartile range. Also the LSTM's
compile and step time against sequence length, its time steps run as one scan and unrolled
(torch.export unrolls the recurrence into one cell per step).

torchax is a benchmark-only dependency, not in pyproject.toml: its 0.0.13 wheel pins a torch
older than 2.13, so it installs only without its dependencies:

    pip install --no-deps torchax==0.0.13

Without it the torchax column is left out with a note. torchax 0.0.13 names ATen overloads that
torch 2.13 no longer has (the named-tensor variants), and its modules fail on import. This script
(never the library) imports it with those names resolved to placeholders, which are then dropped
(`load_torchax`; the run prints the list): from `torchax/amp.py`'s autocast policy,
`aten.prod.dim_Dimname` and `aten.index_copy.dimname`; from the op list that
`torchax/decompositions.py` hands to `torch._decomp.get_decompositions` (which skips anything
that is not an operator), `aten.all.dimname`, `aten.all.dimname_out`, `aten.index_add.dimname`,
`aten.index_copy.dimname`, `aten.index_copy_.dimname`, `aten.index_fill.Dimname_Scalar`,
`aten.index_fill.Dimname_Tensor`, `aten.index_fill_.Dimname_Scalar`,
`aten.index_fill_.Dimname_Tensor`, `aten.norm.names_ScalarOpt_dim`,
`aten.norm.names_ScalarOpt_dim_dtype`, `aten.norm.names_dtype_out`, `aten.norm.names_out`,
`aten.std.names_dim`, `aten.std.names_out`, `aten.std.correction_names`,
`aten.std.correction_names_out`, `aten.std_mean.names_dim`, `aten.std_mean.correction_names` and
`aten.unbind.Dimname`. torch.export never emits named-tensor overloads, so no benchmarked graph
needs them. `--no-torchax` leaves the column out on purpose.

Also for torchax, and for every side alike: the transformers models use eager attention
(`ATTENTION`: torch 2.13's run_decompositions, which torchax runs first, fails on GPT-2's SDPA
graph). And `TorchaxModel` calls torchax's function with its states in the order its decomposed
graph takes them (BERT fails otherwise) and with tied parameters as one array (GPT-2's LM head;
torchax would train two); docs/benchmarks.md has the details.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import re
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


# Attention as written in each model's Python (matmul, softmax, matmul), not torch's fused
# scaled_dot_product_attention: torch 2.13's `ExportedProgram.run_decompositions()`, which torchax
# runs first, fails on GPT-2's SDPA graph ("Cannot view a tensor with shape [8, 32, 64] and strides
# (64, 512, 1) as a tensor with shape (256, 64)"). Every side runs the same module.
ATTENTION = "eager"


def _transformers(name):
    import transformers

    ids = torch.randint(0, 512, (8, 32))
    if name == "gpt2":
        cfg = transformers.GPT2Config(
            attn_implementation=ATTENTION,
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
        return transformers.GPT2LMHeadModel(cfg), (ids,)
    if name == "bert":
        cfg = transformers.BertConfig(
            attn_implementation=ATTENTION,
            num_hidden_layers=2,
            num_attention_heads=4,
            hidden_size=64,
            intermediate_size=256,
            vocab_size=512,
            max_position_embeddings=64,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
        return transformers.BertForSequenceClassification(cfg), (ids,)
    if name == "llama":
        cfg = transformers.LlamaConfig(
            attn_implementation=ATTENTION,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            hidden_size=64,
            intermediate_size=128,
            vocab_size=512,
            max_position_embeddings=64,
            use_cache=False,
        )
        return transformers.LlamaForCausalLM(cfg), (ids,)
    images = torch.randn(8, 3, 32, 32)
    if name == "vit":
        cfg = transformers.ViTConfig(
            attn_implementation=ATTENTION,
            image_size=32,
            patch_size=8,
            num_hidden_layers=2,
            num_attention_heads=4,
            hidden_size=64,
            intermediate_size=128,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_labels=10,
        )
        return transformers.ViTForImageClassification(cfg), (images,)
    cfg = transformers.ResNetConfig(
        embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic", num_labels=10
    )
    return transformers.ResNetForImageClassification(cfg), (images,)


MODELS = {
    "mlp": _mlp,
    "cnn": _cnn,
    "lstm": _lstm,
    "gpt2": lambda: _transformers("gpt2"),
    "bert": lambda: _transformers("bert"),
    "llama": lambda: _transformers("llama"),
    "vit": lambda: _transformers("vit"),
    "resnet": lambda: _transformers("resnet"),
}


def _first(o):
    while isinstance(o, (dict, tuple, list)):
        o = next(iter(o.values())) if isinstance(o, dict) else o[0]
    return o


# -- torchax, the peer -------------------------------------------------------------------------------------------


class _Dropped:
    """Stands for an ATen overload torch no longer has, while torchax's modules are imported."""

    def __init__(self, name: str, where: str):
        self.name, self.where = name, where

    def __repr__(self):
        return f"{self.name} ({self.where})"


_TORCHAX: tuple = ()


def load_torchax():
    """(torchax.export, [what was dropped from its tables]), or (None, why not).

    torchax 0.0.13 builds its tables (amp's autocast policy, its decomposition list) from
    `torch.ops.aten.<op>.<overload>` names, some of which torch 2.13 removed (named-tensor
    overloads); the lookup raises AttributeError and the import fails. While its modules are
    imported, a missing overload resolves to a `_Dropped` placeholder; then the placeholders are
    removed from every table that holds them (`get_decompositions` already skips non-operators)."""
    global _TORCHAX
    if _TORCHAX:
        return _TORCHAX
    packet = torch._ops.OpOverloadPacket
    original = packet.__getattr__
    dropped: list[_Dropped] = []

    def getattr_or_placeholder(self, key):
        try:
            return original(self, key)
        except AttributeError:
            caller = sys._getframe(1).f_code.co_filename
            if key.startswith("__") or "torchax" not in caller:
                raise
            d = _Dropped(f"{self._qualified_op_name.replace('::', '.')}.{key}", caller.split("site-packages/")[-1])
            dropped.append(d)
            return d

    packet.__getattr__ = getattr_or_placeholder
    try:
        import torchax  # noqa: F401
        import torchax.amp
        import torchax.decompositions
        import torchax.export
        from torchax.ops import ops_registry

        env = torchax.default_env()  # imports and registers its ATen lowerings (torchax.ops.jaten, ...)
    except ImportError as e:
        _TORCHAX = (None, f"torchax is not importable ({e}); `pip install --no-deps torchax==0.0.13`")
        return _TORCHAX
    finally:
        packet.__getattr__ = original
    tables = [
        torchax.amp.autocast_policy,
        ops_registry.all_aten_ops,
        ops_registry.all_torch_functions,
        torchax.decompositions.DECOMPOSITIONS,
        env._ops,
    ]
    for table in tables:
        for k in [k for k in table if isinstance(k, _Dropped)]:
            del table[k]
    torchax.decompositions.MUTABLE_DECOMPOSITION[:] = [
        k for k in torchax.decompositions.MUTABLE_DECOMPOSITION if not isinstance(k, _Dropped)
    ]
    _TORCHAX = (torchax.export, dropped)
    return _TORCHAX


class TorchaxModel:
    """A torch module exported with torch.export and run by torchax's `exported_program_to_jax`:
    `params`, `buffers` and a pure `apply(params, buffers, *xs) -> (outputs, buffers)`, as an
    ImportedModel has, so that both go through the same jitted step.

    Three things torchax's function leaves to its caller, done here as torch does them. Tied
    parameters (GPT-2's `lm_head.weight` is `transformer.wte.weight`) are listed by torch.export
    under both names, and torchax takes them as two states; here they are one array, passed
    under both names, so that their gradients add up and one Adam update trains them (with
    `tie=False`, torchax's own way: two arrays, updated apart, untied after the first step).
    The order of the states (below). And torchax's function returns the user outputs only, not
    the mutated buffers (BatchNorm's running statistics), so the buffers come back unchanged."""

    def __init__(self, module, inputs, tie=True):
        tx_export, _ = load_torchax()
        ep = torch.export.export(module, tuple(inputs))
        names, states, self._func = tx_export.exported_program_to_jax(ep, export_raw=True)
        # torchax lists the states as parameters, buffers, lifted constants, and calls its decomposed
        # graph with them in that order; after torch 2.13's run_decompositions that graph takes the
        # constants before the buffers (BERT's `lifted_tensor_0`), so the states go in the order of
        # the graph's own input specs (the program torchax runs, from its function's closure).
        program = dict(zip(self._func.__code__.co_freevars, (c.cell_contents for c in self._func.__closure__)))
        sig = program["exported_program"].graph_signature
        names = [*names, *sig.lifted_tensor_constants]
        self._order = [spec.target for spec in sig.input_specs if spec.kind != spec.kind.USER_INPUT]
        trainable = set(sig.parameters)
        self.params, self.buffers, self._alias, first = {}, {}, {}, {}
        for n, t in zip(names, states):
            a = jnp.asarray(t.detach().numpy())
            if n in trainable:
                key = (t.data_ptr(), t.shape, t.stride()) if tie else n
                self._alias[n] = first.setdefault(key, n)
                self.params.setdefault(self._alias[n], a)
            else:
                self.buffers[n] = a
        self.tied = {n: m for n, m in self._alias.items() if n != m}

    def apply(self, params, buffers, *xs):
        states = [params[self._alias[n]] if n in self._alias else buffers[n] for n in self._order]
        return self._func(states, xs), buffers


# -- the jitted steps --------------------------------------------------------------------------------------------


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
    """A model's jitted train step, compiled on construction (timed, with XLA's memory analysis),
    then stepped and timed."""

    def __init__(self, model, xs):
        step, self.state = jax_step(model)
        self.params, self.buffers, self.xs = model.params, model.buffers, xs
        t0 = time.perf_counter()
        self.compiled = step.lower(self.params, self.buffers, self.state, *xs).compile()
        self.compile_s = time.perf_counter() - t0
        self.temp_bytes = self.compiled.memory_analysis().temp_size_in_bytes
        self.first_loss = self.last_loss = None
        self()
        self.times: list[float] = []

    def __call__(self) -> float:
        t0 = time.perf_counter()
        self.params, self.buffers, self.state, v = self.compiled(self.params, self.buffers, self.state, *self.xs)
        jax.block_until_ready((self.params, v))
        elapsed = time.perf_counter() - t0
        self.last_loss = v
        if self.first_loss is None:
            self.first_loss = float(v)
        return elapsed


def time_jax(model, xs, repeats):
    """(median step time, compile time) of one model's step, timed by itself."""
    stepper = _Stepper(model, xs)
    return statistics.median(stepper() for _ in range(repeats)), stepper.compile_s


def time_alternating(steppers, repeats):
    """Steps timed in turns, the order rotating each round: a shared machine's slow moments fall
    on all of them (timed in blocks, two runs of one program differed by up to 1.4x)."""
    n = len(steppers)
    for i in range(repeats):
        for s in steppers[i % n :] + steppers[: i % n]:
            s.times.append(s())


# Compile times are medians over fresh steps built in turns: a side compiled first in the process
# pays JAX's own first-use costs (optax's update, jax.numpy's traced helpers), which once
# measured jaxderiv's Llama step at 1.9 s and the same step rebuilt at 1.4 s.
COMPILE_ROUNDS = 5


def compile_times(models: dict, xs, rounds: int) -> dict:
    """Per side, the medians of (trace, lower, XLA compile) seconds of a fresh jitted step (a new
    function, so nothing is reused from a cache), the sides taken in turns, the order rotating."""
    keys, times = list(models), {k: [] for k in models}
    for i in range(rounds):
        for k in keys[i % len(keys) :] + keys[: i % len(keys)]:
            m = models[k]
            step, state = jax_step(m)
            t0 = time.perf_counter()
            traced = step.trace(m.params, m.buffers, state, *xs)
            t1 = time.perf_counter()
            lowered = traced.lower()
            t2 = time.perf_counter()
            lowered.compile()
            times[k].append((t1 - t0, t2 - t1, time.perf_counter() - t2))
    return {k: tuple(statistics.median(t[j] for t in v) for j in range(3)) for k, v in times.items()}


def ratio_spread(a, b):
    """Median and interquartile range of the per-round ratios a/b of two alternately timed steps."""
    r = sorted(x / y for x, y in zip(a.times, b.times))
    q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
    return q[1], q[0], q[2]


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


def bench(name, repeats, peer=True):
    torch.manual_seed(0)
    module, inputs = MODELS[name]()
    module.train()
    t0 = time.perf_counter()
    model = jt.from_module(module, *inputs)
    import_s = time.perf_counter() - t0
    xs = [jnp.asarray(x.numpy()) for x in inputs]
    sides = {"ours": model, "own_rules": own_rules(model)}
    if peer:
        sides["torchax"] = TorchaxModel(module, inputs)
    steppers = {k: _Stepper(m, xs) for k, m in sides.items()}
    time_alternating(list(steppers.values()), repeats)
    compile_split = compile_times(sides, xs, COMPILE_ROUNDS)
    eager = time_torch(module, inputs, repeats)
    ours = steppers["ours"]
    row = {
        "model": name,
        "nodes": len(model.program.steps),
        "ops": len({s.op for s in model.program.steps}),
        "import_s": import_s,
        "torch_s": eager,
        "vs_torch": statistics.median(ours.times) / eager,
        "vs_own_rules": ratio_spread(ours, steppers["own_rules"]),
    }
    for k, s in steppers.items():
        trace_s, lower_s, xla_s = compile_split[k]
        row |= {f"{k}_s": statistics.median(s.times), f"{k}_temp": s.temp_bytes, f"{k}_first_compile_s": s.compile_s}
        row |= {f"{k}_compile_s": trace_s + lower_s + xla_s, f"{k}_trace_s": trace_s, f"{k}_lower_s": lower_s}
        row |= {f"{k}_xla_s": xla_s}
        row |= {f"{k}_loss": float(s.last_loss)}
    if peer:  # the same start, data and number of steps: the last losses agree if both train the same model
        row["vs_torchax"] = ratio_spread(ours, steppers["torchax"])
        row["loss_difference"] = abs(row["ours_loss"] - row["torchax_loss"]) / abs(row["ours_loss"])
    return row


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


# -- XLA's view of the steps -------------------------------------------------------------------------------------

_OPCODE = re.compile(r"^\s*(?:ROOT )?%\S+ = .*? ([a-z][a-z0-9-]*)\(", re.M)


def hlo_counts(compiled) -> tuple[collections.Counter, collections.Counter]:
    """Opcode counts of an optimized HLO module: (every computation, the entry computation's
    top level, where each fusion counts once with its kind)."""
    text = compiled.as_text()
    everywhere = collections.Counter(_OPCODE.findall(text))
    entry = text[text.index("\nENTRY ") :]
    entry = entry[: entry.index("\n}")]
    top = collections.Counter()
    for line in entry.splitlines()[1:]:
        m = _OPCODE.match(line)
        if m:
            op = m.group(1)
            if op == "fusion":
                kind = re.search(r"kind=(k\w+)", line)
                op = f"fusion:{kind.group(1) if kind else '?'}"
            top[op] += 1
    return everywhere, top


def hlo_report(name, repeats=100):
    """jaxderiv's and torchax's (and JAX's own rules') compiled step side by side: XLA's cost
    analysis, temp memory, opcode counts, and alternate step times."""
    torch.manual_seed(0)
    module, inputs = MODELS[name]()
    module.train()
    model = jt.from_module(module, *inputs)
    xs = [jnp.asarray(x.numpy()) for x in inputs]
    sides = {"jaxderiv": _Stepper(model, xs), "JAX rules": _Stepper(own_rules(model), xs)}
    if load_torchax()[0] is not None:
        sides["torchax"] = _Stepper(TorchaxModel(module, inputs), xs)
        if TorchaxModel(module, inputs).tied:  # and as torchax's own function leaves them: untied
            sides["torchax, untied"] = _Stepper(TorchaxModel(module, inputs, tie=False), xs)
    time_alternating(list(sides.values()), repeats)
    counts = {k: hlo_counts(s.compiled) for k, s in sides.items()}
    costs = {k: s.compiled.cost_analysis() for k, s in sides.items()}
    costs = {k: c[0] if isinstance(c, list) else c for k, c in costs.items()}
    head = "| | " + " | ".join(sides) + " |"
    rule = "|---" * (len(sides) + 1) + "|"
    lines = [f"### {name}: XLA's view of each side's train step", "", head, rule]

    def row(label, f):
        lines.append(f"| {label} | " + " | ".join(f(k) for k in sides) + " |")

    row("step (ms, median)", lambda k: f"{1e3 * statistics.median(sides[k].times):.2f}")
    row("compile (s)", lambda k: f"{sides[k].compile_s:.2f}")
    row("temp (KB)", lambda k: f"{sides[k].temp_bytes / 1e3:.0f}")
    for key in ("flops", "transcendentals", "bytes accessed"):
        row(key, lambda k, key=key: f"{costs[k].get(key, 0):.3g}")
    row("HLO instructions (all computations)", lambda k: str(sum(counts[k][0].values())))
    row("entry instructions", lambda k: str(sum(counts[k][1].values())))
    ops = sorted({o for c in counts.values() for o in c[1]}, key=lambda o: -max(c[1][o] for c in counts.values()))
    for o in ops:
        row(f"entry `{o}`", lambda k, o=o: str(counts[k][1][o]))
    shown = ("dot", "convolution", "gather", "scatter", "concatenate", "convert", "transpose", "reduce", "fusion")
    for o in shown:
        row(f"`{o}` (all computations)", lambda k, o=o: str(counts[k][0][o]))
    if "torchax" in sides:  # the opcodes whose counts differ most between jaxderiv and torchax
        a, b = counts["jaxderiv"][0], counts["torchax"][0]
        diff = sorted(
            (o for o in a.keys() | b.keys() if a[o] != b[o] and o not in shown), key=lambda o: -abs(a[o] - b[o])
        )
        for o in diff[:12]:
            row(f"`{o}` (all computations)", lambda k, o=o: str(counts[k][0][o]))
        row("jaxderiv / this side, per round (IQR)", lambda k: _ratio(ratio_spread(sides["jaxderiv"], sides[k])))
    return "\n".join(lines)


class _OneOp(torch.nn.Module):
    """One op of a model on parameters of the model's shapes, for the per-op comparison."""

    def __init__(self, f, *shapes):
        super().__init__()
        self.f = f
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(*s)) for s in shapes])

    def forward(self, d):
        return self.f(d, *self.ps)


def _gelu_new(x):  # GPT-2's activation, as transformers writes it
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _split_qkv(x):
    q, k, v = x.split(64, dim=2)
    return q * k + v


_F = torch.nn.functional
_NONE = torch.zeros(1)
# The ops of the GPT-2 above, at its shapes (batch 8, 32 tokens, width 64, 4 heads): (op, parameter shapes, input)
GPT2_OPS = {
    "layer_norm": (lambda d, x, w, b: _F.layer_norm(x, (64,), w, b), [(8, 32, 64), (64,), (64,)], _NONE),
    "softmax": (lambda d, x: torch.softmax(x, -1), [(8, 4, 32, 32)], _NONE),
    "split (qkv)": (lambda d, x: _split_qkv(x), [(8, 32, 192)], _NONE),
    "gelu_new": (lambda d, x: _gelu_new(x), [(8, 32, 256)], _NONE),
    "addmm": (lambda d, x, w, b: torch.addmm(b, x, w), [(256, 64), (64, 256), (256,)], _NONE),
    "matmul (q k^T)": (lambda d, q, k: torch.matmul(q, k.transpose(-1, -2)), [(8, 4, 32, 16), (8, 4, 32, 16)], _NONE),
    "embedding": (lambda d, w: _F.embedding(d, w), [(512, 64)], torch.randint(0, 512, (8, 32))),
    "lm_head (linear)": (lambda d, x, w: _F.linear(x, w), [(8, 32, 64), (512, 64)], _NONE),
}


class _Grad:
    """jit(value_and_grad) of mean(square(op)) over the parameters, compiled, then timed."""

    def __init__(self, model, d):
        def loss(p, b):
            return jnp.mean(jnp.square(_first(model.apply(p, b, d)[0])))

        self.args = (model.params, model.buffers)
        self.compiled = jax.jit(jax.value_and_grad(loss)).lower(*self.args).compile()
        cost = self.compiled.cost_analysis()
        self.cost = cost[0] if isinstance(cost, list) else cost
        self.counts = hlo_counts(self.compiled)
        self.temp_bytes = self.compiled.memory_analysis().temp_size_in_bytes
        self()
        self.times: list[float] = []

    def __call__(self):
        t0 = time.perf_counter()
        jax.block_until_ready(self.compiled(*self.args))
        return time.perf_counter() - t0


def op_report(repeats=200):
    """GPT-2's ops one by one, jaxderiv against torchax: XLA's cost analysis, HLO size, temp
    memory and alternate times of each op's jitted value_and_grad."""
    lines = [
        "| op (GPT-2's shapes) | flops jaxderiv / torchax | bytes accessed | HLO instructions | entry fusions | "
        "temp KB | time jaxderiv / torchax (IQR) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (f, shapes, d) in GPT2_OPS.items():
        torch.manual_seed(0)
        module = _OneOp(f, *shapes)
        dj = jnp.asarray(d.numpy())
        a, b = _Grad(jt.from_module(module, d), dj), _Grad(TorchaxModel(module, (d,)), dj)
        time_alternating([a, b], repeats)
        fusions = [sum(v for k, v in g.counts[1].items() if k.startswith("fusion")) for g in (a, b)]
        lines.append(
            f"| {name} | {a.cost.get('flops', 0):.3g} / {b.cost.get('flops', 0):.3g} | "
            f"{a.cost.get('bytes accessed', 0):.3g} / {b.cost.get('bytes accessed', 0):.3g} | "
            f"{sum(a.counts[0].values())} / {sum(b.counts[0].values())} | {fusions[0]} / {fusions[1]} | "
            f"{a.temp_bytes / 1e3:.0f} / {b.temp_bytes / 1e3:.0f} | {_ratio(ratio_spread(a, b))} |"
        )
    return "\n".join(lines)


def _ratio(r) -> str:
    return f"{r[0]:.2f} ({r[1]:.2f}-{r[2]:.2f})"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--no-torchax", action="store_true", help="leave the torchax column out")
    p.add_argument("--hlo", metavar="MODELS", help="only XLA's view of these models' steps (e.g. gpt2)")
    p.add_argument("--out")
    a = p.parse_args(argv)
    tx, dropped = (None, "left out (--no-torchax)") if a.no_torchax else load_torchax()
    if a.hlo:
        text = "\n\n".join(hlo_report(n) for n in a.hlo.split(","))
        if "gpt2" in a.hlo.split(",") and tx is not None:
            text += "\n\n### GPT-2's ops one by one\n\n" + op_report()
        print(text)
        if a.out:
            Path(a.out).write_text(text + "\n")
        return text
    repeats = 20 if a.quick else 200
    rows = [bench(n, repeats, peer=tx is not None) for n in a.models.split(",")]
    lstm = lstm_compile([4, 8] if a.quick else [4, 8, 16, 32, 64], repeats=10 if a.quick else 30)
    note = (
        f"torchax {sys.modules['torchax'].__version__ if 'torchax' in sys.modules else ''}: dropped from its "
        f"tables (ATen overloads torch {torch.__version__} lacks): {', '.join(map(repr, dropped))}"
        if tx is not None
        else f"torchax: {dropped}; its columns are left out"
    )
    lines = [f"torch threads: {torch.get_num_threads()}; JAX devices: {jax.devices()}", "", note, ""]
    if tx is not None:
        lines += [
            "| model | jaxderiv step (ms) | torchax step (ms) | JAX's own rules (ms) | torch eager (ms) | "
            "jaxderiv / torchax (IQR) | jaxderiv / JAX's own rules (IQR) | compile s: jaxderiv, torchax, own rules | "
            "temp MB: jaxderiv, torchax, own rules | last loss rel. difference |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['model']} | {1e3 * r['ours_s']:.2f} | {1e3 * r['torchax_s']:.2f} | "
                f"{1e3 * r['own_rules_s']:.2f} | "
                f"{1e3 * r['torch_s']:.2f} | {_ratio(r['vs_torchax'])} | {_ratio(r['vs_own_rules'])} | "
                f"{r['ours_compile_s']:.1f}, {r['torchax_compile_s']:.1f}, {r['own_rules_compile_s']:.1f} | "
                f"{r['ours_temp'] / 1e6:.2f}, {r['torchax_temp'] / 1e6:.2f}, {r['own_rules_temp'] / 1e6:.2f} | "
                f"{r['loss_difference']:.1e} |"
            )
    else:
        lines += [
            "| model | nodes | distinct ops | jaxderiv step (ms) | JAX's own rules (ms) | torch eager (ms) | "
            "vs torch eager | vs JAX's own rules (IQR) | compile (s) | own rules' compile (s) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['model']} | {r['nodes']} | {r['ops']} | {1e3 * r['ours_s']:.2f} | "
                f"{1e3 * r['own_rules_s']:.2f} | "
                f"{1e3 * r['torch_s']:.2f} | {r['vs_torch']:.2f} | {_ratio(r['vs_own_rules'])} | "
                f"{r['ours_compile_s']:.1f} | {r['own_rules_compile_s']:.1f} |"
            )
    sides = ["ours", "torchax", "own_rules"] if tx is not None else ["ours", "own_rules"]
    label = {"ours": "jaxderiv", "torchax": "torchax", "own_rules": "own rules"}
    lines += [
        "",
        f"Compile time, trace + lower + XLA compile in seconds (medians of {COMPILE_ROUNDS} fresh steps built in turns):",
        "",
        "| model | " + " | ".join(label[k] for k in sides) + " | jaxderiv / " + label[sides[1]] + " |",
        "|---|" + "---|" * (len(sides) + 1),
    ]
    for r in rows:
        cells = [
            f"{r[k + '_trace_s']:.2f} + {r[k + '_lower_s']:.2f} + {r[k + '_xla_s']:.2f} = {r[k + '_compile_s']:.2f}"
            for k in sides
        ]
        lines.append(
            f"| {r['model']} | " + " | ".join(cells) + f" | {r['ours_compile_s'] / r[sides[1] + '_compile_s']:.2f} |"
        )
    lines += [
        "",
        "| LSTM sequence length | graph nodes | compile, as a scan (s) | compile, unrolled (s) | "
        "step, as a scan (ms) | step, unrolled (ms) |",
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
