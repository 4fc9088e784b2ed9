"""The special functions against PyTorch 2.13: what test_parity does not compare.

The op database (jaxderiv.check.opdb, declared in jaxderiv/forward/special.py) and
tests/check/test_parity.py compare every op of the family with torch: values and dtypes, vjp,
jvp, and the kink inputs of its record, the points the checker avoids: poles (lgamma, digamma,
polygamma and zeta at 0 and the negative integers), the x = 0 branches of xlogy, xlog1py and the
Bessel helpers, logit's clamp boundaries and its ends 0 and 1, infinities and NaN.

This module adds: the vjp with `create_graph=True`, which makes PyTorch take the
`GradMode::is_enabled()` branch of a formula (logit), the branch jaxderiv always takes (test_parity
asks without it, and declares logit's kink where the two branches differ); the jvp of igamma,
igammac and zeta, which torch 2.13 has no forward-mode formula for, against its double-backward
jvp; the derivative in `other` where `self` is a float whose derivative the spec does not
implement (igamma, zeta); the spec's 1.10 formulas where PyTorch changed them since (xlogy and
xlog1py at x = 0, where the records declare the difference from torch 2.13), evaluated with
torch ops; integer, bool and float32 inputs; second derivatives; and the derivatives the spec
does not give.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative, load_seed_spec
from jaxderiv.check import opdb
from jaxderiv.check import parity as P
from jaxderiv.check.samples import samples_for

torch = pytest.importorskip("torch")
from torch_oracle import check_against_torch, random_like  # noqa: E402

# The seed files' ops (PyTorch 1.7's and 1.10's): these tests verify those formulas.
SEEDS = jaxderiv.seed_registry()

aten = torch.ops.aten


def to_torch(a):
    return torch.from_numpy(a) if isinstance(a, np.ndarray) else a


def to_jax(a):
    return jnp.asarray(a) if isinstance(a, np.ndarray) else a


def aten_op(name: str) -> Callable:
    """torch.ops.aten's overload for a jaxderiv name: `xlogy.Tensor`, `erf` (its default)."""
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


def assert_matches(actual, expected, tol: float | None = None, atol: float | None = None, what: str = ""):
    """Same shape and dtype, and values within tol (relative; absolute too unless atol is given),
    NaN and inf in the same places. By default 1e-9 for float64 and 2e-5 for float32."""
    expected = expected.detach().numpy()
    actual = np.asarray(actual)
    tol = tol or (1e-9 if expected.dtype == np.float64 else 2e-5)
    assert actual.shape == expected.shape, what
    assert actual.dtype == expected.dtype, what
    np.testing.assert_allclose(
        actual, expected, rtol=tol, atol=tol if atol is None else atol, equal_nan=True, err_msg=what
    )


# The spec's formula takes log(other) in float32 (at::xlogy(bool tensor, Scalar) is float32): the
# tolerance its record declares for the parity run.
TOL = {"xlogy.Scalar_Other": opdb.record("xlogy.Scalar_Other").parity_rtol[0]}


SPECIAL = sorted(n for n in P.implemented(load_seed_spec()) if opdb.record(n).family == "special" and P.torch_has(n))


def _call(name: str, args: tuple, kwargs: dict | None = None) -> P._Call:
    """The call bound as test_parity binds it, differentiated in the inexact inputs whose formula
    the spec gives (not `self` of igamma or zeta, whose formula is not_implemented)."""
    op = SEEDS.op(name)
    missing = {n for f in op.entry.backward if f.text.startswith("not_implemented") for n in f.names}
    call = P._Call(op, tuple(args), dict(kwargs or {}))
    call.paths = [(i, j) for i, j in call.paths if call.arguments[i].name not in missing]
    return call


def _as_float64(args) -> tuple:
    """Integer arrays (and NumPy integers) among `args` as float64 arrays, the others as they are."""
    return tuple(
        np.asarray(a, np.float64)
        if isinstance(a, (np.ndarray, np.generic)) and np.issubdtype(a.dtype, np.integer)
        else a
        for a in args
    )


def _torch_jvp(fn, primals, tangents):
    """torch.func.jvp, or where torch 2.13 has no forward-mode formula (igamma, zeta), its double-backward jvp."""
    try:
        return torch.func.jvp(fn, primals, tangents)[1]
    except RuntimeError as e:
        if "forward AD" not in str(e):
            raise
        return torch.autograd.functional.jvp(fn, primals, tangents)[1]


# -- the spec's 1.10 formulas where PyTorch changed them -------------------------------------------


@dataclasses.dataclass(frozen=True)
class Spec110:
    """The partial derivatives the spec's 1.10 formulas give, as functions of the torch arguments."""

    backward: Callable  # (*args) -> one partial per differentiated argument
    result: Callable | None = None  # the same for the result formula, if it differs


