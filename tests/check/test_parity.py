"""Every implemented op against PyTorch 2.13 itself: values, dtypes, vjp, jvp, kinks, complex.

Each op of the default (seed) spec is compared on its smallest checker samples (real, and complex
where the checker checks complex; every sample where its record declares a difference) plus the
kink inputs its op record declares (`kinks`): the op database is this test's table of cases.
`python -m jaxderiv parity` is the full run, on every sample. The same
entries under torch 2.13's own spec build the same rules where the formula text is the same, so
that run compares only the entries whose text differs (or that only torch's file has): there
the formulas are torch's own, so a difference is a bug in jaxderiv. Known differences are
declared in the op records with `parity_differs` (by column, with the reason; `torch_spec=True`
where they hold for torch's own file too) beside their forwards in jaxderiv/forward, and
asserted here as differences, so one that disappears or changes fails. Tolerances are stated
once, in the comparison core jaxderiv.check.torch_compare (RTOL, ATOL; RTOL32, ATOL32 for the ops
compared in float32), which the OpInfo replay (tests/check/test_opinfo_replay.py) shares.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxderiv import Registry, SpecError, load_seed_spec, load_spec
from jaxderiv.check import opdb
from jaxderiv.check import parity as P
from jaxderiv.check import torch_compare as core
from jaxderiv.check.parity import (
    compare,
    implemented,
    known_difference,
    known_differences,
    to_markdown,
    torch_has,
    unexplained,
)
from jaxderiv.forward import implementation
from jaxderiv.records import Difference, Equivalent

torch = pytest.importorskip("torch")

# Under torch 2.13's own spec: entries jaxderiv does not compare correctly yet, and why (gaps of
# the translation of torch 2.13's file, or checker samples written for the seed's schema).
TORCH_SPEC_GAPS = {}


def _texts(entry) -> tuple:
    return tuple((f.key, f.text) for f in entry.backward + entry.forward)


def _declaring(field: str) -> list[str]:
    """The entries whose op records declare `field` (kinks, torch_equivalent, ...)."""
    return sorted(n for n, r in opdb.database().items() if getattr(r, field))


TORCH_SPEC, SEED_SPEC = load_spec(from_torch=True), load_seed_spec()
SEED_OPS = implemented(SEED_SPEC)
# Same formula text as the seed's: the seed run already compares exactly these rules.
TORCH_OPS = [
    n
    for n in implemented(TORCH_SPEC)
    if torch_has(n)
    and opdb.record(n).not_compared is None
    and (n not in SEED_SPEC or _texts(TORCH_SPEC[n]) != _texts(SEED_SPEC[n]))
]
ALL_OPS = set(SEED_OPS) | set(implemented(TORCH_SPEC))


@pytest.fixture(scope="module")
def registries():
    return {"torch": Registry(TORCH_SPEC), "seed": Registry(SEED_SPEC)}


_ROWS: dict = {}

# CI's slice: each op on its SAMPLES smallest samples torch accepts (and every declared kink),
# and on all of them where its record declares a difference, whose columns must show exactly.
# `python -m jaxderiv parity` compares every sample of every op.
SAMPLES = 3


def _row(registries, spec, name):
    """One comparison per (spec, op) in this run: the tests that read a row again share it."""
    if (spec, name) not in _ROWS:
        declared = known_difference(name, torch_spec=spec == "torch") is not None
        _ROWS[spec, name] = compare(registries[spec], name, max_samples=None if declared else SAMPLES)
    return _ROWS[spec, name]


def _params(ops, known):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=known[n])) if n in known else n for n in ops]


@pytest.mark.parametrize("name", SEED_OPS)
def test_seed_spec_matches_torch(registries, name):
    """Agrees with torch in every column, or differs exactly in the columns its record's known difference lists."""
    row, known = _row(registries, "seed", name), known_difference(name)
    if known is not None:
        assert row.differs == known.columns, row.note
    elif opdb.record(name).not_compared is not None or not torch_has(name):
        assert row.note.startswith("n/a") and all(getattr(row, c) is None for c in P.COLUMNS)
    else:
        assert row.ok and row.forward, row.note


