"""Forward implementations of ATen's pointwise activations and of their `*_backward` ops.

The `*_backward` functions are ATen ops in their own right: the activations' formulas call
them as helpers, and their own spec entries differentiate them (double backward). Each is
written from ATen's kernel, including which side of a kink a boundary point falls on.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..records import (
    Equivalent,
    Sample,
    complex_ok,
    definition,
    domain,
    kinks,
    known_failure,
    parity_differs,
    parity_tolerance,
    real_only,
    samples,
    symbolic_math,
    torch_equivalent,
    vector,
)
from ..records.symbolic import sp
from . import impl, variant


def _require_floating(name: str, x) -> None:
    """ATen has no integer or bool kernel for most activations."""
    if not jnp.issubdtype(jnp.result_type(x), jnp.inexact):
        raise TypeError(f"aten::{name} is not implemented for {jnp.result_type(x)} tensors")


def _float(x):
    """sigmoid and tanh compute integer and bool inputs in the default dtype, float32."""
    return x if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else jnp.asarray(x, jnp.float32)


def _zero_where(mask, grad, self):
    """`mask ? 0 : grad`, in the dtype and broadcast shape of TensorIterator(grad, self)."""
    dtype = jnp.result_type(grad, self)
    return jnp.where(mask, jnp.zeros((), dtype), jnp.asarray(grad, dtype))


# -- relu, threshold, clamps and shrinks (piecewise linear) ----------------------------------


@impl("relu")
def relu(self):
    """max(x, 0); NaN propagates and integers keep their dtype."""
    return jnp.maximum(self, jnp.zeros((), jnp.result_type(self)))


@impl("threshold")
def threshold(self, threshold, value):
    """x <= threshold ? value : x."""
    return jnp.where(self <= threshold, jnp.asarray(value, jnp.result_type(self)), self)


@impl("threshold_backward")
def threshold_backward(grad_output, self, threshold):
    """self <= threshold ? 0 : grad: relu'(0) is 0."""
    return _zero_where(self <= threshold, grad_output, self)


@impl("hardtanh")
def hardtanh(self, min_val=-1, max_val=1):
    """clamp(x, min_val, max_val); NaN propagates and integers keep their dtype."""
    dtype = jnp.result_type(self)
    return jnp.clip(self, jnp.asarray(min_val, dtype), jnp.asarray(max_val, dtype))


@impl("hardtanh_backward")
def hardtanh_backward(grad_output, self, min_val, max_val):
    """Zero outside the open interval: at the bounds themselves too, and at NaN (ATen's
    vectorized kernel keeps grad where min < x < max)."""
    return _zero_where(~((self > min_val) & (self < max_val)), grad_output, self)


@impl("leaky_relu")
def leaky_relu(self, negative_slope=0.01):
    """x > 0 ? x : x * negative_slope."""
    _require_floating("leaky_relu", self)
    return jnp.where(self > 0, self, self * negative_slope)


@impl("leaky_relu_backward")
def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    """self > 0 ? grad : grad * slope: the slope at 0 is negative_slope.

    From the result, the sign of the input is lost when the slope is negative; ATen refuses.
    """
    if self_is_result and negative_slope < 0:
        raise ValueError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported."
        )
    return jnp.where(self > 0, grad_output, grad_output * negative_slope)


@impl("hardshrink")
def hardshrink(self, lambd=0.5):
    """0 on the closed interval [-lambd, lambd], x elsewhere (and at NaN)."""
    _require_floating("hardshrink", self)
    return _zero_where((self >= -lambd) & (self <= lambd), self, self)


@impl("hardshrink_backward")
def hardshrink_backward(grad_out, self, lambd):
    """Zero on the closed interval [-lambd, lambd]: at its ends too, and at NaN (ATen's
    kernel keeps grad where x < -lambd or x > lambd)."""
    return _zero_where(~((self < -lambd) | (self > lambd)), grad_out, self)


@impl("softshrink")
def softshrink(self, lambd=0.5):
    """x - clamp(x, -lambd, lambd): x -+ lambd outside the interval, 0 inside, NaN kept."""
    _require_floating("softshrink", self)
    return self - jnp.clip(self, -lambd, lambd)


