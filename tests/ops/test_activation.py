"""The activation family against PyTorch 2.13: what tests/check/test_parity.py does not compare.

The op database (forward/activation.py) holds every activation's samples and its kink
inputs (relu at 0, hardtanh at its bounds, the shrinks at +-lambd, softplus at its threshold,
...), where the derivative is the subgradient PyTorch's formula picks, which JAX's own autodiff
of the forward need not pick; test_parity compares every op of the family with torch there, in
float64: forward values and dtypes, vjp and jvp (the `result:` formula, or the backward formula
transposed). This module adds, over the same records: float32 inputs stay float32 with torch's
values; the kinks of
elu_backward and softplus_backward, whose seed schema torch's own file changed (a record's kink
tuple serves both); rrelu in training, given the slopes torch draws; integer inputs, NaN,
refusals, and single-op checks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import load_seed_spec
from jaxderiv.check import opdb
from jaxderiv.check import parity as P
from jaxderiv.check.samples import samples_for
from jaxderiv.forward import implementation

torch = pytest.importorskip("torch")
from torch_oracle import assert_same, to_torch  # noqa: E402

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

aten = torch.ops.aten

SEED_SPEC = load_seed_spec()
# The family's entries of the default spec that torch can be asked about (by name or its record's equivalent call).
ACTIVATIONS = sorted(
    n
    for n, r in opdb.database().items()
    if r.family == "activation" and n in SEED_SPEC and implementation(n) is not None and P.torch_has(n)
)


# Kink inputs in the seed's schema of the entries whose schema torch 2.13's own file changed: a
# record's kink tuples are positional and serve both files' runs of test_parity, so these live here.
_G = np.array([0.7, -1.3, 0.4, 2.0, -0.6])
_SOFTPLUS_X = np.array([1.5, 0.0, -5.0, 3.0, 1.4])  # threshold / beta = 1.5 itself
SEED_SCHEMA_KINKS = {
    # output = elu(self) with alpha=1.5, scale=1, input_scale=1: 0 at the kink, above -alpha
    "elu_backward": (_G, 1.5, 1.0, 1.0, np.array([0.0, -0.0, 1.5, -1.2, 0.4])),
    # output = softplus(self) with beta=2, threshold=3
    "softplus_backward": (
        _G,
        _SOFTPLUS_X,
        2.0,
        3.0,
        np.where(2 * _SOFTPLUS_X > 3, _SOFTPLUS_X, np.logaddexp(2 * _SOFTPLUS_X, 0) / 2),
    ),
}


def _kinks(name):
    return (*opdb.record(name).kinks, *([SEED_SCHEMA_KINKS[name]] if name in SEED_SCHEMA_KINKS else []))


def _inputs(op, groups=("samples", "kinks")):
    """The record's checker samples, then its kink tuples: (args, kwargs, sample)."""
    samples = samples_for(op, np.random.default_rng(0)) if "samples" in groups else []
    kinks = _kinks(op.name) if "kinks" in groups else ()
    return [(s.args, s.kwargs, s) for s in samples] + [(k, {}, None) for k in kinks]


@pytest.mark.parametrize("name", sorted(SEED_SCHEMA_KINKS))
def test_kinks_in_the_seed_schema_match_torch(name):
    """test_parity's comparison (forward, vjp) on the kinks the records cannot hold."""
    row = P.compare_op(jaxderiv.seed_registry().op(name), [], [SEED_SCHEMA_KINKS[name]], [])
    assert row.kinks is True and row.ok, row.note


def _torch_outputs(call, xs):
    torch.manual_seed(0)  # a sampler draws the same in every call
    return call.torch(*[P._to_torch(x) for x in xs])


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_float32_stays_float32_with_torchs_values(name):
    """float32 inputs (samples and kinks narrowed): every output has torch's dtype, and its values
    to float32's precision (a sampler's values are its generator's: dtypes only)."""
    op = jaxderiv.seed_registry().op(name)
    for args, kwargs, sample in _inputs(op):
        call = P._Call(op, args, kwargs, sample, float32=True)
        xs = call.xs()
        ours, theirs = call.jax(*[jnp.asarray(x) for x in xs]), _torch_outputs(call, xs)
        assert [str(np.dtype(o.dtype)) for o in ours[: len(theirs)]] == [
            str(t.dtype).removeprefix("torch.") for t in theirs
        ], sample
        if not call.random:
            for o, t in zip(ours, theirs):
                np.testing.assert_allclose(np.asarray(o), t.numpy(), rtol=1e-6, atol=1e-6)


