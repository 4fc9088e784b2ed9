"""Checker samples for the pointwise activations: inputs kept clear of every kink.

Finite differences cannot judge a derivative at a kink, so each op's inputs stay at least
GAP away from its kinks (0 for relu, +-lambd for the shrinks, the bounds of hardtanh, ...);
the kinks themselves are kink inputs of the records (`kinks`, below), which the parity run
(tests/check/test_parity.py) compares with PyTorch. Non-default parameters are used where they
move the kinks, to catch a formula ignoring one.
"""

from __future__ import annotations

import numpy as np

from .. import symbolic_math
from ..opdb import (
    parity_tolerance,
    parity_differs,
    Equivalent,
    complex_ok,
    definition,
    domain,
    kinks,
    known_failure,
    real_only,
    samples,
    torch_equivalent,
)
from ..samples import Sample
from ..symbolic import sp
from . import vector

GAP = 0.1
SHAPES = ((2, 3), (4,), ())


def _away(rng, shape, kinks, lo=-2.0, hi=2.0) -> np.ndarray:
    """Uniform values in [lo, hi], redrawn until none lies within GAP of a kink."""
    x = np.array(rng.uniform(lo, hi, size=shape))
    while (near := np.any(np.abs(x[..., None] - np.asarray(kinks)) < GAP, axis=-1)).any():
        x[near] = rng.uniform(lo, hi, size=int(near.sum()))
    return x


def _shape(shape) -> str:
    return "x".join(map(str, shape)) or "0-d"


def _label(*arrays) -> str:
    return " ".join(_shape(a.shape) for a in arrays)


def _unary(kinks, *scalars, lo=-2.0, hi=2.0):
    """op(self, *scalars), self clear of the kinks."""

    def make(op, rng, dtype=np.float64):
        return [Sample((x, *scalars), label=_label(x)) for x in (_away(rng, s, kinks, lo, hi) for s in SHAPES)]

    return make


def _backward(kinks, *scalars, lo=-2.0, hi=2.0):
    """op(grad_output, self, *scalars): self clear of the kinks; also a broadcast grad_output."""

    def make(op, rng, dtype=np.float64):
        pairs = [(rng.normal(size=s), _away(rng, s, kinks, lo, hi)) for s in SHAPES]
        pairs.append((rng.normal(size=(2, 3)), _away(rng, (3,), kinks, lo, hi)))
        return [Sample((g, x, *scalars), label=_label(g, x)) for g, x in pairs]

    return make


# Smooth everywhere, or kinked only at 0 (which the default samples avoid).
domain(-4.0, 4.0, "silu", "gelu", "log_sigmoid_forward", "sigmoid", "tanh")
complex_ok("sigmoid", "tanh")
# Their jvp (1.7 gives no result formula: the backward formula, transposed through the called
# entry's own formula for grad_output) and their second derivative apply the 1.7 entries of
# sigmoid_backward / tanh_backward (the 1.10 file has none), written before those took complex
# inputs: their formulas lack the `.conj()` of the complex form, and the op refuses them on
# complex values. Older formulas are checked on real inputs only.
real_only(
    "the jvp (the backward formula transposed) and the second derivative run the PyTorch 1.7 "
    "formulas of sigmoid_backward / tanh_backward, written for real tensors (no .conj())",
    "sigmoid",
    "tanh",
    modes=("jvp", "vjp_vjp"),
)
parity_differs(
    ("complex",),
    "1.7's jvp on complex inputs raises RealOnlyDerivative: it transposes the backward formula through "
    "sigmoid_backward's / tanh_backward's 1.7 formula for grad_output, written for real tensors",
    "sigmoid",
    "tanh",
)

samples("hardshrink")(_unary((-0.7, 0.7), 0.7))
samples("softshrink")(_unary((-0.7, 0.7), 0.7))
samples("hardshrink_backward", "softshrink_backward")(_backward((-0.7, 0.7), 0.7))
samples("hardtanh", "hardtanh_")(_unary((-0.5, 1.2), -0.5, 1.2))
samples("hardtanh_backward")(_backward((-0.5, 1.2), -0.5, 1.2))
samples("threshold")(_unary((0.3,), 0.3, -1.5))


@samples("threshold_")
def _threshold_inplace(op, rng, dtype=np.float64):
    """value below the threshold, then above it: the 1.7 formula reads the result, which
    above the threshold cannot tell a replaced element from a kept one."""
    return [
        *_unary((0.3,), 0.3, -1.5)(op, rng, dtype),
        *[
            Sample((s.args[0], 0.3, 1.5), label=s.label + " value=1.5")
            for s in _unary((0.3,), 0.3, 1.5)(op, rng, dtype)[:1]
        ],
    ]


