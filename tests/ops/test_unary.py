"""The unary elementwise family against PyTorch 2.13: what the op database and test_parity leave out.

tests/check/test_parity.py compares every entry of the family with torch on its op record
(forward/unary.py): values and dtypes, vjp, and jvp (the `result:` formula, or the
backward formula transposed where the spec has none), on the checker samples, on complex128 ones where the record says `complex`, and on its kink
inputs, where the derivative is the subgradient PyTorch's formula picks, which JAX's own autodiff
need not pick (abs and sgn at 0, the rounding ops at integers and ties, sign at 0 and NaN,
nan_to_num at NaN and infinities, polar at abs == 0), or infinite on both sides (the inverse trig
ops at their ends, the logs, sqrt, rsqrt, reciprocal at 0); angle's complex jvp is the difference
its record declares. For complex inputs PyTorch's gradient is the conjugate of JAX's:
jax_vjp(ct) == conj(torch_grad(conj(ct))).

This module adds, over the family's entries in the op database: single precision stays single precision; integer and bool inputs follow
ATen. For the entries the records check on real inputs only although ATen differentiates them on
complex: complex values against torch, and the complex derivatives the spec cannot give. And a
few single-op tests.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative
from jaxderiv.check import opdb
from jaxderiv.records import domain_of, draw
from jaxderiv.check.samples import samples_for
from jaxderiv.op import RealOnlyDerivative

torch = pytest.importorskip("torch")
from jaxderiv.check import parity as P  # noqa: E402
from torch_oracle import (  # noqa: E402
    assert_close,
    assert_same,
    check_against_torch,
    to_numpy,
    to_torch,
)

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

aten = torch.ops.aten

SPEC = jaxderiv.seed_registry().spec
# The family's entries that the default spec has and jaxderiv implements: test_parity's rows.
UNARY = sorted(n for n in P.implemented(SPEC) if opdb.record(n).family == "unary")


def _torch_op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


def _inputs(name: str) -> list[tuple]:
    """(group, args, kwargs, sample) of every input test_parity compares `name` on: the record's
    checker samples, complex128 ones where it checks complex, and its kink tuples."""
    op, record, rng = SEEDS.op(name), opdb.record(name), np.random.default_rng(0)
    out = [("plain", s.args, s.kwargs, s) for s in samples_for(op, rng)]
    if record.checks_complex():
        out += [("complex", s.args, s.kwargs, s) for s in samples_for(op, rng, complex_=True)]
    return out + [("kinks", k, {}, None) for k in record.kinks]


def _verdict(name: str, args, kwargs, sample=None, seed: int = 2) -> tuple[dict, str]:
    """test_parity's forward, vjp and jvp verdicts on one input, jvp also where the spec has no
    `result:` formula; and the note of the first difference."""
    row = P.ParityRow(name, "")
    call = P._Call(SEEDS.op(name), args, kwargs, sample)
    return P._compare_sample(call, np.random.default_rng(seed), P._Tally(row), with_jvp=True), row.note


# -- dtypes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", UNARY)
def test_single_precision_stays_single_precision(name):
    """The record's samples and kinks in float32 (complex64): torch's values and dtypes."""
    op = SEEDS.op(name)
    for group, args, kwargs, sample in _inputs(name):
        call = P._Call(op, args, kwargs, sample, float32=True)
        xs = call.xs()
        ours = call.jax(*[jnp.asarray(x) for x in xs])
        theirs = call.torch(*[P._to_torch(x) for x in xs])
        for o, t in zip(ours, theirs, strict=True):
            assert_same(o, t, rtol=1e-6, atol=1e-6)


def _first_sample(name: str):
    return samples_for(SEEDS.op(name), np.random.default_rng(0))[0]


def _one_tensor(name: str) -> bool:
    """Whether the record's first sample passes one array, first (any others are scalars)."""
    s = _first_sample(name)
    arrays = [v for v in list(s.args) + list(s.kwargs.values()) if isinstance(v, np.ndarray)]
    return len(arrays) == 1 and isinstance(s.args[0], np.ndarray)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
