"""Which JAX callable runs one ATen overload of an exported graph.

In order: a training-IR variant through the entry it is a variant of (`forward.variant`: running
statistics, a dropout mask drawn from apply's key); the registry's op of that exact overload
(its derivatives are its entry's formulas); an in-place or `_copy` variant through its
functional entry, as torch's codegen derives them; a forward that carries no gradient
(constructors, asserts, queries), its inputs held constant, a sampler (`randn`) drawing from
the node's key.
Anything else is unsupported, with the reason.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Callable

import jax
import jax.numpy as jnp

from .. import forward as _forward
from ..errors import NotImplementedDerivative
from ..records import OpKind
from ..registry import Registry
from ._values import convert_constant

__all__ = [
    "NodeKind",
    "Resolved",
    "aten_name",
    "convert_constant",
    "resolve",
    "runs_as",
    "torch_registry",
    "variant_op",
]


class NodeKind(enum.StrEnum):
    """How a graph node runs (its value is what reports print)."""

    ENTRY = "entry"  # a derivatives.yaml entry's op
    VARIANT = "variant"  # a training-IR variant through the entry it is a variant of
    RANDOM = "random"  # an entry, variant or sampler drawing from apply's key
    CONSTANT = "constant"  # a gradient-free forward, its inputs held constant
    PYTHON = "python"  # a Python callable of the graph (operator.getitem)
    UNSUPPORTED = "unsupported"


@dataclasses.dataclass(frozen=True)
class Resolved:
    """How a node runs: `fn(*args, **kwargs)` with the node's converted arguments."""

    fn: Callable | None
    kind: NodeKind
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


def _has_entry_op(registry: Registry, name: str) -> bool:
    """An entry of the spec with a forward: `registry.op(name)` can run it."""
    return name in registry.spec and _forward.implementation(name) is not None


def _functional_name(name: str) -> str | None:
    """`add_.Tensor` -> `add.Tensor`; `expand_copy` -> `expand`; None when neither form."""
    base, dot, overload = name.partition(".")
    suffix = dot + overload
    if base.endswith("_copy"):
        return base[: -len("_copy")] + suffix
    if base.endswith("_") and not base.endswith("__"):
        return base[:-1] + suffix
    return None


def _inplace_name(name: str) -> str:
    """`uniform` -> `uniform_`; `normal.Tensor_float` -> `normal_.Tensor_float`."""
    base, dot, overload = name.partition(".")
    return base + "_" + dot + overload


def _takes_generator(registry: Registry, name: str) -> bool:
    return any(a.type.base == "Generator" for a in registry.spec[name].schema.arguments)


def _entry_kind(registry: Registry, name: str) -> NodeKind:
    return NodeKind.RANDOM if _takes_generator(registry, name) else NodeKind.ENTRY


def runs_as(name: str, registry: Registry) -> tuple[NodeKind, str | None]:
    """(kind, what runs) for the overload `name`, without building anything: kind is "entry"
    (what: the entry's name), "variant", "random" (an entry or variant drawing from the node's
    key; what: the entry's name for an entry), "constant" or "unsupported" (what: None)."""
    variant = _forward.variants().get(name)
    if variant is not None:  # before the entry's own op: a variant adds what the schema lacks (a key)
        return (NodeKind.RANDOM if variant.random else NodeKind.VARIANT), name
    if _has_entry_op(registry, name):
        return _entry_kind(registry, name), name
    functional = _functional_name(name)
    if functional is not None and name not in registry.spec and _has_entry_op(registry, functional):
        return _entry_kind(registry, functional), functional
    inplace = _inplace_name(name)
    if name not in registry.spec and _has_entry_op(registry, inplace) and _takes_generator(registry, inplace):
        return NodeKind.RANDOM, inplace  # a functional sampler (`uniform`) is its in-place entry on a copy
    kind = _forward.kind_of(name)
    if kind is OpKind.RANDOM:
        return NodeKind.RANDOM, name
    if kind in (OpKind.GRADIENT_FREE, OpKind.NO_DERIVATIVE):
        return NodeKind.CONSTANT, name
    return NodeKind.UNSUPPORTED, None