@pytest.mark.parametrize("name", _params(TORCH_OPS, TORCH_SPEC_GAPS))
def test_torch_spec_matches_torch(registries, name):
    """torch's own formulas: agrees with torch, or differs exactly as its record's known difference
    for torch's own file (`torch_spec=True`) lists."""
    row, known = _row(registries, "torch", name), known_difference(name, torch_spec=True)
    if known is not None:
        assert row.differs == known.columns, row.note
    else:
        assert row.ok and row.forward, row.note


def test_tables_name_compared_ops():
    """A stale declaration would hide nothing, but would mislead the reader."""
    assert set(known_differences()) <= set(SEED_OPS)
    assert set(_declaring("not_compared")) <= ALL_OPS  # torch's file's backward ops (mkldnn_rnn_layer_backward) too
    assert set(_declaring("torch_equivalent")) | set(_declaring("parity_float32")) <= ALL_OPS
    assert set(_declaring("parity_samples")) <= ALL_OPS
    assert {n for n in _declaring("kinks") if implementation(n)} <= ALL_OPS
    assert set(TORCH_SPEC_GAPS) <= set(TORCH_OPS) and set(known_differences(torch_spec=True)) <= set(
        implemented(TORCH_SPEC)
    )


def _op(registries, name):
    return registries["seed" if name in SEED_SPEC else "torch"].op(name)


@pytest.mark.parametrize("name", _declaring("torch_equivalent"))
def test_equivalents_are_needed(registries, name):
    """torch cannot run the op itself on the sample (no CPU kernel, no such op), or the seed's
    schema is not torch 2.13's: if that changes, the equivalent call should go."""
    op, equivalent = _op(registries, name), opdb.record(name).torch_equivalent
    if equivalent.schema_change:
        assert P.applies(equivalent, op)
        return
    sample = (opdb.record(name).parity_samples or P.samples_for(op, np.random.default_rng(0)))[0]
    call = P._Call(op, sample.args, sample.kwargs, sample)
    with pytest.raises(Exception):
        args, kwargs = call._split([call._torch_value(a, v) for a, v in zip(call.arguments, call.values)])
        core.aten_op(name)(*args, **kwargs)


@pytest.mark.parametrize("name", _declaring("parity_float32"))
def test_float32_ops_need_it(registries, name):
    """torch's kernel refuses float64 for these (forward or backward): if it starts to accept it, compare in float64."""
    op = _op(registries, name)
    sample = P.samples_for(op, np.random.default_rng(0))[0]
    call = P._Call(op, sample.args, sample.kwargs, sample)
    with pytest.raises(RuntimeError, match="[Ff]loat|unsupported data type"):  # oneDNN: get_mkldnn_dtype
        leaves = [P._to_torch(x).requires_grad_() for x in call.xs()]
        outs = [y for y in call.torch(*leaves) if y.requires_grad]
        torch.autograd.grad(outs, leaves, [torch.ones_like(y) for y in outs], allow_unused=True)


@pytest.mark.parametrize(
    "name, column",
    [
        ("abs", "kinks"),
        ("clamp", "kinks"),
        ("relu", "kinks"),
        ("max.dim", "kinks"),
        ("prod", "kinks"),
        ("max_pool2d_with_indices", "kinks"),
        ("add.Tensor", "complex"),
    ],
)
def test_kinks_and_complex_are_compared(registries, name, column):
    """abs' gradient at 0 is 0 in PyTorch and 1 in JAX's own autodiff: the kink inputs must be judged."""
    row = _row(registries, "seed", name)
    assert getattr(row, column) is True and row.vjp is True