# threshold_'s spec bug, stated once: the checker's known failure and the parity run's known difference.
THRESHOLD_SPEC_BUG = (
    "spec bug (PyTorch 1.7, fixed later): threshold_'s formula threshold_backward(grad, result, threshold) "
    "passes the gradient of replaced elements when `value` is above the threshold"
)
# vjp_vjp sees it too: its derivative in the cotangent `grad` is the first-order formula itself.
known_failure(THRESHOLD_SPEC_BUG, "threshold_", modes=("vjp", "jvp", "vjp_vjp"))
parity_differs(("vjp", "jvp"), THRESHOLD_SPEC_BUG + " (the sample with value=1.5)", "threshold_")
samples("threshold_backward")(_backward((0.3,), 0.3))
samples("leaky_relu", "leaky_relu_")(_unary((0.0,), 0.2))
samples("leaky_relu_backward")(_backward((0.0,), 0.2, False))
samples("elu")(_unary((0.0,), 1.3, 0.8, 1.7))
samples("celu")(_unary((0.0,), 1.5))
samples("hardsigmoid", "hardswish")(_unary((-3.0, 3.0), lo=-5.0, hi=5.0))


@samples("softplus")
def _softplus(op, rng, dtype=np.float64):
    """The default (beta 1, threshold 20: never reached) and a reachable threshold, 3 / 2."""
    return _unary((), lo=-4.0, hi=4.0)(op, rng) + _unary((1.5,), 2.0, 3.0, lo=-4.0, hi=4.0)(op, rng)


def _softplus_np(x, beta, threshold):
    return np.where(x * beta > threshold, x, np.logaddexp(x * beta, 0) / beta)


@samples("softplus_backward")
def _softplus_backward(op, rng, dtype=np.float64):
    """output is softplus(self), as softplus's formula passes it."""
    with_output = len(op.schema.arguments) == 5  # PyTorch 1.7; later files drop `output`
    out = []
    for beta, threshold in ((1.0, 20.0), (2.0, 3.0)):
        for s in _backward((threshold / beta,), beta, threshold, lo=-4.0, hi=4.0)(op, rng):
            output = (_softplus_np(s.args[1], beta, threshold),) if with_output else ()
            out.append(Sample((*s.args, *output), label=f"{s.label} beta={beta}"))
    return out


@samples("log_sigmoid_backward")
def _log_sigmoid_backward(op, rng, dtype=np.float64):
    """buffer is exp(-|self|), as log_sigmoid_forward makes it."""
    return [
        Sample((*s.args, np.exp(-np.abs(s.args[1]))), label=s.label)
        for s in _backward((0.0,), lo=-4.0, hi=4.0)(op, rng)
    ]


@samples("elu_backward")
def _elu_backward(op, rng, dtype=np.float64):
    """elu_backward(grad_output, alpha, scale, input_scale, output), output clear of 0; later
    files take (..., is_result, self_or_result): both forms, values inside elu's range."""
    if len(op.schema.arguments) == 5:
        return [Sample((s.args[0], 1.3, 0.8, 1.7, s.args[1]), label=s.label) for s in _backward((0.0,))(op, rng)]
    return [
        Sample((s.args[0], 1.3, 0.8, 1.7, is_result, s.args[1]), label=f"{s.label} is_result={is_result}")
        for is_result in (False, True)
        for s in _backward((0.0,), lo=-1.0)(op, rng)
    ]


_RRELU = (0.1, 0.4)  # lower, upper


def _noise(rng, x):
    """The slopes ATen's training mode draws: 1 where x > 0, else uniform in [lower, upper]."""
    return np.where(x > 0, 1.0, rng.uniform(*_RRELU, size=np.shape(x)))


@samples("rrelu_with_noise", "rrelu_with_noise_")
def _rrelu_with_noise(op, rng, dtype=np.float64):
    out = []
    for training in (False, True):
        for x in (_away(rng, s, (0.0,)) for s in SHAPES):
            out.append(Sample((x, _noise(rng, x), *_RRELU, training), label=f"{_label(x)} training={training}"))
    return out


@samples("rrelu_with_noise_backward")
def _rrelu_with_noise_backward(op, rng, dtype=np.float64):
    out = []
    for training in (False, True):
        for s in _backward((0.0,))(op, rng):
            g, x = s.args
            out.append(Sample((g, x, _noise(rng, x), *_RRELU, training, False), label=f"{s.label} training={training}"))
    return out


