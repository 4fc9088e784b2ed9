"""An ExportedProgram as a list of steps over JAX values, every ATen node resolved up front.

Decomposition mirrors torch's eager autograd: an op with a derivatives.yaml entry keeps its
node (its formulas are the gradient torch computes), a CompositeImplicitAutograd op (`linear`,
`layer_norm`, `scaled_dot_product_attention`) is decomposed as autograd sees it, and other ops
without a jaxderiv implementation are lowered with torch's own decompositions.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import os
import re
from typing import Any, Callable

import jax
import torch
from torch.export.graph_signature import InputKind, OutputKind

from ..errors import JaxderivError
from ..registry import Registry
from ._composites import eager_composite
from ._loops import NOT_A_SCAN, Loop, run_loop
from .resolve import NodeKind, aten_name, resolve, runs_as
from ._steps import Ref, Step, is_leaf, step_note
from ._values import convert_constant

__all__ = [
    "Program",
    "UnsupportedGraphError",
    "UnsupportedNode",
    "build_program",
    "decompose",
    "differentiable_nodes",
]


@dataclasses.dataclass(frozen=True)
class UnsupportedNode:
    """A graph node jaxderiv cannot run, and why."""

    node: str  # the graph node's name
    op: str  # its target: 'aten::foo.overload' or a Python callable's name
    reason: str
    source: str  # the user's source line that produced it, from the node's stack trace

    def __str__(self) -> str:
        where = f"\n    at {self.source}" if self.source else ""
        return f"node {self.node!r} ({self.op}): {self.reason}{where}"


class UnsupportedGraphError(JaxderivError):
    """An exported graph holds nodes jaxderiv cannot run; `.nodes` lists every one."""

    def __init__(self, nodes: list[UnsupportedNode]):
        self.nodes = list(nodes)
        lines = "\n".join(f"  - {n}" for n in nodes)
        super().__init__(f"{len(nodes)} graph node(s) cannot run on jaxderiv ops:\n{lines}")


@dataclasses.dataclass(frozen=True)
class Program:
    """Placeholders by role, the steps, and where each output goes."""

    inputs: tuple[
        tuple[str, str, str | None], ...
    ]  # (node, role, state_dict name or None); role: parameter/buffer/constant/user/token
    steps: tuple[Step, ...]
    outputs: tuple[
        tuple[Any, str, str | None], ...
    ]  # (Ref or constant, role, buffer name); role: user/buffer/user_input_mutation/token
    loops: tuple[Loop, ...] = ()  # the unrolled loops among the steps that run as scans
    remat: Any = None  # activation checkpointing of each loop copy: None, True, or a jax.checkpoint policy

    def run(self, values: dict[str, Any], *, key=None, on_step: Callable | None = None) -> dict[str, Any]:
        """Evaluate every step on `values` (placeholder name -> array); returns the environment.
        A random node draws from `jax.random.fold_in(key, its position)`. The steps of `loops`
        run as scans, unless `on_step` must see each of them (the environment then holds only
        the loop's values read after it)."""
        env = dict(values)
        loops = {loop.start: loop for loop in self.loops} if on_step is None else {}
        skip_to = 0
        for i, step in enumerate(self.steps):
            if i < skip_to:
                continue
            if i in loops:
                try:
                    run_loop(loops[i], self.steps, env, remat=self.remat)
                except NOT_A_SCAN:
                    pass  # values that do not fit a scan: the steps run unrolled (and raise there if wrong)
                else:
                    skip_to = loops[i].stop
                    continue
            args, kwargs = _substitute((step.args, step.kwargs), env)
            if step.kind is NodeKind.RANDOM:
                kwargs = {**kwargs, "key": None if key is None else jax.random.fold_in(key, i)}
            try:
                out = step.fn(*args, **kwargs)
            except Exception as e:  # re-raised, with the node and the user's line noted
                e.add_note(step_note(step))
                raise
            if on_step is not None:
                out = on_step(step, out)
            env[step.name] = out
        return env


def _substitute(tree, env):
    def sub(x):
        return env[x.name] if isinstance(x, Ref) else x

    return jax.tree.map(sub, tree, is_leaf=is_leaf)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def source_line(node: torch.fx.Node) -> str:
    """The user's line that made the node: the innermost frame of its stack trace outside
    torch itself (`nn.Linear`'s own line says less than the model's), as `file:line in fn: code`."""
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    if not frames:
        return ""
    outside = [f for f in frames if not f[0].startswith(TORCH_DIR)]
    file, line, fn, code = (outside or frames)[-1]
    return f"{file}:{line} in {fn}: {code.strip()}"


def _is_composite_implicit(op) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), torch._C.DispatchKey.CompositeImplicitAutograd)


def differentiable_nodes(ep: torch.export.ExportedProgram) -> set[str]:
    """Nodes whose value depends on a parameter or a floating user input: what requires grad in eager."""
    roots = {
        s.arg.name for s in ep.graph_signature.input_specs if s.kind in (InputKind.PARAMETER, InputKind.USER_INPUT)
    }
    found = set()
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        floating = isinstance(val, torch.Tensor) and (val.is_floating_point() or val.is_complex())
        if floating and (node.name in roots or any(a.name in found for a in node.all_input_nodes)):
            found.add(node.name)
    return found