@impl("softshrink_backward")
def softshrink_backward(grad_output, self, lambd):
    """As hardshrink's: zero on the closed interval [-lambd, lambd]."""
    return hardshrink_backward(grad_output, self, lambd)


@impl("rrelu_with_noise")
def rrelu_with_noise(self, noise, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """Training: self * noise, the slopes drawn beforehand (ATen draws them into `noise`, 1
    where self > 0; JAX cannot write into an input). Otherwise leaky relu with the mean slope.

    The condition is the one rrelu_with_noise_backward uses, so both stay consistent.
    """
    _require_floating("rrelu_with_noise", self)
    if training and upper - lower > 1e-6:
        return self * noise
    return leaky_relu(self, (lower + upper) / 2)


@impl("rrelu_with_noise_functional")
def rrelu_with_noise_functional(self, noise, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """(rrelu_with_noise's output, the slopes it used), which ATen writes in place: in training
    the given draw (1 where self > 0), or `lower` where self <= 0 when the range is empty;
    otherwise noise as given."""
    out = rrelu_with_noise(self, noise, lower, upper, training, generator)
    if not training or upper - lower > 1e-6:
        return out, noise
    dtype = jnp.result_type(noise)
    return out, jnp.where(self > 0, jnp.ones((), dtype), jnp.full((), lower, dtype))


@variant(
    "rrelu_with_noise_functional",
    entry="rrelu_with_noise_functional",
    gradient="the entry's formulas, the slopes drawn from apply's key",
    random=True,
)
def rrelu_with_noise_functional_variant(
    registry, op, self, noise, lower=0.125, upper=0.3333333333333333, training=False, generator=None, *, key=None
):
    """`rrelu_with_noise_functional` in training: ATen draws each slope into `noise` (U(lower,
    upper) where self <= 0, 1 elsewhere) and its formula reads `noise` for the gradient. The
    functional graph hands it an empty tensor, so the slopes are drawn from the node's key and
    passed as `noise`: the output is self * noise and the gradient the entry's formula of it."""
    x = jnp.asarray(self)
    if training and upper - lower > 1e-6:
        if key is None and generator is None:
            raise ValueError("rrelu in training mode draws its slopes: pass key=jax.random.key(...) to apply()")
        slopes = jax.random.uniform(key if generator is None else generator, x.shape, x.dtype, lower, upper)
        noise = jnp.where(x > 0, jnp.ones((), x.dtype), slopes)
    return op(self, noise, lower, upper, training)


@impl("rrelu_with_noise_backward")
def rrelu_with_noise_backward(grad_output, self, noise, lower, upper, training, self_is_result):
    if training and upper - lower > 1e-6:
        return grad_output * noise
    return leaky_relu_backward(grad_output, self, (lower + upper) / 2, self_is_result)


# -- prelu: a learnt slope per channel (dimension 1) -------------------------------------------


def prelu_weight(self, weight):
    """The weight shaped to broadcast over self: one slope, or one per channel (dimension 1)."""
    n = weight.size
    if n != 1:
        channels = self.shape[1] if self.ndim > 1 else 1
        if self.ndim == 0 or channels != n:
            raise ValueError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} and channel size = {channels}."
            )
    if weight.ndim > 1:
        raise ValueError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if weight.ndim == self.ndim:
        return weight
    shape = [1] * self.ndim
    if self.ndim > 1:
        shape[1] = n
    return weight.reshape(shape)


def sum_to_weight(value, weight, self):
    """Sum a per-element gradient to the weight: over everything but the channels."""
    keep = (1,) if weight.size != 1 and self.ndim > 1 else ()
    axes = tuple(d for d in range(value.ndim) if d not in keep)
    return jnp.sum(value, axis=axes).reshape(weight.shape).astype(weight.dtype)


@impl("prelu")
def prelu(self, weight):
    _require_floating("prelu", self)
    if jnp.result_type(self) != jnp.result_type(weight):
        raise TypeError(
            f"prelu: self ({jnp.result_type(self)}) and weight ({jnp.result_type(weight)}) must have the same dtype"
        )
    return jnp.where(self > 0, self, prelu_weight(self, weight) * self)


