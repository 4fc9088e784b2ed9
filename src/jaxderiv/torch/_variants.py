"""Training-IR ops that derivatives.yaml does not list but that are variants of an entry it
does: each runs that entry's op, so its derivatives are that entry's formulas, and computes
what the variant adds (updated running statistics) with no gradient, as ATen's buffers have."""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from ..registry import Registry

__all__ = ["VARIANTS", "Variant"]


@dataclasses.dataclass(frozen=True)
class Variant:
    """An overload that runs the op of `entry` and adds outputs of its own."""

    entry: str  # the derivatives.yaml entry whose formulas apply
    run_with: Callable  # (entry_op, *node_args) -> the variant's outputs
    gradient: str  # what the docs table says of its gradient

    def run(self, registry: Registry, *args, **kwargs):
        return self.run_with(registry.op(self.entry), *args, **kwargs)

    def describe(self, registry: Registry) -> str:
        return f"{registry.spec[self.entry].location} ({self.entry}'s formulas; {self.gradient})"


def _batch_norm_functional(op, input, weight, bias, running_mean, running_var, training, momentum, eps):
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


VARIANTS: dict[str, Variant] = {
    "_native_batch_norm_legit_functional": Variant(
        "_native_batch_norm_legit", _batch_norm_functional, "outputs 0-2 as the entry; the running statistics carry none"
    ),
}
