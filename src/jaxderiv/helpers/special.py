"""FunctionsManual helpers of the special-function formulas (Bessel, mvlgamma, logit), from the math."""

from __future__ import annotations

import jax.numpy as jnp

from ..cxx import is_tensor
from ..forward.special import digamma, i0, special_i0e
from ..namespace import helper, method


def _safe_at_zero(self):
    """Where |x| <= eps the quotient I1(x)/x is 0/0: the mask, and x moved off zero there."""
    eps = jnp.finfo(jnp.result_type(self)).eps
    not_tiny = jnp.abs(self) > eps
    return not_tiny, jnp.where(not_tiny, self, eps)


@helper("i1_backward")
def i1_backward(grad, self, result):
    """I1'(x) = I0(x) - I1(x)/x, with its limit 1/2 at x = 0."""
    not_tiny, safe = _safe_at_zero(self)
    return grad * jnp.where(not_tiny, i0(safe) - result * (1 / safe), 0.5)


@helper("i1e_backward")
def i1e_backward(grad, self, result):
    """i1e'(x) = i0e(x) - i1e(x) (sgn(x) + 1/x), with its limit 1/2 at x = 0."""
    not_tiny, safe = _safe_at_zero(self)
    return grad * jnp.where(not_tiny, special_i0e(safe) - result * (jnp.sign(safe) + 1 / safe), 0.5)


@helper("mvlgamma_backward")
def mvlgamma_backward(grad, self, p):
    """d/dx sum_j lgamma(x - j/2) = sum_j digamma(x - j/2), j = 0 .. p-1."""
    offsets = jnp.arange(-p / 2 + 0.5, 0.5, 0.5, dtype=jnp.result_type(self))
    return grad * jnp.sum(digamma(self[..., None] + offsets), axis=-1)


@helper("infinitely_differentiable_logit_backward")
def infinitely_differentiable_logit_backward(grad, self, eps):
    """grad / (x (1 - x)) inside [eps, 1 - eps] and 0 outside; without eps, NaN outside [0, 1].

    Built from `where` only, so that it can itself be differentiated (the double-backward
    path). Written as grad times a factor so that it stays linear in grad where the factor is
    0 or NaN: forward mode transposes it, and must see PyTorch's values there too.
    """
    if eps is not None:
        inside, outside = (self >= eps) & (self <= 1.0 - eps), 0.0
    else:
        inside, outside = (self >= 0.0) & (self <= 1.0), jnp.nan
    return grad * jnp.where(inside, 1.0 / (self * (1.0 - self)), outside)


@helper("logit_backward")
def logit_backward(grad, self, eps=None):
    """ATen's logit_backward kernel, the formula's branch without grad mode: as above, except
    that a negative eps means no clamping, as an absent one does (NaN outside [0, 1])."""
    eps = -1.0 if eps is None else eps
    factor = jnp.where((self == 0) | (self == 1), jnp.inf, 1.0 / (self * (1.0 - self)))
    if eps < 0:
        factor = jnp.where((self < 0) | (self > 1), jnp.nan, factor)
    else:
        factor = jnp.where((self < eps) | (self > 1.0 - eps), 0.0, factor)
    return grad * factor


@method("equal")
def equal(self, other):
    """`Scalar.equal(v)`: whether the number equals v (xlogy.Scalar_Self asks `self.equal(0)`)."""
    if is_tensor(self):
        raise TypeError("Tensor.equal (at::equal) is not available in formulas; only Scalar.equal is")
    return self == other


@method("mul_")
def mul_(self, other):
    """In-place multiplication keeps self's dtype (polygamma_'s result formula: `self_t.mul_(...)`)."""
    return jnp.multiply(self, other).astype(jnp.result_type(self))