@impl("prelu_backward")
def prelu_backward(grad_output, self, weight):
    """(grad * (x > 0 ? 1 : w), sum of grad * (x > 0 ? 0 : x) per channel)."""
    w = prelu_weight(self, weight)
    positive = self > 0
    grad_self = jnp.where(positive, grad_output, w * grad_output)
    grad_weight = jnp.where(positive, 0, self * grad_output)
    return grad_self, sum_to_weight(grad_weight, weight, self)


# -- smooth activations -------------------------------------------------------------------------


@impl("sigmoid")
def sigmoid(self):
    return jax.nn.sigmoid(_float(self))


@impl("sigmoid_backward")
def sigmoid_backward(grad_output, output):
    """grad * conj(output * (1 - output)): PyTorch's convention for complex inputs."""
    return grad_output * jnp.conj((1 - output) * output)


@impl("tanh")
def tanh(self):
    return jnp.tanh(_float(self))


@impl("tanh_backward")
def tanh_backward(grad_output, output):
    return grad_output * jnp.conj(1 - output * output)


@impl("silu")
def silu(self):
    _require_floating("silu", self)
    return self * jax.nn.sigmoid(self)


@impl("silu_backward")
def silu_backward(grad_output, self):
    """grad * s * (1 + x * (1 - s)), s = sigmoid(x)."""
    s = jax.nn.sigmoid(self)
    return grad_output * s * (1 + self * (1 - s))


@impl("gelu")
def gelu(self, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF: the exact erf form, or with approximate='tanh'
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    _require_floating("gelu", self)
    if gelu_tanh(approximate):
        return 0.5 * self * (1 + jnp.tanh(gelu_inner(self)))
    return self * _normal_cdf(self)


def gelu_tanh(approximate: str) -> bool:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return approximate == "tanh"


GELU_BETA = math.sqrt(2 / math.pi)
GELU_KAPPA = 0.044715


def gelu_inner(x):
    return GELU_BETA * (x + GELU_KAPPA * x * x * x)


def _normal_cdf(x):
    return 0.5 * (1 + jax.lax.erf(x * math.sqrt(0.5)))


@impl("gelu_backward")
def gelu_backward(grad_output, self, approximate="none"):
    """grad * (Phi(x) + x * phi(x)), phi the standard normal density; with approximate='tanh'
    grad * (0.5 (1 + t) + 0.5 x (1 - t^2) u'), t = tanh(u), u = beta (x + kappa x^3)."""
    if gelu_tanh(approximate):
        t = jnp.tanh(gelu_inner(self))
        du = GELU_BETA * (1 + 3 * GELU_KAPPA * self * self)
        return grad_output * (0.5 * (1 + t) + 0.5 * self * (1 - t * t) * du)
    pdf = jnp.exp(-0.5 * self * self) / math.sqrt(2 * math.pi)
    return grad_output * (_normal_cdf(self) + self * pdf)


@impl("elu")
def elu(self, alpha=1, scale=1, input_scale=1):
    """x <= 0 ? alpha * scale * (exp(x * input_scale) - 1) : scale * x."""
    _require_floating("elu", self)
    negative = jnp.expm1(jnp.minimum(self, 0) * input_scale) * (alpha * scale)
    return jnp.where(self <= 0, negative, self * scale)


@impl("celu")
def celu(self, alpha=1.0):
    """elu with scale 1 and input_scale 1 / alpha."""
    if alpha == 0:
        raise ZeroDivisionError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return elu(self, alpha, 1.0, 1.0 / alpha)


@impl("elu_backward")
def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result=None):
    """elu's gradient, from its result (`is_result`) or from its input; 1.7's schema has no
    is_result and passes the result in its place: `elu_backward(grad, alpha, scale, input_scale, output)`
    (registry.RENAMED_ARGUMENTS accepts 1.7's name `output` for the parameter is_result).

    From the result y: y <= 0 ? grad * input_scale * (y + alpha * scale) : grad * scale;
    from the input x: x <= 0 ? grad * input_scale * alpha * scale * exp(x * input_scale) : grad * scale.
    """
    if self_or_result is None:
        is_result, self_or_result = True, is_result
    y = self_or_result
    if is_result:
        negative = grad_output * input_scale * (y + alpha * scale)
    else:
        negative = grad_output * (input_scale * alpha * scale) * jnp.exp(jnp.minimum(y, 0) * input_scale)
    return jnp.where(y <= 0, negative, grad_output * scale)


