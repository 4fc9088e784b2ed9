"""The binary and ternary elementwise family against PyTorch 2.13: what test_parity does not compare.

The op database (jaxderiv.check.opdb, declared in jaxderiv/forward/binary.py) and
tests/check/test_parity.py compare every op of the family with torch: values and dtypes, vjp,
jvp, complex inputs, and the kink inputs of its record (clamp at its bounds, where the gradient is
1 and JAX's own autodiff says 0.5; ties of maximum and minimum, which split it in halves; fmax
and fmin, which send it to self on ties and away from NaN; pow at base 0; fmod and remainder on
their jumps; lerp where ATen switches formulas; where with equal branches).

Where the records declare that the kinks differ (atan2 at the origin and clamp.Tensor at a tie
with a lone bound, where the seed has no `result:` formula and torch 2.13's picks another
subgradient in forward mode), this module checks that values and vjp still agree there. It adds
what no record can state: rounded division at exact quotients (a kink input cannot give the
keyword-only rounding_mode); the complex logaddexp gradient that is not torch's; the spec's
missing formulas; and values and dtypes under ATen's promotion with integers, bools, wrapped
numbers and 0-d tensors.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import NotImplementedDerivative, load_seed_spec
from jaxderiv.check import opdb
from jaxderiv.check import parity as P
from jaxderiv.records import vector
from jaxderiv.check.samples import samples_for
from jaxderiv.forward.binary import result_type

torch = pytest.importorskip("torch")
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

NAN, INF = math.nan, math.inf


def _torch_op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


def _compared(name: str, args: tuple, kwargs: dict, rng) -> tuple[dict, str]:
    """test_parity's comparison of one call with torch: verdicts of forward, vjp and jvp, and the first difference."""
    row = P.ParityRow(name, "")
    verdict = P._compare_sample(P._Call(SEEDS.op(name), tuple(args), dict(kwargs)), rng, P._Tally(row), True)
    return verdict, row.note


BINARY = sorted(n for n in P.implemented(load_seed_spec()) if opdb.record(n).family == "binary" and P.torch_has(n))
# The entries whose records declare that jaxderiv's results on their kink inputs are not torch's.
KINK_DIFFERENCES = [
    n
    for n in BINARY
    if getattr(P.known_difference(n, False), "columns", ()) == ("kinks",)  # under the seed files' formulas
]


@pytest.mark.parametrize("name", KINK_DIFFERENCES)
def test_declared_kink_differences_are_in_forward_mode_only(name):
    """A declared difference hides the whole kinks column from test_parity; the reasons (atan2 at
    the origin, clamp.Tensor at a tie with a lone bound: torch 2.13's result formula, which the
    seed lacks, picks another subgradient) name forward mode only, so values and vjp still
    agree on every kink input, and jvp differs on some."""
    record, rng, jvps = opdb.record(name), np.random.default_rng(0), []
    for kink in record.kinks:
        verdict, note = _compared(name, kink, {}, rng)
        assert verdict["forward"] and verdict["vjp"] is not False, (kink, note)
        jvps.append(verdict["jvp"])
    assert False in jvps, f"no kink differs in jvp: {record.difference.reason}"


# -- what no op record can state ------------------------------------------------------------------


@pytest.mark.parametrize("name,other", [("div.Tensor_mode", vector(1.5, 1.5, -0.5, 0.3)), ("div.Scalar_mode", 1.5)])
@pytest.mark.parametrize("rounding_mode", ["trunc", "floor"])
def test_rounded_division_at_exact_quotients_matches_torch(name, other, rounding_mode):
    """Rounded quotients are piecewise constant: zero gradients, also where the quotient is an
    integer. A kink input of the op record has no keyword-only rounding_mode, so test_parity's
    comparison runs here."""
    self = vector(3.0, -3.0, 2.5, 0.7)
    verdict, note = _compared(name, (self, other), {"rounding_mode": rounding_mode}, np.random.default_rng(0))
    assert verdict == {"forward": True, "vjp": True, "jvp": True}, note


def test_complex_logaddexp_gradient_is_not_torchs():
    """The spec's formula (1.10: grad / (1 + exp(other - self))) predates complex support (no
    .conj()): on complex inputs the vjp is not torch 2.13's, while values and jvp agree. The
    record leaves complex inputs out, so no parity row states this."""
    op, rng = SEEDS.op("logaddexp"), np.random.default_rng(0)
    assert not opdb.record("logaddexp").complex
    for s in samples_for(op, rng, complex_=True):
        verdict, note = _compared("logaddexp", s.args, s.kwargs, rng)
        assert verdict == {"forward": True, "vjp": False, "jvp": True}, (s.label, note)


