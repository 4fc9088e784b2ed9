"""Tests for the checker: it passes correct formulas and, above all, fails wrong ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import pytest

import jaxderiv
from jaxderiv import Registry, Report, Row, check_all, check_op, load_seed_spec, load_spec
from jaxderiv.spec import shipped_spec_files
from jaxderiv.check import MODES, plan
from jaxderiv.check.checker import PRECISION_MODES, Tolerance
from jaxderiv.check import opdb

V1_7 = Path(__file__).resolve().parents[2] / "formulas" / "derivatives_v1_7.yaml"
ROW_KEYS = {
    "op",
    "mode",
    "status",
    "max_abs_err",
    "max_rel_err",
    "reason",
    "seconds",
    "formula",
    "spec",
    "proof",
    "complex_samples",
}

# acos as PyTorch writes it (1.10), with an explicit result formula so that each mode has its
# own text: a mistake in one formula must fail that mode only.
ACOS_BACKWARD = "grad * -((-self * self + 1).rsqrt()).conj()"
ACOS_RESULT = "self_t * -((-self_p * self_p + 1).rsqrt())"


def acos_spec(backward=ACOS_BACKWARD, result=ACOS_RESULT) -> str:
    return f"""
        - name: acos(Tensor self) -> Tensor
          self: {backward}
          result: {result}
    """


@pytest.fixture
def acos_checked():
    """acos sampled inside its domain and also checked on complex inputs, whatever the families say."""
    with opdb.replaced("acos", domain=(-0.9, 0.9), complex=True):
        yield


@pytest.fixture
def acos_real_only():
    with opdb.replaced("acos", domain=(-0.9, 0.9), complex=False):
        yield


def statuses(report: Report) -> dict[tuple[str, str], str]:
    return {(r.op, r.mode): r.status for r in report}


# -- correct formulas pass -------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_report() -> Report:
    return check_all(load_seed_spec(), ops=["sin", "add.Tensor"])


def test_default_check_also_covers_replaced_older_formulas():
    report = check_all(ops=["add.Tensor"], modes=("vjp",))
    assert [(r.op, r.spec, r.status) for r in report] == [
        ("add.Tensor", "derivatives_v1_10_flat.yaml", "passed"),
        ("add.Tensor", "derivatives_v1_7.yaml", "passed"),
    ]


def test_a_slice_of_the_default_check_passes_in_every_mode():
    """CI's time-boxed slice of `python -m jaxderiv check` (the whole run is the README's main
    job): every 24th entry of the shipped files, in every mode, as the default run does it."""
    names = sorted({name for _, name, _ in plan()})[::24]
    report = check_all(ops=names)
    assert {r.mode for r in report} == set(MODES)
    assert [f"{r.op} [{r.mode}]: {r.reason}" for r in report.failures] == []
    assert sum(r.status == "passed" for r in report) > 5 * len(names)


def test_each_mode_draws_what_a_run_of_that_mode_alone_draws():
    """The modes of one entry share its samples (built once), yet each draws its directions
    from its own generator: every row of an all-modes run is the row of its mode run alone,
    to rounding (other draws would change its errors wholly)."""
    together = check_all(load_seed_spec(), ops=["mul.Tensor"])
    for row in together:
        alone = check_all(load_seed_spec(), ops=["mul.Tensor"], modes=[row.mode]).rows[0]
        assert (alone.status, alone.complex_samples) == (row.status, row.complex_samples), row.mode
        if row.status == "not_applicable":
            continue
        assert alone.max_abs_err == pytest.approx(row.max_abs_err, rel=1e-6), row.mode


def test_check_all_passes_shipped_formulas(good_report):
    # sin's and add's backward formulas call no other entry: no third derivative to check
    assert statuses(good_report) == {
        (op, m): "not_applicable" if m == "vjp_vjp_vjp" else "passed" for op in ("sin", "add.Tensor") for m in MODES
    }
    assert bool(good_report)
    assert good_report.failures == []
    assert len(good_report) == 2 * len(MODES)


def test_rows_carry_errors_timing_and_formula(good_report):
    for row in good_report:
        assert isinstance(row, Row)
        limit = 1e-1 if row.mode in PRECISION_MODES else 1e-5  # bfloat16 keeps 8 bits
        if row.mode == "vjp_vjp_vjp":
            continue  # not applicable: no errors measured
        assert row.max_abs_err is not None and math.isfinite(row.max_abs_err) and row.max_abs_err < limit
        assert row.max_rel_err is not None and math.isfinite(row.max_rel_err)
        assert row.seconds > 0
        assert row.reason == ""
        formulas = jaxderiv.seed_registry().op(row.op).formulas
        assert row.formula == {
            "vjp_vjp": "derivative of " + formulas["vjp"],
            "jvp_vjp": "forward-mode derivative of " + formulas["vjp"],
            "vjp_jvp": "derivative of " + formulas["jvp"],
            "float32": f"{formulas['vjp']} and {formulas['jvp']}, in float32",
            "bfloat16": f"{formulas['vjp']} and {formulas['jvp']}, in bfloat16",
        }.get(row.mode, formulas.get(row.mode))


def test_report_json_rows_have_exactly_the_keys(good_report, tmp_path):
    rows = good_report.to_json()
    assert len(rows) == 2 * len(MODES)
    for row in rows:
        assert set(row) == ROW_KEYS
    path = tmp_path / "report.json"
    good_report.write_json(path)
    assert json.loads(path.read_text()) == rows


def test_rows_count_the_complex_samples_they_compared(monkeypatch):
    """An entry checked on complex inputs says so, and the summary counts such entries; taking
    acos off the complex list (as a wrong declaration would) shows as 0."""
    rows = check_all(load_seed_spec(), ops=["acos"], modes=["vjp"]).rows
    assert rows[0].status == "passed" and rows[0].complex_samples > 0
    assert "compared on complex inputs: 1 entries (vjp 1)" in Report(rows).summary()
    with opdb.replaced("acos", complex=False):
        rows = check_all(load_seed_spec(), ops=["acos"], modes=["vjp"]).rows
    assert rows[0].status == "passed" and rows[0].complex_samples == 0
    assert "compared on complex inputs" not in Report(rows).summary()


def test_report_text_forms(good_report):
    summary = good_report.summary()
    assert all(m in summary for m in MODES)
    md = good_report.to_markdown()
    assert md.count("\n") == 2 + len(good_report)
    assert "| `add.Tensor` | derivatives_v1_10_flat.yaml | vjp | passed |" in md
    assert good_report.counts()["vjp"]["passed"] == 2


def test_report_truth():
    assert bool(
        Report([Row("a", "vjp", "passed"), Row("a", "jvp", "known_failure"), Row("a", "vjp_vjp", "not_applicable")])
    )
    assert not Report([Row("a", "vjp", "passed"), Row("a", "jvp", "failed", reason="x")])
    assert not Report([Row("a", "vjp", "error", reason="boom")])
    bad = Report([Row("a", "vjp", "failed", reason="too far")])
    assert "FAILED: a [vjp] too far" in bad.summary()


# -- wrong formulas fail the affected mode -------------------------------------------------------


def test_correct_acos_spec_passes(write_spec, acos_checked):
    report = check_all(write_spec(acos_spec()), ops=["acos"], modes=("vjp", "jvp"))
    assert statuses(report) == {("acos", "vjp"): "passed", ("acos", "jvp"): "passed"}


def test_wrong_backward_fails_vjp_only(write_spec, acos_checked):
    path = write_spec(acos_spec(backward="grad * 2 * -((-self * self + 1).rsqrt())"))
    report = check_all(path, ops=["acos"])
    s = statuses(report)
    assert s[("acos", "vjp")] == "failed"
    assert s[("acos", "vjp_vjp")] == "failed"  # the derivative of a wrong backward is wrong too
    assert s[("acos", "jvp")] == "passed"  # the result formula is untouched
    assert not report
    row = next(r for r in report if r.mode == "vjp")
    assert row.max_abs_err > 0.1  # off by a factor 2 of a derivative of size >= 1
    assert "vjp" in row.reason and "reference" in row.reason
    assert row.formula.startswith("backward formula (self: line 2)")


def test_copied_shipped_entry_then_broken(write_spec, entry_text, acos_real_only):
    # acos copied from the 1.7 file (real formula, no result formula: jvp transposes the backward)
    text = entry_text(V1_7, "acos(")
    assert "self: grad * -((-self * self + 1).rsqrt())" in text
    assert statuses(check_all(write_spec(text), ops=["acos"], modes=("vjp", "jvp"))) == {
        ("acos", "vjp"): "passed",
        ("acos", "jvp"): "passed",
    }
    broken = text.replace("grad * -((-self * self + 1).rsqrt())", "grad * 2 * -((-self * self + 1).rsqrt())")
    report = check_all(write_spec(broken), ops=["acos"], modes=("vjp", "jvp"))
    # both fail: with no result formula, forward mode is the transpose of the same wrong text
    assert statuses(report) == {("acos", "vjp"): "failed", ("acos", "jvp"): "failed"}


def test_wrong_result_formula_fails_jvp_only(write_spec, acos_checked):
    path = write_spec(acos_spec(result="self_t * -((-self_p * self_p + 1).sqrt())"))
    report = check_all(path, ops=["acos"], modes=("vjp", "jvp"))
    assert statuses(report) == {("acos", "vjp"): "passed", ("acos", "jvp"): "failed"}
    row = next(r for r in report if r.mode == "jvp")
    assert "jvp" in row.reason
    assert row.formula == "result formula (line 3)"


def test_sign_error_in_result_formula_fails(write_spec, acos_checked):
    path = write_spec(acos_spec(result="self_t * ((-self_p * self_p + 1).rsqrt())"))
    assert statuses(check_all(path, ops=["acos"], modes=("jvp",))) == {("acos", "jvp"): "failed"}


def test_dropped_conj_fails_on_complex_inputs(write_spec, acos_checked):
    assert opdb.record("acos").checks_complex()
    path = write_spec(acos_spec(backward="grad * -((-self * self + 1).rsqrt())"))
    report = check_all(path, ops=["acos"], modes=("vjp", "jvp"))
    assert statuses(report) == {("acos", "vjp"): "failed", ("acos", "jvp"): "passed"}
    assert "complex" in next(r for r in report if r.mode == "vjp").reason


def test_dropped_conj_is_invisible_to_real_inputs(write_spec, acos_real_only):
    # the same formula passes when only real samples are checked: the complex check is what catches it
    path = write_spec(acos_spec(backward="grad * -((-self * self + 1).rsqrt())"))
    report = check_all(path, ops=["acos"], modes=("vjp",))
    assert statuses(report) == {("acos", "vjp"): "passed"}


def test_missing_conj_of_a_complex_scalar_fails(write_spec):
    """A complex alpha is among add.Tensor's complex samples: 1.7's `maybe_multiply(grad, alpha)`
    (no `.conj()`) is wrong for it, and the check says so."""
    path = write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: maybe_multiply(grad, alpha)
    """)
    report = check_all(path, ops=["add.Tensor"], modes=("vjp",))
    assert statuses(report) == {("add.Tensor", "vjp"): "failed"}
    assert "alpha=(0.5-1.5j)" in report.rows[0].reason


