"""Malformed spec files are rejected when loaded or built, with an error naming file:line."""

from __future__ import annotations

import pytest

from jaxderiv.errors import JaxderivError, SpecError, TranslationError
from jaxderiv.registry import Registry
from jaxderiv.spec import load_spec, read_spec_text

ABS = "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn()\n"
MAX_DIM = "- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n"

# (case, file text, error type, 1-based line the error must name, words the message must hold)
CASES = [
    ("bad YAML", ABS + "  - name: [unclosed\n", SpecError, 3, "not valid YAML"),
    ("missing name", ABS + "\n- self: grad\n", SpecError, 4, "no 'name:'"),
    (
        "duplicate entry",
        ABS + "\n" + ABS.replace("self.sgn()", "2"),
        SpecError,
        4,
        "duplicate entry 'abs' (first defined at line 1)",
    ),
    (
        "grads[5] on a 2-output op",
        MAX_DIM + "  self: value_selecting_reduction_backward(grads[5], dim, indices, self.sizes(), keepdim)\n",
        TranslationError,
        2,
        "grads[5] names no output: the op has 2 output(s)",
    ),
]
# An unknown key is reported (a warning naming file:line), not a rejection of the whole file.
REPORTED = [
    ("formula for an argument the schema lacks", ABS + "  other: grad\n", 3, "'other' is neither an input"),
    (
        "key neither input nor result",
        ABS + "  output: grad\n",
        3,
        "'output' is neither an input of the schema (self) nor an output",
    ),
]


def load_spec_text(text):
    return read_spec_text(text, "inline.yaml")


def _load_and_build(path):
    """Everything a check does before evaluating anything: load, then build each entry's op."""
    spec = load_spec(path)
    registry = Registry(spec)
    for entry in spec:
        registry.op(entry.name)


@pytest.mark.parametrize("case, text, error, line, words", CASES, ids=[c[0] for c in CASES])
def test_rejected_with_file_and_line(tmp_path, case, text, error, line, words):
    path = tmp_path / "derivatives.yaml"
    path.write_text(text)
    with pytest.raises(error) as info:
        _load_and_build(path)
    assert info.value.location.file == str(path)
    assert info.value.location.line == line
    assert f"{path}:{line}" in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize("case, text, line, words", REPORTED, ids=[c[0] for c in REPORTED])
def test_unknown_key_reported_with_file_and_line(tmp_path, case, text, line, words):
    from jaxderiv.spec import SpecWarning

    path = tmp_path / "derivatives.yaml"
    path.write_text(text)
    with pytest.warns(SpecWarning) as caught:
        _load_and_build(path)
    (message,) = [str(w.message) for w in caught]
    assert f"{path}:{line}" in message and words in message


def test_the_valid_neighbours_load():
    """The same texts minus their fault load and build: each case fails for its fault alone."""
    spec_text = (
        ABS
        + "\n"
        + MAX_DIM
        + "  self: value_selecting_reduction_backward(grads[0], dim, indices, self.sizes(), keepdim)\n"
    )
    registry = Registry(load_spec_text(spec_text))
    assert registry.op("max.dim").entry.backward[0].names == ("self",)


def test_grads_index_checked_for_every_output():
    """The last valid index is accepted, one past it rejected: the bound is the output count."""
    ok = MAX_DIM + "  self: value_selecting_reduction_backward(grads[1], dim, indices, self.sizes(), keepdim)\n"
    Registry(load_spec_text(ok)).op("max.dim")
    with pytest.raises(JaxderivError, match="grads\\[2\\] names no output"):
        Registry(load_spec_text(ok.replace("grads[1]", "grads[2]"))).op("max.dim")
