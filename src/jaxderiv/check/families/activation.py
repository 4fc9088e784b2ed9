"""Checker samples for the pointwise activations: inputs kept clear of every kink.

Finite differences cannot judge a derivative at a kink, so each op's inputs stay at least
GAP away from its kinks (0 for relu, +-lambd for the shrinks, the bounds of hardtanh, ...);
tests/ops/test_activation.py checks the kinks themselves against PyTorch. Non-default
parameters are used where they move the kinks, to catch a formula ignoring one.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, complex_ok, domain, kinks, known_failure, real_only, samples, torch_equivalent
from ..samples import Sample
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
# Their second derivative applies the 1.7 entries of sigmoid_backward / tanh_backward (the
# 1.10 file has none), written before those took complex inputs: their formulas for `output`
# lack the `.conj()` of the complex form. Older formulas are checked on real inputs only.
real_only(
    "the second derivative runs the PyTorch 1.7 formulas of sigmoid_backward / tanh_backward, "
    "written for real tensors (no .conj())",
    "sigmoid",
    "tanh",
    modes=("vjp_vjp",),
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


known_failure(
    "spec bug (PyTorch 1.7, fixed later): threshold_'s formula threshold_backward(grad, result, threshold) "
    "passes the gradient of replaced elements when `value` is above the threshold",
    "threshold_",
    modes=("vjp", "jvp"),
)
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

kinks("relu", (vector(0.0, -0.0, 1.5, -2.0),))
kinks("threshold", (vector(0.5, 0.4, 0.6, -1.0), 0.5, -3.0))
kinks("hardtanh", (vector(-1.0, 1.0, 0.0, 2.0), -1.0, 1.0))
kinks("hardshrink", (vector(0.5, -0.5, 0.0, 1.0), 0.5))
kinks("softshrink", (vector(0.5, -0.5, 0.0, 1.0), 0.5))
kinks("leaky_relu", (vector(0.0, 1.0, -1.0), 0.01))
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