def test_clamp_at_its_bounds_is_torchs_subgradient_not_jaxs():
    x = jnp.array([-1.0, 0.0, 1.0, 2.0])
    assert jax.grad(lambda x: SEEDS.op("clamp")(x, -1.0, 1.0).sum())(x).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert jax.grad(lambda x: jnp.clip(x, -1.0, 1.0).sum())(x).tolist() == [0.5, 1.0, 0.5, 0.0]


@pytest.mark.parametrize(
    "name,other", [("fmod.Tensor", "not implemented"), ("remainder.Tensor", "not given by the spec")]
)
def test_gradient_of_other_is_not_in_the_spec(name, other):
    """Only self's gradient is given (torch 2.13 has other's, the spec does not)."""
    op = SEEDS.op(name)
    x, y = jnp.array([1.5, -2.0]), jnp.array([0.7, 0.9])
    assert_same(jax.grad(lambda x: op(x, y).sum())(x), np.ones(2))
    with pytest.raises(NotImplementedDerivative, match=other):
        jax.grad(lambda y: op(x, y).sum())(y)


def test_comparisons_have_no_differentiable_output():
    for c in ("eq", "ne", "lt", "le", "gt", "ge"):
        for overload, other in (("Tensor", np.array([0.5, 1.0])), ("Scalar", 0.5)):
            op = SEEDS.op(f"{c}.{overload}")
            assert op.differentiable_inputs == ()
            assert op.output_differentiable(np.array([0.5, 2.0]), other) == (False,)


# -- values and dtypes: integers, bools, mixed dtypes, wrapped numbers ----------------------------

I32, I64, I8 = (np.array([1, 2, -3, 7], d) for d in (np.int32, np.int64, np.int8))
U8 = np.array([1, 2, 200, 7], np.uint8)
B = np.array([True, False, True, False])
F32, F64A = np.array([1.5, -2.0, 0.0, 3.25], np.float32), np.array([1.5, -2.0, 0.0, 3.25])
F64_0, C128_0 = np.array(2.0), np.array(1 - 2j)
NEG = np.array([7.0, -7.0, 7.5, -7.5, 0.0, -0.0, 1.0, -1.0])
DIVISORS = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0])

