"""ATen ops on JAX, one module per family: each op's forward and its record, declared together.

A family module registers a forward with `impl` and, beside it, the op's record (samples,
domain, complex support, kinks, the torch call to compare with, declared differences: see
`jaxderiv.records`), either as `impl`'s keyword arguments or with the declaration functions
next to the forward. `kind` says how the op's outputs relate to gradients (`OpKind`).

Each implementation takes the schema's arguments positionally, in schema order: Tensors as
JAX arrays (None for an absent optional), Tensor lists as lists, other arguments as Python
values with the schema's defaults applied. It returns an array, or a tuple for tuple returns.
In-place entries (`abs_`) use their out-of-place op's implementation unless they have their own.

An ATen overload that derivatives.yaml does not list but that is a variant of an entry it does
(`native_dropout`'s mask drawn from a key, `_native_batch_norm_legit_functional`'s running
statistics, `copy_`) is declared with `variant`, beside that entry's forward: it runs the entry's
op, so its derivatives are the entry's formulas, and computes what it adds with no gradient.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from ..records import OpKind, declare
from ..submodules import import_once

__all__ = [
    "IMPLS",
    "OpKind",
    "Variant",
    "impl",
    "implementation",
    "kind_of",
    "callable_named",
    "load",
    "variant",
    "variants",
]

IMPLS: dict[str, Callable] = {}
_KINDS: dict[str, OpKind] = {}  # the ops whose kind is not DIFFERENTIABLE
_VARIANTS: dict[str, "Variant"] = {}


def impl(*names: str, kind: OpKind = OpKind.DIFFERENTIABLE, **record: Any):
    """Register the decorated function as the forward of the ATen overloads `names`
    (`add.Tensor`, `abs`); several names stack overloads that share one kernel. `kind` says how
    its outputs carry gradients; `record` gives fields of each entry's record (`domain=(0.1, 3.0)`,
    `complex=True`, `kinks=(...)`: `records.OpRecord`'s fields), declared as the functions of
    `records.declarations` would."""

    def deco(fn):
        for n in names:
            if n in IMPLS:
                raise ValueError(f"forward implementation of {n!r} registered twice")
            IMPLS[n] = fn
            if kind is not OpKind.DIFFERENTIABLE:
                _KINDS[n] = kind
            if record:
                declare(n, **record)
        return fn

    return deco


@dataclasses.dataclass(frozen=True)
class Variant:
    """An ATen overload that runs the op of derivatives.yaml entry `entry` and adds outputs of
    its own; `run_with(registry, entry_op, *node_args, **kw)` computes them."""

    entry: str  # the derivatives.yaml entry whose formulas apply
    run_with: Callable
    gradient: str  # what the docs table says of its gradient
    random: bool = False  # takes `key=`: a jax.random key of its own for each node
    inputs: tuple[str, ...] | None = None  # the arguments it differentiates; None: the entry's

    def differentiable_inputs(self, registry) -> tuple[str, ...]:
        return self.inputs if self.inputs is not None else tuple(registry.op(self.entry).differentiable_inputs)

    def run(self, registry, *args, **kwargs):
        return self.run_with(registry, registry.op(self.entry), *args, **kwargs)

    def describe(self, registry) -> str:
        return f"{registry.spec[self.entry].location} ({self.entry}'s formulas; {self.gradient})"


def variant(*names: str, entry: str, gradient: str, random: bool = False, inputs: tuple[str, ...] | None = None):
    """Register the decorated `run_with(registry, entry_op, *args, **kw)` as the overloads
    `names`, variants of `entry` (see the module docstring and `Variant`)."""

    def deco(fn):
        for n in names:
            if n in _VARIANTS:
                raise ValueError(f"variant {n!r} registered twice")
            _VARIANTS[n] = Variant(entry, fn, gradient, random, inputs)
        return fn

    return deco


def variants() -> Mapping[str, Variant]:
    """Every declared variant, by overload name (the family modules are imported first)."""
    load()
    return _VARIANTS


def _registered_name(name: str) -> str | None:
    """The name `name`'s forward is registered under: itself, else `abs.x` / `abs` for `abs_.x` / `abs_`."""
    load()
    if name in IMPLS:
        return name
    base, _, overload = name.partition(".")
    if base.endswith("_") and not base.endswith("__"):
        functional = base[:-1] + ("." + overload if overload else "")
        return functional if functional in IMPLS else None
    return None


def implementation(name: str) -> Callable | None:
    """The forward of `name`, falling back from `abs_.x` / `abs_` to `abs.x` / `abs`."""
    found = _registered_name(name)
    return IMPLS[found] if found is not None else None


def kind_of(name: str) -> OpKind | None:
    """How the outputs of `name`'s forward carry gradients; None where no forward is registered."""
    found = _registered_name(name)
    return _KINDS.get(found, OpKind.DIFFERENTIABLE) if found is not None else None


def callable_named(name: str) -> Callable | None:
    """What a formula's call `name(...)` or `x.name(...)` may use: the forward registered as
    `name`, else the only registered overload `name.X` (`x.transpose(0, 1)` is transpose.int).
    Overloaded names need an explicit helper or method that picks the overload."""
    found = implementation(name)
    if found is not None or "." in name:
        return found
    overloads = [n for n in IMPLS if n.partition(".")[0] == name]
    return IMPLS[overloads[0]] if len(overloads) == 1 else None


def load() -> None:
    """Import every module of this package: each registers its forwards and declares their records."""
    import_once(__name__, __path__)
