"""The checker's failure reports, per-element mode, undefined cotangents and tangents, jit/vmap variants.

Every new check is shown able to fail: a deliberately wrong formula in a temporary spec file,
reported `failed` with a reason that says where, and a `repro` command that fails again.
"""

from __future__ import annotations

import json
import re
import shlex

import jax.numpy as jnp
import pytest
from jax._src.interpreters.batching import BatchTracer  # what a formula sees under jax.vmap

from jaxderiv import check_all, load_spec
from jaxderiv.check import checker
from jaxderiv.check import opdb
from jaxderiv.cli import main
from jaxderiv.namespace import HELPERS

WRONG_SIN = """
    - name: sin(Tensor self) -> Tensor
      self: grad * self.cos().conj() * 3
"""

# acos right on real inputs, wrong (no `.conj()`) on complex ones: only the complex samples fail.
ACOS_NO_CONJ = """
    - name: acos(Tensor self) -> Tensor
      self: grad * -((-self * self + 1).rsqrt())
      result: self_t * -((-self_p * self_p + 1).rsqrt())
"""

# var_mean with a backward that is wrong only when the mean's cotangent is undefined.
VAR_MEAN = """
    - name: var_mean.dim(Tensor self, int[1] dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)
      self: "grads[1].defined() ? var_std_mean_backward(grads, self, result0, result1, dim, unbiased, keepdim, false) : {factor}var_std_mean_backward(grads, self, result0, result1, dim, unbiased, keepdim, false)"
"""

# mul with a forward formula that is wrong only when self's tangent is zero (self held fixed).
MUL = """
    - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
      self: mul_tensor_backward(grad, other, self.scalar_type())
      other: mul_tensor_backward(grad, self, other.scalar_type())
      result: self_t * other_p + other_t * self_p * {factor}
"""

# sin whose backward goes through a helper that the tests replace by one wrong under some transform.
SIN_VIA_HELPER = """
    - name: sin(Tensor self) -> Tensor
      self: transform_sensitive(grad) * self.cos().conj()
"""


@pytest.fixture
def acos_checked():
    with opdb.replaced("acos", domain=(-0.9, 0.9), complex=True):
        yield


def only(report):
    (row,) = report.rows
    return row


def run_repro(repro: str, tmp_path) -> tuple[int, dict]:
    """Run a row's repro command through the CLI's main, in-process; return its exit code and row."""
    argv = shlex.split(repro)
    assert argv[:4] == ["python", "-m", "jaxderiv", "check"]
    out = tmp_path / "repro.json"
    rc = main([*argv[3:], "--quiet", "--json", str(out)])
    (row,) = json.loads(out.read_text())
    return rc, row


# -- failure reports ----------------------------------------------------------------------------------


def test_failed_row_says_everything_and_its_repro_fails_again(write_spec, tmp_path):
    path = write_spec(WRONG_SIN)
    row = only(check_all(path, ops=["sin"], modes=("vjp",)))
    assert row.status == "failed"
    reason = row.reason
    assert reason.startswith("sin [vjp] sample 0 of ")  # op, mode, sample index
    assert "(2x3, float64)" in reason  # the sample's label and dtype
    assert "input 0 (`self`)" in reason  # which input
    assert "actual (the spec's rule)" in reason and "reference (JAX autodiff of the forward)" in reason
    m = re.search(r"max \|actual - reference\| = ([0-9.e+-]+) at element \((\d+), (\d+)\)", reason)
    assert m and float(m.group(1)) == pytest.approx(row.max_abs_err, rel=1e-3)
    assert f"rtol={checker.Tolerance.ref_rtol:g}, atol={checker.Tolerance.ref_atol:g}" in reason  # the tolerance
    # the automatic per-element re-run names the worst entry of the Jacobian
    assert re.search(
        r"Re-run element by element: per-element Jacobian \(6 x 6, .*worst d output 0\[\d, \d\] / d input 0 \(`self`\)\[\d, \d\]",
        reason,
    )
    assert row.repro == f"python -m jaxderiv check --spec {path} --ops sin --modes vjp --sample 0 --per-element"
    assert row.to_json()["repro"] == row.repro

    rc, again = run_repro(row.repro, tmp_path)
    assert rc == 1 and again["status"] == "failed" and again["mode"] == "vjp"
    assert again["reason"].startswith("sin [vjp] sample 0 of ")
    assert m.group(0) in again["reason"]  # the same sample, the same directions, the same numbers


