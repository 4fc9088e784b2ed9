"""Computation dtype of a layer, as flax's layers choose it: `dtype` if given, else the inputs' promoted type."""

from __future__ import annotations

import jax.numpy as jnp


def promote(*xs, dtype=None):
    """The arrays cast to one inexact dtype; `None` entries stay None."""
    present = [x for x in xs if x is not None]
    target = dtype if dtype is not None else jnp.result_type(*present)
    if not jnp.issubdtype(target, jnp.inexact):
        target = jnp.result_type(target, jnp.float32)
    return tuple(None if x is None else jnp.asarray(x, target) for x in xs)


def value(variable):
    """A variable's array, or None for an absent optional parameter."""
    return None if variable is None else variable[...]
