"""The steps a program runs: one per graph node, its arguments holding `Ref`s to other nodes' values.

A leaf of `jaxderiv.torch`'s program modules: `_program.py` builds and runs the steps and
`_loops.py` rolls repeated blocks of them into scans; both import these types from here, so
that neither imports the other's (the program runs its loops through `_loops`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .resolve import NodeKind

__all__ = ["Ref", "Step", "is_leaf", "step_note"]


@dataclasses.dataclass(frozen=True)
class Ref:
    """An argument that is another node's value."""

    name: str


@dataclasses.dataclass(frozen=True)
class Step:
    """One node: `fn(*args, **kwargs)` with Refs replaced by values."""

    name: str
    op: str
    fn: Callable
    args: tuple
    kwargs: dict
    kind: NodeKind
    source: str


def is_leaf(x) -> bool:
    """The leaves of a step's arguments: Refs, and None (an absent optional argument)."""
    return isinstance(x, Ref) or x is None


def step_note(step: Step) -> str:
    """What an error raised by a step's function is noted with: the graph node and the user's line."""
    where = f", at {step.source}" if step.source else ""
    return f"while running graph node {step.name!r} ({step.op}){where}"
