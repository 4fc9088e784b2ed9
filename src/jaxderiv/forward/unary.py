"""Forward implementations of ATen's elementwise unary ops."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import impl


@impl("abs")
def abs(self):
    return jnp.abs(self)


@impl("sin")
def sin(self):
    return jnp.sin(self)


@impl("cos")
def cos(self):
    return jnp.cos(self)


@impl("acos")
def acos(self):
    return jnp.arccos(self)


@impl("rsqrt")
def rsqrt(self):
    return jax.lax.rsqrt(self)


@impl("sgn")
def sgn(self):
    return jnp.sign(self)
