"""Tests for jaxderiv.spec: the shipped files, both text forms, every entry feature, located errors."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.errors import JaxderivError, SchemaError, SpecError
from jaxderiv.spec import load_seed_spec, load_spec, read_spec_text, shipped_spec_files

FORMULAS = Path(__file__).resolve().parents[2] / "formulas"
V1_7 = FORMULAS / "derivatives_v1_7.yaml"
V1_10_FLAT = FORMULAS / "derivatives_v1_10_flat.yaml"

# -- helpers written independently of spec.py ------------------------------------------------

_NAME_LINE = re.compile(r"^\s*- name:\s*(.*?)\s*$")


def _entry_lines(path_or_text) -> dict[str, int]:
    """{full ATen name: 1-based line of its `- name:`}, by scanning the text (comments skipped)."""
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        m = _NAME_LINE.match(line)
        if m and not line.lstrip().startswith("#"):
            out[m.group(1).split("(")[0]] = i
    return out


def _reindent_flat(text: str) -> str:
    """The flattened form in canonical form: two spaces before every key of an entry.

    Every line keeps its number: a blank line stays blank, a comment stays at column 0.
    """
    out, in_entry = [], False
    for line in text.splitlines():
        if line.startswith("- name:"):
            in_entry = True
            out.append(line)
        elif not line.strip() or line.startswith("#"):
            out.append(line)
        else:
            assert in_entry, f"a key outside any entry: {line!r}"
            out.append("  " + line)
    return "\n".join(out) + "\n"


def _flatten(text: str) -> str:
    """A canonical file in flattened form: no indentation, a blank line after every line."""
    return "".join(line.strip() + "\n\n" for line in text.splitlines())


def _content(entry, line_map=lambda n: n):
    """Everything an entry says, with its lines passed through `line_map`."""
    formulas = lambda fs: [(f.names, f.text, line_map(f.location.line), f.location.key) for f in fs]
    return (
        entry.name,
        str(entry.schema),
        formulas(entry.backward),
        formulas(entry.forward),
        entry.output_differentiability,
        tuple(sorted(entry.non_differentiable)),
        line_map(entry.location.line),
        entry.dispatch,
        formulas(entry.ignored),
    )


# -- the shipped files -------------------------------------------------------------------------


def test_shipped_files_are_found_oldest_first():
    files = shipped_spec_files()
    assert [f.name for f in files] == [V1_7.name, V1_10_FLAT.name]


@pytest.mark.parametrize("path, count", [(V1_7, 486), (V1_10_FLAT, 199)])
def test_shipped_file_loads_every_entry(path, count):
    spec = load_spec(path)
    lines = _entry_lines(path)
    assert len(lines) == count  # the files themselves, counted without spec.py
    assert len(spec) == count
    assert spec.files == (str(path),)
    assert {e.name for e in spec} == set(lines)
    for entry in spec:
        assert entry.location.file == str(path)
        assert entry.location.line == lines[entry.name], entry.name
        assert (
            entry.backward
            or entry.forward
            or entry.ignored
            or entry.non_differentiable
            or entry.output_differentiability is not None
        ), entry.name


def test_shipped_entries_have_their_formula_lines():
    # acos in 1.10 (flattened: blank lines between every line) and in 1.7 (canonical).
    flat = load_spec(V1_10_FLAT)["acos"]
    flat_lines = V1_10_FLAT.read_text().splitlines()
    (self_f,) = flat.backward
    assert flat_lines[self_f.location.line - 1] == f"self: {self_f.text}"
    assert self_f.text == "grad * -((-self * self + 1).rsqrt()).conj()"
    assert [(f.names, f.text) for f in flat.forward] == [(("result",), "auto_element_wise")]
    old = load_spec(V1_7)["acos"]
    old_lines = V1_7.read_text().splitlines()
    assert old_lines[old.backward[0].location.line - 1] == f"  self: {old.backward[0].text}"
    assert old.forward == ()


def test_union_prefers_the_newer_file_with_its_provenance():
    old, new, union = load_spec(V1_7), load_spec(V1_10_FLAT), load_seed_spec()
    old_lines, new_lines = _entry_lines(V1_7), _entry_lines(V1_10_FLAT)
    both = set(old_lines) & set(new_lines)
    assert both, "the shipped files share entries"
    assert len(union) == len(set(old_lines) | set(new_lines))
    assert union.files == (str(V1_7), str(V1_10_FLAT))
    for name in set(old_lines) | set(new_lines):
        e = union[name]
        if name in new_lines:
            assert (e.location.file, e.location.line) == (str(V1_10_FLAT), new_lines[name]), name
            assert _content(e) == _content(new[name])
        else:
            assert (e.location.file, e.location.line) == (str(V1_7), old_lines[name]), name
            assert _content(e) == _content(old[name])
    # A shared entry whose text changed between versions: the union has the 1.10 text.
    assert "acos" in both
    assert union["acos"].backward[0].text.endswith(".conj()")
    assert not old["acos"].backward[0].text.endswith(".conj()")
    # Ops know where their formulas come from (the default registry's: torch 2.14.1's file).
    assert f"{V1_10_FLAT}:{new_lines['acos']}" in jaxderiv.seed_registry().op("acos").__doc__
    assert "derivatives_v2_14_1.yaml:" in jaxderiv.op("acos").__doc__


def test_union_method_is_newer_wins(spec_from_text):
    a = spec_from_text("""
        - name: sin(Tensor self) -> Tensor
          self: grad * 1
        - name: cos(Tensor self) -> Tensor
          self: grad * 2
    """)
    b = spec_from_text("""
        - name: sin(Tensor self) -> Tensor
          self: grad * 3
    """)
    u = a.union(b)
    assert u["sin"].backward[0].text == "grad * 3"
    assert u["cos"].backward[0].text == "grad * 2"
    assert u.files == a.files + b.files


def test_missing_entry_names_the_spec_and_close_names():
    spec = load_spec(V1_10_FLAT)
    with pytest.raises(KeyError, match="add.Tensor"):
        spec["add"]
    assert "add.Tensor" in spec and "add" not in spec


# -- flattened and canonical forms ------------------------------------------------------------


def test_flattened_file_equals_its_canonical_form():
    flat_text = V1_10_FLAT.read_text()
    canonical_text = _reindent_flat(flat_text)
    assert canonical_text != flat_text
    # The re-indented text is plain YAML: a list of mappings with the same names.
    flat = read_spec_text(flat_text, "f.yaml")
    canonical = read_spec_text(canonical_text, "f.yaml")
    assert list(flat.entries) == list(canonical.entries)
    assert len(flat) == 199
    for name in flat.entries:
        assert _content(flat[name]) == _content(canonical[name]), name


def test_canonical_file_flattened_reads_the_same():
    text = V1_7.read_text()
    flat_text = _flatten(text)
    assert flat_text.splitlines()[0] == "derivatives.yaml"
    canonical = read_spec_text(text, "c.yaml")
    flat = read_spec_text(flat_text, "c.yaml")
    assert list(flat.entries) == list(canonical.entries)
    assert len(flat) == 486
    for name in canonical.entries:
        # names, keys and texts agree; line n of the original is line 2n-1 of the flattened text
        assert _content(flat[name]) == _content(canonical[name], lambda n: 2 * n - 1), name


def test_flattened_text_with_comments_and_quotes():
    text = """\
