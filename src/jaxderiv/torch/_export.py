"""Capturing a module with torch.export for import: which dimensions are dynamic, and what to do
where the model branches in Python on a tensor's value.

torch.export records one graph for every input, so a Python `if` on a tensor's value (LayerDrop's
`if torch.rand([]) < self.layerdrop` in transformers' OPT, BART and Whisper decoders) stops it
with GuardOnDataDependentSymNode. `branches="example"` gets through as tracing JAX code would: the
module runs once eagerly on the example inputs (its state and torch's random state restored
after), each branch's answer is recorded, and the export takes the same answers: the graph is
the path the example took, and a warning names each line so fixed. `branches="error"` refuses
with DataDependentBranchError, which names the line and the ways through.
"""

from __future__ import annotations

import collections
import copy
import inspect
import re
import traceback
import warnings
from typing import Any

import torch
import torch.utils._pytree as torch_pytree
from torch.export import Dim
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
from torch.overrides import TorchFunctionMode

from ..errors import JaxderivError
from ._program import TORCH_DIR

__all__ = ["DataDependentBranchError", "default_dynamic_shapes", "export_module"]


class DataDependentBranchError(JaxderivError):
    """The model branches in Python on a tensor's value, which torch.export cannot capture."""


_CALL = re.compile(r'The following call raised this error:\n\s*File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def _data_dependent(e: Exception, why: str = "") -> DataDependentBranchError:
    found = _CALL.search(str(e))
    where = f"{found[1]}:{found[2]} in {found[3]}: {found[4].strip()}" if found else "(line not reported by torch)"
    return DataDependentBranchError(
        f"the model branches in Python on a tensor's value at\n    {where}\n"
        "torch.export records one graph for every input, so it cannot follow a branch taken on a value "
        f"(a random draw, an `if tensor.item() ...`){why}. Ways through:\n"
        "  - from_module(..., branches='example') fixes each such branch to the path the example inputs take;\n"
        "  - a branch taken only in training (LayerDrop: `if torch.rand([]) < self.layerdrop`): import the "
        "model in eval mode (`module.eval()`; dropout is then off too), or replace the branch;\n"
        "  - write the branch with torch.cond or torch.where, which torch.export captures;\n"
        "  - export yourself (torch.export.export) with the branch removed and pass the program to from_exported."
    )


def _user_line() -> str:
    """The innermost frame of the running Python stack outside torch and this module."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not frame.filename.startswith(TORCH_DIR) and frame.filename != __file__:
            return f"{frame.filename}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
    return "(unknown line)"


class _RecordBranches(TorchFunctionMode):
    """Eager run: every truth value taken of a tensor, with the user's line that took it."""

    def __init__(self):
        super().__init__()
        self.answers: list[tuple[bool, str]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.Tensor.__bool__:
            self.answers.append((bool(out), _user_line()))
        return out


class _ReplayBranches(TorchFunctionMode):
    """Export: each truth value taken of a tensor is the eager run's next answer at the same line.
    Answers are matched by line, in order: code that checks a value only in eager mode (a mask's
    `.any()` skipped while exporting) takes answers the export never asks for."""

    def __init__(self, answers: list[tuple[bool, str]]):
        super().__init__()
        self.answers: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        for answer, line in answers:
            self.answers[line].append(answer)
        self.used: list[tuple[bool, str]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is not torch.Tensor.__bool__:
            return func(*args, **(kwargs or {}))
        line = _user_line()
        if not self.answers[line]:
            raise DataDependentBranchError(
                f"the branch at {line} was not taken in the eager run of the example inputs as often as "
                "while exporting, so it cannot be fixed to the example's path"
            )
        answer = self.answers[line].popleft()
        self.used.append((answer, line))
        return answer


def _example_branches(module: torch.nn.Module, args: tuple, kwargs: dict) -> list[tuple[bool, str]]:
    """The truth values the module takes of tensors on the example inputs, its state untouched."""
    state = copy.deepcopy(module.state_dict())
    record = _RecordBranches()
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad(), record:
            module(*args, **kwargs)
    finally:
        module.load_state_dict(state)
    return record.answers


def default_dynamic_shapes(module: torch.nn.Module, args: tuple, kwargs: dict) -> dict:
    """torch.export's `dynamic_shapes` for jaxderiv's default: the first two dimensions of every
    tensor input (batch, and a sequence's length) are `Dim.AUTO`, so torch.export makes them
    dynamic wherever the model allows it and keeps static the ones it fixes (channels, a ViT's
    patch grid, a size-1 dimension)."""
    signature = inspect.signature(module.forward)
    bound = signature.bind(*args, **kwargs)

    def spec(x):
        if isinstance(x, torch.Tensor):
            return {axis: Dim.AUTO for axis in range(min(x.ndim, 2))} or None
        return None

    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out[name] = tuple(torch_pytree.tree_map(spec, v) for v in value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out[name] = {k: torch_pytree.tree_map(spec, v) for k, v in value.items()}
        else:
            out[name] = torch_pytree.tree_map(spec, value)
    return out


def _export(module, args, kwargs, dynamic_shapes, branches: str):
    try:
        return torch.export.export(module, args, kwargs or None, dynamic_shapes=dynamic_shapes)
    except GuardOnDataDependentSymNode as e:
        if branches == "error":
            raise _data_dependent(e) from e
        first = e
    answers = _example_branches(module, args, kwargs)
    replay = _ReplayBranches(answers)
    try:
        with replay:
            ep = torch.export.export(module, args, kwargs or None, dynamic_shapes=dynamic_shapes)
    except GuardOnDataDependentSymNode as e:
        raise _data_dependent(e, " even with each branch fixed to the example's path") from first
    for answer, line in dict.fromkeys(replay.used):
        warnings.warn(
            f"the model branches on a tensor's value at {line}; the import always takes the example's path "
            f"({answer}). Pass branches='error' to refuse such models instead.",
            stacklevel=4,
        )
    return ep


def export_module(
    module: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes, branches: str = "example"
) -> torch.export.ExportedProgram:
    """`torch.export.export` in training IR for import. dynamic_shapes: None for static shapes,
    "auto" for `default_dynamic_shapes`, or torch.export's own spec (`Dim`, `Dim.AUTO`, per input);
    where "auto" cannot export, the static export is used, with a warning saying why. branches:
    "example" or "error" (see the module docstring)."""
    if branches not in ("example", "error"):
        raise ValueError(f"branches={branches!r}: give 'example' or 'error'")
    if isinstance(dynamic_shapes, str):
        if dynamic_shapes != "auto":
            raise ValueError(f"dynamic_shapes={dynamic_shapes!r}: give 'auto', None, or torch.export's own spec")
        try:
            spec = default_dynamic_shapes(module, args, kwargs)
        except TypeError:  # a forward whose signature does not bind the inputs (a wrapped callable)
            spec = None
        if spec is not None:
            try:
                ep = _export(module, args, kwargs, spec, branches)
            except DataDependentBranchError:
                raise
            except (RuntimeError, TypeError, ValueError, AssertionError) as e:
                # what symbolic sizes make torch.export or the model's code raise: a dimension the
                # code specializes (torch._dynamo.exc.UserError, ConstraintViolationError), an op
                # without a symbolic-shape kernel (RuntimeError, NotImplementedError), Python that
                # needs a concrete size (TypeError, ValueError), an assert on one: static export
                warnings.warn(
                    f"exporting with dynamic batch and sequence dimensions failed ({type(e).__name__}: "
                    f"{str(e).splitlines()[0] if str(e) else ''}); the model is imported with static shapes",
                    stacklevel=3,
                )
            else:
                _warn_fixed_dimensions(ep, args, kwargs)
                return ep
        dynamic_shapes = None
    return _export(module, args, kwargs, dynamic_shapes, branches)


def _warn_fixed_dimensions(ep: torch.export.ExportedProgram, args: tuple, kwargs: dict) -> None:
    """Say where torch.export kept a batch dimension, or the length of a sequence of ids, at the
    example's size (the model's code fixes it: a Python loop over the sequence, `arange(len(x))`):
    other sizes there are refused later, and the user learns why now. A fixed dimension 1 of a
    floating input is not reported: it is most often channels, which the weights fix."""
    examples = [x for x in torch_pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
    user = set(ep.graph_signature.user_inputs)
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]
    tensors = [n for n in placeholders if isinstance(n.meta.get("val"), torch.Tensor)]
    fixed = []
    for node, example in zip(tensors, examples):
        axes = 2 if not (example.is_floating_point() or example.is_complex()) else 1
        for axis, size in enumerate(node.meta["val"].shape[:axes]):
            static = not isinstance(size, torch.SymInt) or size.node.expr.is_number
            if static and example.shape[axis] >= 2:
                fixed.append(f"input {node.name!r} dimension {axis} (= {int(size)})")
    if fixed:
        warnings.warn(
            f"torch.export kept {', '.join(fixed)} at the example's size: the model's code fixes it "
            "(a Python loop over it, a range of its length), so the import refuses other sizes there",
            stacklevel=4,
        )
