"""Forward implementations of ATen's elementwise binary and ternary ops."""

from __future__ import annotations

import jax.numpy as jnp

from . import impl


@impl("add.Tensor")
def add_Tensor(self, other, alpha=1):
    return self + other * alpha if alpha != 1 else self + other