def _xlogy_backward(x, y):
    return torch.xlogy(x != 0, y), torch.where(y.isnan() | (x != 0), x / y, 0.0)


# The oracle of the entries whose records declare that, at their kinks (x = 0), the spec's
# formula is not torch 2.13's: the spec's formula written with torch ops.
SPEC_1_10 = {
    "xlogy.Tensor": Spec110(_xlogy_backward, lambda x, y: (torch.xlogy(x != 0, y), x / y)),
    "xlogy.Scalar_Self": Spec110(lambda x, y: (torch.where(y.isnan() | (x != 0), x / y, 0.0),)),
    "xlogy.Scalar_Other": Spec110(lambda x, y: (torch.xlogy(x != 0, y),)),  # float32: xlogy(bool tensor, Scalar)
    "special_xlog1py": Spec110(lambda x, y: (y.log1p(), x / (y + 1))),
}


@pytest.mark.parametrize("name", sorted(SPEC_1_10))
def test_x0_branches_follow_the_spec_1_10_formulas(name):
    """Values as torch's; vjp and jvp the spec's 1.10 formula's, on the record's kink inputs, where
    the record declares (with the reason) that they are not torch 2.13's."""
    record, spec, rng = opdb.record(name), SPEC_1_10[name], np.random.default_rng(0)
    assert record.difference is not None and record.difference.columns == ("kinks",), record.difference
    assert record.kinks
    for kink in record.kinks:
        call = _call(name, kink)
        xs, targs = call.xs(), [to_torch(v) for v in call.values]
        out, pullback = jax.vjp(lambda *a: call.jax(*a)[0], *map(jnp.asarray, xs))
        assert_matches(out, call.torch(*map(to_torch, xs))[0])
        ct = random_like(rng, out)
        for g, d in zip(pullback(jnp.asarray(ct)), spec.backward(*targs), strict=True):
            assert_matches(g, torch.from_numpy(ct) * d)
        ts = [random_like(rng, x) for x in xs]
        _, actual = jax.jvp(lambda *a: call.jax(*a)[0], tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, ts)))
        assert_matches(actual, sum(to_torch(t) * d for t, d in zip(ts, (spec.result or spec.backward)(*targs))))


# -- derivatives as torch takes them with create_graph, and its double-backward jvp --------------


@pytest.mark.parametrize("name", SPECIAL)
def test_derivatives_match_torch_with_create_graph(name):
    """Values, vjp (torch with create_graph=True) and jvp (torch's double-backward one where it
    has no forward-mode formula) on every checker sample and kink input of the record (the kinks
    of SPEC_1_10's entries: against the spec's formulas, above). The integer `self` of igamma
    and zeta is given as float64: test_parity compares the integer one, for which ATen computes
    lgamma and the like in float32."""
    op, record, rng = SEEDS.op(name), opdb.record(name), np.random.default_rng(0)
    inputs = [(s.args, s.kwargs, s.label) for s in samples_for(op, rng)]
    inputs += [(k, {}, f"kink {k}") for k in record.kinks if name not in SPEC_1_10]
    for args, kwargs, label in inputs:
        call = _call(name, _as_float64(args), kwargs)
        xs = call.xs()
        for o, t in zip(call.jax(*map(jnp.asarray, xs)), call.torch(*map(to_torch, xs)), strict=True):
            assert_matches(o, t, TOL.get(name), what=f"forward {label}")
        if not xs:
            continue
        out, pullback = jax.vjp(lambda *a: call.jax(*a)[0], *map(jnp.asarray, xs))
        ct = random_like(rng, out)
        leaves = [to_torch(x).requires_grad_() for x in xs]
        expected = torch.autograd.grad(call.torch(*leaves)[0], leaves, to_torch(ct), create_graph=True)
        for g, e in zip(pullback(jnp.asarray(ct)), expected, strict=True):
            assert_matches(g, e, TOL.get(name), what=f"vjp {label}")
        ts = [random_like(rng, x) for x in xs]
        _, actual = jax.jvp(lambda *a: call.jax(*a)[0], tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, ts)))
        expected = _torch_jvp(lambda *a: call.torch(*a)[0], tuple(map(to_torch, xs)), tuple(map(to_torch, ts)))
        assert_matches(actual, expected, TOL.get(name), what=f"jvp {label}")


# -- integer, bool and float32 inputs --------------------------------------------------------------


def _first_sample(name: str) -> tuple[tuple, dict]:
    sample = samples_for(SEEDS.op(name), np.random.default_rng(0))[0]
    return sample.args, sample.kwargs


