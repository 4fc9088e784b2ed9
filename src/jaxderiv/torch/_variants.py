"""Ops that derivatives.yaml does not list but that are variants of entries it does: each runs
those entries' ops, so its derivatives are their formulas, and computes what the variant adds
(updated running statistics, a dropout mask drawn from a key) with no gradient, as ATen's
buffers have. `copy_` (and its functional form `copy`), whose derivative is VariableTypeManual's,
is `expand` then `_to_copy`."""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import jax
import jax.numpy as jnp

from ..forward.nn import dropout_with_mask
from ..op import Op
from ..registry import Registry
from ..schema import Argument, Type

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
    return _with_mask_argument(registry, op.entry.name)(input, p, train, mask=mask)


@functools.lru_cache(maxsize=None)
def _with_mask_argument(registry: Registry, name: str) -> Op:
    """The entry's op with the drawn mask as one more (keyword, never differentiated) Tensor
    argument. The mask must be an argument, not a value the forward closes over: JAX may run
    an op's derivative rule after the trace that drew the mask has ended (`grad` of a jitted
    step), and a closed-over traced mask would then be stale."""
    entry = registry.spec[name]
    mask = Argument("mask", Type.parse("Tensor"), kwarg_only=True)
    schema = dataclasses.replace(entry.schema, arguments=entry.schema.arguments + (mask,))
    return Op(dataclasses.replace(entry, schema=schema), dropout_with_mask, calls=registry._entry_call)


def _rrelu_with_noise_functional(
    registry, op, self, noise, lower=0.125, upper=0.3333333333333333, training=False, generator=None, *, key=None
):
    """`rrelu_with_noise_functional` in training: ATen draws each slope into `noise` (U(lower,
    upper) where self <= 0, 1 elsewhere) and its formula reads `noise` for the gradient. The
    functional graph hands it an empty tensor, so the slopes are drawn from the node's key and
    passed as `noise`: the output is self * noise and the gradient the entry's formula of it."""
    x = jnp.asarray(self)
    if training and upper - lower > 1e-6:
        if key is None and generator is None:
            raise ValueError("rrelu in training mode draws its slopes: pass key=jax.random.key(...) to apply()")
        slopes = jax.random.uniform(key if generator is None else generator, x.shape, x.dtype, lower, upper)
        noise = jnp.where(x > 0, jnp.ones((), x.dtype), slopes)
    return op(self, noise, lower, upper, training)


def _bernoulli_p(registry, op, self, p=0.5, *, generator=None, key=None):
    """`bernoulli.p`: ATen's kernel fills a tensor like `self` in place (`bernoulli_.float`),
    whose entry states the gradient (none for `self`); the draws come from the node's key."""
    if generator is None and key is None:
        raise ValueError("bernoulli draws random values: pass key=jax.random.key(...) to apply()")
    return op(self, p, generator=key if generator is None else generator)


def _copy(registry, op, self, src, non_blocking=False):
    """`copy_`: `self` overwritten by `src` broadcast to its shape and cast to its dtype. torch
    differentiates it by hand (VariableTypeManual's CopyBackwards: src's gradient summed to
    its shape and cast back to its dtype, the real part for a real src; none for self), which
    is what the formulas of `expand` and `_to_copy`, run here, state."""
    target = jnp.asarray(self)
    return op(registry.op("expand")(src, list(target.shape)), dtype=target.dtype)


VARIANTS: dict[str, Variant] = {
    "copy_": Variant("_to_copy", _copy, "expand's before them; none for self", inputs=("self", "src")),
    "copy": Variant("_to_copy", _copy, "expand's before them; none for self", inputs=("self", "src")),
    "native_dropout": Variant(
        "native_dropout", _native_dropout, "the entry's formulas, the mask drawn from apply's key", random=True
    ),
    "rrelu_with_noise_functional": Variant(
        "rrelu_with_noise_functional",
        _rrelu_with_noise_functional,
        "the entry's formulas, the slopes drawn from apply's key",
        random=True,
    ),
    "bernoulli.p": Variant("bernoulli_.float", _bernoulli_p, "the entry's formulas: none", random=True),
    "_native_batch_norm_legit_functional": Variant(
        "_native_batch_norm_legit",
        _batch_norm_functional,
        "outputs 0-2 as the entry; the running statistics carry none",
    ),
}