@pytest.mark.parametrize("name", [n for n in UNARY if _one_tensor(n)])
def test_integer_and_bool_inputs_follow_aten(name, dtype):
    """The record's first sample with an integer or bool tensor: where ATen has a kernel the values
    and dtype agree (floating ops give float32) and the gradient is float0; else both raise."""
    x = np.array([-3, -1, 0, 2, 5]).astype(dtype)
    sample = _first_sample(name)
    rest, kwargs = sample.args[1:], sample.kwargs
    try:
        theirs = to_numpy(_torch_op(name)(to_torch(x), *rest, **{k: to_torch(v) for k, v in kwargs.items()}))
    except (RuntimeError, NotImplementedError):
        with pytest.raises((TypeError, ValueError)):
            SEEDS.op(name)(x, *rest, **kwargs)
        return
    ours = SEEDS.op(name)(x, *rest, **kwargs)
    assert_same(ours, theirs, rtol=1e-6, atol=1e-6)
    if np.issubdtype(np.asarray(ours).dtype, np.inexact):
        assert (
            jax.grad(lambda x: jnp.sum(SEEDS.op(name)(x, *rest, **kwargs)).real, allow_int=True)(jnp.asarray(x)).dtype
            == jax.dtypes.float0
        )


# -- complex inputs of entries checked on real inputs only --------------------------------------
# ATen 2.13 differentiates these on complex, but their records leave complex out (complex_ok in
# forward/unary.py): the default spec takes reciprocal, rsqrt, sqrt and tan from PyTorch 1.7,
# whose formulas are for real tensors, and exp2 and expm1 from 1.10 formulas that predate complex
# autograd for the op (no .conj()).
REFUSED = ("reciprocal", "rsqrt", "sqrt", "tan")
PREDATES_COMPLEX = ("exp2", "expm1")


def _complex_input(name: str) -> np.ndarray:
    lo, hi = domain_of(name)
    return draw(np.random.default_rng(0), (2, 3), lo, hi, np.complex128)


@pytest.mark.parametrize("name", REFUSED + PREDATES_COMPLEX)
def test_complex_values_match_torch(name):
    assert not opdb.record(name).complex  # else test_parity compares them, derivatives too
    x = _complex_input(name)
    assert_same(SEEDS.op(name)(x), _torch_op(name)(to_torch(x)), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", REFUSED)
def test_complex_derivatives_of_real_formulas_are_refused(name):
    """The default spec takes the entry from PyTorch 1.7, whose formula is for real tensors: a
    complex derivative would be silently wrong, so both modes raise RealOnlyDerivative."""
    op, x = SEEDS.op(name), jnp.asarray(_complex_input(name))
    with pytest.raises(RealOnlyDerivative):
        jax.vjp(op, x)[1](jnp.ones_like(x))
    with pytest.raises(RealOnlyDerivative):
        jax.jvp(op, (x,), (jnp.ones_like(x),))


@pytest.mark.parametrize("name", PREDATES_COMPLEX)
def test_complex_derivatives_of_formulas_without_conj_are_not_torchs(name):
    """The spec's formula predates complex autograd for this op (no .conj()): on complex inputs its
    vjp and jvp are not torch's."""
    verdict, note = _verdict(name, (_complex_input(name),), {})
    assert verdict == {"forward": True, "vjp": False, "jvp": False}, note


# -- single ops ---------------------------------------------------------------------------------


def test_abs_at_zero_is_torchs_subgradient_not_jaxs():
    x = jnp.array([0.0, -1.0, 2.0])
    assert jax.grad(lambda x: SEEDS.op("abs")(x).sum())(x).tolist() == [0.0, -1.0, 1.0]
    assert jax.grad(lambda x: jnp.abs(x).sum())(x).tolist() == [1.0, -1.0, 1.0]


@pytest.mark.parametrize("name", ["acosh_", "asinh_", "atanh_"])
def test_inplace_inverse_hyperbolics_are_not_implemented_in_the_spec(name):
    """Their values are the functional op's; both derivative modes raise as the spec says."""
    x = np.array([1.5, 2.0]) * (0.3 if name == "atanh_" else 1.0)
    op = SEEDS.op(name)
    assert_same(op(x), to_numpy(_torch_op(name)(to_torch(x))))
    with pytest.raises(NotImplementedDerivative, match="inplace version"):
        jax.grad(lambda x: op(x).sum())(jnp.asarray(x))
    with pytest.raises(NotImplementedDerivative, match="inplace version"):
        jax.jvp(op, (jnp.asarray(x),), (jnp.ones(2),))


def test_isnan_is_not_differentiable():
    op = SEEDS.op("isnan")
    assert op.differentiable_inputs == ()
    x = np.array([np.nan, 1.0, np.inf, -np.inf])
    assert_same(op(x), aten.isnan.default(to_torch(x)).numpy())
    x = np.array([complex(np.nan, 0), complex(0, np.nan), 1j])
    assert_same(op(x), aten.isnan.default(to_torch(x)).numpy())


# ==================================================================================================
# torch's own entries for fill, round.decimals, view.dtype (torch_registry: the spec torch 2.13
# ships), against torch: values, vjp and jvp of the translated formulas; ties, NaN and infinities
# in rounding, integer and bool dtypes, empty tensors.
# ==================================================================================================


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


def test_fill_scalar_and_tensor(torch_registry):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3))
    check_against_torch(torch_registry.op("fill.Scalar"), aten.fill.Scalar, [x, 1.5])
    check_against_torch(torch_registry.op("fill.Tensor"), aten.fill.Tensor, [x, np.array(-0.7)], diff=(0, 1))
    check_against_torch(
        torch_registry.op("fill.Scalar"), aten.fill.Scalar, [np.arange(3), 2.9], diff=()
    )  # int self keeps its dtype
    check_against_torch(
        torch_registry.op("fill.Tensor"), aten.fill.Tensor, [np.zeros((0, 2)), np.array(2.0)], diff=(0, 1)
    )