FORWARD = [
    ("add.Tensor", (I32, F64_0), {}),  # a 0-d tensor of a higher category wins
    ("add.Tensor", (F32, F64_0), {}),  # ... and does not promote within one
    ("add.Tensor", (F32, C128_0), {}),  # complex, at the dimensioned tensor's precision
    ("add.Tensor", (U8, I8), {}),
    ("add.Tensor", (B, B), {}),
    ("add.Tensor", (B, B), {"alpha": 2}),
    ("add.Tensor", (I64, I32), {"alpha": 3}),
    ("add.Scalar", (I32, 0.5), {}),
    ("add.Scalar", (B, 1), {}),
    ("add.Scalar", (F32, 1j), {}),
    ("add.Scalar", (I32, 1j), {}),
    ("add.Scalar", (F32, 1e10), {}),
    ("sub.Tensor", (I32, I64), {"alpha": 2}),
    ("sub.Scalar", (U8, 3), {}),
    ("rsub.Tensor", (F32, I32), {"alpha": 2}),
    ("rsub.Scalar", (I32, 2, 3), {}),
    ("mul.Tensor", (B, B), {}),
    ("mul.Tensor", (I32, F32), {}),
    ("mul.Scalar", (B, 2), {}),
    ("mul.Scalar", (B, True), {}),
    ("mul.Scalar", (I8, 2.5), {}),
    ("div.Tensor", (I32, I32), {}),
    ("div.Tensor", (B, B), {}),
    ("div.Tensor", (NEG, DIVISORS), {}),
    ("div.Scalar", (I64, 2), {}),
    ("div.Tensor_mode", (NEG.astype(np.int64), np.array([2, 2, -2, -2, 3, 3, 5, -5])), {"rounding_mode": "trunc"}),
    ("div.Tensor_mode", (NEG.astype(np.int64), np.array([2, 2, -2, -2, 3, 3, 5, -5])), {"rounding_mode": "floor"}),
    ("div.Tensor_mode", (NEG, DIVISORS), {"rounding_mode": "trunc"}),
    ("div.Tensor_mode", (NEG, DIVISORS), {"rounding_mode": "floor"}),
    (
        "div.Tensor_mode",
        (np.array([0.1, -0.1, 1e300, 5.0]), np.array([1e-300, 0.3, 1e-10, -INF])),
        {"rounding_mode": "floor"},
    ),
    ("div.Tensor_mode", (I32, I32), {"rounding_mode": None}),
    ("div.Scalar_mode", (NEG.astype(np.int32), 2.0), {"rounding_mode": "floor"}),
    ("div.Scalar_mode", (NEG.astype(np.int32), -2), {"rounding_mode": "floor"}),
    ("pow.Tensor_Scalar", (I32, 2), {}),
    ("pow.Tensor_Scalar", (I32, 2.5), {}),
    ("pow.Tensor_Scalar", (B, 2), {}),
    ("pow.Tensor_Scalar", (F32, 1j), {}),
    ("pow.Tensor_Tensor", (np.array([-1, 1, 2, 0, -2, 3]), np.array([-3, -2, -1, -1, 3, 0])), {}),
    ("pow.Tensor_Tensor", (F32, F64_0), {}),
    ("pow.Tensor_Tensor", (np.array([0.0, 0.0, -2.0, -8.0]), np.array([0.0, -1.0, 0.5, 1 / 3])), {}),
    ("pow.Scalar", (2, I32), {}),
    ("pow.Scalar", (2.5, I32), {}),
    ("pow.Scalar", (1, np.array([NAN, -INF, 3.0])), {}),
    ("pow.Scalar", (1j, F64A), {}),
    ("atan2", (I32, I32), {}),
    ("atan2", (np.array([0.0, -0.0, 0.0, -0.0]), np.array([0.0, 0.0, -0.0, -0.0])), {}),
    ("hypot", (F32, F32), {}),
    ("copysign.Tensor", (I32, I32), {}),
    ("copysign.Tensor", (np.array([1.0, 1.0, 0.0, NAN]), np.array([-0.0, 0.0, -1.0, -1.0])), {}),
    ("copysign.Scalar", (I32, -1), {}),
    ("fmod.Tensor", (NEG, DIVISORS), {}),
    ("fmod.Tensor", (NEG.astype(np.int32), np.array([2, 2, -2, -2, 3, 3, 5, -5], np.int32)), {}),
    ("fmod.Scalar", (I32, 2.5), {}),
    ("remainder.Tensor", (NEG, DIVISORS), {}),
    ("remainder.Tensor", (NEG.astype(np.int32), np.array([2, 2, -2, -2, 3, 3, 5, -5], np.int32)), {}),
    ("remainder.Scalar", (I32, 2), {}),
    ("remainder.Scalar", (F64A, -1.5), {}),
    ("lerp.Scalar", (F32, np.array([2.0, 1.0, -1.0, 0.0], np.float32), 0.75), {}),
    ("lerp.Tensor", (F32, F32[::-1].copy(), np.array(0.25)), {}),
    ("addcmul", (I32, I32, I32), {"value": 2}),
    ("addcmul", (I32, I32, F64A), {"value": 2}),
    ("addcdiv", (F32, F32, np.array([1.0, 2.0, 4.0, 8.0], np.float32)), {"value": 0.5}),
    ("addcdiv", (I32, F32, I32), {}),
    ("clamp", (I32, 0.5, None), {}),
    ("clamp", (I32, 0, None), {}),
    ("clamp", (B, 0, 1), {}),
    ("clamp", (np.array([NAN, 1.0, -3.0]), 0.0, 0.5), {}),
    ("clamp", (np.array([0.0, 1.0]), NAN, None), {}),
    ("clamp", (F64A, 2.5, 1.5), {}),
    ("clamp.Tensor", (I32, F64A, None), {}),
    ("clamp.Tensor", (F32, F64_0, None), {}),
    ("clamp.Tensor", (np.array([0.0, 1.0]), np.array([NAN, 0.0]), None), {}),
    ("clamp_min", (I32, 0.5), {}),
    ("clamp_max", (U8, 2), {}),
    ("clamp_min.Tensor", (F32, F32[::-1].copy()), {}),
    ("clamp_max.Tensor", (I32, F32), {}),
    ("maximum", (B, B[::-1].copy()), {}),
    ("maximum", (I32, F32), {}),
    ("maximum", (np.array([NAN, 1.0, 2.0]), np.array([1.0, NAN, 1.0])), {}),
    ("minimum", (np.array([NAN, 1.0, -0.0]), np.array([1.0, NAN, 0.0])), {}),
    ("fmax", (np.array([NAN, 1.0, NAN]), np.array([1.0, NAN, NAN])), {}),
    ("fmin", (I32, I64), {}),
    ("logaddexp", (np.array([-INF, INF, NAN, 1.0, -1e300]), np.array([-INF, INF, 1.0, 1.0, 1e300])), {}),
    ("logaddexp2", (F32, F32), {}),
    # complex: ATen's _log_add_exp_helper, imaginary part Im(max) + arg(1 + exp(min - max)), not
    # wrapped to (-pi, pi] (jnp.logaddexp's was, 2 pi off); ties of real parts; -inf and NaN
    (
        "logaddexp",
        (
            np.array([0.5 + 3.0j, 1.0 - 3.1j, 2.0 + 2.5j, -1.0 + 0.1j, 1.0 + 3.0j, -INF + 0.0j, 1.0 + NAN * 1j]),
            np.array([0.2 + 3.0j, 0.8 - 2.9j, 2.0 - 2.5j, -0.5 + 3.1j, 1.0 - 3.0j, -INF + 1.0j, 1.0 + 0.0j]),
        ),
        {},
    ),
    ("eq.Scalar", (I32, 2.5), {}),
    ("eq.Scalar", (I32, 2), {}),
    ("eq.Tensor", (I32, F32), {}),
    ("ne.Scalar", (np.array([NAN, 1.0]), NAN), {}),
    ("lt.Tensor", (U8, I8), {}),
    ("le.Scalar", (B, 0), {}),
    ("gt.Tensor", (F32, F64_0), {}),
    ("ge.Scalar", (F64A, 1.5), {}),
    ("eq_.Scalar", (F32, 1.5), {}),  # in place: 0 and 1 in self's dtype
    ("lt_.Tensor", (I32, F32), {}),
    ("ge_.Tensor", (F32, F64A), {}),
]


