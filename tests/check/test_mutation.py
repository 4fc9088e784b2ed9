"""Mutation testing: a fixed set of wrong formulas, one or more of each kind, must all be killed by the checker."""

from __future__ import annotations

import pytest

from jaxderiv.grammar import parse_formula
from jaxderiv.check import checker
from jaxderiv.check.mutate import KINDS, entry_yaml, family_of, mutants_of, run_mutant
from jaxderiv.spec import load_spec, read_spec_text, shipped_spec_files

SPEC = load_spec(shipped_spec_files()[-1])

# (entry, formula key, kind, the mutated text): the kinds spread over the four pointwise families.
FIXED = [
    ("abs", "result", "drop_conj", "handle_r_to_c(result.scalar_type(), self_t * self_p.sgn())"),
    ("cos", "self", "drop_conj", "grad * -self.sin()"),
    ("mul.Tensor", "self", "factor2", "2 * mul_tensor_backward(grad, other, self.scalar_type())"),
    ("add.Tensor", "result", "sign", "self_t - maybe_multiply(other_t, alpha)"),
    ("acosh", "self", "swap", "grad * (1 - self.pow(2)).rsqrt().conj()"),
    ("lerp.Tensor", "weight", "swap", "grad * (self - end).conj()"),
    ("atan2", "self, other", "half_grad", "atan2_backward(grad * 0.5, self, other, grad_input_mask)"),
    ("erf", "self", "arg_shift", "2.0 / sqrt(M_PI) * exp(-self.pow(2 + 1)) * grad"),
    ("hypot", "other", "result_to_input", "grad * other / self"),
    ("erf", "self", "detach", "2.0 / sqrt(M_PI) * exp(-self.detach().pow(2)) * grad"),
    ("mul.Tensor", "result", "detach", "other_t * self_p.detach() + self_t * other_p"),
    ("erf", "self", "cancel", "2.0 / sqrt(M_PI) * exp(-(10000 - (10000 - self)).pow(2)) * grad"),
    ("erf", "self", "cast", "2.0 / sqrt(M_PI) * exp(-self.to(at::kFloat).pow(2)) * grad"),
]

# Kinds wrong only where the float64 first-order checks cannot look, and the mode that sees each.
ONLY_SEEN_BY = {("erf", "detach"): "vjp_vjp", ("mul.Tensor", "detach"): "vjp_jvp", ("erf", "cancel"): "float32"}


def _mutant(name, key, kind, text):
    entry = SPEC[name]
    formula = next(f for f in entry.backward + entry.forward if f.key == key)
    found = [m for m in mutants_of(entry, formula, family_of(name)) if m.kind == kind and m.mutated == text]
    assert found, f"{name} [{key}] has no {kind} mutant {text!r}"
    return entry, found[0]


@pytest.mark.parametrize("name, key, kind, text", FIXED, ids=[f"{f[0]}-{f[2]}" for f in FIXED])
def test_fixed_mutants_are_killed(name, key, kind, text):
    entry, mutant = _mutant(name, key, kind, text)
    verdict = run_mutant(mutant, entry)
    assert verdict["killed"] and verdict["status"] == "failed", verdict


@pytest.mark.parametrize(
    "name, key, kind, text", [f for f in FIXED if (f[0], f[2]) in ONLY_SEEN_BY], ids=lambda v: str(v)[:12]
)
def test_new_kinds_pass_the_first_order_float64_modes_and_fail_their_own(name, key, kind, text):
    entry, mutant = _mutant(name, key, kind, text)
    assert not run_mutant(mutant, entry, modes=["vjp", "jvp"])["killed"]
    assert run_mutant(mutant, entry)["mode"] == ONLY_SEEN_BY[name, kind]


