"""`compare(module, *inputs)`: torch and the import side by side, node by node.

Each node's value is compared, and so is its gradient: the cotangent that reaches the node
when a seeded cotangent is pulled back from the outputs, read on both sides as the gradient
of a zero added to the node's output. The first node where either diverges is where a port
starts to disagree.

Random nodes (dropout, stochastic depth, samplers) draw from `key` on the JAX side, and torch's
node is handed the same draws: dropout's node multiplies by JAX's mask as ATen's kernel does
(its gradient is then torch's own product), a sampler's node returns JAX's values. Both sides
then compute the same function, so the comparison says whether the rules agree, not the dice."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import torch

from ..forward.nondifferentiable import UNINITIALIZED
from ..registry import Registry
from ._model import ImportedModel, from_module
from ._program import differentiable_nodes
from .resolve import NodeKind, runs_as, torch_registry
from ._values import jax_dtype, to_numpy
from ..forward import variants

__all__ = ["Comparison", "NodeDifference", "compare"]


@dataclasses.dataclass(frozen=True)
class NodeDifference:
    """One node: its op, the user's line, and the relative errors of value and gradient."""

    node: str
    op: str
    source: str
    value_error: float  # max |jax - torch| / max(|torch|, tiny)
    grad_error: float | None  # None where the node carries no gradient on either side

    def __str__(self) -> str:
        grad = "-" if self.grad_error is None else f"{self.grad_error:.2e}"
        return f"{self.node:<32} {self.op:<40} value {self.value_error:.2e}  grad {grad}  {self.source}"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Every compared node in graph order; `first_value_divergence` / `first_grad_divergence`."""

    nodes: tuple[NodeDifference, ...]
    rtol: float

    @property
    def first_value_divergence(self) -> NodeDifference | None:
        """The first node, in graph order, whose value differs from torch's beyond rtol."""
        return next((n for n in self.nodes if n.value_error > self.rtol), None)

    @property
    def first_grad_divergence(self) -> NodeDifference | None:
        """The divergent gradient nearest the outputs: backward runs in reverse graph order."""
        return next((n for n in reversed(self.nodes) if n.grad_error is not None and n.grad_error > self.rtol), None)

    @property
    def ok(self) -> bool:
        """Every value and every gradient within rtol of torch's."""
        return self.first_value_divergence is None and self.first_grad_divergence is None

    def __str__(self) -> str:
        lines = [f"{len(self.nodes)} nodes compared (rtol {self.rtol:g})"]
        v, g = self.first_value_divergence, self.first_grad_divergence
        lines.append("values: all agree" if v is None else f"values first diverge at\n  {v}")
        lines.append("gradients: all agree" if g is None else f"gradients first diverge at\n  {g}")
        return "\n".join(lines)


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64), np.asarray(b)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0, np.abs(a - b))
    return float(np.max(diff) / max(float(np.max(np.abs(np.where(np.isnan(b), 0, b)))), 1e-30))


def _is_entry(op: str, registry: Registry) -> bool:
    target = runs_as(op.removeprefix("aten::"), registry)[1]
    return target is not None and target in registry.spec


def _to_torch(value):
    return jax.tree.map(lambda v: torch.from_numpy(np.array(v)) if hasattr(v, "shape") else v, value)


def _with_draws(node: torch.fx.Node, drawn, args, kwargs):
    """torch's value of a random node computed from JAX's draws `drawn`: dropout as ATen's
    kernel computes it from its mask (input * mask * scale, so torch differentiates it), a
    randomized leaky ReLU from its slopes, any other sampler as the drawn values."""
    name = node.target.name() if isinstance(node.target, torch._ops.OpOverload) else ""
    drawn = _to_torch(drawn)
    if name == "aten::native_dropout":
        input, p = args[0], args[1]
        mask = drawn[1]
        scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
        return input * mask.to(input.dtype) * scale, mask
    if name == "aten::rrelu_with_noise_functional":
        input, noise = args[0], drawn[1]
        return input * noise.to(input.dtype), noise
    return drawn


