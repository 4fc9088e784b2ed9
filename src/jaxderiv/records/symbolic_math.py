"""Real functions in sympy that the ops' definitions (declared with their forwards in jaxderiv/forward) are made of,
some also the meanings of formula helpers (check/proof_definitions.py): written from PyTorch's
math, over the reals. Functions with kinks are sympy Piecewise expressions, so that each smooth
piece is compared on its own side. sympy is imported when one is first called (`symbolic.sp`).
"""

from __future__ import annotations

from .symbolic import sp

__all__ = [
    "clamp",
    "copysign",
    "elu",
    "elu_backward",
    "fmod",
    "gelu",
    "hardtanh",
    "i0e",
    "i1e",
    "leaky_relu",
    "mvlgamma",
    "round_half_up",
    "sigmoid",
    "softplus",
    "threshold",
    "trunc",
]


def sigmoid(x):
    return 1 / (1 + sp.exp(-x))


def i0e(x):
    return sp.exp(-sp.Abs(x)) * sp.besseli(0, x)


def i1e(x):
    return sp.exp(-sp.Abs(x)) * sp.besseli(1, x)


def copysign(x, y):
    return sp.Piecewise((sp.Abs(x), y >= 0), (-sp.Abs(x), True))


def clamp(x, lo, hi):
    """min(max(x, lo), hi): with lo > hi, hi everywhere, as ATen."""
    if lo is None:
        return sp.Piecewise((hi, x > hi), (x, True))
    if hi is None:
        return sp.Piecewise((lo, x < lo), (x, True))
    return sp.Piecewise((hi, (x > hi) | (hi < lo)), (lo, x < lo), (x, True))


def elu(x, alpha, scale, input_scale):
    return sp.Piecewise((scale * x, x > 0), (scale * alpha * (sp.exp(x * input_scale) - 1), True))


def elu_backward(g, alpha, scale, input_scale, *rest):
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


def softplus(x, beta, threshold):
    return sp.Piecewise((x, x * beta > threshold), (sp.log(1 + sp.exp(beta * x)) / beta, True))


def gelu(x):
    return x * (1 + sp.erf(x / sp.sqrt(2))) / 2


def mvlgamma(x, p):
    return p * (p - 1) / 4 * sp.log(sp.pi) + sum(sp.loggamma(x - sp.Rational(j, 2)) for j in range(p))


def fmod(x, y):
    """x - y * trunc(x / y)."""
    q = x / y
    return x - y * sp.sign(q) * sp.floor(sp.Abs(q))


def leaky_relu(x, slope):
    return sp.Piecewise((x, x > 0), (slope * x, True))


def hardtanh(x, lo, hi):
    return sp.Piecewise((lo, x <= lo), (hi, x >= hi), (x, True))


def threshold(x, threshold, value):
    return sp.Piecewise((x, x > threshold), (value, True))


def round_half_up(x):
    return sp.floor(x + sp.Rational(1, 2))


def trunc(x):
    return sp.sign(x) * sp.floor(sp.Abs(x))