def test_wrong_formula_of_one_input_fails(write_spec):
    path = write_spec("""
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: maybe_multiply(grad, alpha.conj())
          result: self_t + maybe_multiply(other_t, alpha)
    """)
    good = check_all(path, ops=["add.Tensor"], modes=("vjp",))
    assert statuses(good) == {("add.Tensor", "vjp"): "passed"}
    path.write_text(
        path.read_text().replace(
            "other: maybe_multiply(grad, alpha.conj())", "other: maybe_multiply(grad, -alpha.conj())"
        )
    )
    bad = check_all(path, ops=["add.Tensor"], modes=("vjp", "jvp"))
    assert statuses(bad) == {("add.Tensor", "vjp"): "failed", ("add.Tensor", "jvp"): "passed"}
    assert not bad


# -- other statuses ---------------------------------------------------------------------------------


def test_not_implemented_is_not_applicable(write_spec, acos_real_only):
    path = write_spec("""
        - name: acos(Tensor self) -> Tensor
          self: not_implemented("acos backward")
    """)
    report = check_all(path, ops=["acos"], modes=("vjp", "jvp"))
    assert statuses(report) == {("acos", "vjp"): "not_applicable", ("acos", "jvp"): "not_applicable"}
    assert bool(report)
    assert "acos backward" in report.rows[0].reason


