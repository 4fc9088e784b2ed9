"""`python -m jaxderiv diff --numeric`: each changed entry's gradient evaluated in both files."""

from __future__ import annotations

import json

import pytest

from jaxderiv.cli import main
from jaxderiv.spectools.diff import diff_specs
from jaxderiv.spectools.diff_numeric import CHANGES, NOT_COMPARABLE, ONLY_A, ONLY_B, SAME, SCHEMA, counts

# Every entry below differs in text between A and B; only the numbers tell them apart.
A = """\
- name: neg(Tensor self) -> Tensor
  self: grad * 2

- name: sin(Tensor self) -> Tensor
  self: grad * 2

- name: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
  self: where((self >= min).logical_and_(self <= max), grad, at::zeros({}, grad.options()))

- name: exp(Tensor self) -> Tensor
  self: grad * result.conj()
  result: auto_element_wise

- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self

- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: grad
  other: maybe_multiply(grad, alpha)

- name: no_such_op(Tensor self) -> Tensor
  self: grad

- name: cos(Tensor self) -> Tensor
  self: grad * -self.sin()
"""

B = """\
- name: neg(Tensor self) -> Tensor
  self: 2 * grad

- name: sin(Tensor self) -> Tensor
  self: grad * 3

- name: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
  self: where((self > min).logical_and_(self < max), grad, at::zeros({}, grad.options()))

- name: exp(Tensor self) -> Tensor
  self: grad * result.conj()
  result: self_t * result * 3

- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: not_implemented("mul's other")

- name: add.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  other: grad

- name: no_such_op(Tensor self) -> Tensor
  self: grad * 1

- name: tan(Tensor self) -> Tensor
  self: grad * (1 + result.pow(2))
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    d = tmp_path_factory.mktemp("numeric")
    (d / "a.yaml").write_text(A)
    (d / "b.yaml").write_text(B)
    return d / "a.yaml", d / "b.yaml"


@pytest.fixture(scope="module")
def verdicts(specs):
    d = diff_specs(*specs, numeric=True)
    return d, {v.name: v for v in d.verdicts}


def test_the_text_diff_sees_every_entry_changed(verdicts):
    d, _ = verdicts
    assert sorted(c.name for c in d.changed) == ["add.Tensor", "clamp", "exp", "mul.Tensor", "neg", "no_such_op", "sin"]


def test_a_respelled_formula_has_the_same_gradient(verdicts):
    v = verdicts[1]["neg"]
    assert v.kind == SAME, v
    assert v.compared > 0 and v.max_diff == 0.0


def test_a_changed_factor_changes_the_gradient(verdicts):
    v = verdicts[1]["sin"]
    assert v.kind == CHANGES, v
    # the gradient is 2 grad in A and 3 grad in B: the largest difference is |grad| somewhere
    assert (
        v.max_diff > 0.1
        and v.detail.startswith("differs in jvp and vjp (6 of 6 comparisons); largest: ")
        and " -> " in v.detail
    )


def test_a_kink_convention_is_found_on_the_kink_inputs(verdicts):
    # >= vs >: the same gradient on every random sample, 1 -> 0 exactly at clamp's bounds
    v = verdicts[1]["clamp"]
    assert v.kind == CHANGES, v
    assert (
        # 2: the vjp and the jvp on the kink input at the bounds; every other comparison agrees
        v.detail.startswith(f"differs in jvp and vjp (2 of {v.compared} comparisons)")
        and v.compared > 2
        and "kink input" in v.detail
        and v.detail.endswith(" -> 0")
    ), v.detail


def test_a_result_formula_change_is_found_in_jvp(verdicts):
    v = verdicts[1]["exp"]
    assert v.kind == CHANGES, v
    assert v.detail.startswith("differs in jvp ("), v.detail


def test_schema_not_implemented_no_forward_and_one_sided(verdicts):
    d, by = verdicts
    assert by["add.Tensor"].kind == SCHEMA and "alpha" in by["add.Tensor"].detail
    assert by["mul.Tensor"].kind == NOT_COMPARABLE and "not implemented" in by["mul.Tensor"].detail
    assert by["no_such_op"].kind == NOT_COMPARABLE and "no forward implementation" in by["no_such_op"].detail
    assert by["cos"].kind == ONLY_A and by["tan"].kind == ONLY_B
    assert counts(d.verdicts) == {SAME: 1, CHANGES: 3, SCHEMA: 1, NOT_COMPARABLE: 2, ONLY_A: 1, ONLY_B: 1}


def test_cli_numeric_by_default_and_text_only_on_request(specs, tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["diff", str(specs[0]), str(specs[1]), "--no-check", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert (
        "numeric (A = old, B = new): 1 same gradient, 3 gradient changes, 1 schema changed, 2 not comparable, 1 only in A, 1 only in B"
        in text
    )
    assert "=> same gradient" in text and "=> gradient changes: differs in jvp and vjp" in text
    data = json.loads(out.read_text())
    by = {c["name"]: c for c in data["changed"]}
    assert by["neg"]["numeric"]["class"] == SAME and by["sin"]["numeric"]["class"] == CHANGES
    assert by["sin"]["keys"] == {"self": {"old": "grad * 2", "new": "grad * 3"}}  # the textual diff as before
    assert data["numeric_counts"][CHANGES] == 3
    assert main(["diff", str(specs[0]), str(specs[1]), "--no-check", "--no-numeric"]) == 0
    text = capsys.readouterr().out
    assert "=>" not in text and "numeric (" not in text and "~ sin" in text