# prelu's weight: one slope per channel (dimension 1), or a single slope (1-element or 0-d).
_PRELU_SHAPES = (((2, 3, 4), (3,)), ((2, 3), (1,)), ((4,), ()), ((), (1,)))


@samples("prelu")
def _prelu(op, rng, dtype=np.float64):
    return [
        Sample((_away(rng, xs, (0.0,)), rng.uniform(0.05, 0.5, size=ws)), label=f"{_shape(xs)} weight {_shape(ws)}")
        for xs, ws in _PRELU_SHAPES
    ]


@samples("prelu_backward")
def _prelu_backward(op, rng, dtype=np.float64):
    return [Sample((rng.normal(size=s.args[0].shape), *s.args), label=s.label) for s in _prelu(op, rng)]


samples("rrelu_with_noise_functional")(_rrelu_with_noise)


# -- parity with torch ------------------------------------------------------------------------

# The kinks themselves (the checker's samples stay GAP away from them): there the derivative is
# the subgradient torch's formula picks, which JAX's autodiff of the forward need not pick. Each
# with a value on either side; the smooth ones at 0 and far out, where the forward saturates.
_G = vector(0.7, -1.3, 0.4, 2.0, -0.6)  # grad_output of the backward entries' five-element kinks
_AT_0 = vector(0.0, -0.0, 1.5, -2.0, 0.4)
_AT_3 = vector(-3.0, 3.0, 0.0, -4.0, 4.0)  # hardsigmoid, hardswish
_AT_LAMBD = vector(0.7, -0.7, 0.0, 1.0, -1.0)  # the shrinks with lambd=0.7
_NOISE = vector(0.3, 0.2, 1.0, 0.35, 1.0)  # rrelu's slopes at _AT_0: drawn where x <= 0, else 1

kinks("relu", (vector(0.0, -0.0, 1.5, -2.0),))
kinks("relu_", (_AT_0,))
kinks("threshold", (vector(0.5, 0.4, 0.6, -1.0), 0.5, -3.0))
kinks("threshold_", (vector(0.3, 0.2, 0.4, -1.0, 1.5), 0.3, -1.5))
kinks("threshold_backward", (_G, vector(0.3, 0.2, 0.4, -1.0, 1.5), 0.3))
kinks("hardtanh", (vector(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0), (vector(-0.5, 1.2, 0.0, -2.0, 2.0), -0.5, 1.2))
kinks("hardtanh_", (vector(-0.5, 1.2, 0.0, -2.0, 2.0), -0.5, 1.2))
kinks("hardtanh_backward", (_G, vector(-0.5, 1.2, 0.0, -2.0, 2.0), -0.5, 1.2))
kinks("hardshrink", (vector(0.5, -0.5, 0.0, 1.0), 0.5), (_AT_LAMBD, 0.7))
kinks("softshrink", (vector(0.5, -0.5, 0.0, 1.0), 0.5), (_AT_LAMBD, 0.7))
kinks("hardshrink_backward", (_G, _AT_LAMBD, 0.7))
kinks("softshrink_backward", (_G, _AT_LAMBD, 0.7))
kinks("leaky_relu", (vector(0.0, 1.0, -1.0), 0.01), (_AT_0, 0.2))
kinks("leaky_relu_", (_AT_0, 0.2))
kinks("leaky_relu_backward", (_G, _AT_0, 0.2, False))
kinks("hardsigmoid", (_AT_3,))
kinks("hardswish", (_AT_3,))
kinks("elu", (_AT_0, 1.3, 0.8, 1.7))
kinks("celu", (_AT_0, 1.5))
# elu_backward and softplus_backward: torch's own file changed their schemas, and a kink tuple,
# positional, serves both files' parity runs: their kinks in the seed's schema are in
# tests/ops/test_activation.py (SEED_SCHEMA_KINKS).
kinks("silu", (vector(0.0, -0.0, 1.5, -30.0, 30.0),))
kinks("gelu", (vector(0.0, -0.0, 1.5, -30.0, 30.0),))
kinks("sigmoid", (vector(0.0, -0.0, 1.5, -30.0, 30.0),))
kinks("tanh", (vector(0.0, -0.0, 1.5, -30.0, 30.0),))
kinks("sigmoid_backward", (_G, vector(0.0, 1.0, 0.5, 0.25, 0.9)))  # output: sigmoid's range and its ends
kinks("tanh_backward", (_G, vector(0.0, 1.0, -1.0, 0.5, -0.9)))
kinks("log_sigmoid_forward", (vector(0.0, -0.0, 1.5, -30.0, 30.0),))
kinks(
    "log_sigmoid_backward",
    (_G, vector(0.0, -0.0, 1.5, -30.0, 30.0), np.exp(-np.abs(vector(0.0, -0.0, 1.5, -30.0, 30.0)))),
)
# threshold / beta = 1.5 itself, where softplus becomes the identity
kinks("softplus", (vector(1.5, 0.0, -5.0, 3.0, 1.4), 2.0, 3.0))
kinks("rrelu_with_noise", (_AT_0, _NOISE, *_RRELU, False))
kinks("rrelu_with_noise_backward", *[(_G, _AT_0, _NOISE, *_RRELU, training, False) for training in (False, True)])
# schema changes since the seed files: the same computation under torch 2.13's signature
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.elu_backward(
            a["grad_output"], a["alpha"], a["scale"], a["input_scale"], True, a["output"]
        ),
        "torch 2.13's elu_backward takes (..., bool is_result, Tensor self_or_result): is_result=True",
        True,
    ),
    "elu_backward",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.softplus_backward(a["grad_output"], a["self"], a["beta"], a["threshold"]),
        "torch 2.13's softplus_backward dropped Tensor output",
        True,
    ),
    "softplus_backward",
)