# leading comment

- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor

self: grad

# a comment inside the entry

other: "maybe_multiply(grad, alpha)"

- name: sin(Tensor self) -> Tensor

self: grad * self.cos()
"""
    spec = read_spec_text(text, "t.yaml")
    add = spec["add.Tensor"]
    assert [(f.names, f.text, f.location.line) for f in add.backward] == [
        (("self",), "grad", 5),
        (("other",), "maybe_multiply(grad, alpha)", 9),
    ]
    assert spec["sin"].location.line == 11


def test_empty_text_is_an_empty_spec():
    assert len(read_spec_text("# only a comment\n", "e.yaml")) == 0


# -- entry features ----------------------------------------------------------------------------


_DISPATCH = """
    - name: sin(Tensor self) -> Tensor
      dispatch:
        AutogradNestedTensor:
          self: grad * 7
        Default:
          self: grad * 5
          result: self_t * 11
    - name: cos(Tensor self) -> Tensor
      dispatch:
        AutogradNestedTensor:
          self: grad * 13
"""


def test_dispatch_block_chooses_default(spec_from_text):
    spec = spec_from_text(_DISPATCH)
    sin = spec["sin"]
    assert sin.dispatch == "Default"
    assert [(f.names, f.text, f.location.line) for f in sin.backward] == [(("self",), "grad * 5", 6)]
    assert [(f.names, f.text, f.location.line) for f in sin.forward] == [(("result",), "self_t * 11", 7)]
    # Without a Default, the only key is taken.
    assert spec["cos"].dispatch == "AutogradNestedTensor"
    assert spec["cos"].backward[0].text == "grad * 13"


def test_dispatch_default_formulas_are_the_ones_evaluated(spec_from_text):
    reg = jaxderiv.Registry(spec_from_text(_DISPATCH))
    x = jnp.array([0.3, -1.2])
    np.testing.assert_allclose(jax.grad(lambda x: reg.op("sin")(x).sum())(x), [5.0, 5.0])
    np.testing.assert_allclose(jax.jvp(reg.op("sin"), (x,), (jnp.ones(2),))[1], [11.0, 11.0])
    # cos states formulas for nested tensors only: a dense array gets none of them.
    with pytest.raises(jaxderiv.TranslationError, match="dispatch key AutogradNestedTensor only"):
        reg.op("cos")


def test_dispatch_block_in_flattened_form():
    text = """\