def resolve(name: str, registry: Registry) -> Resolved:
    """How the overload `name` runs under `registry` (see the module docstring)."""
    kind, target = runs_as(name, registry)
    if (
        kind in (NodeKind.ENTRY, NodeKind.RANDOM)
        and target is not None
        and target in registry.spec
        and name not in _forward.variants()
    ):
        op = registry.op(target)
        via = "" if target == name else f" (the entry of {target} for {name})"
        if kind is NodeKind.RANDOM:
            return Resolved(_entry_drawn_from_key(op), kind, f"{op.entry.location}{via}; drawn from apply's key")
        return Resolved(op, kind, f"{op.entry.location}{via}")
    if kind in (NodeKind.VARIANT, NodeKind.RANDOM) and name in _forward.variants():
        variant = _forward.variants()[name]
        return Resolved(functools.partial(variant.run, registry), kind, variant.describe(registry))
    if kind is NodeKind.RANDOM:  # a sampler with no entry (`randn`): drawn from the node's key
        impl = _forward.implementation(name)
        assert impl is not None  # runs_as found it
        return Resolved(_drawn_from_key(impl, name), kind, "no gradient; drawn from apply's key")
    if kind is NodeKind.CONSTANT:
        impl = _forward.implementation(name)
        assert impl is not None  # runs_as found it
        if _forward.kind_of(name) is OpKind.NO_DERIVATIVE:
            return Resolved(_derivative_raises(impl, name), kind, "no derivative in ATen (differentiating it raises)")
        return Resolved(_held_constant(impl), kind, "no gradient (a constructor, assert or query)")
    if name in registry.spec:
        return Resolved(None, kind, f"entry {registry.spec[name].location} has no forward implementation in jaxderiv")
    return Resolved(
        None, kind, "no derivatives.yaml entry, no torch decomposition, and no gradient-free forward in jaxderiv"
    )


def _held_constant(impl: Callable) -> Callable:
    """The forward with every array input behind stop_gradient: ATen gives these no gradient."""

    @functools.wraps(impl)
    def run(*args, **kwargs):
        args, kwargs = jax.tree.map(_constant, (args, kwargs), is_leaf=lambda x: x is None)
        return impl(*args, **kwargs)

    return run


def _drawn_from_key(impl: Callable, name: str) -> Callable:
    """A sampler run with the node's key as its generator (`apply(..., key=)`)."""

    @functools.wraps(impl)
    def run(*args, key=None, **kwargs):
        if key is None:
            raise ValueError(f"{name} draws random values: pass key=jax.random.key(...) to apply()")
        args, kwargs = jax.tree.map(_constant, (args, kwargs), is_leaf=lambda x: x is None)
        return impl(*args, **{**kwargs, "generator": key})

    return run


def _entry_drawn_from_key(op: Callable) -> Callable:
    """An entry's op whose `generator` is the node's key: its derivatives stay its formulas."""

    @functools.wraps(op)
    def run(*args, key=None, **kwargs):
        if kwargs.get("generator") is None:
            if key is None:
                raise ValueError(f"aten::{op.name} draws random values: pass key=jax.random.key(...) to apply()")
            kwargs = {**kwargs, "generator": key}
        return op(*args, **kwargs)

    return run


def _constant(x):
    return jax.lax.stop_gradient(x) if isinstance(x, jax.Array) else x


def _derivative_raises(impl: Callable, name: str) -> Callable:
    """The forward, raising NotImplementedDerivative when an inexact array input is
    differentiated (jvp, vjp, grad): ATen implements no derivative for it, and torch's backward
    raises."""

    @functools.wraps(impl)
    def run(*args, **kwargs):
        leaves, tree = jax.tree.flatten((args, kwargs), is_leaf=lambda x: x is None)
        where = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.inexact)]

        @jax.custom_jvp
        def forward(*arrays):
            filled = list(leaves)
            for i, x in zip(where, arrays):
                filled[i] = x
            a, k = jax.tree.unflatten(tree, filled)
            return impl(*a, **k)

        @forward.defjvp
        def _(primals, tangents):
            raise NotImplementedDerivative(f"the derivative for aten::{name} is not implemented (in ATen either)")

        return forward(*[leaves[i] for i in where])

    return run


def variant_op(registry: Registry, name: str):
    """The training-IR variant `name` (`copy_`, `_native_batch_norm_legit_functional`) as one
    callable over `registry`'s ops, with `differentiable_inputs` as an Op has them."""
    variant = _forward.variants()[name]
    run = functools.partial(variant.run, registry)
    run.differentiable_inputs = variant.differentiable_inputs(registry)  # type: ignore[attr-defined]  # read as Op's
    return run