def test_untranslatable_formula_is_an_error(write_spec):
    path = write_spec("""
        - name: acos(Tensor self) -> Tensor
          self: grad * no_such_helper_anywhere(self)
    """)
    report = check_all(path, ops=["acos"], modes=("vjp",))
    assert statuses(report) == {("acos", "vjp"): "error"}
    assert "no_such_helper_anywhere" in report.rows[0].reason
    assert not report


def test_unknown_op_is_an_error_row():
    report = check_all(ops=["definitely_not_an_op"], modes=("vjp",))
    assert statuses(report) == {("definitely_not_an_op", "vjp"): "error"}
    assert not report


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="hvp"):
        check_all(ops=["sin"], modes=("hvp",))


def test_spec_as_path_spec_or_registry(write_spec):
    path = write_spec("""
        - name: sin(Tensor self) -> Tensor
          self: grad * 3
    """)
    for spec in (path, str(path), load_spec(path)):
        assert statuses(check_all(spec, ops=["sin"], modes=("vjp",))) == {("sin", "vjp"): "failed"}
    assert statuses(check_op("sin", modes=("vjp",), registry=Registry(load_spec(path)))) == {("sin", "vjp"): "failed"}
    assert statuses(check_op("sin", modes=("vjp",))) == {("sin", "vjp"): "passed"}


