"""The activation family against PyTorch 2.13: forward values, vjp and jvp, kinks included.

At a kink (relu at 0, hardtanh at its bounds, the shrinks at +-lambd, ...) the derivative is
the subgradient PyTorch's formula picks, which JAX's own autodiff of the forward need not
pick; the checker cannot judge kinks with finite differences, so these tests do.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv

torch = pytest.importorskip("torch")
aten = torch.ops.aten


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the jaxderiv op
    args: Callable[[np.random.Generator], tuple]  # float64 arrays and scalars, in the spec's schema order
    torch_fn: Callable  # the same call in torch 2.13, on the same arguments as torch tensors
    diff: tuple[int, ...] = (0,)  # positions of the differentiable tensor arguments
    outputs: tuple[int, ...] | None = None  # differentiable outputs of a tuple-returning op
    label: str = ""


def _x(*kinks, lo=-2.0, hi=2.0, n=6):
    """The kink points themselves, then random values in [lo, hi]."""
    return lambda rng: np.concatenate([np.asarray(kinks, float), rng.uniform(lo, hi, n)])


def _unary(name, *scalars, kinks=(0.0,), lo=-2.0, hi=2.0, torch_fn=None):
    """op(x, *scalars), x containing the kinks."""
    x = _x(*kinks, lo=lo, hi=hi)
    return Case(name, lambda rng: (x(rng), *scalars), torch_fn or getattr(aten, name).default)


def _inplace(name, *scalars, kinks=(0.0,)):
    """An in-place entry; torch works on a copy, so its input stays a leaf."""
    return _unary(name, *scalars, kinks=kinks, torch_fn=lambda x, *s: getattr(aten, name).default(x.clone(), *s))


def _backward(name, *scalars, kinks=(0.0,), lo=-2.0, hi=2.0, torch_fn=None):
    """op(grad_output, self, *scalars): a *_backward entry, differentiable in both tensors."""
    x = _x(*kinks, lo=lo, hi=hi)

    def args(rng):
        self = x(rng)
        return (rng.normal(size=self.shape), self, *scalars)

    return Case(name, args, torch_fn or getattr(aten, name).default, diff=(0, 1))


def _softplus_backward_args(rng):
    x = _x(-5.0, 3.0, lo=-6.0, hi=6.0)(rng)  # beta * x above threshold for some values
    return (rng.normal(size=x.shape), x, 2.0, 3.0, np.where(2 * x > 3, x, np.logaddexp(2 * x, 0) / 2))


def _elu_backward_args(rng):
    output = _x(0.0, lo=-1.5, hi=2.0)(rng)  # the results of elu(alpha=1.5, scale=1, input_scale=1)
    return (rng.normal(size=output.shape), 1.5, 1.0, 1.0, output)


def _log_sigmoid_backward_args(rng):
    x = _x(0.0, -30.0, 30.0)(rng)
    return (rng.normal(size=x.shape), x, np.exp(-np.abs(x)))


_RRELU = (0.1, 0.4)


def _rrelu(x, noise, lower, upper, training):
    """torch's rrelu_with_noise, drawing the same slopes each call, into a copy of noise."""
    torch.manual_seed(0)
    return aten.rrelu_with_noise.default(x, noise.clone(), lower, upper, training)


def _rrelu_args(training):
    def args(rng):
        x = _x(0.0)(rng)
        noise = torch.zeros(x.shape, dtype=torch.float64)
        torch.manual_seed(0)
        aten.rrelu_with_noise.default(torch.from_numpy(x), noise, *_RRELU, training)  # ATen draws the slopes into noise
        return (x, noise.numpy(), *_RRELU, training)

    return args


def _rrelu_backward_args(training):
    def args(rng):
        x, noise, lower, upper, training_ = _rrelu_args(training)(rng)
        return (rng.normal(size=x.shape), x, noise, lower, upper, training_, False)

    return args


def _prelu_args(rng):
    # Away from 0: torch 2.13's forward-mode formula for prelu takes x >= 0 at the kink,
    # unlike its backward formula and the spec's.
    x = rng.uniform(0.1, 2.0, (2, 3, 4)) * rng.choice([-1.0, 1.0], (2, 3, 4))
    return (x, rng.uniform(0.05, 0.5, (3,)))


def _prelu_backward_torch(grad_output, self, weight):
    """torch 2.13 has no prelu_backward: the vjp of prelu is that function."""
    return torch.func.vjp(aten.prelu.default, self, weight)[1](grad_output)


def _prelu_backward_args(rng):
    x, w = _prelu_args(rng)
    return (rng.normal(size=x.shape), x, w)