def _prelu_backward_torch(aten, a):
    """torch 2.13 has no prelu_backward: the vjp of its prelu is that function."""
    import torch

    return torch.func.vjp(aten.prelu.default, a["self"], a["weight"])[1](a["grad_output"])


torch_equivalent(
    Equivalent(_prelu_backward_torch, "torch 2.13 has no prelu_backward: the vjp of aten.prelu (torch.func.vjp)"),
    "prelu_backward",
)
kinks("mish", (vector(0.0, -30.0, 25.0, 3.0),))  # 0 and both saturations
parity_tolerance(
    1e-7,
    "torch 2.13's CPU hardsigmoid backward scales by 1/6 as a float32 constant (0.16666667163) in float64 "
    "too: its gradient is 3e-8 relative from 1/6",
    "hardsigmoid",
)


# -- the sympy proofs: the op's definition ----------------------------------------------------
# Each op as a sympy function of its arguments' symbols: the reference whose derivative its
# formulas must equal (check/proofs.py). `sp` imports sympy only when a proof calls one.

# Symbols other than the Tensor inputs are sampled in 0.5 .. 1.5 unless `ranges` says otherwise.
_HARDTANH_RANGES = (("min_val", -1.5, -0.5), ("max_val", 0.5, 1.5))
_THRESHOLD_RANGES = (("threshold", -1.0, 1.0), ("value", -2.0, -1.0))  # value <= threshold: see threshold_
_LAMBD_RANGES = (("lambd", 0.3, 1.2),)
_SOFTPLUS_RANGES = (("beta", 0.5, 1.5), ("threshold", -1.0, 1.0))
_ELU_RANGES = (("alpha", 0.5, 1.5), ("scale", 0.5, 1.5), ("input_scale", 0.5, 1.5))

definition("tanh", lambda x: sp.tanh(x), "self")
definition("sigmoid", symbolic_math.sigmoid, "self")
# the in-place ones share the out-of-place definition
definition("relu", lambda x: symbolic_math.threshold(x, 0, 0), "self")
definition("relu_", lambda x: symbolic_math.threshold(x, 0, 0), "self")
definition("threshold", symbolic_math.threshold, "self", "threshold", "value", ranges=_THRESHOLD_RANGES)
definition("threshold_", symbolic_math.threshold, "self", "threshold", "value", ranges=_THRESHOLD_RANGES)
definition("hardtanh", symbolic_math.hardtanh, "self", "min_val", "max_val", ranges=_HARDTANH_RANGES)
definition("hardtanh_", symbolic_math.hardtanh, "self", "min_val", "max_val", ranges=_HARDTANH_RANGES)
definition("leaky_relu", symbolic_math.leaky_relu, "self", "negative_slope")
definition("leaky_relu_", symbolic_math.leaky_relu, "self", "negative_slope")
for _name in ("rrelu_with_noise", "rrelu_with_noise_"):
    definition(
        _name,
        lambda x, lo, hi: symbolic_math.leaky_relu(x, (lo + hi) / 2),
        "self",
        "lower",
        "upper",
        fixed=(("training", False),),
    )