def test_known_failures_are_run_and_reported_with_their_reason(write_spec, acos_checked):
    with opdb.replaced("acos", known_failures={"vjp": "a spec bug", "jvp": "a stale entry"}):
        report = check_all(
            write_spec(acos_spec(backward="grad * 2 * -((-self * self + 1).rsqrt())")),
            ops=["acos"],
            modes=("vjp", "jvp"),
        )
    rows = {r.mode: r for r in report}
    assert rows["vjp"].status == "known_failure" and rows["vjp"].reason.startswith("known failure: a spec bug [")
    assert rows["vjp"].max_abs_err > 1e-3  # the measured error is still reported
    assert rows["jvp"].status == "passed"  # a listed gap that no longer fails shows as passed


def test_declared_not_applicable_entries_are_reported_with_their_reason():
    report = check_all(ops=["_sparse_addmm", "fbgemm_linear_int8_weight"], modes=("vjp",))
    assert statuses(report) == {
        ("_sparse_addmm", "vjp"): "not_applicable",
        ("fbgemm_linear_int8_weight", "vjp"): "not_applicable",
    }
    assert all(r.reason for r in report)
    assert report  # not applicable is not a failure


def test_a_derivative_in_another_dtype_than_its_primal_fails():
    """gradcheck's check_grad_dtypes: the rule's machinery casts every formula's result to its
    primal's dtype (as PyTorch's engine does), so only a broken cast gets here; shown directly."""
    import jax.numpy as jnp
    import numpy as np

    from jaxderiv.check import checker

    class P:
        xs = [jnp.ones(3)]

        def input_name(self, k):
            return "self"

    good = {"ours": [np.ones(3)], "plus": [np.ones(3)]}
    checker._compare_dtypes("vjp", P(), good)
    checker._compare_dtypes("jvp", P(), good)
    for mode in ("vjp", "jvp", "vjp_vjp"):
        with pytest.raises(checker.Mismatch, match="float32 derivative of a float64 value"):
            checker._compare_dtypes(mode, P(), {"ours": [np.ones(3, np.float32)], "plus": [np.ones(3)]})


