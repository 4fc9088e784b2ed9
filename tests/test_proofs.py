"""Symbolic proofs of elementwise formulas: true ones proved, wrong ones disproved, unknown names unproved."""

from __future__ import annotations

import dataclasses

import pytest

from jaxderiv.proofs import prove_entry, prove_formula
from jaxderiv.spec import load_spec, shipped_spec_files

SPEC = load_spec(shipped_spec_files()[-1])

PROVED = ["abs", "acos", "add.Tensor", "addcdiv", "asinh", "cos", "div.Tensor", "erf", "exp", "hypot", "lgamma", "logaddexp", "mul.Tensor"]


@pytest.mark.parametrize("name", PROVED)
def test_shipped_formulas_are_proved_symbolically(name):
    proofs = prove_entry(SPEC[name])
    assert proofs and all(p.status == "symbolic" for p in proofs), proofs


def test_double_literal_constants_fall_back_to_numerical():
    (proof,) = prove_entry(SPEC["log10"])
    assert proof.status == "numerical" and "50 digits" in proof.detail


@pytest.mark.parametrize("name, wrong", [("cos", "grad * self.sin()"), ("hypot", "grad * other / result"), ("div.Tensor", "grad / other * 2"), ("exp", "grad * self")])
def test_wrong_formulas_are_disproved(name, wrong):
    entry = SPEC[name]
    formula = dataclasses.replace(entry.backward[0], text=wrong)
    entry = dataclasses.replace(entry, backward=(formula,) + entry.backward[1:])
    assert prove_formula(entry, formula).status == "disproved"


def test_unknown_names_give_no_proof():
    entry = SPEC["cos"]
    formula = dataclasses.replace(entry.backward[0], text="grad * mystery(self)")
    proof = prove_formula(dataclasses.replace(entry, backward=(formula,)), formula)
    assert proof.status == "none" and "no sympy meaning" in proof.detail
    assert prove_entry(SPEC["atan2"])[0].status == "none"  # a tuple-returning helper


def test_check_reports_proofs_beside_passed(write_spec):
    """check_all marks the modes whose formulas sympy proved; a wrong formula is neither passed nor proved."""
    from jaxderiv import check_all

    good = check_all(write_spec("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"), ops=["sin"])
    assert {r.mode: (r.status, r.proof) for r in good} == {"vjp": ("passed", "symbolic"), "jvp": ("passed", "symbolic"), "vjp_vjp": ("passed", "")}
    assert "also proved with sympy" in good.summary()
    bad = check_all(write_spec("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj() * 3\n"), ops=["sin"], modes=("vjp",))
    assert [(r.status, r.proof) for r in bad] == [("failed", "")]