@pytest.mark.parametrize("decimals", [2, 1, 0, -1, -2])
def test_round_decimals_ties_and_zero_gradient(torch_registry, decimals):
    x = np.array([1.25, 2.5, -0.35, 125.0, 250.0, -350.0, 0.125, np.nan, np.inf], np.float32)
    check_against_torch(torch_registry.op("round.decimals"), aten.round.decimals, [x], kwargs={"decimals": decimals})
    check_against_torch(
        torch_registry.op("round.decimals"), aten.round.decimals, [x.astype(np.float64)], kwargs={"decimals": decimals}
    )


def test_round_decimals_rejects_integers_like_aten(torch_registry):
    with pytest.raises(NotImplementedError):
        aten.round.decimals(torch.arange(3), decimals=1)
    with pytest.raises(TypeError):
        torch_registry.op("round.decimals")(jnp.arange(3), decimals=1)


@pytest.mark.parametrize(
    "src,dst",
    [
        (np.float32, torch.int32),
        (np.float32, torch.float16),
        (np.float64, torch.complex128),
        (np.complex64, torch.float32),
        (np.uint8, torch.bool),
        (np.bool_, torch.int16),
        (np.float32, torch.uint8),
        (np.int16, torch.int64),
    ],
)
def test_view_dtype_reads_the_bytes(torch_registry, src, dst):
    x = (np.random.default_rng(11).standard_normal((2, 4)) * 3).astype(src)
    ours = torch_registry.op("view.dtype")(
        jnp.asarray(x), np.dtype(str(dst).removeprefix("torch.").replace("bool", "bool_"))
    )
    assert_close(ours, to_torch(x).view(dst))


# ==================================================================================================
# torch's own entries for sinc and _to_copy (torch_registry above: the spec torch 2.13 ships).
# The op database and tests/check/test_parity.py compare both with torch on their records'
# samples (complex ones too) and kinks (sinc at 0, -0 and the integers); these tests add integer
# and bool inputs of sinc (an entry of torch's file only, so not among UNARY above), _to_copy to
# float32 (dtype is keyword-only, which a kink tuple cannot pass), and a wrong sinc formula that
# the checker catches.
# ==================================================================================================


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_sinc_integer_and_bool_inputs_promote_as_torch(torch_registry, dtype):
    """Integer and bool inputs compute in float32, as ATen's floating ops do."""
    x = np.array([0, 1, 0, 2]).astype(dtype)
    ours = torch_registry.op("sinc")(jnp.asarray(x))
    theirs = to_numpy(aten.sinc(torch.from_numpy(x)))
    assert np.asarray(ours).dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-6)


def test_to_copy_to_float32_matches_torch(torch_registry):
    """_to_copy_backward takes the gradient back to self's dtype: values, vjp and jvp as test_parity compares them."""
    from jaxderiv.records import Sample

    x = np.random.default_rng(3).normal(size=4)
    row = P.compare_op(torch_registry.op("_to_copy"), [Sample((x,), {"dtype": np.dtype(np.float32)})], [], [])
    assert row.ok and row.forward and row.vjp, row.note


def test_a_wrong_sinc_formula_is_caught(write_spec):
    """torch's entry with its formula replaced: the checker fails it, where torch's passes."""
    from jaxderiv.check.mutate import entry_yaml
    from jaxderiv.spec import torch_spec_file

    right = jaxderiv.check_all(str(torch_spec_file()), ops=["sinc"], modes=("vjp",))
    assert {r.status for r in right} == {"passed"}, right.summary()
    wrong = entry_yaml(jaxderiv.load_spec(from_torch=True)["sinc"], {"self": "grad * self.cos()"})
    report = jaxderiv.check_all(write_spec(wrong), ops=["sinc"], modes=("vjp",))
    assert "failed" in {r.status for r in report}, report.summary()