TANH_WITH_BACKWARD = """
- name: tanh(Tensor self) -> Tensor
  self: tanh_backward(grad, result)
- name: tanh_backward(Tensor grad_output, Tensor output) -> Tensor
  grad_output: tanh_backward(grad, output.conj())
  output: grad.conj() * ({k} * output.conj() * grad_output).conj()
"""


@pytest.mark.parametrize("k, second_order", [(-2, "passed"), (-3, "failed")])
def test_a_wrong_double_backward_fails_both_second_order_modes(tmp_path, k, second_order):
    """tanh's backward calls tanh_backward, whose own formulas differentiate it: a wrong one leaves
    tanh's vjp right and shows in reverse-over-reverse and in forward-over-reverse (jvp_vjp)."""
    spec = tmp_path / "tanh.yaml"
    spec.write_text(TANH_WITH_BACKWARD.format(k=k))
    report = check_all(load_spec(spec), ops=["tanh"], modes=("vjp", "vjp_vjp", "jvp_vjp"))
    assert statuses(report) == {
        ("tanh", "vjp"): "passed",
        ("tanh", "vjp_vjp"): second_order,
        ("tanh", "jvp_vjp"): second_order,
    }


SIN_WITH_RESULT = """
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj()
  result: self_t * {read}.cos()
"""


@pytest.mark.parametrize("read, reverse_over_forward", [("self_p", "passed"), ("self_p.detach()", "failed")])
def test_a_result_formula_wrong_only_in_its_own_derivative_fails_reverse_over_forward(
    tmp_path, read, reverse_over_forward
):
    """`self_p.detach()` leaves sin's jvp right at first order; only the gradient of the jvp
    (vjp_jvp) differentiates the result formula itself. The backward-based modes never read it."""
    spec = tmp_path / "sin.yaml"
    spec.write_text(SIN_WITH_RESULT.format(read=read))
    modes = ("vjp", "jvp", "vjp_vjp", "jvp_vjp", "vjp_jvp")
    report = check_all(load_spec(spec), ops=["sin"], modes=modes)
    assert statuses(report) == {("sin", m): "passed" for m in modes[:-1]} | {("sin", "vjp_jvp"): reverse_over_forward}


SOFTMAX_WITH_ITS_BACKWARD = """
    - name: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor
      self: _softmax_backward_data(grad, result, dim, self)

    - name: _softmax_backward_data(Tensor grad_output, Tensor output, int dim, Tensor self) -> Tensor
      grad_output: _softmax_backward_data(grad, output, dim, self)
      self: softmax_double_backward(grad, {grad_output}, dim, {output})
"""


@pytest.mark.parametrize(
    "output, grad_output, third",
    [
        ("output", "grad_output", "passed"),
        ("output.detach()", "grad_output", "failed"),
        ("output", "grad_output.detach()", "failed"),
    ],
)
def test_a_wrong_derivative_of_a_called_entrys_formula_fails_third_order_only(write_spec, output, grad_output, third):
    """`.detach()` in `_softmax_backward_data`'s formula leaves softmax's first and second
    derivatives as they are; only differentiating that formula (softmax's third derivative) sees it.
    `grad_output` there is softmax's cotangent: only a derivative in the cotangent (as
    gradgradcheck takes) reaches it."""
    path = write_spec(SOFTMAX_WITH_ITS_BACKWARD.format(output=output, grad_output=grad_output))
    report = check_all(load_spec(path, torch_version="1.7"), ops=["_softmax"], modes=("vjp", "vjp_vjp", "vjp_vjp_vjp"))
    assert statuses(report) == {
        ("_softmax", "vjp"): "passed",
        ("_softmax", "vjp_vjp"): "passed",
        ("_softmax", "vjp_vjp_vjp"): third,
    }


SIN_READING_GRAD = """
- name: sin(Tensor self) -> Tensor
  self: {grad} * self.cos().conj()
"""