def _attention_as_autograd_picks(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`scaled_dot_product_attention` with a mask that requires grad (T5's learned position
    bias) runs torch's math backend in eager, since the fused CPU kernel has no mask gradient;
    decomposition, which sees no requires_grad, would pick the fused kernel. Such nodes are
    pointed at the math backend first, so the gradient is the one eager torch computes."""
    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    nodes = [n for n in ep.graph.nodes if n.target is sdpa]
    if not nodes:
        return ep
    live = differentiable_nodes(ep)
    masked = [
        n.name
        for n in nodes
        if isinstance(mask := (n.args[3] if len(n.args) > 3 else n.kwargs.get("attn_mask")), torch.fx.Node)
        and mask.name in live
    ]
    if not masked:
        return ep
    ep = copy.deepcopy(ep)
    graph = ep.graph
    for n in [n for n in graph.nodes if n.name in masked]:
        with graph.inserting_after(n):  # the math backend returns (output, weights)
            math = graph.call_function(torch.ops.aten._scaled_dot_product_attention_math.default, n.args, n.kwargs)
        with graph.inserting_after(math):
            out = graph.call_function(operator.getitem, (math, 0))
        math.meta, out.meta = dict(n.meta), dict(n.meta)
        n.replace_all_uses_with(out)
        graph.erase_node(n)
    ep.graph_module.recompile()
    return ep


def decompose(ep: torch.export.ExportedProgram, registry: Registry) -> torch.export.ExportedProgram:
    """Lower `ep` to the ops jaxderiv runs (see the module docstring)."""
    ep = _attention_as_autograd_picks(ep)
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if not isinstance(op, torch._ops.OpOverload):
            continue
        if not _is_composite_implicit(op) and runs_as(aten_name(op), registry)[0] is not NodeKind.UNSUPPORTED:
            table.pop(op)
    # An `upsample_*.vec` overload runs as eager autograd sees it: its composite kernel calls
    # the entry whose formulas torch differentiates (`_composites.py`).
    for node in ep.graph.nodes:
        kernel = eager_composite(node.target) if isinstance(node.target, torch._ops.OpOverload) else None
        if (
            kernel is not None
            and runs_as(aten_name(node.target.overloadpacket.default), registry)[0] is not NodeKind.UNSUPPORTED
        ):
            table[node.target] = kernel
    return ep.run_decompositions(table)


_INPUT_ROLES = {
    InputKind.PARAMETER: "parameter",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "constant",
    InputKind.USER_INPUT: "user",
    InputKind.TOKEN: "token",
    InputKind.CUSTOM_OBJ: "custom_obj",
}
_OUTPUT_ROLES = {
    OutputKind.USER_OUTPUT: "user",
    OutputKind.BUFFER_MUTATION: "buffer",
    OutputKind.USER_INPUT_MUTATION: "user_input_mutation",
    OutputKind.TOKEN: "token",
    OutputKind.LOSS_OUTPUT: "user",
    OutputKind.GRADIENT_TO_PARAMETER: "gradient",
    OutputKind.GRADIENT_TO_USER_INPUT: "gradient",
    OutputKind.PARAMETER_MUTATION: "parameter_mutation",
}


def _convert_args(x):
    """Nodes -> Refs, constants -> JAX's forms; fx's immutable lists and dicts -> plain ones."""
    if isinstance(x, torch.fx.Node):
        return Ref(x.name)
    if isinstance(x, dict):
        return {k: _convert_args(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return (list if isinstance(x, list) else tuple)(_convert_args(v) for v in x)
    return convert_constant(x)


def build_program(ep: torch.export.ExportedProgram, registry: Registry) -> tuple[Program, list[UnsupportedNode]]:
    """The program of an already decomposed `ep`, and every node that cannot run."""
    sig = ep.graph_signature
    inputs = tuple((s.arg.name, _INPUT_ROLES[s.kind], s.target) for s in sig.input_specs)
    steps, bad = [], []
    for node in ep.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        src = source_line(node)
        if node.op != "call_function":
            bad.append(UnsupportedNode(node.name, str(node.target), f"a {node.op!r} node", src))
            continue
        target = node.target
        args, kwargs = _convert_args((tuple(node.args), dict(node.kwargs)))
        if isinstance(target, torch._ops.OpOverload):
            name = aten_name(target)
            label = f"aten::{name}" if target.namespace == "aten" else str(target)
            if target.namespace != "aten":
                bad.append(UnsupportedNode(node.name, label, "not an ATen op (a custom or backend op)", src))
                continue
            how = resolve(name, registry)
            if how.fn is None:
                bad.append(UnsupportedNode(node.name, label, how.detail, src))
                continue
            steps.append(Step(node.name, label, how.fn, args, kwargs, how.kind, src))
        elif target is operator.getitem or target in _PYTHON_OPS:
            steps.append(
                Step(node.name, getattr(target, "__name__", str(target)), target, args, kwargs, NodeKind.PYTHON, src)
            )
        else:
            kind = "a higher-order op" if isinstance(target, torch._ops.HigherOrderOperator) else "not an ATen op"
            bad.append(
                UnsupportedNode(
                    node.name,
                    str(getattr(target, "__name__", target)),
                    f"{kind}: torch's decompositions leave it in the graph",
                    src,
                )
            )
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    results = [Ref(a.name) if isinstance(a, torch.fx.Node) else convert_constant(a) for a in out_node.args[0]]
    outputs = tuple((r, _OUTPUT_ROLES[s.kind], s.target) for r, s in zip(results, sig.output_specs))
    return Program(inputs, tuple(steps), outputs), bad


# Python arithmetic on sizes that exported graphs may hold (shapes are static here).
_PYTHON_OPS = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.truediv,
        operator.neg,
        operator.mod,
        operator.pow,
    }
)
