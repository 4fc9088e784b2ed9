"""Input shapes of an imported graph: which dimensions torch.export made dynamic, and the check
that a call's inputs fit them before anything runs.

torch.export records each user input's shape as ints (static) and symbols with value ranges
(`Dim`, `Dim.AUTO`): one import then runs every shape those constraints allow, one compiled
program per shape as `jax.jit` always does. A shape outside them would fail deep inside a
reshape, or, worse, run a graph traced for other sizes: it is refused naming the input, the
dimension, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import warnings
from typing import Any

import sympy
import torch
import torch.utils._pytree as torch_pytree
from torch.export import Dim
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
from torch.utils._sympy.numbers import int_oo

from ..errors import JaxderivError

__all__ = ["DataDependentBranchError", "InputShapes", "ShapeError", "default_dynamic_shapes", "export_with_shapes"]


class ShapeError(ValueError):
    """An input whose shape the imported graph does not allow."""


class DataDependentBranchError(JaxderivError):
    """The model branches in Python on a tensor's value, which torch.export cannot capture."""


_CALL = re.compile(r'The following call raised this error:\n\s*File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def _data_dependent(e: Exception) -> DataDependentBranchError:
    """torch.export's GuardOnDataDependentSymNode as an error that names the model's line and
    the ways through (LayerDrop in transformers' OPT, BART and Whisper decoders is the usual one)."""
    found = _CALL.search(str(e))
    where = f"{found[1]}:{found[2]} in {found[3]}: {found[4].strip()}" if found else "(line not reported by torch)"
    return DataDependentBranchError(
        f"the model branches in Python on a tensor's value at\n    {where}\n"
        "torch.export records one graph for every input, so it cannot follow a branch taken on a value "
        "(a random draw, an `if tensor.item() ...`). Ways through:\n"
        "  - a branch taken only in training (LayerDrop: `if torch.rand([]) < self.layerdrop`): import the "
        "model in eval mode (`module.eval()`; dropout is then off too), or replace the branch;\n"
        "  - write the branch with torch.cond or torch.where, which torch.export captures;\n"
        "  - export yourself (torch.export.export) with the branch removed and pass the program to from_exported."
    )


@dataclasses.dataclass(frozen=True)
class InputDim:
    """One dimension of a user input: a fixed size, or a symbolic expression with its range."""

    size: int | None  # the static size; None when symbolic
    expr: Any = None  # sympy expression of the graph's symbols (`s0`, `2*s1`)


@dataclasses.dataclass(frozen=True)
class InputShapes:
    """The shapes an imported graph accepts, per user input (graph order)."""

    inputs: tuple[tuple[str, tuple[InputDim, ...]], ...]  # (placeholder name, its dims)
    ranges: dict  # symbol -> (lower, upper or None)

    @classmethod
    def of(cls, ep: torch.export.ExportedProgram) -> InputShapes:
        user = set(ep.graph_signature.user_inputs)
        inputs = []
        for node in ep.graph.nodes:
            if node.op != "placeholder" or node.name not in user:
                continue
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                continue
            dims = []
            for d in val.shape:
                expr = d.node.expr if isinstance(d, torch.SymInt) else sympy.Integer(int(d))
                dims.append(InputDim(int(expr), None) if expr.is_number else InputDim(None, expr))
            inputs.append((node.name, tuple(dims)))
        ranges = {}
        for sym, vr in ep.range_constraints.items():
            upper = None if vr.upper in (int_oo, sympy.oo) else int(vr.upper)
            ranges[sym] = (int(vr.lower), upper)
        return cls(tuple(inputs), ranges)

    @property
    def dynamic(self) -> bool:
        """True when some dimension is symbolic: the import runs more than one shape."""
        return any(d.size is None for _, dims in self.inputs for d in dims)

    def describe(self) -> str:
        """Each input's shape as the import allows it: `input_ids: [s0 in 2..16, s1 >= 2]`."""
        lines = []
        for name, dims in self.inputs:
            lines.append(f"{name}: [{', '.join(self._allowed(d) for d in dims)}]")
        return "; ".join(lines)

    def _allowed(self, d: InputDim) -> str:
        if d.size is not None:
            return str(d.size)
        syms = sorted(d.expr.free_symbols, key=str)
        if len(syms) == 1 and d.expr == syms[0]:
            low, high = self.ranges.get(syms[0], (0, None))
            return f"{d.expr} >= {low}" if high is None else f"{d.expr} in {low}..{high}"
        return str(d.expr)

    def check(self, shapes: list[tuple[str, tuple[int, ...]]]) -> None:
        """Raise ShapeError unless every (input name, shape) fits: static sizes equal, each
        symbol within its range and the same wherever it appears (`s0` of two inputs)."""
        bound: dict = {}
        where: dict = {}
        problems: list[str] = []
        for (name, dims), (_, shape) in zip(self.inputs, shapes):
            if len(shape) != len(dims):
                problems.append(
                    f"input {name!r} has {len(shape)} dimensions {tuple(shape)}; the import takes {len(dims)}"
                )
                continue
            for axis, (d, value) in enumerate(zip(dims, shape)):
                if not isinstance(value, int):  # a symbolic size (jax.export): checked when it is known
                    continue
                if d.size is not None:
                    if value != d.size:
                        problems.append(
                            f"input {name!r} dimension {axis} is {value}; the import fixes it to {d.size}"
                            + ("" if self.dynamic else " (exported with static shapes)")
                        )
                    continue
                if d.expr.is_Symbol:
                    sym = d.expr
                    low, high = self.ranges.get(sym, (0, None))
                    if value < low or (high is not None and value > high):
                        allowed = f">= {low}" if high is None else f"in {low}..{high}"
                        problems.append(
                            f"input {name!r} dimension {axis} is {value}; the import allows {sym} {allowed}"
                        )
                    elif sym in bound and bound[sym] != value:
                        problems.append(
                            f"input {name!r} dimension {axis} is {value}, but {where[sym]} is {bound[sym]}: "
                            f"both are {sym} in the exported graph and must be equal"
                        )
                    else:
                        bound.setdefault(sym, value)
                        where.setdefault(sym, f"input {name!r} dimension {axis}")
        # derived dimensions (`2*s0`) once every symbol is known
        for (name, dims), (_, shape) in zip(self.inputs, shapes):
            for axis, (d, value) in enumerate(zip(dims, shape)):
                known = isinstance(value, int) and d.size is None and not d.expr.is_Symbol
                if known and d.expr.free_symbols <= set(bound):
                    want = int(d.expr.subs(bound))
                    if value != want:
                        problems.append(
                            f"input {name!r} dimension {axis} is {value}; the graph needs {d.expr} = {want}"
                        )
        if problems:
            raise ShapeError(
                "the inputs do not fit the imported graph's shapes:\n  "
                + "\n  ".join(problems)
                + f"\n  allowed: {self.describe()}"
                + ("" if self.dynamic else "\n  import with from_module(..., dynamic_shapes='auto') to run other sizes")
            )


def default_dynamic_shapes(module: torch.nn.Module, args: tuple, kwargs: dict) -> dict:
    """torch.export's `dynamic_shapes` for jaxderiv's default: the first two dimensions of every
    tensor input (batch, and a sequence's length) are `Dim.AUTO`, so torch.export makes them
    dynamic wherever the model allows it and keeps static the ones it fixes (channels, a ViT's
    patch grid, a size-1 dimension)."""
    bound = inspect.signature(module.forward).bind(*args, **kwargs)

    def spec(x):
        if isinstance(x, torch.Tensor):
            return {axis: Dim.AUTO for axis in range(min(x.ndim, 2))} or None
        return None

    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = inspect.signature(module.forward).parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out[name] = tuple(torch_pytree.tree_map(spec, v) for v in value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out[name] = {k: torch_pytree.tree_map(spec, v) for k, v in value.items()}
        else:
            out[name] = torch_pytree.tree_map(spec, value)
    return out


def export_with_shapes(
    module: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes
) -> torch.export.ExportedProgram:
    """`torch.export.export` in training IR with `dynamic_shapes`: None for static shapes,
    "auto" for `default_dynamic_shapes`, or torch.export's own spec (`Dim`, `Dim.AUTO`, per
    input). Where "auto" cannot export, the static export is used, with a warning saying why."""
    if isinstance(dynamic_shapes, str):
        if dynamic_shapes != "auto":
            raise ValueError(f"dynamic_shapes={dynamic_shapes!r}: give 'auto', None, or torch.export's own spec")
        try:
            spec = default_dynamic_shapes(module, args, kwargs)
        except TypeError:  # a forward whose signature does not bind the inputs (a wrapped callable)
            spec = None
        if spec is not None:
            try:
                return torch.export.export(module, args, kwargs or None, dynamic_shapes=spec)
            except GuardOnDataDependentSymNode as e:
                raise _data_dependent(e) from e
            except Exception as e:  # noqa: BLE001 - any failure of the dynamic export falls back to static
                warnings.warn(
                    f"exporting with dynamic batch and sequence dimensions failed ({type(e).__name__}: "
                    f"{str(e).splitlines()[0] if str(e) else ''}); the model is imported with static shapes",
                    stacklevel=3,
                )
        dynamic_shapes = None
    try:
        return torch.export.export(module, args, kwargs or None, dynamic_shapes=dynamic_shapes)
    except GuardOnDataDependentSymNode as e:
        raise _data_dependent(e) from e
