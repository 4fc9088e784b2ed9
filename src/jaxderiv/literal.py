"""An op's formulas as plain `jax.custom_vjp` / `jax.custom_jvp` objects.

`Op` gives one function both modes. These give one mode each, in JAX's own classes, for
users who want exactly those: `vjp_op` evaluates the backward formula and has no forward
mode (JAX refuses jvp of a custom_vjp); `jvp_op` evaluates the `result:` formula and gets
reverse mode by JAX transposing that formula.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .entry_rules import is_tensor_arg as _is_tensor_arg
from .op import Op
from .registry import default_registry
from .rules import shaped_like

__all__ = ["vjp_op", "jvp_op"]


def _static_positions(op: Op) -> tuple[int, ...]:
    return tuple(i for i, a in enumerate(op.schema.arguments) if not _is_tensor_arg(a))


def _as_call(op: Op, args):
    """All arguments positional, in schema order, as Op takes them: keyword-only ones by name."""
    params = op.schema.arguments
    positional = tuple(v for a, v in zip(params, args) if not a.kwarg_only)
    return positional, {a.name: v for a, v in zip(params, args) if a.kwarg_only}


def _scatter(op: Op, call, per_slot):
    """Per-argument cotangents (None, array or list) from per-array ones."""
    out: dict[str, Any] = {}
    for a in op.schema.arguments:
        if _is_tensor_arg(a):
            value = call.bound[a.name]
            out[a.name] = [None] * len(value) if a.is_tensor_list else None
    for s, g in zip(call.slots, per_slot):  # None stands for a zero cotangent
        if s.index is None:
            out[s.arg] = g
        else:
            out[s.arg][s.index] = g
    return tuple(out[a.name] for a in op.schema.arguments if _is_tensor_arg(a))


def _make(op: Op, kind: str):
    static = _static_positions(op)

    def merge(statics, tensors):
        """The full positional argument list from the static values and the tensor arguments."""
        st, te = iter(statics), iter(tensors)
        return [next(st) if i in static else next(te) for i in range(len(op.schema.arguments))]

    def split(args):
        return tuple(a for i, a in enumerate(args) if i not in static)

    def primal(*args):
        call, xs = op.apply(*_as_call(op, args))
        return call.pack(call.primal(*xs))

    fn: jax.custom_vjp | jax.custom_jvp
    if kind == "vjp":
        fn = jax.custom_vjp(primal, nondiff_argnums=static)

        def fwd(*args):
            call, xs = op.apply(*_as_call(op, args))
            ys = call.primal(*xs)
            return call.pack(ys), (split(args), ys)

        def bwd(*rest):
            (tensors, ys), ct = rest[-2], rest[-1]
            call, xs = op.apply(*_as_call(op, merge(rest[: len(static)], tensors)))
            cts = list(ct) if isinstance(ct, (tuple, list)) else [ct]
            cts = [c for c, d in zip(cts, call.flags) if d]
            wanted = tuple(
                s.arg in op.differentiable_inputs and jnp.issubdtype(x.dtype, jnp.inexact)
                for s, x in zip(call.slots, xs)
            )
            gs = call.cotangent_map(xs, ys, cts, wanted)
            # as in rules.py: summed back over broadcast dimensions, in the input's dtype
            return _scatter(op, call, [None if g is None else shaped_like(g, x) for g, x in zip(gs, xs)])

        fn.defvjp(fwd, bwd)
    else:
        fn = jax.custom_jvp(primal, nondiff_argnums=static)

        def jvp(*rest):
            statics, primals, tangents = rest[: len(static)], rest[-2], rest[-1]
            call, xs = op.apply(*_as_call(op, merge(statics, primals)))
            _, ts = op.apply(*_as_call(op, merge(statics, tangents)))
            ys = call.primal(*xs)
            ts = [t if s.arg in op.differentiable_inputs else None for t, s in zip(ts, call.slots)]
            diff = iter(call.tangent_map(xs, ys, ts))
            out_t = [shaped_like(next(diff), y) if d else jnp.zeros_like(y) for y, d in zip(ys, call.flags)]
            return call.pack(ys), call.pack(out_t)

        fn.defjvp(jvp)
    fn.__doc__ = f"aten::{op.name} as jax.custom_{kind}; all arguments positional: {op.schema}"
    return fn


def vjp_op(name: str, registry=None):
    """`jax.custom_vjp` of op `name` whose backward is the spec's backward formula."""
    return _make((registry or default_registry()).op(name), "vjp")


def jvp_op(name: str, registry=None):
    """`jax.custom_jvp` of op `name` whose JVP is the spec's `result:` formula."""
    return _make((registry or default_registry()).op(name), "jvp")