_RRELU = (0.1, 0.4)


def _rrelu(x, noise, lower, upper, training):
    """torch's rrelu_with_noise, drawing the same slopes each call, into a copy of noise."""
    torch.manual_seed(0)
    return aten.rrelu_with_noise.default(x, noise.clone(), lower, upper, training)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rrelu_with_noise_in_training_given_torchs_draw(dtype):
    """In training torch draws the slopes (into noise), so test_parity, whose draws are each
    library's own, compares shapes and dtypes only: given the slopes torch draws, the values
    agree, and in float64 the vjp and jvp too; x = 0 included."""
    x = np.concatenate([[0.0, -0.0], np.random.default_rng(0).uniform(-2.0, 2.0, 6)]).astype(dtype)
    noise = torch.zeros(x.shape, dtype=getattr(torch, np.dtype(dtype).name))
    torch.manual_seed(0)
    aten.rrelu_with_noise.default(torch.from_numpy(x), noise, *_RRELU, True)  # ATen draws the slopes into noise
    noise = noise.numpy()
    noise_in = torch.from_numpy(noise.copy())

    def ours(x):
        return SEEDS.op("rrelu_with_noise")(x, noise, *_RRELU, True)

    def theirs(x):
        return _rrelu(x, noise_in, *_RRELU, True)

    tol = 1e-6 if dtype == np.float32 else 1e-12
    y = ours(jnp.asarray(x))
    assert y.dtype == dtype
    np.testing.assert_allclose(np.asarray(y), theirs(torch.from_numpy(x)).numpy(), rtol=tol, atol=tol)
    if dtype == np.float32:
        return
    ct = np.random.default_rng(1).normal(size=x.shape)
    (got,) = jax.vjp(ours, jnp.asarray(x))[1](jnp.asarray(ct))
    leaf = torch.from_numpy(x).requires_grad_()
    (want,) = torch.autograd.grad(theirs(leaf), leaf, torch.from_numpy(ct))
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-12, atol=1e-12)
    t = np.random.default_rng(2).normal(size=x.shape)
    _, got = jax.jvp(ours, (jnp.asarray(x),), (jnp.asarray(t),))
    _, want = torch.func.jvp(theirs, (torch.from_numpy(x),), (torch.from_numpy(t),))
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-12, atol=1e-12)


def test_kink_subgradients_differ_from_jax_autodiff():
    """At relu's kink the rule gives PyTorch's 0; JAX's autodiff of max(x, 0) gives 1/2."""
    x = jnp.zeros(3)
    assert float(jax.grad(lambda x: SEEDS.op("relu")(x).sum())(x).sum()) == 0.0
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
    ours = SEEDS.op(name)(x, *scalars)
    theirs = torch_fn(torch.from_numpy(x), *scalars)
    assert str(np.dtype(ours.dtype)) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["silu", "gelu", "elu", "softplus", "leaky_relu", "hardswish", "log_sigmoid_forward"])
def test_integer_inputs_rejected_like_torch(name):
    x = np.array([-1, 2], dtype=np.int64)
    with pytest.raises(RuntimeError):
        getattr(aten, name).default(torch.from_numpy(x))
    with pytest.raises(TypeError):
        SEEDS.op(name)(x)


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
        ours = SEEDS.op(name)(x, *scalars)
        np.testing.assert_array_equal(
            np.asarray(ours), getattr(aten, name).default(torch.from_numpy(x), *scalars).numpy()
        )


def test_inplace_leaky_relu_backward_rejects_negative_slope():
    """From the result, a negative slope hides the input's sign: ATen refuses, so do we."""
    with pytest.raises(Exception, match="negative slope"):
        jax.grad(lambda x: SEEDS.op("leaky_relu_")(x, -0.1).sum())(jnp.ones(3))


