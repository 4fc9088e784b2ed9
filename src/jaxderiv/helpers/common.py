"""FunctionsManual helpers of the elementwise formulas, written from the math."""

from __future__ import annotations

import jax.numpy as jnp

from ..cxx import is_tensor
from ..namespace import helper


@helper("handle_r_to_c")
def handle_r_to_c(self_st, gradient_result):
    """A gradient for a real input is the real part of a complex gradient."""
    if gradient_result is None:
        return None
    if not jnp.issubdtype(self_st, jnp.complexfloating) and jnp.iscomplexobj(gradient_result):
        return jnp.real(gradient_result)
    return gradient_result


@helper("maybe_multiply")
def maybe_multiply(t, s):
    """t * s, skipping the multiplication when s is the literal 1."""
    if not is_tensor(s) and s == 1:
        return t
    return t * s