CASES = [
    _unary("relu"),
    _inplace("relu_"),
    _unary("threshold", 0.3, -1.5, kinks=(0.3,)),
    _inplace("threshold_", 0.3, -1.5, kinks=(0.3,)),
    _backward("threshold_backward", 0.3, kinks=(0.3,)),
    _unary("hardtanh", -0.5, 1.2, kinks=(-0.5, 1.2)),
    _inplace("hardtanh_", -0.5, 1.2, kinks=(-0.5, 1.2)),
    _backward("hardtanh_backward", -0.5, 1.2, kinks=(-0.5, 1.2)),
    _unary("leaky_relu", 0.2),
    _inplace("leaky_relu_", 0.2),
    _backward("leaky_relu_backward", 0.2, False),
    _unary("hardshrink", 0.7, kinks=(-0.7, 0.7)),
    _backward("hardshrink_backward", 0.7, kinks=(-0.7, 0.7)),
    _unary("softshrink", 0.7, kinks=(-0.7, 0.7)),
    _backward("softshrink_backward", 0.7, kinks=(-0.7, 0.7)),
    _unary("hardsigmoid", kinks=(-3.0, 3.0), lo=-5.0, hi=5.0),
    _unary("hardswish", kinks=(-3.0, 3.0), lo=-5.0, hi=5.0),
    _unary("elu", 1.3, 0.8, 1.7),
    _unary("celu", 1.5),
    Case(
        "elu_backward",
        _elu_backward_args,
        lambda g, a, s, i, out: aten.elu_backward.default(g, a, s, i, True, out),
        diff=(0, 4),
    ),
    _unary("silu", lo=-5.0, hi=5.0),
    _unary("gelu", lo=-5.0, hi=5.0),
    _unary("sigmoid", lo=-5.0, hi=5.0),
    _backward("sigmoid_backward", lo=0.0, hi=1.0),
    _unary("tanh", lo=-3.0, hi=3.0),
    _backward("tanh_backward", lo=-1.0, hi=1.0),
    _unary("softplus", 2.0, 3.0, kinks=(-5.0, 3.0), lo=-6.0, hi=6.0),
    Case(
        "softplus_backward",
        _softplus_backward_args,
        lambda g, x, b, t, out: aten.softplus_backward.default(g, x, b, t),
        diff=(0, 1),
    ),
    Case(
        "log_sigmoid_forward", lambda rng: (_x(0.0, -30.0, 30.0)(rng),), aten.log_sigmoid_forward.default, outputs=(0,)
    ),
    Case("log_sigmoid_backward", _log_sigmoid_backward_args, aten.log_sigmoid_backward.default, diff=(0, 1)),
    Case("rrelu_with_noise", _rrelu_args(False), _rrelu, label="eval"),
    Case("rrelu_with_noise", _rrelu_args(True), _rrelu, label="training"),
    Case(
        "rrelu_with_noise_backward",
        _rrelu_backward_args(False),
        aten.rrelu_with_noise_backward.default,
        diff=(0, 1),
        label="eval",
    ),
    Case(
        "rrelu_with_noise_backward",
        _rrelu_backward_args(True),
        aten.rrelu_with_noise_backward.default,
        diff=(0, 1),
        label="training",
    ),
    Case("prelu", _prelu_args, aten.prelu.default, diff=(0, 1)),
    Case("prelu_backward", _prelu_backward_args, _prelu_backward_torch, diff=(0, 1, 2), outputs=(0, 1)),
]
IDS = [f"{c.name}-{c.label}" if c.label else c.name for c in CASES]


# -- running a case in both libraries -----------------------------------------------------------


def _args(case, seed=0):
    return case.args(np.random.default_rng(seed))


def _torch(v):
    return torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v


def _outputs(out, case):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [outs[i] for i in case.outputs] if case.outputs is not None else outs


def _ours_of(case, args):
    """Our op as a function of its differentiable arrays, returning the differentiable outputs."""
    op = jaxderiv.op(case.name)

    def fn(*xs):
        full = list(args)
        for i, x in zip(case.diff, xs):
            full[i] = x
        return _outputs(op(*full), case)

    return fn, [jnp.asarray(args[i]) for i in case.diff]


def _torch_of(case, args):
    targs = [_torch(a) for a in args]

    def fn(*xs):
        full = list(targs)
        for i, x in zip(case.diff, xs):
            full[i] = x
        return tuple(_outputs(case.torch_fn(*full), case))

    return fn, [targs[i] for i in case.diff]


