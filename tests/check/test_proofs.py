"""Symbolic proofs of elementwise formulas: true ones proved, wrong ones disproved, unknown names unproved."""

from __future__ import annotations

import dataclasses

import pytest

from jaxderiv.check import opdb, proofs
from jaxderiv.check.proofs import elementwise_entries, prove_entry, prove_formula
from jaxderiv.spec import load_spec, shipped_spec_files

V1_7, V1_10 = (load_spec(f) for f in shipped_spec_files())
SPEC = V1_10

PROVED = [
    "abs",
    "acos",
    "add.Tensor",
    "addcdiv",
    "asinh",
    "cos",
    "div.Tensor",
    "erf",
    "exp",
    "hypot",
    "lgamma",
    "logaddexp",
    "mul.Tensor",
]
# Ops covered by tuple helpers, masks, `where`, GradMode branches and piecewise definitions.
PROVED_1_7 = [
    "atan2", "clamp_min", "clamp_max", "hardtanh", "relu", "threshold", "leaky_relu", "elu", "celu", "gelu", "silu",
    "softplus", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "logit", "mvlgamma", "polygamma", "prelu",
    "pow.Tensor_Scalar", "pow.Scalar", "rsub.Scalar", "add.Scalar", "div.Scalar", "mul.Scalar", "floor", "sign",
    "fmod.Tensor", "remainder.Scalar", "maximum", "_s_where", "elu_backward", "threshold_backward", "softplus_backward",
    "hardtanh_backward", "sigmoid_backward", "tanh_backward", "log_sigmoid_forward", "prelu_backward", "eq_.Tensor", "sgn",
]  # fmt: skip
PROVED_1_10 = [
    "atan2", "xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other", "special_xlog1py", "special_zeta", "special_i1",
    "special_i1e", "special_i0e", "i0", "special_erfcx", "frexp.Tensor", "clamp_min.Tensor", "clamp_max.Tensor",
    "clamp.Tensor", "copysign.Tensor", "igamma", "maximum", "fmin", "div.Tensor_mode", "lerp.Scalar", "angle",
]  # fmt: skip


def _with(entry, index, text, forward=False):
    """The entry with its backward (or forward) formula `index` rewritten as `text`."""
    formulas = entry.forward if forward else entry.backward
    wrong = dataclasses.replace(formulas[index], text=text)
    formulas = formulas[:index] + (wrong,) + formulas[index + 1 :]
    return dataclasses.replace(entry, **{"forward" if forward else "backward": formulas}), wrong


@pytest.mark.parametrize("name", PROVED)
def test_shipped_formulas_are_proved_symbolically(name):
    proofs = prove_entry(SPEC[name])
    assert proofs and all(p.status == "symbolic" for p in proofs), proofs


