"""Dropout: torch.nn.Dropout with its mask drawn from NNX rngs (the same key gives the same mask)."""

from __future__ import annotations

import jax
from flax import nnx

from . import functional as F


class Dropout(nnx.Module):
    """Zeroes elements with probability p in training mode, scaling the rest by 1/(1-p).

    `deterministic` (set by `model.eval()` / `model.train()`, as for flax's Dropout) turns it off.

    >>> drop = Dropout(0.5, rngs=nnx.Rngs(dropout=0))
    >>> drop(jnp.ones((4,))).shape
    (4,)
    """

    def __init__(
        self,
        p: float = 0.5,
        *,
        deterministic: bool = False,
        rng_collection: str = "dropout",
        rngs: nnx.Rngs | None = None,
    ):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.deterministic, self.rng_collection = p, deterministic, rng_collection
        self.rngs = rngs[rng_collection].fork() if rngs is not None else nnx.data(None)

    def __call__(self, x, *, deterministic: bool | None = None, key: jax.Array | None = None):
        """`key` overrides the layer's rngs for this call."""
        off = self.deterministic if deterministic is None else deterministic
        if off or self.p == 0.0:
            return x
        if key is None:
            if self.rngs is None:
                raise ValueError(
                    "Dropout in training mode needs rngs (Dropout(p, rngs=nnx.Rngs(dropout=0))) or a key argument"
                )
            key = self.rngs()
        return F.dropout(x, self.p, key)
