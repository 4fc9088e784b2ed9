"""FunctionsManual helpers of the unary elementwise formulas, and the at:: functions they call.

Gradients follow PyTorch's convention: for a complex input, the conjugate Wirtinger form.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..forward.unary import sgn
from ..namespace import constant, helper
from .core import dtype_of

constant("M_LN2", math.log(2.0))


@helper("deg2rad_backward")
def deg2rad_backward(grad):
    return grad * (math.pi / 180)


@helper("rad2deg_backward")
def rad2deg_backward(grad):
    return grad * (180 / math.pi)


@helper("sinc_backward")
def sinc_backward(grad, self):
    """grad * conj((pi x cos(pi x) - sin(pi x)) / (pi x^2)), 0 at x == 0 (sinc's flat top)."""
    x_pi = self * math.pi
    x2_pi = self * self * math.pi
    zero = x2_pi == 0
    out = grad * jnp.conj((x_pi * jnp.cos(x_pi) - jnp.sin(x_pi)) / jnp.where(zero, 1, x2_pi))
    return jnp.where(zero, jnp.zeros((), jnp.result_type(out)), out)


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
def sgn_backward(z_or_sgn, grad, sgn_or_z):
    """(grad - sgn(z)^2 conj(grad)) / (2|z|) for complex z, 0 at z == 0; sign is flat for real z.

    The order of z and sgn(z) differs between files: 1.7 passes (result, grad, self), later
    files (self, grad, result). z conj(sgn(z)) = |z| and sgn(sgn(z)) = sgn(z) read the same
    either way, so either order gives the same gradient.
    """
    if not jnp.iscomplexobj(z_or_sgn):
        return jnp.zeros_like(z_or_sgn)
    a = jnp.real(z_or_sgn * jnp.conj(sgn_or_z))
    s = sgn(z_or_sgn)
    zero = a == 0
    safe_a = jnp.where(zero, 1, a)
    return jnp.where(zero, jnp.zeros((), grad.dtype), (grad - s * s * jnp.conj(grad)) / (2 * safe_a))


@helper("polar_backward")
def polar_backward(grad, result):
    """(Re(conj(grad) sgn(z)), Re(conj(grad) i z)) for z = abs * e^(i angle)."""
    if grad is None:
        return None, None
    grad_conj = jnp.conj(grad)
    return jnp.real(grad_conj * sgn(result)), jnp.real(grad_conj * result * 1j)


@helper("_to_copy_backward")
def _to_copy_backward(grad, self_options):
    """grad copied back to self's dtype; a real self takes the real part of a complex grad."""
    dtype = dtype_of(self_options)
    if jnp.iscomplexobj(grad) and not jnp.issubdtype(dtype, jnp.complexfloating):
        grad = jnp.real(grad)
    return grad.astype(dtype)


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
