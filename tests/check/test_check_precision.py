"""The float32 and bfloat16 modes: a formula right in float64 but cancelling in a low dtype is reported."""

import pytest

from jaxderiv.check import check_all
from jaxderiv.spec import load_spec

SIN = """
- name: sin(Tensor self) -> Tensor
  self: grad * ({arg}).conj()
"""
# cos(x) as cos((x + b) - b) expanded: equal in exact arithmetic, but x + 10000 keeps only
# 3 decimals of x in float32 (a subtraction XLA would simplify away is avoided on purpose)
EXACT = "self.cos()"
CANCELLING = "((self + 10000).cos() * -0.9521553682590148 + (self + 10000).sin() * -0.30561438888825215)"


def _statuses(tmp_path, arg, modes):
    path = tmp_path / "sin.yaml"
    path.write_text(SIN.format(arg=arg))
    return {r.mode: r.status for r in check_all(load_spec(path, torch_version="2.13"), ops=["sin"], modes=modes)}


def test_a_cancelling_formula_passes_float64_and_fails_float32(tmp_path):
    # float64 loses about 1e-12: within the float64 tolerances
    assert _statuses(tmp_path, CANCELLING, ("vjp",)) == {"vjp": "passed"}
    assert _statuses(tmp_path, CANCELLING, ("float32", "bfloat16")) == {"float32": "failed", "bfloat16": "failed"}


def test_the_exact_formula_passes_in_every_dtype(tmp_path):
    assert _statuses(tmp_path, EXACT, ("vjp", "float32", "bfloat16")) == {
        "vjp": "passed",
        "float32": "passed",
        "bfloat16": "passed",
    }


@pytest.mark.parametrize("name", ["logsumexp", "norm.ScalarOpt_dtype", "complex"])
def test_shipped_entries_pass_or_say_why_not(name):
    rows = check_all(ops=[name], modes=("float32", "bfloat16")).rows
    assert rows and all(r.status in ("passed", "not_applicable") for r in rows), [
        (r.mode, r.status, r.reason) for r in rows
    ]
    assert any(r.status == "passed" for r in rows)


def test_a_family_outside_elementwise_and_reductions_is_not_applicable():
    rows = check_all(ops=["mm"], modes=("float32",)).rows
    assert {r.status for r in rows} == {"not_applicable"} and "elementwise and reduction" in rows[0].reason
