"""Ops that derivatives.yaml does not list but that are variants of entries it does: each runs
those entries' ops, so its derivatives are their formulas, and computes what the variant adds
(updated running statistics, a dropout mask drawn from a key) with no gradient, as ATen's
buffers have. `copy_`, whose derivative is VariableTypeManual's, is `expand` then `_to_copy`."""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from ..forward.nn import dropout_with_mask
from ..op import Op
from ..registry import Registry

__all__ = ["VARIANTS", "Variant"]


@dataclasses.dataclass(frozen=True)
class Variant:
    """An overload that runs the op of `entry` and adds outputs of its own."""

    entry: str  # the derivatives.yaml entry whose formulas apply
    run_with: Callable  # (registry, entry_op, *node_args) -> the variant's outputs
    gradient: str  # what the docs table says of its gradient

    random: bool = False  # takes `key=`: a jax.random key of its own for each node
    inputs: tuple[str, ...] | None = None  # the arguments it differentiates; None: the entry's

    def differentiable_inputs(self, registry: Registry) -> tuple[str, ...]:
        return self.inputs if self.inputs is not None else tuple(registry.op(self.entry).differentiable_inputs)

    def run(self, registry: Registry, *args, **kwargs):
        return self.run_with(registry, registry.op(self.entry), *args, **kwargs)

    def describe(self, registry: Registry) -> str:
        return f"{registry.spec[self.entry].location} ({self.entry}'s formulas; {self.gradient})"


def _batch_norm_functional(registry, op, input, weight, bias, running_mean, running_var, training, momentum, eps):
    """`_native_batch_norm_legit_functional`: `_native_batch_norm_legit` plus the running
    statistics it would update in place: (1 - momentum) * old + momentum * batch statistic,
    the variance unbiased (ATen's batch_norm_cpu_update_stats)."""
    out, save_mean, save_invstd = op(input, weight, bias, running_mean, running_var, training, momentum, eps)
    if not training:
        return out, save_mean, save_invstd, running_mean, running_var
    x = jax.lax.stop_gradient(input)
    axes = (0,) + tuple(range(2, x.ndim))
    n = x.size // x.shape[1]
    mean = jnp.mean(x, axis=axes)
    var = jnp.sum(jnp.square(x - mean.reshape((1, -1) + (1,) * (x.ndim - 2))), axis=axes) / max(n - 1, 1)
    new_mean = (1 - momentum) * running_mean + momentum * mean.astype(running_mean.dtype)
    new_var = (1 - momentum) * running_var + momentum * var.astype(running_var.dtype)
    return out, save_mean, save_invstd, new_mean, new_var


def _native_dropout(registry, op, input, p, train, *, key=None):
    """`native_dropout` with the mask drawn from `key`: (input * mask / (1 - p), mask), mask
    ~ Bernoulli(1 - p); the identity when not training. ATen's schema has no Generator, so the
    entry's op is rebuilt around this draw: its derivatives stay the entry's formulas."""
    x = jnp.asarray(input)
    if train is False or p == 0:
        mask = jnp.ones(x.shape, jnp.bool_)
    elif key is None:
        raise ValueError("native_dropout in training mode needs randomness: pass key=jax.random.key(...) to apply()")
    else:
        mask = jax.random.bernoulli(key, 1.0 - p, x.shape)

    def forward(input, p, train):
        return dropout_with_mask(input, p, train, mask)

    return Op(op.entry, forward, calls=registry._entry_call)(input, p, train)


def _copy(registry, op, self, src, non_blocking=False):
    """`copy_`: `self` overwritten by `src` broadcast to its shape and cast to its dtype. torch
    differentiates it by hand (VariableTypeManual's CopyBackwards: src's gradient summed to
    its shape and cast back to its dtype, the real part for a real src; none for self), which
    is what the formulas of `expand` and `_to_copy`, run here, state."""
    target = jnp.asarray(self)
    return op(registry.op("expand")(src, list(target.shape)), dtype=target.dtype)


VARIANTS: dict[str, Variant] = {
    "copy_": Variant("_to_copy", _copy, "expand's before them; none for self", inputs=("self", "src")),
    "native_dropout": Variant(
        "native_dropout", _native_dropout, "the entry's formulas, the mask drawn from apply's key", random=True
    ),
    "_native_batch_norm_legit_functional": Variant(
        "_native_batch_norm_legit",
        _batch_norm_functional,
        "outputs 0-2 as the entry; the running statistics carry none",
    ),
}