def test_repro_reproduces_a_failure_on_a_later_sample(write_spec, tmp_path, acos_checked):
    """acos without .conj() fails on its first complex sample only: --sample N replays the random
    draws of the samples before N, so the repro reports exactly the same numbers."""
    path = write_spec(ACOS_NO_CONJ)
    row = only(check_all(path, ops=["acos"], modes=("vjp",)))
    assert row.status == "failed" and "complex128" in row.reason
    index = int(re.search(r"--sample (\d+)", row.repro).group(1))
    assert index > 0
    first = row.reason.split(". Re-run")[0]
    rc, again = run_repro(row.repro, tmp_path)
    assert rc == 1 and again["reason"].split(". Re-run")[0] == first
    # the samples before it pass
    assert only(check_all(path, ops=["acos"], modes=("vjp",), sample=index - 1)).status == "passed"


def test_sample_out_of_range_is_an_error_row(write_spec):
    row = only(check_all(write_spec(WRONG_SIN), ops=["sin"], modes=("vjp",), sample=99))
    assert row.status == "error" and "out of range" in row.reason


def test_repro_in_summary_markdown_and_html(write_spec):
    from jaxderiv.check.html import entries_of, to_html

    path = write_spec(WRONG_SIN)
    report = check_all(path, ops=["sin"], modes=("vjp",))
    row = only(report)
    assert f"    repro: {row.repro}" in report.summary()
    assert f"`{row.repro}` |" in report.to_markdown()
    html = to_html(report, entries=entries_of([load_spec(path)]))
    assert "--per-element" in html and 'class="repro"' in html


def test_passing_rows_keep_the_old_json_keys():
    row = check_all(ops=["sin"], modes=("vjp",)).rows[0]
    assert row.status == "passed" and row.repro == "" and "repro" not in row.to_json()


# -- per element ----------------------------------------------------------------------------------------


def test_per_element_passes_correct_formulas():
    report = check_all(ops=["mul.Tensor", "sort"], modes=("vjp", "jvp", "vjp_vjp"), per_element=True)
    assert report, report.summary()


def test_per_element_alone_catches_a_wrong_formula(write_spec, monkeypatch):
    """With the projection comparisons switched off, the per-element path by itself fails the row."""
    monkeypatch.setattr(checker, "_compare", lambda *a, **k: None)
    path = write_spec(WRONG_SIN)
    assert only(check_all(path, ops=["sin"], modes=("jvp",))).status == "passed"  # nothing else looks
    row = only(check_all(path, ops=["sin"], modes=("jvp",), per_element=True))
    assert row.status == "failed"
    assert (
        "per-element Jacobian (6 x 6, jax.jacfwd of the rule's jvp) vs jax.jacfwd of JAX autodiff of the forward"
        in row.reason
    )
    assert re.search(
        r"6 of 36 entries outside .* worst d output 0\[\d, \d\] / d input 0 \(`self`\)\[\d, \d\]: actual [-0-9.]+, reference [-0-9.]+",
        row.reason,
    )
    # and against finite differences where JAX cannot differentiate the forward
    monkeypatch.setattr(
        checker._Problem, "native_fn", lambda self, *xs: (_ for _ in ()).throw(TypeError("no reference"))
    )
    row = only(check_all(path, ops=["sin"], modes=("vjp",), per_element=True))
    assert row.status == "failed" and "vs central finite differences per input coordinate" in row.reason


def test_rerun_is_capped_to_small_samples(write_spec, monkeypatch):
    monkeypatch.setattr(checker.Tolerance, "rerun_inputs", 3)
    row = only(check_all(write_spec(WRONG_SIN), ops=["sin"], modes=("vjp",)))
    assert (
        row.status == "failed"
        and "Re-run element by element: not compared element by element: 6 input coordinates" in row.reason
    )


# -- undefined cotangents and tangents -----------------------------------------------------------------------


def test_a_backward_wrong_for_an_undefined_cotangent_fails_by_default(write_spec, tmp_path):
    """gradcheck's check_undefined_grad is on by default: output 0 differentiated alone must
    give what the same pullback gives with output 1's cotangent an array of zeros."""
    row = only(check_all(write_spec(VAR_MEAN.format(factor="2 * ")), modes=("vjp",)))
    assert row.status == "failed"
    assert "vjp of output 0 alone (the other outputs' cotangents undefined), input 0 (`self`)" in row.reason
    assert "reference (the same derivative with the undefined parts arrays of zeros)" in row.reason
    assert row.repro.endswith("--per-element")
    rc, again = run_repro(row.repro, tmp_path)
    assert rc == 1 and again["status"] == "failed"
    assert only(check_all(write_spec(VAR_MEAN.format(factor="")), modes=("vjp",))).status == "passed"
    # thorough compares the same derivative with JAX autodiff of the forward as well
    row = only(check_all(write_spec(VAR_MEAN.format(factor="2 * ")), modes=("vjp",), thorough=True))
    assert row.status == "failed" and row.repro.endswith("--per-element --thorough")