@pytest.mark.parametrize("grad, second", [("grad", "passed"), ("grad.detach()", "failed")])
def test_a_formula_that_drops_its_derivative_in_grad_fails_second_order(write_spec, grad, second):
    """`grad.detach()` gives the right gradient, but differentiating the backward formula with
    respect to its cotangent (gradgradcheck's grad_outputs) gives 0 where it is cos(x)."""
    report = check_all(load_spec(write_spec(SIN_READING_GRAD.format(grad=grad))), ops=["sin"], modes=("vjp", "vjp_vjp"))
    assert statuses(report) == {("sin", "vjp"): "passed", ("sin", "vjp_vjp"): second}
    if second == "failed":
        assert "cotangent of output 0" in report.rows[1].reason


def test_third_order_is_not_applicable_where_no_formula_calls_an_entry():
    row = check_all(load_seed_spec(), ops=["sin"], modes=("vjp_vjp_vjp",)).rows[0]
    assert row.status == "not_applicable" and "no backward formula calls another entry" in row.reason


def test_reverse_over_forward_inherits_the_jvps_declared_failure():
    """angle's 1.10 result formula is a declared spec bug off the real line; its gradient is wrong too."""

    row = next(r for r in check_all(load_seed_spec(), ops=["angle"], modes=["vjp_jvp"]).rows)
    assert row.status == "known_failure" and row.reason.startswith(
        "known failure: " + opdb.record("angle").known_failure("jvp")
    )


MUL_HALF_GIVEN = """
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other.conj()
  other: not_implemented("mul other")
"""
SIN_CONSTANT = """
- name: sin(Tensor self) -> Tensor
  self: non_differentiable
"""


def _vjp_row(spec_path, op):
    return next(r for r in check_all(load_spec(spec_path), ops=[op], modes=["vjp"]).rows)


def test_a_derivative_the_spec_does_not_give_is_refused(tmp_path, monkeypatch):
    """gradcheck's test_fn_fail_gradgrad: `other`'s gradient must raise NotImplementedDerivative
    naming the entry. An op that hands back a made-up zero instead fails the vjp check."""
    import importlib

    from jaxderiv.errors import NotImplementedDerivative

    app_mod = importlib.import_module("jaxderiv.application")

    spec = tmp_path / "mul.yaml"
    spec.write_text(MUL_HALF_GIVEN)
    assert _vjp_row(spec, "mul.Tensor").status == "passed"
    # `other` is held fixed, so `self`'s formula is still checked: a wrong one fails
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(MUL_HALF_GIVEN.replace("grad * other.conj()", "2 * grad * other.conj()"))
    assert _vjp_row(wrong, "mul.Tensor").status == "failed"

    given = app_mod.Application.backward_formulas

    def zeros_instead(self, xs, ys, grads, wanted):
        try:
            return given(self, xs, ys, grads, wanted)
        except NotImplementedDerivative:
            return [jax.numpy.zeros_like(x) if w else None for x, w in zip(xs, wanted)]

    monkeypatch.setattr(app_mod.Application, "backward_formulas", zeros_instead)
    row = _vjp_row(spec, "mul.Tensor")
    assert row.status == "failed" and "`other`: the spec gives no derivative, yet a gradient" in row.reason


def test_an_op_without_differentiable_inputs_has_a_zero_gradient(tmp_path, monkeypatch):
    """Its outputs are constants (PyTorch: no grad_fn): zero, checked, though the row stays not applicable."""
    spec = tmp_path / "sin.yaml"
    spec.write_text(SIN_CONSTANT)
    assert _vjp_row(spec, "sin").status == "not_applicable"
    monkeypatch.setattr(jax.lax, "stop_gradient", lambda x: x)
    row = _vjp_row(spec, "sin")
    assert row.status == "failed" and "no input is differentiable, yet the gradient is not zero" in row.reason