def _torch_call(name, args, kwargs):
    targs = [to_torch(a) for a in args]
    if name == "_s_where":
        return aten.where.self(*targs)
    if "_." in name:  # in place: on a copy
        targs[0] = targs[0].clone()
    return _torch_op(name)(*targs, **kwargs)


@pytest.mark.parametrize("name,args,kwargs", FORWARD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FORWARD)])
def test_values_and_dtypes_follow_aten(name, args, kwargs):
    theirs = to_numpy(_torch_call(name, args, kwargs))
    assert_same(SEEDS.op(name)(*args, **kwargs), theirs, rtol=1e-6, atol=0)


@pytest.mark.parametrize(
    "name,args,kwargs",
    [
        ("sub.Tensor", (B, B), {}),
        ("pow.Tensor_Scalar", (I32, -1), {}),
        ("addcdiv", (F32, I32, I32), {}),
        ("clamp", (F32, None, None), {}),
        ("maximum", (C128_0, C128_0), {}),
        ("lt.Scalar", (C128_0, 1), {}),
        ("div.Tensor_mode", (F32, F32), {"rounding_mode": "round"}),
    ],
)
def test_unsupported_inputs_raise_as_in_aten(name, args, kwargs):
    with pytest.raises((RuntimeError, NotImplementedError)):
        _torch_call(name, args, kwargs)
    with pytest.raises((TypeError, ValueError)):
        SEEDS.op(name)(*args, **kwargs)


OPERANDS = [
    *(
        np.ones(2, d)
        for d in (
            np.bool_,
            np.uint8,
            np.int8,
            np.int32,
            np.int64,
            np.float16,
            np.float32,
            np.float64,
            np.complex64,
            np.complex128,
        )
    ),
    *(np.ones((), d) for d in (np.bool_, np.int32, np.float32, np.float64, np.complex64, np.complex128)),
    True,
    2,
    2.5,
    1j,
]


def test_result_type_is_atens():
    """Every pair of dim tensors, 0-d tensors and Python scalars, against torch.result_type."""
    for a in OPERANDS:
        for b in OPERANDS:
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                theirs = str(torch.result_type(to_torch(a), to_torch(b))).removeprefix("torch.")
                if theirs != "complex32":  # ComplexHalf has no JAX dtype
                    assert result_type(a, b) == np.dtype(theirs), (a, b)


