"""FunctionsManual helpers of the elementwise binary formulas, and the at:: functions they call.

The helpers follow PyTorch's conjugate-Wirtinger convention (`grad * conj(d out / d in)`), like
the formulas that call them; the rule mechanism converts to JAX's.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..forward import binary as aten
from ..namespace import helper
from .common import handle_r_to_c
from .tensor_methods import conj, masked_fill

# at::where, at::pow and at::lerp are overloaded (Tensor or Scalar operands); the forward
# implementations take either, with ATen's type promotion.
helper("where")(aten.where)
helper("pow")(aten.pow)
helper("lerp")(aten.lerp)


@helper("masked_fill_inplace_if_safe")
def masked_fill_inplace_if_safe(x, mask, value):
    """torch 2.14's `x.masked_fill_(mask, value)` when x may be written in place, else
    `x.masked_fill(mask, value)`: the same values either way (the gradients of min/max/clamp
    with tensor bounds)."""
    return masked_fill(x, mask, value)


def _zero(grad):
    """`at::scalar_tensor(0., grad.options())`: a 0-d zero of grad's dtype, which where keeps."""
    return jnp.zeros((), jnp.result_type(grad))


@helper("mul_tensor_backward")
def mul_tensor_backward(grad, other, self_st):
    return handle_r_to_c(self_st, grad * conj(other))


@helper("div_tensor_self_backward")
def div_tensor_self_backward(grad, other, self_st, rounding_mode=None):
    """Rounded division is piecewise constant: its gradient is zero."""
    if rounding_mode is not None:
        return jnp.zeros(jnp.shape(grad), self_st)
    return handle_r_to_c(self_st, grad / conj(other))


@helper("div_tensor_other_backward")
def div_tensor_other_backward(grad, self, other, rounding_mode=None):
    other_st = jnp.result_type(other)
    if rounding_mode is not None:
        return jnp.zeros(jnp.shape(grad), other_st)
    return handle_r_to_c(other_st, -grad * conj(self / other / other))


@helper("pow_backward")
def pow_backward(grad, self, exponent):
    """x^0 is constant: a zero gradient, also at x = 0 where exponent * x^-1 would be 0 * inf."""
    if exponent == 0:
        return jnp.zeros_like(self)
    return handle_r_to_c(jnp.result_type(self), grad * conj(exponent * aten.pow(self, exponent - 1)))


@helper("pow_backward_self")
def pow_backward_self(grad, self, exponent):
    """0 where the exponent is 0. The mask multiplies grad (PyTorch masks the product), so that
    forward mode, the transposed formula, gives 0 there too instead of 0 * inf."""
    out = grad * jnp.where(exponent == 0, 0, conj(exponent * aten.pow(self, exponent - 1)))
    return handle_r_to_c(jnp.result_type(self), out)


@helper("pow_backward_exponent")
def pow_backward_exponent(grad, self, exponent, result):
    """d(a^b)/db = a^b log(a), for a Tensor or Scalar base a.

    At a = 0 it is 0 where b is real and >= 0 (the limit as a -> +0, b -> +0), and -inf
    where b < 0, as in PyTorch.
    """
    if jnp.iscomplexobj(exponent):
        real_nonnegative = (jnp.imag(exponent) == 0) & (jnp.real(exponent) >= 0)
    else:
        real_nonnegative = exponent >= 0
    base = jnp.asarray(self, aten.result_type(self, exponent))
    out = grad * jnp.where((base == 0) & real_nonnegative, _zero(grad), conj(result * jnp.log(base)))
    return handle_r_to_c(jnp.result_type(exponent), out)


@helper("atan2_backward")
def atan2_backward(grad, self, other, grad_input_mask):
    """At the origin, where atan2 has no derivative, both gradients are 0 (PyTorch's choice)."""
    if grad is None:
        return None, None
    denom = self * self + other * other
    recip = jnp.where(denom == 0, 0, 1 / denom)
    return (grad * other * recip if grad_input_mask[0] else None, grad * -self * recip if grad_input_mask[1] else None)


@helper("copysign_tensor_self_backward")
def copysign_tensor_self_backward(grad, self, result):
    """grad * result / self (the sign flip), taken as 0 at self = 0, the kink of |self|."""
    return grad * jnp.where(self == 0, 0, result / self)


@helper("copysign_tensor_backward")
def copysign_tensor_backward(grad, self, other):
    """The 1.7 form, from other instead of the result: the same ratio."""
    return copysign_tensor_self_backward(grad, self, aten.copysign(self, other))


@helper("clamp_backward")
def clamp_backward(grad, self, min, max):
    """grad where min <= self <= max: at a bound the subgradient is 1, as in PyTorch.

    min and max are Scalars (clamp) or Tensors (clamp.Tensor), each possibly None.
    """
    keep = None
    if min is not None:
        keep = self >= min
    if max is not None:
        keep = self <= max if keep is None else keep & (self <= max)
    return grad if keep is None else jnp.where(keep, grad, _zero(grad))


@helper("clamp_backward_min_max")
def clamp_backward_min_max(grad, self, min, max, grad_input_mask):
    """The bound that clamp returned gets the gradient; with min > max that is always max."""
    if grad is None:
        return None, None
    if min is not None and max is not None:
        return (
            jnp.where((self < min) & (min < max), grad, _zero(grad)) if grad_input_mask[0] else None,
            jnp.where((self > max) | (max < min), grad, _zero(grad)) if grad_input_mask[1] else None,
        )
    if min is not None and grad_input_mask[0]:
        return jnp.where(self < min, grad, _zero(grad)), None
    if max is not None and grad_input_mask[1]:
        return None, jnp.where(self > max, grad, _zero(grad))
    return None, None