definition("prelu", symbolic_math.leaky_relu, "self", "weight")
definition("elu", symbolic_math.elu, "self", "alpha", "scale", "input_scale", ranges=_ELU_RANGES)
definition("celu", lambda x, a: symbolic_math.elu(x, a, 1, 1 / a), "self", "alpha", ranges=_ELU_RANGES)
definition("gelu", symbolic_math.gelu, "self", fixed=(("approximate", "none"),))
definition("silu", lambda x: x * symbolic_math.sigmoid(x), "self")
definition("mish", lambda x: x * sp.tanh(sp.log(1 + sp.exp(x))), "self")
definition("softplus", symbolic_math.softplus, "self", "beta", "threshold", ranges=_SOFTPLUS_RANGES)
definition(
    "hardsigmoid",
    lambda x: sp.Piecewise((0, x <= -3), (1, x >= 3), (x / 6 + sp.Rational(1, 2), True)),
    "self",
    lo=-4.0,
    hi=4.0,
)
definition(
    "hardswish", lambda x: sp.Piecewise((0, x <= -3), (x, x >= 3), (x * (x + 3) / 6, True)), "self", lo=-4.0, hi=4.0
)
definition(
    "hardshrink", lambda x, l: sp.Piecewise((x, (x < -l) | (x > l)), (0, True)), "self", "lambd", ranges=_LAMBD_RANGES
)
definition(
    "softshrink",
    lambda x, l: sp.Piecewise((x - l, x > l), (x + l, x < -l), (0, True)),
    "self",
    "lambd",
    ranges=_LAMBD_RANGES,
)
# log_sigmoid_forward's buffer output is ATen's scratch
definition("log_sigmoid_forward", lambda x: sp.log(symbolic_math.sigmoid(x)), "self")
# the activations' backward kernels, as functions of grad_output and the rest
definition(
    "threshold_backward",
    lambda g, x, t: sp.Piecewise((0, x <= t), (g, True)),
    "grad_output",
    "self",
    "threshold",
    ranges=_THRESHOLD_RANGES,
)
definition(
    "hardtanh_backward",
    lambda g, x, lo, hi: sp.Piecewise((0, (x <= lo) | (x >= hi)), (g, True)),
    "grad_output",
    "self",
    "min_val",
    "max_val",
    ranges=_HARDTANH_RANGES,
)
definition(
    "leaky_relu_backward",
    lambda g, x, s: sp.Piecewise((g, x > 0), (g * s, True)),
    "grad_output",
    "self",
    "negative_slope",
)
definition(
    "rrelu_with_noise_backward",
    lambda g, x, lo, hi: sp.Piecewise((g, x > 0), (g * (lo + hi) / 2, True)),
    "grad_output",
    "self",
    "lower",
    "upper",
    fixed=(("training", False),),
)
definition(
    "hardshrink_backward",
    lambda g, x, l: sp.Piecewise((0, (x >= -l) & (x <= l)), (g, True)),
    "grad_out",
    "self",
    "lambd",
    ranges=_LAMBD_RANGES,
)
definition(
    "softshrink_backward",
    lambda g, x, l: sp.Piecewise((g, (x < -l) | (x > l)), (0, True)),
    "grad_output",
    "self",
    "lambd",
    ranges=_LAMBD_RANGES,
)
definition(
    "elu_backward",
    lambda g, a, s, i, y: symbolic_math.elu_backward(g, a, s, i, y),
    "grad_output",
    "alpha",
    "scale",
    "input_scale",
    "output",
    ranges=_ELU_RANGES,
)
# its `output` input is softplus(self): the kernel reads it, the formulas assume it
definition(
    "softplus_backward",
    lambda g, x, b, t: g * sp.Piecewise((1, x * b > t), (symbolic_math.sigmoid(b * x), True)),
    "grad_output",
    "self",
    "beta",
    "threshold",
    ranges=_SOFTPLUS_RANGES,
    derived=(("output", symbolic_math.softplus, ("self", "beta", "threshold")),),
)
definition("log_sigmoid_backward", lambda g, x: g * symbolic_math.sigmoid(-x), "grad_output", "self")
definition("sigmoid_backward", lambda g, y: g * (1 - y) * y, "grad_output", "output")
definition("tanh_backward", lambda g, y: g * (1 - y**2), "grad_output", "output")
definition(
    "prelu_backward",
    lambda g, x, w: (sp.Piecewise((g, x > 0), (g * w, True)), sp.Piecewise((0, x > 0), (g * x, True))),
    "grad_output",
    "self",
    "weight",
)
