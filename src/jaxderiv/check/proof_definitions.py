"""What elementwise ops and the names their formulas call mean in sympy, over the reals.

DEFINITIONS gives each op as a function of its arguments' symbols: the reference whose
derivative the formulas must equal. Ops with kinks are sympy Piecewise expressions, so that
each smooth piece is compared on its own side. FUNCTIONS and METHODS give the at:: functions,
Tensor methods and FunctionsManual helpers of elementwise formulas, written from PyTorch's math (not from this
project's JAX helpers, which these proofs judge). Why an elementwise op has no definition is
in its op record (`without_meaning` in check/families).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import sympy as sp

__all__ = [
    "DEFINITIONS",
    "Definition",
    "METHODS",
    "FUNCTIONS",
    "CONSTANTS",
    "OPAQUE",
    "as_number",
    "as_condition",
]


@dataclasses.dataclass(frozen=True)
class Definition:
    """An op as a sympy function of its arguments, and where to sample it."""

    fn: Callable[..., Any]  # of the symbols of `args`: an expression, or a tuple (one per output)
    args: tuple[str, ...]  # the schema's argument names fn takes, in order
    domain: tuple[float, float] = (-2.0, 2.0)  # of the Tensor inputs
    ranges: tuple[tuple[str, float, float], ...] = ()  # other sampling ranges, by symbol name
    fixed: tuple[tuple[str, Any], ...] = ()  # values of arguments left unmodelled (`int p` = 3)
    booleans: tuple[str, ...] = ()  # Tensor inputs that are masks: symbols sampled True/False
    derived: tuple[
        tuple[str, Callable[..., Any], tuple[str, ...]], ...
    ] = ()  # inputs that stand for a function of others


def _def(
    fn: Callable, *args: str, lo: float = -2.0, hi: float = 2.0, ranges=(), fixed=(), booleans=(), derived=()
) -> Definition:
    return Definition(fn, args, (lo, hi), tuple(ranges), tuple(fixed), tuple(booleans), tuple(derived))


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


def _sigmoid(x):
    return 1 / (1 + sp.exp(-x))


def _i0e(x):
    return sp.exp(-sp.Abs(x)) * sp.besseli(0, x)


def _i1e(x):
    return sp.exp(-sp.Abs(x)) * sp.besseli(1, x)


def _xlogy(x, y):
    x = as_number(x)
    return sp.Piecewise((0, sp.Eq(x, 0)), (x * sp.log(y), True))


def _copysign(x, y):
    return sp.Piecewise((sp.Abs(x), y >= 0), (-sp.Abs(x), True))


def _clamp(x, lo, hi):
    """min(max(x, lo), hi): with lo > hi, hi everywhere, as ATen."""
    if lo is None:
        return sp.Piecewise((hi, x > hi), (x, True))
    if hi is None:
        return sp.Piecewise((lo, x < lo), (x, True))
    return sp.Piecewise((hi, (x > hi) | (hi < lo)), (lo, x < lo), (x, True))


def _elu(x, alpha, scale, input_scale):
    return sp.Piecewise((scale * x, x > 0), (scale * alpha * (sp.exp(x * input_scale) - 1), True))


def _softplus(x, beta, threshold):
    return sp.Piecewise((x, x * beta > threshold), (sp.log(1 + sp.exp(beta * x)) / beta, True))


def _gelu(x):
    return x * (1 + sp.erf(x / sp.sqrt(2))) / 2


def _mvlgamma(x, p):
    return p * (p - 1) / 4 * sp.log(sp.pi) + sum(sp.loggamma(x - sp.Rational(j, 2)) for j in range(p))


def _fmod(x, y):
    """x - y * trunc(x / y)."""
    q = x / y
    return x - y * sp.sign(q) * sp.floor(sp.Abs(q))


def _leaky(x, slope):
    return sp.Piecewise((x, x > 0), (slope * x, True))


def _hardtanh(x, lo, hi):
    return sp.Piecewise((lo, x <= lo), (hi, x >= hi), (x, True))


def _threshold(x, threshold, value):
    return sp.Piecewise((x, x > threshold), (value, True))


def _round(x):
    return sp.floor(x + sp.Rational(1, 2))


def _trunc(x):
    return sp.sign(x) * sp.floor(sp.Abs(x))


# -- FunctionsManual helpers and ATen kernels the formulas call, as their math -----------------


def _elu_backward(g, alpha, scale, input_scale, *rest):
    """(grad, alpha, scale, input_scale, output) in 1.7; (..., is_result, self_or_result) later."""
    if len(rest) == 1:
        is_result, y = True, rest[0]
    else:
        is_result, y = rest
    if is_result in (True, sp.true):
        negative = g * input_scale * (y + alpha * scale)
    else:
        negative = g * input_scale * alpha * scale * sp.exp(y * input_scale)
    return sp.Piecewise((negative, y <= 0), (g * scale, True))


def _softplus_backward(g, x, beta, threshold, *output):
    """The 1.7 kernel reads the output: z = exp(output * beta), grad * (z - 1) / z below threshold."""
    if output:
        z = sp.exp(output[0] * beta)
        below = g * (z - 1) / z
    else:
        below = g * _sigmoid(beta * x)
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
    s = _sigmoid(beta * x)
    return g * beta * s * (1 - s) * sp.Piecewise((1, x * beta < threshold), (0, True))


def _silu_backward(g, x):
    s = _sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _mvlgamma_backward(g, x, p):
    return g * sum(sp.digamma(x - sp.Rational(j, 2)) for j in range(int(p)))


_UNARY = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
    "rsqrt": lambda x: 1 / sp.sqrt(x), "reciprocal": lambda x: 1 / x, "neg": lambda x: -x,
    "sgn": sp.sign, "sign": sp.sign, "abs": sp.Abs, "erf": sp.erf, "erfinv": sp.erfinv, "exp2": lambda x: 2**x,
    "digamma": sp.digamma, "lgamma": sp.loggamma, "sigmoid": _sigmoid,
    "square": lambda x: x**2, "log1p": lambda x: sp.log(1 + x),
    "special_i1": lambda x: sp.besseli(1, x), "special_i1e": _i1e, "special_i0e": _i0e, "i0": lambda x: sp.besseli(0, x),
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
    "copysign_tensor_backward": lambda g, x, y: g * sp.Piecewise((0, sp.Eq(x, 0)), (_copysign(x, y) / x, True)),
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
    "i1e_backward": lambda g, x, result: g * (_i0e(x) - result * (sp.sign(x) + 1 / x)),
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
    "elu_backward": _elu_backward,
    "softplus_backward": _softplus_backward,
    "softplus_double_backward": _softplus_double_backward,
    "log_sigmoid_backward": lambda g, x, _buffer: g * _sigmoid(-x),
    "log_sigmoid_double_backward": lambda g, x: g * (_sigmoid(x) - 1) * _sigmoid(x),
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

# op -> its definition. Tensor inputs are sampled in the domain, other symbols in 0.5 .. 1.5
# unless `ranges` says otherwise.
_HT = (("min_val", -1.5, -0.5), ("max_val", 0.5, 1.5))
_CLAMP = (("min", -1.5, -0.5), ("max", 0.5, 1.5))
_THRESHOLD = (("threshold", -1.0, 1.0), ("value", -2.0, -1.0))  # value <= threshold: see threshold_
_LAMBD = (("lambd", 0.3, 1.2),)
_SOFTPLUS = (("beta", 0.5, 1.5), ("threshold", -1.0, 1.0))
_ELU = (("alpha", 0.5, 1.5), ("scale", 0.5, 1.5), ("input_scale", 0.5, 1.5))

DEFINITIONS: dict[str, Definition] = {
    "abs": _def(sp.Abs, "self"),
    "acos": _def(sp.acos, "self", lo=-0.9, hi=0.9),
    "asin": _def(sp.asin, "self", lo=-0.9, hi=0.9),
    "atan": _def(sp.atan, "self"),
    "acosh": _def(sp.acosh, "self", lo=1.1, hi=3.0),
    "asinh": _def(sp.asinh, "self"),
    "atanh": _def(sp.atanh, "self", lo=-0.9, hi=0.9),
    "cos": _def(sp.cos, "self"),
    "sin": _def(sp.sin, "self"),
    "tan": _def(sp.tan, "self", lo=-1.2, hi=1.2),
    "cosh": _def(sp.cosh, "self"),
    "sinh": _def(sp.sinh, "self"),
    "tanh": _def(sp.tanh, "self"),
    "exp": _def(sp.exp, "self"),
    "exp2": _def(lambda x: 2**x, "self"),
    "expm1": _def(lambda x: sp.exp(x) - 1, "self"),
    "log": _def(sp.log, "self", lo=0.1, hi=3.0),
    "log2": _def(lambda x: sp.log(x, 2), "self", lo=0.1, hi=3.0),
    "log10": _def(lambda x: sp.log(x, 10), "self", lo=0.1, hi=3.0),
    "log1p": _def(lambda x: sp.log(1 + x), "self", lo=-0.9, hi=3.0),
    "sqrt": _def(sp.sqrt, "self", lo=0.1, hi=3.0),
    "rsqrt": _def(lambda x: 1 / sp.sqrt(x), "self", lo=0.1, hi=3.0),
    "reciprocal": _def(lambda x: 1 / x, "self"),
    "neg": _def(lambda x: -x, "self"),
    "_neg_view": _def(lambda x: -x, "self"),
    "alias": _def(lambda x: x, "self"),
    "clone": _def(lambda x: x, "self"),
    "_to_copy": _def(lambda x: x, "self"),
    "_conj": _def(lambda x: x, "self"),
    "_conj_physical": _def(lambda x: x, "self"),
    "conj_physical_": _def(lambda x: x, "self"),
    "fill_.Scalar": _def(lambda x, v: v, "self", "value"),
    "fill_.Tensor": _def(lambda x, v: v, "self", "value"),
    "zero_": _def(lambda x: sp.Integer(0), "self"),
    "angle": _def(lambda x: sp.Piecewise((sp.pi, x < 0), (0, True)), "self"),
    "sgn": _def(sp.sign, "self"),
    "sign": _def(sp.sign, "self"),
    "ceil": _def(sp.ceiling, "self"),
    "floor": _def(sp.floor, "self"),
    "round": _def(_round, "self"),
    "trunc": _def(_trunc, "self"),
    "frac": _def(lambda x: x - _trunc(x), "self"),
    "nan_to_num": _def(lambda x: x, "self"),
    "sigmoid": _def(_sigmoid, "self"),
    "erf": _def(sp.erf, "self"),
    "erfc": _def(sp.erfc, "self"),
    "special_erfcx": _def(lambda x: sp.exp(x**2) * sp.erfc(x), "self"),
    "erfinv": _def(sp.erfinv, "self", lo=-0.9, hi=0.9),
    "lgamma": _def(sp.loggamma, "self", lo=0.1, hi=3.0),
    "digamma": _def(sp.digamma, "self", lo=0.1, hi=3.0),
    "polygamma": _def(lambda n, x: sp.polygamma(n, x), "n", "self", lo=0.1, hi=3.0, fixed=(("n", 2),)),
    "polygamma_": _def(lambda x, n: sp.polygamma(n, x), "self", "n", lo=0.1, hi=3.0, fixed=(("n", 2),)),
    "mvlgamma": _def(_mvlgamma, "self", "p", lo=1.5, hi=4.0, fixed=(("p", 3),)),
    "i0": _def(lambda x: sp.besseli(0, x), "self"),
    "special_i0e": _def(_i0e, "self"),
    "special_i1": _def(lambda x: sp.besseli(1, x), "self"),
    "special_i1e": _def(_i1e, "self"),
    "logit": _def(lambda x: sp.log(x / (1 - x)), "self", lo=0.1, hi=0.9, fixed=(("eps", None),)),
    "deg2rad": _def(lambda x: x * sp.pi / 180, "self"),
    "rad2deg": _def(lambda x: x * 180 / sp.pi, "self"),
    "sinc": _def(lambda x: sp.sin(sp.pi * x) / (sp.pi * x), "self"),
    "frexp.Tensor": _def(lambda x, e: x / 2**e, "self", "exponent"),  # the exponent output is locally constant
    # binary and ternary
    "add.Tensor": _def(lambda x, y, a: x + a * y, "self", "other", "alpha"),
    "add.Scalar": _def(lambda x, y, a: x + a * y, "self", "other", "alpha"),
    "sub.Tensor": _def(lambda x, y, a: x - a * y, "self", "other", "alpha"),
    "sub.Scalar": _def(lambda x, y, a: x - a * y, "self", "other", "alpha"),
    "rsub.Tensor": _def(lambda x, y, a: y - a * x, "self", "other", "alpha"),
    "rsub.Scalar": _def(lambda x, y, a: y - a * x, "self", "other", "alpha"),
    "mul.Tensor": _def(lambda x, y: x * y, "self", "other"),
    "mul.Scalar": _def(lambda x, y: x * y, "self", "other"),
    "div.Tensor": _def(lambda x, y: x / y, "self", "other"),
    "div.Scalar": _def(lambda x, y: x / y, "self", "other"),
    "div.Tensor_mode": _def(lambda x, y: x / y, "self", "other", fixed=(("rounding_mode", None),)),
    "div.Scalar_mode": _def(lambda x, y: x / y, "self", "other", fixed=(("rounding_mode", None),)),
    "atan2": _def(sp.atan2, "self", "other"),
    "hypot": _def(lambda x, y: sp.sqrt(x**2 + y**2), "self", "other"),
    "pow.Tensor_Tensor": _def(lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0),
    "pow.Tensor_Scalar": _def(lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0),
    "pow.Scalar": _def(lambda x, y: x**y, "self", "exponent", lo=0.1, hi=2.0),
    "xlogy.Tensor": _def(lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0),
    "xlogy.Scalar_Self": _def(lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0),
    "xlogy.Scalar_Other": _def(lambda x, y: x * sp.log(y), "self", "other", lo=0.1, hi=2.0),
    "special_xlog1py": _def(lambda x, y: x * sp.log(1 + y), "self", "other", lo=-0.9, hi=2.0),
    "special_xlog1py.self_scalar": _def(lambda x, y: x * sp.log(1 + y), "self", "other", lo=-0.9, hi=2.0),
    "special_xlog1py.other_scalar": _def(lambda x, y: x * sp.log(1 + y), "self", "other", lo=-0.9, hi=2.0),
    "special_zeta": _def(lambda s, q: sp.zeta(s, q), "self", "other", lo=0.5, hi=3.0, ranges=(("self", 1.5, 3.0),)),
    "special_zeta.self_scalar": _def(
        lambda s, q: sp.zeta(s, q), "self", "other", lo=0.5, hi=3.0, ranges=(("self", 1.5, 3.0),)
    ),
    "special_zeta.other_scalar": _def(
        lambda s, q: sp.zeta(s, q), "self", "other", lo=1.5, hi=3.0, ranges=(("other", 0.5, 3.0),)
    ),
    "igamma": _def(lambda a, x: sp.lowergamma(a, x) / sp.gamma(a), "self", "other", lo=0.5, hi=3.0),
    "igammac": _def(lambda a, x: sp.uppergamma(a, x) / sp.gamma(a), "self", "other", lo=0.5, hi=3.0),
    "logaddexp": _def(lambda x, y: sp.log(sp.exp(x) + sp.exp(y)), "self", "other"),
    "logaddexp2": _def(lambda x, y: sp.log(2**x + 2**y, 2), "self", "other"),
    "lerp.Tensor": _def(lambda x, e, w: x + w * (e - x), "self", "end", "weight"),
    "lerp.Scalar": _def(lambda x, e, w: x + w * (e - x), "self", "end", "weight"),
    "addcmul": _def(lambda x, a, b, v: x + v * a * b, "self", "tensor1", "tensor2", "value"),
    "addcdiv": _def(lambda x, a, b, v: x + v * a / b, "self", "tensor1", "tensor2", "value", lo=0.5, hi=2.0),
    "maximum": _def(lambda x, y: sp.Piecewise((x, x > y), (y, True)), "self", "other"),
    "minimum": _def(lambda x, y: sp.Piecewise((x, x < y), (y, True)), "self", "other"),
    "fmax": _def(lambda x, y: sp.Piecewise((x, x > y), (y, True)), "self", "other"),
    "fmin": _def(lambda x, y: sp.Piecewise((x, x < y), (y, True)), "self", "other"),
    "clamp": _def(_clamp, "self", "min", "max", ranges=_CLAMP),
    "clamp.Tensor": _def(_clamp, "self", "min", "max", ranges=_CLAMP),
    "clamp_min": _def(lambda x, lo: _clamp(x, lo, None), "self", "min", ranges=_CLAMP),
    "clamp_min.Tensor": _def(lambda x, lo: _clamp(x, lo, None), "self", "min", ranges=_CLAMP),
    "clamp_max": _def(lambda x, hi: _clamp(x, None, hi), "self", "max", ranges=_CLAMP),
    "clamp_max.Tensor": _def(lambda x, hi: _clamp(x, None, hi), "self", "max", ranges=_CLAMP),
    "copysign.Tensor": _def(_copysign, "self", "other", ranges=(("other", -2.0, 2.0),)),
    "copysign.Scalar": _def(_copysign, "self", "other", ranges=(("other", -2.0, 2.0),)),
    "fmod.Tensor": _def(_fmod, "self", "other", lo=-5.0, hi=5.0),
    "fmod.Scalar": _def(_fmod, "self", "other", lo=-5.0, hi=5.0),
    "remainder.Tensor": _def(lambda x, y: x - y * sp.floor(x / y), "self", "other", lo=-5.0, hi=5.0),
    "remainder.Scalar": _def(lambda x, y: x - y * sp.floor(x / y), "self", "other", lo=-5.0, hi=5.0),
    "_s_where": _def(
        lambda c, x, y: sp.Piecewise((x, c), (y, True)), "condition", "self", "other", booleans=("condition",)
    ),
    # activations; the in-place ones share the out-of-place definition
    "relu": _def(lambda x: _threshold(x, 0, 0), "self"),
    "relu_": _def(lambda x: _threshold(x, 0, 0), "self"),
    "threshold": _def(_threshold, "self", "threshold", "value", ranges=_THRESHOLD),
    "threshold_": _def(_threshold, "self", "threshold", "value", ranges=_THRESHOLD),
    "hardtanh": _def(_hardtanh, "self", "min_val", "max_val", ranges=_HT),
    "hardtanh_": _def(_hardtanh, "self", "min_val", "max_val", ranges=_HT),
    "leaky_relu": _def(_leaky, "self", "negative_slope"),
    "leaky_relu_": _def(_leaky, "self", "negative_slope"),
    "rrelu_with_noise": _def(
        lambda x, lo, hi: _leaky(x, (lo + hi) / 2), "self", "lower", "upper", fixed=(("training", False),)
    ),
    "rrelu_with_noise_": _def(
        lambda x, lo, hi: _leaky(x, (lo + hi) / 2), "self", "lower", "upper", fixed=(("training", False),)
    ),
    "prelu": _def(_leaky, "self", "weight"),
    "elu": _def(_elu, "self", "alpha", "scale", "input_scale", ranges=_ELU),
    "celu": _def(lambda x, a: _elu(x, a, 1, 1 / a), "self", "alpha", ranges=_ELU),
    "selu": _def(
        lambda x: _elu(
            x, sp.Float("1.6732632423543772848170429916717", 30), sp.Float("1.0507009873554804934193349852946", 30), 1
        ),
        "self",
    ),
    "gelu": _def(_gelu, "self", fixed=(("approximate", "none"),)),
    "silu": _def(lambda x: x * _sigmoid(x), "self"),
    "mish": _def(lambda x: x * sp.tanh(sp.log(1 + sp.exp(x))), "self"),
    "softplus": _def(_softplus, "self", "beta", "threshold", ranges=_SOFTPLUS),
    "hardsigmoid": _def(
        lambda x: sp.Piecewise((0, x <= -3), (1, x >= 3), (x / 6 + sp.Rational(1, 2), True)), "self", lo=-4.0, hi=4.0
    ),
    "hardswish": _def(
        lambda x: sp.Piecewise((0, x <= -3), (x, x >= 3), (x * (x + 3) / 6, True)), "self", lo=-4.0, hi=4.0
    ),
    "hardshrink": _def(lambda x, l: sp.Piecewise((x, (x < -l) | (x > l)), (0, True)), "self", "lambd", ranges=_LAMBD),
    "softshrink": _def(
        lambda x, l: sp.Piecewise((x - l, x > l), (x + l, x < -l), (0, True)), "self", "lambd", ranges=_LAMBD
    ),
    "log_sigmoid_forward": _def(lambda x: sp.log(_sigmoid(x)), "self"),  # the buffer output is ATen's scratch
    # the activations' backward kernels, as functions of grad_output and the rest
    "threshold_backward": _def(
        lambda g, x, t: sp.Piecewise((0, x <= t), (g, True)), "grad_output", "self", "threshold", ranges=_THRESHOLD
    ),
    "hardtanh_backward": _def(
        lambda g, x, lo, hi: sp.Piecewise((0, (x <= lo) | (x >= hi)), (g, True)),
        "grad_output",
        "self",
        "min_val",
        "max_val",
        ranges=_HT,
    ),
    "leaky_relu_backward": _def(
        lambda g, x, s: sp.Piecewise((g, x > 0), (g * s, True)), "grad_output", "self", "negative_slope"
    ),
    "rrelu_with_noise_backward": _def(
        lambda g, x, lo, hi: sp.Piecewise((g, x > 0), (g * (lo + hi) / 2, True)),
        "grad_output",
        "self",
        "lower",
        "upper",
        fixed=(("training", False),),
    ),
    "hardshrink_backward": _def(
        lambda g, x, l: sp.Piecewise((0, (x >= -l) & (x <= l)), (g, True)), "grad_out", "self", "lambd", ranges=_LAMBD
    ),
    "softshrink_backward": _def(
        lambda g, x, l: sp.Piecewise((g, (x < -l) | (x > l)), (0, True)), "grad_output", "self", "lambd", ranges=_LAMBD
    ),
    "elu_backward": _def(
        lambda g, a, s, i, y: _elu_backward(g, a, s, i, y),
        "grad_output",
        "alpha",
        "scale",
        "input_scale",
        "output",
        ranges=_ELU,
    ),
    # its `output` input is softplus(self): the kernel reads it, the formulas assume it
    "softplus_backward": _def(
        lambda g, x, b, t: g * sp.Piecewise((1, x * b > t), (_sigmoid(b * x), True)),
        "grad_output",
        "self",
        "beta",
        "threshold",
        ranges=_SOFTPLUS,
        derived=(("output", _softplus, ("self", "beta", "threshold")),),
    ),
    "log_sigmoid_backward": _def(lambda g, x: g * _sigmoid(-x), "grad_output", "self"),
    "sigmoid_backward": _def(lambda g, y: g * (1 - y) * y, "grad_output", "output"),
    "tanh_backward": _def(lambda g, y: g * (1 - y**2), "grad_output", "output"),
    "prelu_backward": _def(
        lambda g, x, w: (sp.Piecewise((g, x > 0), (g * w, True)), sp.Piecewise((0, x > 0), (g * x, True))),
        "grad_output",
        "self",
        "weight",
    ),
}


# In-place comparisons write 0 or 1 into self: piecewise constant, so zero derivatives.
_COMPARE = {"eq": sp.Eq, "ne": sp.Ne, "ge": sp.Ge, "gt": sp.Gt, "le": sp.Le, "lt": sp.Lt}
for _name, _rel in _COMPARE.items():
    for _overload in ("Scalar", "Tensor"):
        DEFINITIONS[f"{_name}_.{_overload}"] = _def(
            lambda x, y, rel=_rel: sp.Piecewise((1, rel(x, y)), (0, True)), "self", "other"
        )