@pytest.mark.parametrize(
    "spec, name",
    [(V1_7, n) for n in PROVED_1_7] + [(V1_10, n) for n in PROVED_1_10],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_new_elementwise_formulas_are_proved(spec, name):
    found = prove_entry(spec[name])
    assert found and all(p.status in ("symbolic", "numerical") for p in found), found


def test_tuple_formulas_prove_each_component():
    (proof,) = prove_entry(SPEC["atan2"])
    assert (proof.key, proof.status) == ("self, other", "symbolic")


def test_double_literal_constants_fall_back_to_numerical():
    (proof,) = prove_entry(SPEC["log10"])
    assert proof.status == "numerical" and "50 digits" in proof.detail


WRONG = [
    (V1_10, "cos", 0, "grad * self.sin()"),
    (V1_10, "hypot", 0, "grad * other / result"),
    (V1_10, "div.Tensor", 0, "grad / other * 2"),
    (V1_10, "exp", 0, "grad * self"),
    # a tuple helper: a sign, swapped operands
    (V1_10, "atan2", 0, "atan2_backward(-grad, self, other, grad_input_mask)"),
    (V1_10, "atan2", 0, "atan2_backward(grad, other, self, grad_input_mask)"),
    # piecewise: the wrong side of a kink, a wrong branch, a factor on one piece
    (V1_7, "relu", 0, "threshold_backward(grad, self, 1)"),
    (V1_7, "clamp_min", 0, "grad * (self <= min).to(grad.dtype())"),
    (V1_7, "hardtanh", 0, "hardtanh_backward(grad, self, max_val, min_val)"),
    (V1_7, "leaky_relu", 0, "leaky_relu_backward(grad, self, 2 * negative_slope, false)"),
    (V1_7, "elu", 0, "elu_backward(grad, alpha, scale, 2 * input_scale, result)"),
    (V1_10, "maximum", 0, "at::where(self == other, grad / 2, grad).masked_fill_(self > other, 0)"),
    (V1_10, "clamp.Tensor", 1, "clamp_backward_min_max(grad, self, max, min, grad_input_mask)"),
    # piecewise constant and sign-flipping ops, a mask Tensor
    (V1_7, "frac", 0, "zeros_like(grad)"),
    (V1_7, "fmod.Tensor", 0, "-grad"),
    (V1_7, "copysign.Tensor", 0, "-copysign_tensor_backward(grad, self, other)"),
    (V1_7, "_s_where", 0, "where(condition, zeros_like(grad), grad)"),
    # masks and where
    (V1_10, "xlogy.Tensor", 1, "grad * at::where(other.isnan() | (self != 0), 2 * self / other, zeros_like(other))"),
    (V1_10, "xlogy.Tensor", 0, "grad * at::xlogy((self == 0), other)"),
    (
        V1_7,
        "logit",
        0,
        "GradMode::is_enabled() ? infinitely_differentiable_logit_backward(grad, self, eps) : -logit_backward(grad, self, eps)",
    ),
    (V1_7, "pow.Tensor_Scalar", 0, "pow_backward(grad, self, exponent + 1)"),
    (V1_7, "softplus_backward", 1, "softplus_double_backward(grad * grad_output, self, 2 * beta, threshold)"),
]


@pytest.mark.parametrize("spec, name, index, wrong", WRONG, ids=[f"{n}-{i}" for _, n, i, _ in WRONG])
def test_wrong_formulas_are_disproved(spec, name, index, wrong):
    entry, formula = _with(spec[name], index, wrong)
    assert prove_formula(entry, formula).status == "disproved"


def test_wrong_forward_formula_is_disproved():
    entry, formula = _with(
        V1_10["xlogy.Tensor"],
        0,
        "self_t * at::xlogy((self_p != 0), other_p) - other_t * self_p / other_p",
        forward=True,
    )
    assert prove_formula(entry, formula).status == "disproved"


def test_unknown_names_give_no_proof():
    entry, formula = _with(SPEC["cos"], 0, "grad * mystery(self)")
    proof = prove_formula(entry, formula)
    assert proof.status == "none" and "no sympy meaning" in proof.detail
    entry, formula = _with(SPEC["atan2"], 0, "grad * other")  # one value for two inputs
    assert prove_formula(entry, formula).status == "none"


@pytest.mark.parametrize("spec", [V1_7, V1_10], ids=["1.7", "1.10"])
def test_every_elementwise_entry_is_proved_or_says_why_not(spec):
    """No shipped formula disproves; every unproved elementwise entry carries a reason."""
    entries = elementwise_entries(spec)
    assert len(entries) > 100
    found = [p for e in entries for p in prove_entry(e)]
    assert not [p for p in found if p.status == "disproved"]
    assert all(p.detail for p in found if p.status == "none")
    proved = {p.op for p in found if p.status in ("symbolic", "numerical")}
    assert len(proved) >= 0.75 * len(entries)


def test_threshold_inplace_formula_holds_only_for_value_at_most_threshold():
    """threshold_'s formula reads the result: right where value <= threshold (the ranges
    sampled), wrong where the replacement value lies above the threshold."""
    entry = V1_7["threshold_"]
    assert prove_entry(entry)[0].status in ("symbolic", "numerical")
    definition = opdb.record("threshold_").definition
    above = dataclasses.replace(definition, ranges=(("threshold", -1.0, -0.5), ("value", 1.0, 2.0)))
    with opdb.replaced("threshold_", definition=above):
        assert proofs._prove(entry, entry.backward[0], False, 5, 0).status == "disproved"


def test_check_reports_proofs_beside_passed(write_spec):
    """check_all marks the modes whose formulas sympy proved; a wrong formula is neither passed nor proved."""
    from jaxderiv import check_all

    good = check_all(
        write_spec("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"),
        ops=["sin"],
        modes=("vjp", "jvp", "vjp_vjp"),
    )
    assert {r.mode: (r.status, r.proof) for r in good} == {
        "vjp": ("passed", "symbolic"),
        "jvp": ("passed", "symbolic"),
        "vjp_vjp": ("passed", ""),
    }
    assert "also proved with sympy" in good.summary()
    bad = check_all(
        write_spec("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj() * 3\n"),
        ops=["sin"],
        modes=("vjp",),
    )
    assert [(r.status, r.proof) for r in bad] == [("failed", "")]