def test_cumprods_declared_reverse_over_forward_difference_is_exactly_the_measured_one():
    """PyTorch's cumprod_jvp is right at a zero but not around it: the gradient of the jvp is 0
    where JAX's is -2.34, on the sample with zeros, and only there."""
    spec = load_spec(shipped_spec_files()[-1])
    row = next(r for r in check_all(spec, ops=["cumprod"], modes=["vjp_jvp"]).rows)
    assert row.status == "known_failure" and row.reason.startswith("known failure: spec (PyTorch 1.10's cumprod_jvp")
    assert "sample 1 of 6 (zeros dim=-1, float64)" in row.reason and "(actual 0, reference -2.3372732)" in row.reason


def test_the_check_runs_without_sympy(monkeypatch):
    """sympy is the `proofs` extra: without it the numerical checks run and no row claims a proof."""
    import sys

    with_sympy = check_all(load_seed_spec(), ops=["sin"], modes=("vjp",)).rows
    assert with_sympy[0].proof  # sin's formula is proved where sympy is installed
    for name in ("jaxderiv.check.proofs", "jaxderiv.check.proof_definitions"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "sympy", None)  # `import sympy` raises ModuleNotFoundError
    rows = check_all(load_seed_spec(), ops=["sin"], modes=("vjp",)).rows
    assert [(r.status, r.proof) for r in rows] == [("passed", "")]


DECLARED_LOOSER = sorted(n for n, r in opdb.database().items() if r.reference_tolerance is not None)


@pytest.mark.parametrize("name", DECLARED_LOOSER)
def test_a_declared_reference_tolerance_is_needed_and_enough(name):
    """A looser float64 tolerance against JAX autodiff is declared where a formula computes part of
    the derivative in float32 as PyTorch writes it: without it the vjp fails against autodiff by
    more than Tolerance.ref_rtol (the dtype-losing step is real), with it the vjp passes, and the
    error stays within what is declared."""
    declared = opdb.record(name).reference_tolerance
    assert declared is not None and declared.rtol > Tolerance.ref_rtol
    with opdb.replaced(name, reference_tolerance=None):
        strict = check_all(load_seed_spec(), ops=[name], modes=["vjp"]).rows[0]
    assert strict.status == "failed" and "JAX autodiff" in strict.reason
    assert Tolerance.ref_rtol < strict.max_rel_err <= declared.rtol
    loose = check_all(load_seed_spec(), ops=[name], modes=["vjp"]).rows[0]
    assert loose.status == "passed" and declared.reason in loose.reason


def test_the_float64_comparison_with_autodiff_catches_a_float32_step(write_spec):
    """A dtype-losing cast (one value read made `.to(at::kFloat)`, about 6e-8 relative) fails the
    float64 vjp: the same formula without the cast passes."""
    text = """
    - name: sin(Tensor self) -> Tensor
      self: grad * {read}.cos().conj()
    """
    rows = {
        read: check_all(load_spec(write_spec(text.format(read=read))), ops=["sin"], modes=["vjp"]).rows[0]
        for read in ("self", "self.to(at::kFloat)")
    }
    assert rows["self"].status == "passed"
    assert rows["self.to(at::kFloat)"].status == "failed" and "JAX autodiff" in rows["self.to(at::kFloat)"].reason


def test_check_function_differentiates_a_custom_rule_in_its_cotangent():
    """A user's own rule whose backward cuts the cotangent from differentiation gives the right
    gradient and the wrong second derivative in that cotangent: vjp passes, vjp_vjp fails."""
    import jax.numpy as jnp
    import numpy as np

    from jaxderiv.check.function import check_function

    @jax.custom_vjp
    def sin(x):
        return jnp.sin(x)

    sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jax.lax.stop_gradient(g) * jnp.cos(x),))
    x = np.random.default_rng(0).normal(size=(3,))
    with jax.enable_x64(True):
        report = check_function(sin, x, modes=("vjp", "vjp_vjp"), reference=jnp.sin)
    assert [(r.mode, r.status) for r in report.rows] == [("vjp", "passed"), ("vjp_vjp", "failed")]
    assert "cotangent of output 0" in report.rows[1].reason
