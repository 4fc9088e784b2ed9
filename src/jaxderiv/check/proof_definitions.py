"""What the names elementwise formulas call mean in sympy, over the reals.

FUNCTIONS and METHODS give the at:: functions, Tensor methods and FunctionsManual helpers of
elementwise formulas, CONSTANTS the named constants, written from PyTorch's math (not from this
project's JAX helpers, which these proofs judge); as_number and as_condition convert between
the booleans and numbers formulas mix. Helpers with kinks are sympy Piecewise expressions, so
that each smooth piece is compared on its own side. The ops themselves are in their op records:
each elementwise op's sympy definition (`definition`, the reference whose derivative its
formulas must equal), or why it has none (`without_meaning`), declared with their forwards in jaxderiv/forward.
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from ..records.symbolic_math import copysign, elu_backward, i0e, i1e, sigmoid

__all__ = [
    "METHODS",
    "FUNCTIONS",
    "CONSTANTS",
    "OPAQUE",
    "as_number",
    "as_condition",
]


class _Opaque:
    """A dtype, options, sizes or absent optional: only ever passed to what ignores it."""

    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE = _Opaque()


def as_number(v):
    """A boolean used as a number (`(x > 0).to(dtype)`, `mask * grad`) is 1 or 0."""
    if isinstance(v, bool):
        return sp.Integer(int(v))
    if isinstance(v, sp.logic.boolalg.Boolean) and not isinstance(v, sp.Symbol):
        return sp.Piecewise((1, v), (0, True))
    return v


def as_condition(v):
    """A number used as a condition is true where non-zero; mask symbols are conditions already."""
    if isinstance(v, bool):
        return sp.true if v else sp.false
    if isinstance(v, sp.logic.boolalg.Boolean) or (isinstance(v, sp.Symbol) and not v.is_real):
        return v
    return sp.Ne(v, 0)


def where(c, a, b):
    return sp.Piecewise((as_number(a), as_condition(c)), (as_number(b), True))


def _xlogy(x, y):
    x = as_number(x)
    return sp.Piecewise((0, sp.Eq(x, 0)), (x * sp.log(y), True))


# -- FunctionsManual helpers and ATen kernels the formulas call, as their math -----------------


def _softplus_backward(g, x, beta, threshold, *output):
    """The 1.7 kernel reads the output: z = exp(output * beta), grad * (z - 1) / z below threshold."""
    if output:
        z = sp.exp(output[0] * beta)
        below = g * (z - 1) / z
    else:
        below = g * sigmoid(beta * x)
    return sp.Piecewise((g, x * beta > threshold), (below, True))


def _rrelu_with_noise_backward(g, x, noise, lower, upper, training, is_result):
    """In training the noise is the slope; in evaluation the mean slope (lower + upper) / 2."""
    if training in (True, sp.true):
        return sp.Piecewise((g, x > 0), (g * noise, True))
    return sp.Piecewise((g, x > 0), (g * (lower + upper) / 2, True))


def _prelu_double_backward(gg_input, gg_weight, g_out, x, w):
    """Per element: gI = gO * (x > 0 ? 1 : w) and gW = gO * (x > 0 ? 0 : x)."""
    nonpositive = sp.Piecewise((0, x > 0), (1, True))
    return (
        sp.Piecewise((gg_input, x > 0), (gg_input * w, True)) + gg_weight * nonpositive * x,
        gg_weight * g_out * nonpositive,
        gg_input * g_out * nonpositive,
    )


def _sgn_backward(result, g, x):
    """grad / |x| - real(grad / conj(x)) * sgn(x), 0 at x = 0: zero for real x."""
    return sp.Piecewise((0, sp.Eq(sp.Abs(x), 0)), (g / sp.Abs(x) - g / x * result, True))


def _clamp_backward(g, x, lo, hi):
    keep = sp.true
    if lo is not None:
        keep = keep & (x >= lo)
    if hi is not None:
        keep = keep & (x <= hi)
    return sp.Piecewise((g, keep), (0, True))


def _clamp_backward_min_max(g, x, lo, hi, _mask):
    if lo is not None and hi is not None:
        return (sp.Piecewise((g, (x < lo) & (lo < hi)), (0, True)), sp.Piecewise((g, (x > hi) | (hi < lo)), (0, True)))
    if lo is not None:
        return (sp.Piecewise((g, x < lo), (0, True)), sp.Integer(0))
    return (sp.Integer(0), sp.Piecewise((g, x > hi), (0, True)))


def _pow_backward(g, x, e):
    return sp.Piecewise((0, sp.Eq(e, 0)), (g * e * x ** (e - 1), True))


def _pow_backward_exponent(g, x, e, result):
    return g * sp.Piecewise((0, sp.Eq(x, 0) & (e >= 0)), (result * sp.log(x), True))


def _div_self_backward(g, other, _type, rounding_mode=None):
    return sp.Integer(0) if rounding_mode is not None else g / other


def _div_other_backward(g, x, other, rounding_mode=None):
    return sp.Integer(0) if rounding_mode is not None else -g * x / other**2


def _logit_backward(g, x, eps=None):
    """grad / (x (1 - x)); with eps, 0 outside [eps, 1 - eps]."""
    if eps is None:
        return g / (x * (1 - x))
    return sp.Piecewise((g / (x * (1 - x)), (x >= eps) & (x <= 1 - eps)), (0, True))


def _gelu_backward(g, x, approximate="none"):
    if approximate not in ("none", None):
        raise ValueError("the tanh form of gelu has no definition here")
    return g * ((1 + sp.erf(x / sp.sqrt(2))) / 2 + x * sp.exp(-(x**2) / 2) / sp.sqrt(2 * sp.pi))


def _softplus_double_backward(g, x, beta, threshold):
    """d/dx of sigmoid(beta x), zero where softplus is the identity."""
    s = sigmoid(beta * x)
    return g * beta * s * (1 - s) * sp.Piecewise((1, x * beta < threshold), (0, True))


def _silu_backward(g, x):
    s = sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _mvlgamma_backward(g, x, p):
    return g * sum(sp.digamma(x - sp.Rational(j, 2)) for j in range(int(p)))


_UNARY = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
    "rsqrt": lambda x: 1 / sp.sqrt(x), "reciprocal": lambda x: 1 / x, "neg": lambda x: -x,
    "sgn": sp.sign, "sign": sp.sign, "abs": sp.Abs, "erf": sp.erf, "erfinv": sp.erfinv, "exp2": lambda x: 2**x,
    "digamma": sp.digamma, "lgamma": sp.loggamma, "sigmoid": sigmoid,
    "square": lambda x: x**2, "log1p": lambda x: sp.log(1 + x),
    "special_i1": lambda x: sp.besseli(1, x), "special_i1e": i1e, "special_i0e": i0e, "i0": lambda x: sp.besseli(0, x),
}  # fmt: skip

# at:: functions and FunctionsManual helpers, called as `name(args)` or `x.name(args)`.
FUNCTIONS: dict[str, Callable] = {
    **_UNARY,
    "pow": lambda x, e: x**e,
    "div": lambda x, y: x / y,
    "mul": lambda x, y: x * y,
    "sub": lambda x, y: x - y,
    "add": lambda x, y: x + y,
    "polygamma": lambda n, x: sp.polygamma(n, x),
    "special_zeta": lambda s, q: sp.zeta(s, q),
    "xlogy": _xlogy,
    "where": where,
    "lerp": lambda x, e, w: x + w * (e - x),
    "zeros_like": lambda *_: sp.Integer(0),
    "zeros": lambda *_: sp.Integer(0),
    "_to_copy": lambda x, *_: x,
    "scalar_tensor": lambda v, *_: v,
    "scalar_to_tensor": lambda v: v,
    "isfinite": lambda _x: sp.true,
    "handle_r_to_c": lambda _type, x: x,
    "maybe_multiply": lambda x, s: x * s,
    "mul_tensor_backward": lambda g, other, _type: g * other,
    "div_tensor_self_backward": _div_self_backward,
    "div_tensor_other_backward": _div_other_backward,
    "pow_backward": _pow_backward,
    "pow_backward_self": _pow_backward,
    "pow_backward_exponent": _pow_backward_exponent,
    "atan2_backward": lambda g, x, y, _mask: (g * y / (x**2 + y**2), -g * x / (x**2 + y**2)),
    "copysign_tensor_self_backward": lambda g, x, result: g * sp.Piecewise((0, sp.Eq(x, 0)), (result / x, True)),
    "copysign_tensor_backward": lambda g, x, y: g * sp.Piecewise((0, sp.Eq(x, 0)), (copysign(x, y) / x, True)),
    "clamp_backward": _clamp_backward,
    "clamp_backward_min_max": _clamp_backward_min_max,
    "deg2rad_backward": lambda g: g * sp.pi / 180,
    "rad2deg_backward": lambda g: g * 180 / sp.pi,
    "log1p_backward": lambda g, x: g / (1 + x),
    "sigmoid_backward": lambda g, y: g * (1 - y) * y,
    "tanh_backward": lambda g, y: g * (1 - y**2),
    "sgn_backward": _sgn_backward,
    "angle_backward": lambda g, x: sp.Integer(0),  # real inputs: angle is 0 or pi, locally constant
    "i1_backward": lambda g, x, result: g * (sp.besseli(0, x) - result / x),
    "i1e_backward": lambda g, x, result: g * (i0e(x) - result * (sp.sign(x) + 1 / x)),
    "mvlgamma_backward": _mvlgamma_backward,
    "logit_backward": _logit_backward,
    "infinitely_differentiable_logit_backward": _logit_backward,
    "threshold_backward": lambda g, x, t: sp.Piecewise((0, x <= t), (g, True)),
    "hardtanh_backward": lambda g, x, lo, hi: sp.Piecewise((0, (x <= lo) | (x >= hi)), (g, True)),
    "leaky_relu_backward": lambda g, x, slope, _is_result: sp.Piecewise((g, x > 0), (g * slope, True)),
    "hardsigmoid_backward": lambda g, x: sp.Piecewise((g / 6, (x > -3) & (x < 3)), (0, True)),
    "hardswish_backward": lambda g, x: sp.Piecewise((0, x < -3), (g * (x / 3 + sp.Rational(1, 2)), x <= 3), (g, True)),
    "hardshrink_backward": lambda g, x, lambd: sp.Piecewise((0, (x >= -lambd) & (x <= lambd)), (g, True)),
    "softshrink_backward": lambda g, x, lambd: sp.Piecewise((g, (x < -lambd) | (x > lambd)), (0, True)),
    "elu_backward": elu_backward,
    "softplus_backward": _softplus_backward,
    "softplus_double_backward": _softplus_double_backward,
    "log_sigmoid_backward": lambda g, x, _buffer: g * sigmoid(-x),
    "log_sigmoid_double_backward": lambda g, x: g * (sigmoid(x) - 1) * sigmoid(x),
    "silu_backward": _silu_backward,
    "infinitely_differentiable_silu_backward": _silu_backward,
    "gelu_backward": _gelu_backward,
    "infinitely_differentiable_gelu_backward": _gelu_backward,
    "rrelu_with_noise_backward": _rrelu_with_noise_backward,
    "prelu_backward": lambda g, x, w: (
        sp.Piecewise((g, x > 0), (g * w, True)),
        sp.Piecewise((0, x > 0), (g * x, True)),
    ),
    "prelu_double_backward": _prelu_double_backward,
}

# Methods `x.name(args)` that are not functions of x's value alone (x is the first argument).
METHODS: dict[str, Callable] = {
    "conj": lambda x: x, "conj_physical": lambda x: x, "conj_physical_": lambda x: x,
    "clone": lambda x: x, "contiguous": lambda x: x, "toDouble": lambda x: x, "toFloat": lambda x: x,
    "sum": lambda x: x,  # one element: a sum over the elements a value was broadcast to is the element
    "to": lambda x, *_: as_number(x), "type_as": lambda x, _y: as_number(x),
    "isnan": lambda _x: sp.false, "defined": lambda _x: sp.true, "isComplex": lambda _x: sp.false,
    "has_value": lambda x: sp.false if x is None else sp.true,
    "equal": lambda x, y: sp.Eq(x, y),
    "logical_or_": lambda x, y: sp.Or(as_condition(x), as_condition(y)),
    "logical_not_": lambda x: sp.Not(as_condition(x)),
    "masked_fill_": lambda x, mask, v: sp.Piecewise((as_number(v), as_condition(mask)), (x, True)),
    "fill_": lambda _x, v: v, "mul_": lambda x, y: x * y,
    "new_zeros": lambda *_: sp.Integer(0),
    "scalar_type": lambda _x: OPAQUE, "options": lambda _x: OPAQUE, "dtype": lambda _x: OPAQUE, "sizes": lambda _x: OPAQUE,
}  # fmt: skip

CONSTANTS = {
    "M_PI": sp.pi,
    "M_LN2": sp.log(2),
    "M_LN10": sp.log(10),
    "M_SQRT2": sp.sqrt(2),
    "M_2_SQRTPI": 2 / sp.sqrt(sp.pi),
}