- name: sin(Tensor self) -> Tensor

dispatch:

Default:

self: grad * 5

result: self_t * 11

AutogradNestedTensor:

self: grad * 7

- name: cos(Tensor self) -> Tensor

self: grad * 2
"""
    spec = read_spec_text(text, "d.yaml")
    sin = spec["sin"]
    assert sin.dispatch == "Default"
    assert [(f.text, f.location.line) for f in sin.backward] == [("grad * 5", 7)]
    assert [(f.text, f.location.line) for f in sin.forward] == [("self_t * 11", 9)]
    assert spec["cos"].backward[0].text == "grad * 2"
    assert spec["cos"].dispatch is None


def test_output_differentiability(spec_from_text):
    spec = spec_from_text("""
        - name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
          self: grad
          output_differentiability: [True, False]
        - name: _to_copy(Tensor self, *, ScalarType? dtype=None) -> Tensor
          self: grad
          output_differentiability: ["!dtype || isDifferentiableType(*dtype)"]
        - name: sort(Tensor self, int dim=-1) -> (Tensor values, Tensor indices)
          self: grad
          output_differentiability: [True]
        - name: sin(Tensor self) -> Tensor
          self: grad
    """)
    assert spec["max.dim"].output_differentiability == (True, False)
    assert spec["_to_copy"].output_differentiability == ("!dtype || isDifferentiableType(*dtype)",)
    assert spec["sort"].output_differentiability == (True, False)  # short lists: the rest are not differentiable
    assert spec["sin"].output_differentiability is None


def test_output_differentiability_in_shipped_files():
    flat = load_spec(V1_10_FLAT)
    lines = V1_10_FLAT.read_text().splitlines()
    found = {e.name: e.output_differentiability for e in flat if e.output_differentiability is not None}
    assert found
    for name, value in found.items():
        assert all(isinstance(v, (bool, str)) for v in value), name
        assert len(value) == len(flat[name].schema.returns), name
    # the literal `[True, False, False]` line belongs to an entry that reads it so
    i = next(i for i, line in enumerate(lines) if line == "output_differentiability: [True, False, False]")
    owner = [n for n, ln in _entry_lines(V1_10_FLAT).items() if ln < i + 1]
    owner = max(owner, key=lambda n: _entry_lines(V1_10_FLAT)[n])
    assert found[owner] == (True, False, False)


def test_output_differentiability_too_long_is_an_error(write_spec):
    path = write_spec("""
        - name: sin(Tensor self) -> Tensor
          self: grad
          output_differentiability: [True, False]
    """)
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert f"{path}:3" in str(e.value)


def test_non_differentiable_both_forms(spec_from_text):
    spec = spec_from_text("""
        - name: index_select(Tensor self, int dim, Tensor index) -> Tensor
          self: grad
          index: non_differentiable
        - name: lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor
          self: grad
          non_differentiable: [end, weight]
        - name: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
          non_differentiable: condition
          self: grad
          other: grad
    """)
    index_select = spec["index_select"]
    assert index_select.non_differentiable == ("index",)
    assert [f.names for f in index_select.backward] == [("self",)]  # the marker is not a formula
    assert index_select.formula_for("index") is None
    assert set(spec["lerp.Tensor"].non_differentiable) == {"end", "weight"}
    assert spec["where.self"].non_differentiable == ("condition",)
    op = jaxderiv.Registry(spec).op("index_select")
    assert op.differentiable_inputs == ("self",)


def test_non_differentiable_in_shipped_file():
    lines = V1_7.read_text().splitlines()
    spec = load_spec(V1_7)
    marked = [
        i + 1
        for i, line in enumerate(lines)
        if line.strip().endswith(": non_differentiable") and not line.lstrip().startswith("#")
    ]
    assert marked
    starts = sorted(_entry_lines(V1_7).items(), key=lambda kv: kv[1])
    for line_no in marked:
        owner = max((kv for kv in starts if kv[1] < line_no), key=lambda kv: kv[1])[0]
        key = lines[line_no - 1].strip().split(":")[0]
        assert key in spec[owner].non_differentiable, (owner, key)
        assert spec[owner].formula_for(key) is None


def test_non_differentiable_unknown_name_is_an_error(write_spec):
    path = write_spec("""
        - name: sin(Tensor self) -> Tensor
          self: grad
          non_differentiable: [other]
    """)
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert f"{path}:3" in str(e.value) and "other" in str(e.value)


def test_multi_input_keys(spec_from_text):
    spec = spec_from_text("""
        - name: atan2(Tensor self, Tensor other) -> Tensor
          self, other: atan2_backward(grad, self, other, grad_input_mask)
        - name: clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor
          self: grad
          min,max: foo(grad)
    """)
    atan2 = spec["atan2"]
    (f,) = atan2.backward
    assert f.names == ("self", "other") and f.key == "self, other"
    assert f.location.key == "self, other" and f.location.entry == "atan2"
    assert atan2.formula_for("self") is f and atan2.formula_for("other") is f
    assert spec["clamp"].formula_for("max").names == ("min", "max")


def test_multi_input_keys_in_shipped_file():
    flat = load_spec(V1_10_FLAT)
    assert flat["atan2"].backward[0].names == ("self", "other")


def test_forward_keys(spec_from_text):
    spec = spec_from_text("""
        - name: sin(Tensor self) -> Tensor
          self: grad
          result: self_t * self_p.cos()
        - name: cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)
          self: grad
          values: self_t.gather(dim, indices)
        - name: frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)
          self: grad
          result0: self_t
        - name: _unique2(Tensor self) -> (Tensor, Tensor, Tensor)
          result0, result1: foo(self_t)
    """)
    assert [(f.names, f.text) for f in spec["sin"].forward] == [(("result",), "self_t * self_p.cos()")]
    assert [f.names for f in spec["cummax"].forward] == [("values",)]
    assert spec["cummax"].backward[0].names == ("self",)
    assert [f.names for f in spec["frexp.Tensor"].forward] == [("result0",)]
    assert [f.names for f in spec["_unique2"].forward] == [("result0", "result1")]
    assert spec["_unique2"].backward == ()


def test_named_forward_key_in_shipped_file():
    e = load_spec(V1_10_FLAT)["cummax"]
    assert [f.names for f in e.forward] == [("values",)]


def test_auto_formulas(spec_from_text):
    spec = spec_from_text("""
        - name: sin(Tensor self) -> Tensor
          self: grad * self.cos()
          result: auto_element_wise
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: maybe_multiply(grad, alpha)
          result: auto_linear
    """)
    assert spec["sin"].forward[0].text == "auto_element_wise"
    assert spec["add.Tensor"].forward[0].text == "auto_linear"
    reg = jaxderiv.Registry(spec)
    assert reg.op("sin").formulas["jvp"].startswith("auto_element_wise")
    assert reg.op("add.Tensor").formulas["jvp"].startswith("auto_linear")
    x, y = jnp.array([0.2, 1.1]), jnp.array([3.0, -2.0])
    np.testing.assert_allclose(jax.jvp(reg.op("sin"), (x,), (jnp.ones(2),))[1], jnp.cos(x))
    np.testing.assert_allclose(
        jax.jvp(lambda a, b: reg.op("add.Tensor")(a, b, alpha=2.0), (x, y), (jnp.ones(2), 3 * jnp.ones(2)))[1],
        [7.0, 7.0],
    )


def test_auto_formulas_in_shipped_file():
    flat = load_spec(V1_10_FLAT)
    texts = {f.text for e in flat for f in e.forward}
    assert {"auto_linear", "auto_element_wise"} <= texts


def test_not_implemented_for_a_missing_input_is_ignored(spec_from_text):
    spec = spec_from_text("""
        - name: fbgemm_thing(Tensor input) -> Tensor
          self: not_implemented("fbgemm")
    """)
    e = spec["fbgemm_thing"]
    assert e.backward == () and [f.names for f in e.ignored] == [("self",)]


# -- located errors ----------------------------------------------------------------------------


def _error(write_spec, text, exc=SpecError):
    path = write_spec(text, "broken_spec.yaml")
    with pytest.raises(exc) as info:
        load_spec(path)
    return path, info.value


def _assert_at(err: JaxderivError, path: Path, line: int):
    message = str(err)
    assert path.name in message and str(path) in message, message
    assert f"{path}:{line}" in message, message
    assert err.location.file == str(path) and err.location.line == line


def test_invalid_yaml_is_located(write_spec):
    path, err = _error(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor
          self: grad * self.cos()
         - name: cos(Tensor self) -> Tensor
          self: grad
    """,
    )
    _assert_at(err, path, 3)
    assert "YAML" in str(err)


