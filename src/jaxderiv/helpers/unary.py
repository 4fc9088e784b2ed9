"""FunctionsManual helpers of the unary elementwise formulas, and the at:: functions they call.

Gradients follow PyTorch's convention: for a complex input, the conjugate Wirtinger form.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..forward.unary import sgn
from ..namespace import constant, helper

constant("M_LN2", math.log(2.0))


@helper("deg2rad_backward")
def deg2rad_backward(grad):
    return grad * (math.pi / 180)


@helper("rad2deg_backward")
def rad2deg_backward(grad):
    return grad * (180 / math.pi)


@helper("log1p_backward")
def log1p_backward(grad, self):
    return grad / jnp.conj(self + 1)


@helper("angle_backward")
def angle_backward(grad, self):
    """i z / |z|^2 times grad, 0 at z == 0; a real input's angle is piecewise constant."""
    if not jnp.iscomplexobj(self):
        return jnp.zeros_like(self)
    abs2 = jnp.real(self * jnp.conj(self))
    safe = jnp.where(abs2 == 0, 1, abs2)
    return jnp.where(self == 0, jnp.zeros((), self.dtype), grad * self / safe * 1j)


@helper("sgn_backward")
def sgn_backward(result, grad, self):
    """grad/|z| - Re(grad/z) sgn(z) for complex z (0 at z == 0); sign is flat for real inputs."""
    if not jnp.iscomplexobj(self):
        return jnp.zeros_like(self)
    a = jnp.abs(self)
    zero = a == 0
    safe_a = jnp.where(zero, 1, a)
    safe_z = jnp.where(zero, 1, self)
    return jnp.where(zero, jnp.zeros((), grad.dtype), grad / safe_a - jnp.real(grad / safe_z) * result)


@helper("polar_backward")
def polar_backward(grad, result):
    """(Re(conj(grad) sgn(z)), Re(conj(grad) i z)) for z = abs * e^(i angle)."""
    if grad is None:
        return None, None
    grad_conj = jnp.conj(grad)
    return jnp.real(grad_conj * sgn(result)), jnp.real(grad_conj * result * 1j)


# -- at:: functions without a spec entry ---------------------------------------------------------


@helper("real")
def real(x):
    """ATen's real: a view of the real part; a real tensor is its own real part."""
    return jnp.real(x) if jnp.iscomplexobj(x) else x


@helper("imag")
def imag(x):
    if not jnp.iscomplexobj(x):
        raise TypeError("imag is not implemented for tensors with non-complex dtypes")
    return jnp.imag(x)


@helper("isfinite")
def isfinite(x):
    return jnp.isfinite(x)
