"""Forward implementations of ATen's elementwise ops."""

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


@impl("acos")
def acos(self):
    return jnp.arccos(self)


@impl("add.Tensor")
def add_Tensor(self, other, alpha=1):
    return self + other * alpha if alpha != 1 else self + other


@impl("mul.Tensor")
def mul_Tensor(self, other):
    return self * other


@impl("rsqrt")
def rsqrt(self):
    return jax.lax.rsqrt(self)


@impl("sgn")
def sgn(self):
    return jnp.sign(self)


@impl("cos")
def cos(self):
    return jnp.cos(self)


@impl("pow.Tensor_Scalar")
def pow_Tensor_Scalar(self, exponent):
    return jnp.power(self, exponent)