def _retyped(name: str, kind: str) -> P._Call:
    """The record's first sample with its floating Tensor inputs as integers (rounded up), bools or float32."""
    call = _call(name, *_first_sample(name))
    convert = {
        "int": lambda x: np.ceil(x).astype(np.int64),
        "bool": lambda x: x > np.median(x),
        "float32": lambda x: x.astype(np.float32),
    }[kind]
    values = [
        convert(v) if a.is_tensor and isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating) else v
        for a, v in zip(call.arguments, call.values)
    ]
    return _call(name, tuple(values))


# Inputs ATen refuses and jaxderiv's forward does not (yet): jaxderiv computes a value.
REFUSED_BY_ATEN_ONLY: dict[tuple[str, str], str] = {}  # (op, input kind) ATen refuses and jaxderiv computes


@pytest.mark.parametrize(
    "name,kind",
    [
        pytest.param(n, k, marks=[pytest.mark.xfail(strict=True, reason=REFUSED_BY_ATEN_ONLY[n, k])])
        if (n, k) in REFUSED_BY_ATEN_ONLY
        else (n, k)
        for n in SPECIAL
        for k in ("int", "bool")
    ],
)
def test_integer_and_bool_inputs_like_aten(name, kind):
    """ATen computes integer and bool inputs in float32, or refuses them (igamma, nextafter,
    frexp): jaxderiv gives the same values and dtype, or refuses too."""
    call = _retyped(name, kind)
    try:
        expected = call.torch()
    except RuntimeError:
        with pytest.raises((TypeError, ValueError)):
            call.jax()
        return
    for o, t in zip(call.jax(), expected, strict=True):
        assert_matches(o, t)


@pytest.mark.parametrize("name", SPECIAL)
def test_float32_inputs_stay_float32(name):
    """Values, dtypes, vjp and jvp (where the spec has a result: formula) in float32, as
    test_parity compares them in float64 (to 2e-5)."""
    call, rng = _retyped(name, "float32"), np.random.default_rng(0)
    row = P.ParityRow(name, "")
    verdict = P._compare_sample(call, rng, P._Tally(row, 2e-5, 2e-5), bool(call.op.entry.forward))
    assert verdict["forward"] and verdict["vjp"] is not False and verdict["jvp"] is not False, row.note


def test_float32_with_a_0d_float64_tensor_stays_float32():
    """A 0-d tensor does not promote a dimensioned one of its category: the result is float32,
    and the gradient of the 0-d float64 input is summed in float32."""
    x = np.random.default_rng(0).uniform(-2, 2, (2, 3)).astype(np.float32)
    check_against_torch(SEEDS.op("xlogy.Tensor"), aten.xlogy.Tensor, [x, np.asarray(2.5)], diff=(0, 1), grad_tol=2e-5)


def test_the_op_database_covers_every_entry_of_the_family():
    """Every op of the family has its record in forward/special.py, so test_parity compares it."""
    family = {
        "erf",
        "erfc",
        "erfinv",
        "special_erfcx",
        "i0",
        "special_i0e",
        "special_i1",
        "special_i1e",
        "lgamma",
        "digamma",
        "polygamma",
        "polygamma_",
        "mvlgamma",
        "igamma",
        "igammac",
        "xlogy.Tensor",
        "xlogy.Scalar_Self",
        "xlogy.Scalar_Other",
        "special_xlog1py",
        "special_xlog1py.self_scalar",
        "special_xlog1py.other_scalar",
        "special_zeta",
        "special_zeta.self_scalar",
        "special_zeta.other_scalar",
        "logit",
        "nextafter",
        "frexp.Tensor",
    }
    assert set(SPECIAL) == family
    differentiated = {n for n in SPECIAL if _call(n, *_first_sample(n)).paths}
    assert differentiated == family - {"nextafter", "special_zeta.other_scalar"}


# -- derivatives the spec does not give, and dtypes ATen rejects ---------------------------------


def _grad_of(name: str, args: tuple, argnum: int):
    """jax.grad of the op's sum in argument `argnum`, the others fixed (Scalars stay numbers)."""

    def f(x):
        full = list(args)
        full[argnum] = x
        return jnp.sum(SEEDS.op(name)(*full))

    return jax.grad(f)(args[argnum])


@pytest.mark.parametrize("name", ["igamma", "igammac", "special_zeta", "special_zeta.other_scalar"])
def test_derivative_in_self_is_not_implemented_as_in_torch(name):
    x, other = np.array([2.0, 3.0]), 1.5 if name.endswith("other_scalar") else np.array([1.5, 0.5])
    leaf = torch.from_numpy(x).requires_grad_()
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.autograd.grad(aten_op(name)(leaf, to_torch(other)).sum(), leaf)
    with pytest.raises(NotImplementedDerivative):
        _grad_of(name, (jnp.asarray(x), to_jax(other)), 0)