def test_a_wrong_gradient_is_reported(registries, monkeypatch):
    """A rule that disagrees with torch makes the row fail, with a note saying where."""
    real = P.to_numpy
    monkeypatch.setattr(P, "to_numpy", lambda t: real(t) * 1.5 if np.issubdtype(real(t).dtype, np.inexact) else real(t))
    row = compare(registries["torch"], "sin", max_samples=1)
    assert row.forward is False and not row.ok and "vs torch" in row.note


def test_markdown_counts_columns(registries):
    rows = [_row(registries, "seed", n) for n in ("abs", "sin")]
    text = to_markdown(rows, "# t")
    assert "| abs |" in text and "2 ops, 2 compared" in text and "forward 2/2" in text


def test_known_differences_are_read_from_the_records():
    """A difference declared in an op record explains the row, for the spec it is declared for;
    the page lists it, and an equivalent torch call, from the records too."""
    row = P.ParityRow("sin", "", forward=True, vjp=False)
    assert unexplained([row]) == [row]
    declared = Difference(("vjp",), "a test's reason")
    with opdb.replaced("sin", difference=declared):
        assert (
            unexplained([row]) == []
            and unexplained([row], torch_spec=True) == [row]
            and unexplained([row], torch_spec=None) == [row]
        )
        assert known_differences()["sin"] is declared and "sin" not in known_differences(torch_spec=True)
        assert "| sin | vjp: a test's reason |" in to_markdown([row], "# t")
        assert "| sin | vjp: a test's reason |" not in to_markdown([row], "# t", torch_spec=True)
    with opdb.replaced("sin", difference=Difference(("vjp",), "torch's only", torch_spec=True, seed_spec=False)):
        assert unexplained([row]) == [row] and unexplained([row], torch_spec=True) == []
    assert "sin" not in known_differences()
    with opdb.replaced("sin", torch_equivalent=Equivalent(lambda aten, a: [aten.sin(a["self"])], "a test's call")):
        assert torch_has("sin") and "| sin | a test's call |" in to_markdown([row], "# t")


def test_load_spec_from_torch_without_torch(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(SpecError, match="needs PyTorch installed"):
        load_spec(from_torch=True)


def test_load_spec_from_torch_reads_the_packaged_file():
    assert TORCH_SPEC.files[0].endswith("torchgen/packaged/autograd/derivatives.yaml")
    assert "sgn" in TORCH_SPEC and len(TORCH_SPEC) > 600


def test_a_parallel_run_gives_the_rows_of_one_process(registries):
    """`parity(..., jobs=2)` (`--jobs 2`) compares the ops in two worker processes: the same rows,
    in the same order, as one process."""
    names = ["abs", "sin", "clamp", "max.dim", "add.Tensor"]
    one = P.parity(registries["seed"], names, max_samples=1)
    two = P.parity(registries["seed"], names, max_samples=1, jobs=2)
    assert [r.op for r in two] == names and two == one


def test_the_core_compares_values_as_both_sources_do():
    """One element-wise test for the parity run and the replay: NaN equals NaN, integers and
    booleans exactly, shapes first; the error ignores matching NaN and infinities."""
    nan, inf = float("nan"), float("inf")
    assert core.close([1.0, nan, inf], [1.0 + 1e-12, nan, inf], 1e-8, 1e-10)
    assert not core.close([1.0, nan], [1.0, 2.0], 1e-8, 1e-10) and not core.close([1.0], [1.0, 1.0], 1, 1)
    assert not core.close(np.array([2**62], np.int64), np.array([2**62 + 1], np.int64), 1e-8, 1e-10)
    assert core.error([1.0, nan, inf], [1.5, nan, inf]) == 0.5 and core.error([1.0], [nan]) == inf
    assert core.first_difference([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.5, 4.0]], 1e-8, 0) == (1, 0)
    assert core.verdict([("x", np.ones(2), np.ones(2), 1e-8, 0)]) == ("agree", 0.0, "")
    assert core.verdict([("x", np.ones(2), np.zeros(2), 1e-8, 0)]) == ("mismatch", 1.0, "x: max error 1")
