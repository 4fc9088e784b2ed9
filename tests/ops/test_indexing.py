"""index_fill and masked_scatter_backward from the spec torch 2.13 ships, against torch 2.13:
values, vjp and jvp of the translated formulas; a repeated index counts once for the fill value,
integer and 0-d inputs, a mask broadcast to the input."""

from __future__ import annotations

import numpy as np
import pytest

import jaxderiv
from jaxderiv.check import opdb
from jaxderiv.records import Sample
from jaxderiv.check.samples import samples_for

torch = pytest.importorskip("torch")
from jaxderiv.check import parity as P  # noqa: E402
from torch_oracle import assert_jvp_is_torchs_jacobian, check_against_torch  # noqa: E402

aten = torch.ops.aten


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


def test_index_fill_repeated_index_counts_once_for_value(torch_registry):
    rng = np.random.default_rng(6)
    x, idx = rng.standard_normal((4, 3)), np.array([1, 3, 1])
    check_against_torch(torch_registry.op("index_fill.int_Scalar"), aten.index_fill.int_Scalar, [x, 0, idx, 0.5])
    check_against_torch(
        torch_registry.op("index_fill.int_Tensor"),
        aten.index_fill.int_Tensor,
        [x, -1, np.array([2, 0, 2]), np.array(1.25)],
        diff=(0, 3),
    )
    check_against_torch(
        torch_registry.op("index_fill.int_Scalar"),
        aten.index_fill.int_Scalar,
        [np.arange(6).reshape(2, 3), 1, idx[:1], 7],
        diff=(),
    )
    check_against_torch(
        torch_registry.op("index_fill.int_Tensor"),
        aten.index_fill.int_Tensor,
        [np.array(3.0), 0, np.array([0]), np.array(1.25)],
        diff=(0, 3),
    )


def test_masked_scatter_backward(torch_registry):
    rng = np.random.default_rng(10)
    mask = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]])
    check_against_torch(
        torch_registry.op("masked_scatter_backward"),
        aten.masked_scatter_backward,
        [rng.standard_normal((3, 4)), mask, [3, 4]],
    )
    check_against_torch(
        torch_registry.op("masked_scatter_backward"),
        aten.masked_scatter_backward,
        [rng.standard_normal((3, 4)), mask[0], [3, 4]],
    )
    check_against_torch(
        torch_registry.op("masked_scatter_backward"),
        aten.masked_scatter_backward,
        [rng.standard_normal((3, 4)), mask, [12]],
        diff=(),
    )


# ==================================================================================================
# torch's own scatter_reduce.two and index_reduce (torch_registry above: the spec torch 2.13 ships).
# The op database and tests/check/test_parity.py compare every entry of this family with torch
# (values, dtypes, vjp, jvp) on its record's samples and kinks: for these two, ties and zeros with
# include_self=True (forward/indexing.py). These tests add the same inputs with
# include_self=False, a keyword-only argument that a kink tuple cannot pass, and index_reduce's
# jvp against the Jacobian of torch's backward: torch has no forward-mode derivative of
# index_reduce, so test_parity cannot compare one.
# ==================================================================================================


def _without_self(name: str) -> list[Sample]:
    """The record's kink inputs of `name` with include_self=False."""
    return [Sample(k, {"include_self": False}, f"{k[4]} include_self=False") for k in opdb.record(name).kinks]


@pytest.mark.parametrize("name", ["scatter_reduce.two", "index_reduce"])
def test_reductions_on_ties_and_zeros_without_self(torch_registry, name):
    row = P.compare_op(torch_registry.op(name), _without_self(name), [], [])
    assert row.ok and row.forward, row.note


def test_index_reduce_jvp_is_the_jacobian_of_torchs_backward(torch_registry):
    """jax.jvp (the transposed backward formula) against the Jacobian of torch's backward applied
    to the tangents (torch.func.jvp has no formula for the op): samples, kinks, and kinks without self."""
    op = torch_registry.op("index_reduce")
    assert not op.entry.forward  # else test_parity compares the jvp with torch.func.jvp
    kinks = [Sample(k) for k in opdb.record(op.name).kinks]
    rng = np.random.default_rng(1)
    for sample in samples_for(op, np.random.default_rng(0)) + kinks + _without_self(op.name):
        assert_jvp_is_torchs_jacobian(P._Call(op, sample.args, sample.kwargs), rng)