def compare(
    module: torch.nn.Module,
    /,
    *inputs,
    rtol: float = 1e-6,
    seed: int = 0,
    model: ImportedModel | None = None,
    registry: Registry | None = None,
    key: jax.Array | None = None,
    **kwinputs,
) -> Comparison:
    """Run `module` in torch and its import in JAX on `inputs` (torch tensors, also as keywords);
    compare every node's value and gradient. Buffers are read, not updated, on either side.
    A graph with random nodes (dropout in training mode) draws them from `key` (default
    `jax.random.key(seed)`), and torch's nodes use the same draws (see the module docstring).

    >>> jt.compare(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5)).train(), x).ok
    True
    """
    model = model or from_module(module, *inputs, registry=registry, **kwinputs)
    program, ep = model.program, model.exported
    values = model._placeholder_values(
        model.params,
        model.buffers,
        [jnp.asarray(to_numpy(x)) for x in inputs],
        {k: jnp.asarray(to_numpy(v)) for k, v in kwinputs.items()},
    )
    random_steps = {s.name for s in program.steps if s.kind is NodeKind.RANDOM}
    # random nodes that run a derivatives.yaml entry (dropout, `normal`): their gradient is compared
    registry = registry or torch_registry()
    random_entries = {
        s.name
        for s in program.steps
        if s.kind is NodeKind.RANDOM and (s.op.removeprefix("aten::") in variants() or _is_entry(s.op, registry))
    }
    if random_steps and key is None:
        key = jax.random.key(seed)
    draws = {}
    if random_steps:
        env = program.run(values, key=key, on_step=lambda s, y: y)
        draws = {name: env[name] for name in random_steps}

    # torch: the same decomposed graph, each node's output plus a zero that requires grad;
    # not where ATen gives the value no gradient (constructors, samplers), as eager torch.
    torch_vals, probes = {}, {}
    # nor where the value does not depend on a parameter or a floating input (an attention mask
    # built from ids): eager torch computes no gradient there, and its fused kernels refuse one.
    live = differentiable_nodes(ep)
    unprobed = {
        s.name
        for s in program.steps
        if (s.kind in (NodeKind.CONSTANT, NodeKind.RANDOM) and s.name not in random_entries) or s.name not in live
    }

    class Probed(torch.fx.Interpreter):
        def run_node(self, n):
            if n.name in draws:
                out = _with_draws(n, draws[n.name], *self.fetch_args_kwargs_from_env(n))
            else:
                out = super().run_node(n)
            if (
                n.op == "call_function"
                and isinstance(out, torch.Tensor)
                and (out.is_floating_point() or out.is_complex())
            ):
                if n.name not in unprobed:
                    p = torch.zeros_like(out, requires_grad=True)
                    probes[n.name] = p
                    out = out + p
                torch_vals[n.name] = out.detach().clone()
            return out

    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    args = [
        torch.from_numpy(np.array(values[name])) if hasattr(values[name], "shape") else values[name]
        for name in placeholders
    ]
    outs = Probed(ep.graph_module).run(*args)
    user = [o for o, (_, role, _) in zip(outs, program.outputs) if role == "user"]
    rng = np.random.default_rng(seed)
    cts = [rng.standard_normal(tuple(o.shape)) for o in user]
    loss = sum((o * torch.from_numpy(c).to(o.dtype)).sum() for o, c in zip(user, cts) if o.is_floating_point())
    names = [k for k in probes if probes[k].requires_grad]
    grads_t = torch.autograd.grad(loss, [probes[k] for k in names], allow_unused=True)
    torch_grads = {k: g for k, g in zip(names, grads_t)}

    # JAX: the program with a zero added at the same nodes; gradients w.r.t. those zeros.
    zeros = {k: jnp.zeros(tuple(v.shape), jax_dtype(v.dtype)) for k, v in torch_vals.items() if k in probes}

    def run(z):
        env = program.run(values, key=key, on_step=lambda s, y: y + z[s.name] if s.name in z else y)
        ys = [env[r.name] for r, role, _ in program.outputs if role == "user"]
        total = sum(
            jnp.sum(y * jnp.asarray(c, y.dtype)) for y, c in zip(ys, cts) if jnp.issubdtype(y.dtype, jnp.inexact)
        )
        return total, {k: env[k] for k in torch_vals if k in env}

    jax_grads, jax_vals = jax.grad(run, has_aux=True)(zeros)
    rows = []
    for step in program.steps:
        if step.name not in jax_vals or step.name not in torch_vals or step.op.removeprefix("aten::") in UNINITIALIZED:
            continue
        tg = torch_grads.get(step.name) if step.name in jax_grads else None
        grad_err = None if tg is None else _rel(jax_grads[step.name], to_numpy(tg))
        rows.append(
            NodeDifference(
                step.name, step.op, step.source, _rel(jax_vals[step.name], to_numpy(torch_vals[step.name])), grad_err
            )
        )
    return Comparison(tuple(rows), rtol)