@pytest.mark.parametrize("argnum", [0, 1])
def test_nextafter_has_no_derivative_in_the_spec(argnum):
    """The spec (1.7) says not_implemented("nextafter"); PyTorch gained formulas later."""
    with pytest.raises(NotImplementedDerivative):
        _grad_of("nextafter", (jnp.asarray([1.0, 2.0]), jnp.asarray([2.0, 0.0])), argnum)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("igamma", (np.array([1, 2]), np.array([1, 2]))),
        ("igammac", (np.array([1, 2]), np.array([True, False]))),
        ("nextafter", (np.array([1, 2]), np.array([1, 2]))),
        ("frexp.Tensor", (np.array([1, 2]),)),
    ],
)
def test_floating_only_ops_reject_integers_like_torch(name, args):
    with pytest.raises(RuntimeError):
        aten_op(name)(*map(torch.from_numpy, args))
    with pytest.raises(TypeError):
        SEEDS.op(name)(*map(jnp.asarray, args))


def test_floating_only_ops_promote_mixed_integer_inputs_like_torch():
    a, x = np.array([1, 2]), np.array([0.5, 3.0])
    assert_matches(
        SEEDS.op("igamma")(jnp.asarray(a), jnp.asarray(x)), torch.igamma(torch.from_numpy(a), torch.from_numpy(x))
    )


@pytest.mark.parametrize("name", ["lgamma", "special_i1", "igamma", "special_zeta", "logit", "xlogy.Tensor"])
def test_second_order_matches_torch_double_backward(name):
    """On the record's first sample (an integer `self` of igamma and zeta as float64: its
    derivative is not asked), in each differentiated input: JAX differentiates the backward
    formula's own code (e.g. digamma in lgamma's), torch its formulas' formulas: for lgamma the
    two trigamma algorithms agree to about 1e-9."""
    sample = samples_for(SEEDS.op(name), np.random.default_rng(0))[0]
    call, rng = _call(name, _as_float64(sample.args), sample.kwargs), np.random.default_rng(2)
    xs = call.xs()
    for k, x in enumerate(xs):
        w = rng.normal(size=x.shape)

        def at(v, values, k=k):
            return [v if i == k else xi for i, xi in enumerate(values)]

        def grad_dot_w(v):
            return jnp.sum(jax.grad(lambda y: jnp.sum(call.jax(*at(y, xs))[0]))(v) * w)

        actual = jax.grad(grad_dot_w)(jnp.asarray(x))
        leaf = torch.from_numpy(x).requires_grad_()
        (g,) = torch.autograd.grad(call.torch(*at(leaf, [to_torch(v) for v in xs]))[0].sum(), leaf, create_graph=True)
        # a first derivative that does not depend on x (xlogy's in self) has a zero second one
        (expected,) = (
            torch.autograd.grad((g * torch.from_numpy(w)).sum(), leaf, allow_unused=True)
            if g.requires_grad
            else (None,)
        )
        assert_matches(actual, torch.zeros_like(leaf) if expected is None else expected, 1e-8)


# ==================================================================================================
# torch's own entries for special_entr and special_log_ndtr (torch_registry: the spec torch 2.13
# ships), against torch: values, vjp and jvp at zero, negative, NaN and far-tail inputs.
# ==================================================================================================


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


def test_special_entr_at_zero_negative_and_nan(torch_registry):
    check_against_torch(
        torch_registry.op("special_entr"), aten.special_entr, [np.array([0.0, -1.0, np.nan, np.inf])], diff=()
    )
    check_against_torch(torch_registry.op("special_entr"), aten.special_entr, [np.array([0.1, 0.5, 1.0, 2.5])])
    check_against_torch(torch_registry.op("special_entr"), aten.special_entr, [np.array([0, 1, 2])], diff=())


def test_special_log_ndtr_far_tails(torch_registry):
    # the formula's exp(-(result + x**2 / 2)) magnifies result's last-bit error 450-fold at -30
    check_against_torch(
        torch_registry.op("special_log_ndtr"),
        aten.special_log_ndtr,
        [np.array([-30.0, -5.0, -0.5, 0.0, 2.0, 9.0])],
        grad_tol=1e-9,
    )
    check_against_torch(torch_registry.op("special_log_ndtr"), aten.special_log_ndtr, [np.array([-1, 0, 3])], diff=())


# ==================================================================================================
# torch's own special_ndtri (torch_registry above: the spec torch 2.13 ships). The op database and
# tests/check/test_parity.py compare it with torch on its record's samples and kinks (0.5 and the
# far tails); this test adds integer inputs, computed in float32 as ATen does.
# ==================================================================================================


def test_special_ndtri_integer_inputs_promote_as_torch(torch_registry):
    x = np.array([0, 1], np.int32)
    ours = torch_registry.op("special_ndtri")(jnp.asarray(x))
    theirs = aten.special_ndtri(torch.from_numpy(x)).numpy()
    assert np.asarray(ours).dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-6)
