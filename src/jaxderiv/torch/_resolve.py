"""Which JAX callable runs one ATen overload of an exported graph.

In order: the registry's op of that exact overload (its derivatives are its entry's formulas);
an in-place or `_copy` variant through its functional entry, as torch's codegen derives them;
a training-IR functional variant through the entry it is a variant of (`_variants.py`); a
forward that carries no gradient (constructors, asserts, queries), its inputs held constant.
Anything else is unsupported, with the reason.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import jax

from .. import forward as _forward
from ..forward.nondifferentiable import carries_no_gradient
from ..registry import Registry
from . import _variants

__all__ = ["Resolved", "aten_name", "resolve", "torch_registry"]


@dataclasses.dataclass(frozen=True)
class Resolved:
    """How a node runs: `fn(*args, **kwargs)` with the node's converted arguments."""

    fn: Callable | None
    kind: str  # "entry" | "variant" | "random" (a variant taking key=) | "constant" | "unsupported"
    detail: str  # the entry it runs, or why it cannot run


def aten_name(target) -> str:
    """`torch.ops.aten.add.Tensor` -> 'add.Tensor'; `...abs.default` -> 'abs'."""
    base = target._schema.name.split("::", 1)[-1]
    overload = target._overloadname
    return base if overload in ("default", "") else f"{base}.{overload}"


@functools.lru_cache(maxsize=None)
def torch_registry() -> Registry:
    """The registry built on the installed torch's own derivatives.yaml: its schemas are the graph's."""
    from ..spec import load_spec

    return Registry(load_spec(from_torch=True))


def _entry_op(registry: Registry, name: str):
    if name not in registry.spec:
        return None
    op = registry.op(name)
    return op if op.impl is not None else None


def _functional_name(name: str) -> str | None:
    """`add_.Tensor` -> `add.Tensor`; `expand_copy` -> `expand`; None when neither form."""
    base, dot, overload = name.partition(".")
    suffix = dot + overload
    if base.endswith("_copy"):
        return base[: -len("_copy")] + suffix
    if base.endswith("_") and not base.endswith("__"):
        return base[:-1] + suffix
    return None


def resolve(name: str, registry: Registry) -> Resolved:
    """How the overload `name` runs under `registry` (see the module docstring)."""
    op = _entry_op(registry, name)
    if op is not None:
        return Resolved(op, "entry", f"{op.entry.location}")
    functional = _functional_name(name)
    if functional is not None and name not in registry.spec:
        op = _entry_op(registry, functional)
        if op is not None:
            return Resolved(op, "entry", f"{op.entry.location} (functional form of {name})")
    variant = _variants.VARIANTS.get(name)
    if variant is not None:
        return Resolved(functools.partial(variant.run, registry), "random" if variant.random else "variant", variant.describe(registry))
    impl = _forward.implementation(name)
    if impl is not None and carries_no_gradient(impl):
        return Resolved(_held_constant(impl), "constant", "no gradient (a constructor, assert or query)")
    if name in registry.spec:
        return Resolved(None, "unsupported", f"entry {registry.spec[name].location} has no forward implementation in jaxderiv")
    return Resolved(None, "unsupported", "no derivatives.yaml entry, no torch decomposition, and no gradient-free forward in jaxderiv")


def _held_constant(impl: Callable) -> Callable:
    """The forward with every array input behind stop_gradient: ATen gives these no gradient."""

    @functools.wraps(impl)
    def run(*args, **kwargs):
        args, kwargs = jax.tree.map(_constant, (args, kwargs), is_leaf=lambda x: x is None)
        return impl(*args, **kwargs)

    return run


def _constant(x):
    return jax.lax.stop_gradient(x) if isinstance(x, jax.Array) else x
