"""Every implemented pointwise op against PyTorch 2.13 itself: values, dtypes, vjp, jvp, kinks, complex.

Two runs. With the spec loaded from the installed torch the formulas are torch's own, so any
difference is a bug in jaxderiv; with the default (seed) spec, ops whose formulas are the same
text as torch's are already covered by the first run, and the others may differ only where
PyTorch changed the formula or the schema between versions: those are listed below, by op,
with the reason. Tolerances are stated once, in jaxderiv.check.parity (RTOL, ATOL). To keep the run
short, each op is compared on its first checker sample (real and complex) plus the kink inputs
of jaxderiv.check.parity.KINKS.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxderiv import Registry, SpecError, load_spec
from jaxderiv.forward import IMPLS, implementation
from jaxderiv.check.parity import KINKS, compare, implemented, to_markdown

torch = pytest.importorskip("torch")

FAMILIES = ("unary", "binary", "special", "activation")

# Under torch 2.13's own spec: entries that do not build yet, or differ, and why.
TORCH_SPEC_GAPS = {
    "clamp.Tensor": "the result formula calls clamp_jvp, a FunctionsManual helper not registered yet",
    "_to_copy": "the backward formula calls _to_copy_backward, a helper not registered yet",
    "fmod.Tensor": "the formula calls self.div(other, rounding_mode); the registered .div method takes no rounding_mode",
    "remainder.Tensor": "the formula calls self.div(other, rounding_mode); the registered .div method takes no rounding_mode",
    "sgn": "torch 2.13 calls sgn_backward(self, grad, result); the helper takes the seed's order (result, grad, self): complex gradients differ",
    "elu": "torch 2.13's elu_backward has the extra bool is_result; the forward and helper follow the seed schema",
    "celu": "torch 2.13's elu_backward has the extra bool is_result; the forward and helper follow the seed schema",
    "elu_": "torch 2.13's elu_backward has the extra bool is_result; the forward and helper follow the seed schema",
    "celu_": "torch 2.13's elu_backward has the extra bool is_result; the forward and helper follow the seed schema",
    "elu_backward": "torch 2.13's elu_backward has the extra bool is_result; the forward and helper follow the seed schema",
    "gelu": "torch 2.13's gelu_backward has the extra str approximate; the forward and helper follow the seed schema",
    "gelu_backward": "torch 2.13's gelu_backward has the extra str approximate; the forward and helper follow the seed schema",
    "softplus": "torch 2.13's softplus_backward dropped Tensor output; the forward and helper follow the seed schema",
    "softplus_backward": "torch 2.13's softplus_backward dropped Tensor output; the forward and helper follow the seed schema",
}

# Under the default seed spec: differences that come from PyTorch changing an entry since.
SEED_SPEC_DIFFERENCES = {
    "elu_backward": "the seed's schema (..., Tensor output) is not torch 2.13's (..., bool is_result, Tensor self_or_result): torch cannot run the seed's call",
    "softplus_backward": "the seed's schema (..., Tensor output) is not torch 2.13's (no output): torch cannot run the seed's call",
    "angle": "the 1.10 result formula angle_backward(self_t, self_p) is wrong off the real line; torch 2.13's "
    "conjugates the tangent and the result: complex jvp differs (declared as a known failure of the checker too)",
}


def _family_ops(spec) -> list[str]:
    return [n for n in implemented(spec) if implementation(n).__module__.rsplit(".", 1)[-1] in FAMILIES]


def _texts(entry) -> tuple:
    return tuple((f.key, f.text) for f in entry.backward + entry.forward)


TORCH_SPEC, SEED_SPEC = load_spec(from_torch=True), load_spec()
TORCH_OPS = _family_ops(TORCH_SPEC)
# Same formula text as torch's: the torch-spec run already compares exactly these rules.
SEED_OPS = [n for n in _family_ops(SEED_SPEC) if n not in TORCH_SPEC or _texts(TORCH_SPEC[n]) != _texts(SEED_SPEC[n])]


@pytest.fixture(scope="module")
def registries():
    return {"torch": Registry(TORCH_SPEC), "seed": Registry(SEED_SPEC)}


def _params(ops, known):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=known[n])) if n in known else n for n in ops]


@pytest.mark.parametrize("name", _params(TORCH_OPS, TORCH_SPEC_GAPS))
def test_torch_spec_matches_torch(registries, name):
    row = compare(registries["torch"], name, max_samples=1)
    assert row.ok, row.note


@pytest.mark.parametrize("name", _params(SEED_OPS, SEED_SPEC_DIFFERENCES))
def test_seed_spec_matches_torch(registries, name):
    row = compare(registries["seed"], name, max_samples=1)
    assert row.ok, row.note


def test_known_differences_name_compared_ops():
    """A stale entry in the tables would hide nothing, but would mislead the reader."""
    assert set(TORCH_SPEC_GAPS) <= set(TORCH_OPS)
    assert set(SEED_SPEC_DIFFERENCES) <= set(SEED_OPS)
    assert {n for n in KINKS if n in IMPLS} <= set(TORCH_OPS)


@pytest.mark.parametrize("name, column", [("abs", "kinks"), ("clamp", "kinks"), ("relu", "kinks"), ("add.Tensor", "complex")])
def test_kinks_and_complex_are_compared(registries, name, column):
    """abs' gradient at 0 is 0 in PyTorch and 1 in JAX's own autodiff: the kink inputs must be judged."""
    row = compare(registries["torch"], name, max_samples=1)
    assert getattr(row, column) is True and row.vjp is True


def test_a_wrong_gradient_is_reported(registries, monkeypatch):
    """A rule that disagrees with torch makes the row fail, with a note saying where."""
    from jaxderiv.check import parity

    real = parity._np
    monkeypatch.setattr(parity, "_np", lambda t: real(t) * 1.5 if np.issubdtype(real(t).dtype, np.inexact) else real(t))
    row = compare(registries["torch"], "sin", max_samples=1)
    assert row.forward is False and not row.ok and "vs torch" in row.note


def test_markdown_counts_columns(registries):
    rows = [compare(registries["torch"], n, max_samples=1) for n in ("abs", "sin")]
    text = to_markdown(rows, "# t")
    assert "| abs |" in text and "2 ops compared" in text and "forward 2/2" in text


def test_load_spec_from_torch_without_torch(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(SpecError, match="needs PyTorch installed"):
        load_spec(from_torch=True)


def test_load_spec_from_torch_reads_the_packaged_file():
    assert TORCH_SPEC.files[0].endswith("torchgen/packaged/autograd/derivatives.yaml")
    assert "sgn" in TORCH_SPEC and len(TORCH_SPEC) > 600