def test_thorough_catches_a_forward_formula_wrong_for_a_zero_tangent(write_spec, monkeypatch):
    monkeypatch.setitem(HELPERS, "doubled_if_zero", lambda t: jnp.where(jnp.all(t == 0), 2.0, 1.0))
    path = write_spec(MUL.format(factor="doubled_if_zero(self_t)"))
    assert only(check_all(path, modes=("jvp",))).status == "passed"
    row = only(check_all(path, modes=("jvp",), thorough=True))
    assert row.status == "failed"
    assert "jvp with input 0 (`self`) held fixed (its tangent undefined, the others' random), output 0" in row.reason


def test_thorough_passes_shipped_multi_output_ops():
    report = check_all(
        ops=["native_batch_norm", "max_pool2d_with_indices", "topk", "mul.Tensor"], modes=("vjp", "jvp"), thorough=True
    )
    assert report, report.summary()


# -- without jit, under vmap ---------------------------------------------------------------------------------


def test_transforms_pass_shipped_ops():
    report = check_all(
        ops=["mul.Tensor", "sort", "native_layer_norm", "cumsum"],
        modes=("vjp", "jvp"),
        transforms=("jit", "nojit", "vmap"),
    )
    assert report, report.summary()


def test_unknown_transform_is_refused():
    with pytest.raises(ValueError, match="pmap"):
        check_all(ops=["sin"], transforms=("pmap",))


def test_unknown_transform_on_the_command_line_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--ops", "sin", "--transforms", "jit,pmap"])
    assert exit_.value.code == 2  # argparse's usage error, before any check runs
    err = capsys.readouterr().err
    assert "argument --transforms: unknown transform(s) pmap; choose from jit, nojit, vmap" in err
    assert "Traceback" not in err


def test_nojit_catches_a_rule_wrong_only_without_jit(write_spec, monkeypatch, tmp_path):
    from jax.core import Tracer

    monkeypatch.setitem(HELPERS, "transform_sensitive", lambda g: g if isinstance(g, Tracer) else 2 * g)
    path = write_spec(SIN_VIA_HELPER)
    assert only(check_all(path, modes=("vjp",))).status == "passed"
    row = only(check_all(path, modes=("vjp",), transforms=("jit", "nojit")))
    assert row.status == "failed" and "vjp without jax.jit, input 0 (`self`)" in row.reason
    assert row.repro.endswith("--transforms jit,nojit")
    rc, again = run_repro(row.repro, tmp_path)
    assert rc == 1 and again["status"] == "failed"


def test_a_rule_wrong_only_under_vmap_fails_by_default(write_spec, monkeypatch):
    """gradcheck's check_batched_grad is on by default: the pullback under jax.vmap over 2
    cotangents, each slice against the derivative computed alone."""
    monkeypatch.setitem(HELPERS, "transform_sensitive", lambda g: 2 * g if isinstance(g, BatchTracer) else g)
    row = only(check_all(write_spec(SIN_VIA_HELPER), modes=("vjp",)))
    assert row.status == "failed"
    assert "vjp under jax.vmap over 2 cotangents, slice 0, input 0 (`self`)" in row.reason
    assert "reference (the same derivative computed alone)" in row.reason
    monkeypatch.setitem(HELPERS, "transform_sensitive", lambda g: g)
    assert only(check_all(write_spec(SIN_VIA_HELPER), modes=("vjp",))).status == "passed"


def test_vmap_over_stacked_inputs_catches_a_rule_wrong_only_for_batched_inputs(write_spec, monkeypatch):
    """Batched over cotangents only, the formula's reads of `self` stay unbatched; the "vmap"
    transform batches the inputs too (functorch's vmap-of-vjp)."""
    monkeypatch.setitem(HELPERS, "transform_sensitive", lambda x: 2 * x if isinstance(x, BatchTracer) else x)
    path = write_spec("""
    - name: sin(Tensor self) -> Tensor
      self: grad * transform_sensitive(self).cos().conj()
""")
    assert only(check_all(path, modes=("vjp",))).status == "passed"
    row = only(check_all(path, modes=("vjp",), transforms=("vmap",)))
    assert row.status == "failed"
    assert "vjp under jax.vmap over 2 cotangents and 2 stacked inputs, slice 0, input 0 (`self`)" in row.reason