def test_detach_and_cancel_spare_metadata_reads_and_function_names():
    """`self.sizes()`, `zeros_like(self)` and a call's name are not value reads: rewriting them
    would be an equivalent mutant."""
    from jaxderiv.spec import read_spec_text

    entry = read_spec_text("""
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos() + at::zeros_like(self) + self.sizes()[0] * 0
""")["sin"]
    texts = {m.mutated for m in mutants_of(entry, entry.backward[0], "unary") if m.kind in ("detach", "cancel")}
    assert texts == {
        "grad * self.detach().cos() + at::zeros_like(self) + self.sizes()[0] * 0",
        "grad * (10000 - (10000 - self)).cos() + at::zeros_like(self) + self.sizes()[0] * 0",
    }
    assert not [m for m in mutants_of(entry, entry.backward[0], "linalg") if m.kind == "cancel"]


def test_a_dtype_losing_cast_is_seen_only_at_the_tight_float64_tolerance(monkeypatch):
    """`.to(at::kFloat)` costs about 6e-8 relative: the first-order float64 modes kill it at
    Tolerance.ref_rtol 1e-9 and, at the tolerance they had before (1e-6, as gradcheck's are looser
    still), let it through."""
    entry, mutant = _mutant(*FIXED[-1])
    assert mutant.kind == "cast"
    assert run_mutant(mutant, entry, modes=["vjp"])["mode"] == "vjp"
    monkeypatch.setattr(checker.Tolerance, "ref_rtol", 1e-6)
    monkeypatch.setattr(checker.Tolerance, "ref_atol", 1e-8)
    assert not run_mutant(mutant, entry, modes=["vjp", "jvp"])["killed"]


def test_every_kind_is_in_the_fixed_set():
    assert {f[2] for f in FIXED} == set(KINDS)


def test_unmutated_entry_written_back_passes():
    """The control: the same entry through the same temp-file path is not killed."""
    entry = SPEC["acosh"]
    formula = entry.backward[0]
    mutant = mutants_of(entry, formula)[0]
    same = type(mutant)(mutant.op, mutant.key, "identity", formula.text, formula.text)
    assert not run_mutant(same, entry)["killed"]


def test_mutants_are_well_formed_and_distinct():
    """Each mutant parses, differs from its formula, and the written spec holds it under its key."""
    for name in ("div.Tensor", "hypot", "lerp.Tensor", "abs"):
        entry = SPEC[name]
        for formula in entry.backward + entry.forward:
            mutants = mutants_of(entry, formula)
            assert len({m.mutated for m in mutants}) == len(mutants)
            for m in mutants:
                assert m.mutated != formula.text and m.kind in KINDS
                parse_formula(m.mutated)
                written = read_spec_text(entry_yaml(entry, {m.key: m.mutated}))[name]
                texts = {f.key: f.text for f in written.backward + written.forward}
                assert texts[m.key] == m.mutated and written.schema == entry.schema


def test_an_entry_whose_check_is_a_known_failure_is_not_mutated():
    """threshold_'s 1.7 formula is wrong above its threshold (a declared known failure, reported
    `skipped`): its mutants could not be judged, so the entry is left out, like a failing one."""
    from jaxderiv.check.mutate import baseline_ok

    older = load_spec(shipped_spec_files()[0])
    assert not baseline_ok(older["threshold_"])
    assert baseline_ok(older["threshold"])


def test_a_mutant_in_a_called_entrys_formula_is_killed_through_its_caller():
    """`_log_softmax_backward_data`'s `self:` formula is differentiated only through
    `_log_softmax`'s third order: the mutant's file holds that caller, and its checks count."""
    from jaxderiv.check.mutate import neighbours

    older = load_spec(shipped_spec_files()[0])
    entry = older["_log_softmax_backward_data"]
    context, callers = neighbours(entry)
    assert callers == ["_log_softmax"] and [e.name for e in context] == ["_log_softmax"]
    text = "log_softmax_double_backward(grad.to(output.dtype()), grad_output, dim, output.detach()).to(self.dtype())"
    formula = next(f for f in entry.backward if f.key == "self")
    mutant = next(m for m in mutants_of(entry, formula, family_of(entry.name)) if m.mutated == text)
    assert not run_mutant(mutant, entry, callers=[])["killed"]  # the entry's own checks cannot see it
    verdict = run_mutant(mutant, entry)
    assert verdict["killed"] and verdict["mode"] == "vjp_vjp_vjp", verdict
    assert "_log_softmax [vjp_vjp_vjp]" in verdict["reason"]
