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
from typing import Any

import sympy
import torch
from torch.utils._sympy.numbers import int_oo

__all__ = ["InputShapes", "ShapeError"]


class ShapeError(ValueError):
    """An input whose shape the imported graph does not allow."""


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
