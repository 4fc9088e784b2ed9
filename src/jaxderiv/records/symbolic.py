"""sympy without importing it, and an op's sympy definition: what the family modules need to
state an op's meaning for the proofs (check/proofs.py) in its record.

sympy is the `proofs` extra, and the op database is built without it: `sp` stands for the sympy
module and imports it on first attribute access, so a definition such as `lambda x: sp.sin(x)`
imports sympy only when the proofs call it.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any, Callable

__all__ = ["Definition", "sp"]


class _LazyModule:
    """A module imported when an attribute of it is first read (ModuleNotFoundError then if absent)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<{self._name}, imported on first use>"


if TYPE_CHECKING:
    import sympy as sp
else:
    sp = _LazyModule("sympy")


@dataclasses.dataclass(frozen=True)
class Definition:
    """An op as a sympy function of its arguments, and where to sample it."""

    fn: Callable[..., Any]  # of the symbols of `args`: an expression, or a tuple (one per output)
    args: tuple[str, ...]  # the schema's argument names fn takes, in order
    domain: tuple[float, float] = (-2.0, 2.0)  # of the Tensor inputs
    ranges: tuple[tuple[str, float, float], ...] = ()  # other sampling ranges, by symbol name
    fixed: tuple[tuple[str, Any], ...] = ()  # values of arguments left unmodelled (`int p` = 3)
    booleans: tuple[str, ...] = ()  # Tensor inputs that are masks: symbols sampled True/False
    derived: tuple[
        tuple[str, Callable[..., Any], tuple[str, ...]], ...
    ] = ()  # inputs that stand for a function of others