def test_invalid_yaml_in_flattened_form_is_located(write_spec):
    path, err = _error(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor

        self: grad * self.cos()

        - name: cos(Tensor self) -> Tensor

        self: [grad

        - name: tan(Tensor self) -> Tensor
    """,
    )
    assert "YAML" in str(err)
    assert path.name in str(err)
    assert err.location.line is not None and 7 <= err.location.line <= 10


def test_non_list_file_is_located(write_spec):
    path, err = _error(
        write_spec,
        """
        # a comment

        name: sin(Tensor self) -> Tensor
        self: grad
    """,
    )
    _assert_at(err, path, 3)
    assert "list" in str(err)


def test_entry_without_name_is_located(write_spec):
    path, err = _error(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor
          self: grad

        - self: grad
          other: grad
    """,
    )
    _assert_at(err, path, 4)
    assert "name" in str(err)


def test_duplicate_entry_is_located(write_spec):
    path, err = _error(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor
          self: grad
        - name: cos(Tensor self) -> Tensor
          self: grad

        - name: sin(Tensor self) -> Tensor
          self: grad * 2
    """,
    )
    _assert_at(err, path, 6)
    assert "duplicate" in str(err) and "'sin'" in str(err) and "line 1" in str(err)


def _warned(write_spec, text):
    """Load `text`; the one SpecWarning it gives, and the spec (the file is not rejected)."""
    from jaxderiv.spec import SpecWarning

    path = write_spec(text, "odd_spec.yaml")
    with pytest.warns(SpecWarning) as caught:
        spec = load_spec(path)
    assert len(caught) == 1
    return path, str(caught[0].message), spec


def test_unknown_key_is_reported_with_its_line(write_spec):
    path, message, spec = _warned(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor
          self: grad
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: grad
          input: grad
    """,
    )
    assert f"{path}:6" in message and "'input'" in message and "add.Tensor" in message
    assert [f.key for f in spec["add.Tensor"].backward] == ["self", "other"] and "sin" in spec
    assert spec.warnings == (message,)


def test_unknown_key_in_flattened_form_is_reported_with_its_line(write_spec):
    path, message, spec = _warned(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor

        self: grad

        bogus: grad
    """,
    )
    assert f"{path}:5" in message and "'bogus'" in message
    assert [f.key for f in spec["sin"].backward] == ["self"]


def test_bad_schema_is_located(write_spec):
    path, err = _error(
        write_spec,
        """
        - name: sin(Tensor self) -> Tensor
          self: grad
        - name: cos(Tensor self -> Tensor
          self: grad
        """,
        SchemaError,
    )
    _assert_at(err, path, 3)
    assert err.column is not None


def test_unreadable_file_names_it(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(SpecError, match="nope.yaml"):
        load_spec(path)


def test_spec_version_is_read_from_content_not_names(tmp_path):
    """A shipped file's release comes from what it holds: under a versioned-looking name a
    file without fingerprints stays undeterminable (tests/spec/test_spec_version.py has the rest)."""
    from jaxderiv.spec import shipped_spec_files

    assert [load_spec(p).version.release for p in shipped_spec_files()] == [(1, 7), (1, 10)]
    mine = tmp_path / "mine_v2_3.yaml"
    mine.write_text("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos()\n")
    assert load_spec(mine).version.release is None
