"""A CI slice of the OpInfo replay (`jaxderiv.torch.opinfo`): PyTorch's own OpInfo samples for
15 common ops, every ATen call they make replayed through torch 2.13's registry and compared
with torch in forward value/dtype and vjp (float64 and complex128)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import jax  # noqa: E402

from torch_models import edited_torch_spec  # noqa: E402

opinfo = pytest.importorskip("jaxderiv.torch.opinfo")

OPINFOS = ["abs", "exp", "sin", "tanh", "add", "mul", "div", "sum", "mean", "softmax", "matmul", "cat", "transpose", "where", "clamp"]

# Mismatches measured on torch 2.13.0 CPU (jaxderiv's torch registry), declared with their
# reason and measured error: op -> (mode, count, max error, reason). None were measured: every
# recorded call of these OpInfos agrees in forward and vjp within rtol 1e-7 / atol 1e-9.
DECLARED: dict[str, tuple[str, int, float, str]] = {}

# the ATen overloads these OpInfos' samples call (measured), each of which must be compared
EXPECTED_OPS = {
    "abs", "add.Tensor", "mul.Tensor", "clamp.Tensor", "div.Tensor", "div.Tensor_mode", "exp", "dot", "mv", "unsqueeze",
    "mm", "view", "_unsafe_view", "transpose.int", "expand", "bmm", "squeeze.dim", "_softmax", "_to_copy", "sin", "tanh",
    "cat", "where.self", "mean", "mean.dim", "sum", "sum.dim_IntList",
}


@pytest.fixture(scope="module")
def result():
    jax.config.update("jax_enable_x64", True)
    return opinfo.replay("torch", OPINFOS)


def test_slice_covers_the_expected_calls(result):
    assert result.opinfos == 18  # div, softmax have variants: div.{no_rounding_mode,trunc_rounding,floor_rounding}, softmax.with_dtype
    assert not result.sample_errors
    assert set(result.rows) >= EXPECTED_OPS
    assert result.totals["distinct_calls"] > 250
    assert not any(k.startswith("harness error") for k in result.skipped), result.skipped
    assert not result.missing, result.missing


def test_no_crashes(result):
    crashes = {r.op: r.messages for r in result.rows.values() if r.crashes}
    assert not crashes


def test_every_call_agrees_except_the_declared(result):
    found = {}
    for r in result.rows.values():
        if r.forward_mismatch:
            found[r.op] = ("forward", r.forward_mismatch, r.forward_max_error, r.messages)
        if r.vjp_mismatch:
            found[r.op] = ("vjp", r.vjp_mismatch, r.vjp_max_error, r.messages)
    assert {k: v[:2] for k, v in found.items()} == {k: v[:2] for k, v in DECLARED.items()}, found
    for op, (mode, _, err, _) in DECLARED.items():
        assert found[op][2] == pytest.approx(err, rel=0.5)
    for r in result.rows.values():
        if r.op in DECLARED:
            continue
        assert r.forward_agree == r.calls, (r.op, r.messages)
        assert r.vjp_agree == r.vjp_compared, (r.op, r.messages)
    # the derivative comparison really ran, on real and complex calls
    assert result.totals["vjp_compared"] > 250


def test_a_sabotaged_formula_is_reported_as_a_vjp_mismatch(tmp_path):
    doubled_abs = edited_torch_spec(tmp_path, "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn()\n",
                                    "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn() * 2\n")
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay(doubled_abs, ["abs"])
    row = r.rows["abs"]
    assert row.calls > 0 and row.crashes == 0
    assert row.forward_agree == row.calls  # the forward is untouched
    assert row.vjp_mismatch == row.vjp_compared > 0 and row.vjp_agree == 0
    assert row.vjp_max_error > 0.1