def test_prelu_rejects_weight_not_matching_channels():
    with pytest.raises(ValueError, match="channel size"):
        SEEDS.op("prelu")(jnp.ones((2, 3)), jnp.ones(4))


def test_sigmoid_tanh_second_order_checked_on_real_inputs_only():
    """Their second derivative runs 1.7's sigmoid_backward / tanh_backward formulas, written
    for real tensors: that mode is checked on real inputs, and the row says so."""
    from jaxderiv.check import check_all

    rows = check_all(ops=["sigmoid", "tanh"], modes=["vjp", "vjp_vjp"]).rows
    assert [(r.op, r.mode, r.status) for r in rows if r.status != "passed"] == []
    second = [r for r in rows if r.mode == "vjp_vjp"]
    assert all("real inputs only" in r.reason for r in second)
    assert not any("real inputs only" in r.reason for r in rows if r.mode == "vjp")


# ==================================================================================================
# torch's own entry for rrelu_with_noise_functional (torch_registry: the spec torch 2.13 ships),
# against torch: values and the slopes torch draws in training, and the gradient at the kink.
# ==================================================================================================


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("lower, upper", [(0.1, 0.3), (0.2, 0.2)])
@pytest.mark.parametrize("training", [False, True])
def test_rrelu_with_noise_functional(torch_registry, training, lower, upper):
    """In training, torch draws the slopes: ours is given the ones torch drew (its noise_out),
    and must return the same output and slopes; the kink (x = 0) included."""
    x = np.array([-1.5, 2.0, 0.0, -0.25, 0.7, -3.0])
    noise = np.full(x.shape, 0.7)
    tx = to_torch(x).requires_grad_()
    out, drawn = aten.rrelu_with_noise_functional(tx, to_torch(noise), lower, upper, training)
    if training:
        noise = drawn.numpy()
    op = torch_registry.op("rrelu_with_noise_functional")
    y, slopes = op(x, noise, lower, upper, training)
    assert_same(y, out)
    assert_same(slopes, drawn)
    # torch's formula uses the noise passed in, not the one it draws: given ours, the gradients agree
    tx = to_torch(x).requires_grad_()
    out = aten.rrelu_with_noise_functional(tx, to_torch(noise), lower, upper, training)[0]
    ct = RNG.normal(size=x.shape)
    (got,) = jax.vjp(lambda x: op(x, noise, lower, upper, training)[0], jnp.asarray(x))[1](jnp.asarray(ct))
    assert_same(got, torch.autograd.grad(out, tx, to_torch(ct))[0])


# ==================================================================================================
# torch's own entries for gelu, gelu_backward and mish (torch_registry above: the spec torch 2.13
# ships). The op database and tests/check/test_parity.py compare them with torch on their
# records' samples and kinks (mish at 0 and in saturation); these tests add gelu and gelu_backward
# with approximate="tanh" (keyword-only, which a kink tuple cannot pass) on the records' samples,
# and a wrong mish formula that the checker catches.
# ==================================================================================================


@pytest.mark.parametrize("name", ["gelu", "gelu_backward"])
def test_gelu_tanh_approximation_matches_torch(torch_registry, name):
    import dataclasses

    op = torch_registry.op(name)
    tanh = [dataclasses.replace(s, kwargs={"approximate": "tanh"}) for s in samples_for(op, np.random.default_rng(0))]
    row = P.compare_op(op, tanh, [], [])
    assert row.ok and row.forward and row.vjp and row.jvp, row.note


def test_a_wrong_mish_formula_is_caught(write_spec):
    """torch's entry with its formula doubled: the checker fails it, where torch's passes."""
    from jaxderiv.check.mutate import entry_yaml
    from jaxderiv.spec import torch_spec_file

    right = jaxderiv.check_all(str(torch_spec_file()), ops=["mish"], modes=("vjp",))
    assert {r.status for r in right} == {"passed"}, right.summary()
    wrong = entry_yaml(
        jaxderiv.load_spec(from_torch=True)["mish"], {"self": "infinitely_differentiable_mish_backward(grad, self) * 2"}
    )
    report = jaxderiv.check_all(write_spec(wrong), ops=["mish"], modes=("vjp",))
    assert "failed" in {r.status for r in report}, report.summary()