def _close(ours, theirs, rtol=1e-7, atol=1e-12):
    """Float64 agreement, up to ATen's float32 constants (hardsigmoid's 1/6 is 1.0f / 6.0f)."""
    for o, t in zip(ours, theirs, strict=True):
        t = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        assert np.shape(o) == t.shape
        np.testing.assert_allclose(np.asarray(o), t, rtol=rtol, atol=atol)


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_torch(case, dtype):
    args = [a.astype(dtype) if isinstance(a, np.ndarray) else a for a in _args(case)]
    ours = jaxderiv.op(case.name)(*args)
    theirs = case.torch_fn(*[_torch(a) for a in args])
    ours, theirs = (list(v) if isinstance(v, tuple) else [v] for v in (ours, theirs))
    assert [str(np.dtype(o.dtype)) for o in ours] == [str(t.dtype).removeprefix("torch.") for t in theirs]
    tol = 1e-6 if dtype == np.float32 else 1e-12
    _close(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vjp_matches_torch(case):
    args = _args(case)
    fn, xs = _ours_of(case, args)
    tfn, txs = _torch_of(case, args)
    ys, vjp = jax.vjp(fn, *xs)
    cts = [np.random.default_rng(1).normal(size=np.shape(y)) for y in ys]
    ours = vjp([jnp.asarray(c) for c in cts])
    txs = [x.clone().requires_grad_() for x in txs]
    theirs = torch.autograd.grad(tfn(*txs), txs, [_torch(c) for c in cts], allow_unused=True)
    theirs = [torch.zeros_like(x) if g is None else g for g, x in zip(theirs, txs)]
    _close(ours, theirs)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jvp_matches_torch(case):
    args = _args(case)
    fn, xs = _ours_of(case, args)
    tfn, txs = _torch_of(case, args)
    ts = [np.random.default_rng(2).normal(size=np.shape(x)) for x in xs]
    _, ours = jax.jvp(fn, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    _, theirs = torch.func.jvp(tfn, tuple(txs), tuple(_torch(t) for t in ts))
    _close(ours, theirs)


def test_kink_subgradients_differ_from_jax_autodiff():
    """At relu's kink the rule gives PyTorch's 0; JAX's autodiff of max(x, 0) gives 1/2."""
    x = jnp.zeros(3)
    assert float(jax.grad(lambda x: jaxderiv.op("relu")(x).sum())(x).sum()) == 0.0
    assert float(jax.grad(lambda x: jnp.maximum(x, 0.0).sum())(x).sum()) != 0.0


# -- dtypes and errors ----------------------------------------------------------------------------

INTEGER_CASES = [
    ("relu", (), aten.relu.default),
    ("threshold", (0, 5), aten.threshold.default),
    ("hardtanh", (-1, 1), aten.hardtanh.default),
    ("sigmoid", (), aten.sigmoid.default),
    ("tanh", (), aten.tanh.default),
]


@pytest.mark.parametrize("name,scalars,torch_fn", INTEGER_CASES, ids=[c[0] for c in INTEGER_CASES])
def test_integer_inputs_match_torch(name, scalars, torch_fn):
    """relu, threshold and hardtanh keep integers; sigmoid and tanh compute them in float32."""
    x = np.array([-3, -1, 0, 2, 7], dtype=np.int64)
    ours = jaxderiv.op(name)(x, *scalars)
    theirs = torch_fn(torch.from_numpy(x), *scalars)
    assert str(np.dtype(ours.dtype)) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["silu", "gelu", "elu", "softplus", "leaky_relu", "hardswish", "log_sigmoid_forward"])
def test_integer_inputs_rejected_like_torch(name):
    x = np.array([-1, 2], dtype=np.int64)
    with pytest.raises(RuntimeError):
        getattr(aten, name).default(torch.from_numpy(x))
    with pytest.raises(TypeError):
        jaxderiv.op(name)(x)


def test_nan_propagates_like_torch():
    x = np.array([np.nan, -1.0, 1.0])
    for name, scalars in [
        ("relu", ()),
        ("hardtanh", ()),
        ("softshrink", ()),
        ("hardshrink", ()),
        ("threshold", (0.0, 2.0)),
        ("hardswish", ()),
    ]:
        ours = jaxderiv.op(name)(x, *scalars)
        np.testing.assert_array_equal(
            np.asarray(ours), getattr(aten, name).default(torch.from_numpy(x), *scalars).numpy()
        )


def test_inplace_leaky_relu_backward_rejects_negative_slope():
    """From the result, a negative slope hides the input's sign: ATen refuses, so do we."""
    with pytest.raises(Exception, match="negative slope"):
        jax.grad(lambda x: jaxderiv.op("leaky_relu_")(x, -0.1).sum())(jnp.ones(3))


def test_prelu_rejects_weight_not_matching_channels():
    with pytest.raises(ValueError, match="channel size"):
        jaxderiv.op("prelu")(jnp.ones((2, 3)), jnp.ones(4))


def test_sigmoid_tanh_second_order_checked_on_real_inputs_only():
    """Their second derivative runs 1.7's sigmoid_backward / tanh_backward formulas, written
    for real tensors: that mode is checked on real inputs, and the row says so."""
    from jaxderiv.check import check_all

    rows = check_all(ops=["sigmoid", "tanh"], modes=["vjp", "vjp_vjp"]).rows
    assert [(r.op, r.mode, r.status) for r in rows if r.status != "passed"] == []
    second = [r for r in rows if r.mode == "vjp_vjp"]
    assert all("real inputs only" in r.reason for r in second)
    assert not any("real inputs only" in r.reason for r in rows if r.mode == "vjp")