def test_weakly_typed_zero_d_arrays_are_wrapped_numbers():
    """A Python scalar that became a weak 0-d array still promotes as a Python scalar."""
    ints = jnp.ones(2, jnp.int32)
    assert result_type(ints, jnp.asarray(2.5)) == result_type(ints, 2.5) == np.float32
    assert result_type(ints, jnp.asarray(2.5, jnp.float64)) == np.float64  # a 0-d tensor


# ==================================================================================================
# torch's own entries for where.self and ldexp.Tensor (torch_registry: the spec torch 2.13 ships),
# against torch: values, vjp and jvp of the translated formulas, with broadcasting, dtype promotion
# and integer inputs; a wrong formula (a swapped where branch, ldexp without its ln 2, entr with a
# flipped sign) differs from torch.
# ==================================================================================================


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


def test_where_self_broadcasts_and_promotes(torch_registry):
    rng = np.random.default_rng(1)
    cond = rng.random((3, 1)) < 0.5
    check_against_torch(
        torch_registry.op("where.self"),
        aten.where.self,
        [cond, rng.standard_normal((3, 4)), rng.standard_normal((4,))],
        diff=(1, 2),
    )
    x = np.arange(4, dtype=np.int32)
    check_against_torch(
        torch_registry.op("where.self"), aten.where.self, [np.array([True, False, True, False]), x, np.ones(4)], diff=()
    )


def test_ldexp(torch_registry):
    rng = np.random.default_rng(7)
    check_against_torch(
        torch_registry.op("ldexp.Tensor"),
        aten.ldexp.Tensor,
        [rng.standard_normal((2, 3)), rng.standard_normal((3,))],
        diff=(0, 1),
    )
    check_against_torch(
        torch_registry.op("ldexp.Tensor"),
        aten.ldexp.Tensor,
        [rng.standard_normal((2, 3)), np.array([1, -2, 0])],
        diff=(0,),
    )
    check_against_torch(
        torch_registry.op("ldexp.Tensor"), aten.ldexp.Tensor, [np.array([1, 2]), np.array([3, -1])], diff=()
    )  # int: float32


def _mutant(write_spec, entry: str, name: str):
    return jaxderiv.Registry(jaxderiv.load_spec(write_spec(entry))).op(name)


def test_wrong_formulas_differ_from_torch(torch_registry, write_spec):
    """A swapped where branch, ldexp without its ln 2, entr with a flipped sign: each differs."""
    rng = np.random.default_rng(12)
    cond, a, b = rng.random(5) < 0.5, rng.standard_normal(5), rng.standard_normal(5)
    bad_where = _mutant(
        write_spec,
        """
        - name: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
          condition: non_differentiable
          self: where(condition, 0, grad)
          other: where(condition, grad, 0)
        """,
        "where.self",
    )
    g = jax.grad(lambda x: bad_where(jnp.asarray(cond), x, jnp.asarray(b)).sum())(jnp.asarray(a))
    ta = to_torch(a).requires_grad_()
    (tg,) = torch.autograd.grad(aten.where.self(to_torch(cond), ta, to_torch(b)).sum(), [ta])
    assert not np.allclose(g, to_numpy(tg))

    bad_ldexp = _mutant(
        write_spec,
        """
        - name: ldexp.Tensor(Tensor self, Tensor other) -> Tensor
          self: grad * at::pow(2, other).conj()
          other: grad * result.conj()
        """,
        "ldexp.Tensor",
    )
    g = jax.grad(lambda y: bad_ldexp(jnp.asarray(a), y).sum())(jnp.asarray(b))
    tb = to_torch(b).requires_grad_()
    (tg,) = torch.autograd.grad(aten.ldexp.Tensor(to_torch(a), tb).sum(), [tb])
    assert not np.allclose(g, to_numpy(tg))

    x = np.array([0.2, 0.7, 1.5])
    bad_entr = _mutant(
        write_spec,
        """
        - name: special_entr(Tensor self) -> Tensor
          self: grad * (1 + self.log())
        """,
        "special_entr",
    )
    g = jax.grad(lambda v: bad_entr(v).sum())(jnp.asarray(x))
    tx = to_torch(x).requires_grad_()
    (tg,) = torch.autograd.grad(aten.special_entr(tx).sum(), [tx])
    assert not np.allclose(g, to_numpy(tg))
    # the translated torch formula itself agrees
    good = jax.grad(lambda v: torch_registry.op("special_entr")(v).sum())(jnp.asarray(x))
    assert_close(good, tg)