@impl("softplus")
def softplus(self, beta=1, threshold=20):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    _require_floating("softplus", self)
    z = self * beta
    return jnp.where(z > threshold, self, jnp.logaddexp(z, 0) / beta)


@impl("mish")
def mish(self):
    """x * tanh(softplus(x)), softplus with ATen's threshold 20 (the identity above it)."""
    _require_floating("mish", self)
    return self * jnp.tanh(softplus(self))


@impl("mish_backward")
def mish_backward(grad_output, self):
    """grad * (tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2)), sp = softplus(x)."""
    t = jnp.tanh(softplus(self))
    return grad_output * (t + self * jax.nn.sigmoid(self) * (1 - t * t))


@impl("softplus_backward")
def softplus_backward(grad_output, self, beta, threshold, output=None):
    """grad * sigmoid(beta * x), and grad where beta * x > threshold.

    Computed from self, as later ATen does (its schema dropped `output`, which 1.7's passes),
    not from `output`, which is softplus(self): the entry's formula for self assumes this
    dependence on self.
    """
    z = self * beta
    return jnp.where(z > threshold, grad_output, grad_output * jax.nn.sigmoid(z))


@impl("log_sigmoid_forward")
def log_sigmoid_forward(self):
    """(log(sigmoid(x)), buffer exp(-|x|)) as ATen's CPU kernel; stable for large |x|."""
    _require_floating("log_sigmoid_forward", self)
    buffer = jnp.exp(-jnp.abs(self))
    return jnp.minimum(self, 0) - jnp.log1p(buffer), buffer


@impl("log_sigmoid_backward")
def log_sigmoid_backward(grad_output, self, buffer):
    """grad * sigmoid(-x), with z = exp(-|x|) recomputed from self as ATen's CUDA kernel does.

    The CPU kernel reads z from `buffer`, which log_sigmoid_forward made equal; recomputing
    it keeps the derivative in self the one the entry's formula states.
    """
    z = jnp.exp(-jnp.abs(self))
    return jnp.where(self < 0, grad_output / (1 + z), grad_output * z / (1 + z))


@impl("hardsigmoid")
def hardsigmoid(self):
    """relu6(x + 3) / 6."""
    _require_floating("hardsigmoid", self)
    return jnp.clip(self + 3, 0, 6) / 6


@impl("hardsigmoid_backward")
def hardsigmoid_backward(grad_output, self):
    """grad / 6 on the open interval (-3, 3), else 0 (also at NaN)."""
    return _zero_where(~((self > -3) & (self < 3)), grad_output / 6, self)


@impl("hardswish")
def hardswish(self):
    """x * relu6(x + 3) / 6."""
    _require_floating("hardswish", self)
    return self * jnp.clip(self + 3, 0, 6) / 6


@impl("hardswish_backward")
def hardswish_backward(grad_output, self):
    """0 up to -3 (inclusive), grad * (x / 3 + 1/2) below 3, grad from 3 on (and at NaN).

    Which side the boundaries fall on follows PyTorch 2's kernel; older kernels differed.
    """
    return _zero_where(self <= -3, jnp.where(self < 3, grad_output * (self / 3 + 0.5), grad_output), self)


# --- records: samples, domains and what the parity run against torch needs ------------------

# The family's traits (records.FamilyTraits; jaxderiv.check.opdb.traits reads them):
# elementwise (listed for the sympy proofs), checked in float32 and bfloat16 too.
FAMILY = {"elementwise": True, "low_precision": True}

# Checker samples for the pointwise activations: inputs kept clear of every kink.
#
# Finite differences cannot judge a derivative at a kink, so each op's inputs stay at least
# GAP away from its kinks (0 for relu, +-lambd for the shrinks, the bounds of hardtanh, ...);
# the kinks themselves are kink inputs of the records (`kinks`, below), which the parity run
# (tests/check/test_parity.py) compares with PyTorch. Non-default parameters are used where they
# move the kinks, to catch a formula ignoring one.
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
