"""Spec files of older PyTorch releases load entry by entry: schemas without a return type and
with C++ argument types (0.4 to 1.1), overloads written under one name without an overload
name (before 1.3), unknown keys (reported), and a broken entry among good ones (reported with
file:line while the rest loads). The snippets are written here in those forms; docs/releases.md
has the measurements on the releases' own files."""

from __future__ import annotations

import textwrap
import warnings

import pytest

from jaxderiv.spectools.coverage import coverage
from jaxderiv.errors import SchemaError, SpecError
from jaxderiv.schema import FunctionSchema
from jaxderiv.spec import SpecWarning, load_spec


def _write(tmp_path, text: str, name: str = "derivatives.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def _lenient(path):
    """Load per entry; the spec and the messages of the SpecWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = load_spec(path, strict=False)
    return spec, [str(w.message) for w in caught if issubclass(w.category, SpecWarning)]


# -- schemas of 0.4 to 1.1: no return type, C++ types ----------------------------------------


def test_schema_without_return_type_loads(tmp_path):
    path = _write(
        tmp_path,
        """
        - name: abs(Tensor self)
          self: grad * self.sign()

        - name: acos(Tensor self)
          self: grad * -((-self * self + 1).rsqrt())
    """,
    )
    with pytest.raises(SchemaError, match="expected '->'"):
        FunctionSchema.parse("abs(Tensor self)")  # the modern grammar alone rejects the form
    spec = load_spec(path)
    assert sorted(spec.entries) == ["abs", "acos"]
    abs_ = spec["abs"]
    assert abs_.schema.legacy and [str(r) for r in abs_.schema.returns] == ["Tensor"]
    assert [f.names for f in abs_.backward] == [("self",)] and abs_.backward[0].location.line == 2
    assert not spec.rejected and not spec.warnings


def test_cxx_argument_types_read_as_schema_types():
    schema = FunctionSchema.parse_legacy(
        "cudnn_convolution_backward(Tensor self, IntList padding, IntArrayRef stride, int64_t groups, "
        "double eps, std::array<bool,3> output_mask, Generator* generator, TensorList weight, SparseTensorRef mask)"
    )
    assert [str(a.type) for a in schema.arguments] == [
        "Tensor",
        "int[]",
        "int[]",
        "int",
        "float",
        "bool[3]",
        "Generator?",
        "Tensor[]",
        "Tensor",
    ]
    # what it prints is a modern schema that parses back to the same arguments
    assert FunctionSchema.parse(str(schema)).arguments == schema.arguments
    # returns that are written are kept: only a schema without them is marked legacy
    written = FunctionSchema.parse_legacy("kthvalue(Tensor self, int64_t k) -> (Tensor values, Tensor indices)")
    assert not written.legacy and [r.name for r in written.returns] == ["values", "indices"]


def test_legacy_returns_counted_from_the_formulas(tmp_path):
    path = _write(
        tmp_path,
        """
        - name: svd(Tensor self, bool some)
          self: svd_backward(grads, self, some, result0, result1, result2)

        - name: _cudnn_rnn_like(Tensor input, Tensor hx)
          input, hx: foo(grads[0], grads[3], result1)
    """,
    )
    spec = load_spec(path)
    assert len(spec["svd"].schema.returns) == 3 and spec["svd"].schema.returns_tuple
    assert len(spec["_cudnn_rnn_like"].schema.returns) == 4


def test_legacy_output_names_become_named_returns(tmp_path):
    """0.4's formulas name outputs as Declarations.cwrap did (`indices`); an input of that
    name stays an input, and the entry builds."""
    from jaxderiv.registry import Registry

    path = _write(
        tmp_path,
        """
        - name: kthvalue(Tensor self, int64_t k, int64_t dim, bool keepdim)
          self: value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim)

        - name: _softmax_backward_data(Tensor grad_output, Tensor output, int64_t dim, Tensor self)
          grad_output: grad * output
    """,
    )
    spec = load_spec(path)
    assert [(str(r.type), r.name) for r in spec["kthvalue"].schema.returns] == [("Tensor", None), ("Tensor", "indices")]
    assert [r.name for r in spec["_softmax_backward_data"].schema.returns] == [None]
    Registry(spec).op("kthvalue")


# -- overloads without an overload name (before 1.3) ------------------------------------------


def test_duplicate_unnamed_overloads_are_told_apart(tmp_path):
    path = _write(
        tmp_path,
        """
        - name: add(Tensor self, Scalar other, *, Scalar alpha)
          self: grad

        - name: add(Tensor self, Tensor other, *, Scalar alpha)
          self: grad
          other: maybe_multiply(grad, alpha)

        - name: normal(Tensor mean, Tensor std, Generator generator)
          mean: grad.expand(mean.sizes())
        - name: normal(Tensor mean, double std, Generator generator)
          mean: grad.expand(mean.sizes())
        - name: normal(double mean, Tensor std, Generator generator)
          std: zeros_like(std)

        - name: max(Tensor self, int64_t dim, bool keepdim)
          self: grad
        - name: max(Tensor self)
          self: grad
    """,
    )
    spec, messages = _lenient(path)
    assert not spec.rejected
    assert sorted(spec.entries) == [
        "add.Scalar",
        "add.Tensor",
        "max",
        "max.dim",
        "normal.Tensor_Tensor",
        "normal.Tensor_float",
        "normal.float_Tensor",
    ]
    assert [f.key for f in spec["add.Tensor"].backward] == ["self", "other"]
    assert spec["add.Tensor"].location.line == 4 and spec["add.Tensor"].backward[1].location.entry == "add.Tensor"
    assert any(f"{path}:4" in m and "'add.Tensor'" in m for m in spec.warnings)
    # the same with the default strict loading: an old form, not an error
    assert sorted(load_spec(path).entries) == sorted(spec.entries)


def test_many_unnamed_overloads_each_get_a_distinct_name(tmp_path):
    path = _write(
        tmp_path,
        """
        - name: prod(Tensor self)
          self: grad
        - name: prod(Tensor self, ScalarType dtype)
          self: grad
        - name: prod(Tensor self, int64_t dim, bool keepdim)
          self: grad
        - name: prod(Tensor self, int64_t dim, ScalarType dtype)
          self: grad
        - name: prod(Tensor self, int64_t dim, bool keepdim, ScalarType dtype)
          self: grad
    """,
    )
    spec = load_spec(path)
    assert len(spec) == 5 and "prod" in spec
    assert [e.location.line for e in spec] == [1, 3, 5, 7, 9]


def test_identical_duplicate_is_still_a_duplicate(tmp_path):
    path = _write(
        tmp_path,
        """
        - name: abs(Tensor self)
          self: grad * self.sign()
        - name: abs(Tensor self)
          self: grad
    """,
    )
    with pytest.raises(SpecError, match="duplicate entry 'abs'") as info:
        load_spec(path)
    assert f"{path}:3" in str(info.value)
    spec, messages = _lenient(path)
    assert spec["abs"].backward[0].text == "grad * self.sign()"  # the first is kept
    assert len(spec.rejected) == 1 and f"{path}:3" in messages[0]


# -- unknown keys and broken entries -----------------------------------------------------------


def test_unknown_key_is_a_warning_not_fatal(tmp_path):
    path = _write(
        tmp_path,
        """
        - name: sin(Tensor self)
          self: grad * self.cos()
          retain_variables: something_old
        - name: cos(Tensor self)
          self: grad * -self.sin()
    """,
    )
    spec, messages = _lenient(path)
    assert sorted(spec.entries) == ["cos", "sin"] and not spec.rejected
    (message,) = messages
    assert f"{path}:3" in message and "'retain_variables'" in message
    assert [f.key for f in spec["sin"].backward] == ["self"]


BROKEN = """
    - name: sin(Tensor self) -> Tensor
      self: grad * self.cos()

    - name: cos(Tensor self -> Tensor
      self: grad * -self.sin()

    - self: grad

    - name: tan(Tensor self) -> Tensor
      self: grad
      non_differentiable: [other]

    - name: exp(Tensor self)
      self: grad * result
"""


def test_broken_entries_reported_with_file_and_line_and_the_rest_loads(tmp_path):
    path = _write(tmp_path, BROKEN, "broken.yaml")
    spec, messages = _lenient(path)
    assert sorted(spec.entries) == ["exp", "sin"]
    assert [(e.location.file, e.location.line) for e in spec.rejected] == [
        (str(path), 4),
        (str(path), 7),
        (str(path), 11),
    ]
    assert "expected ',' or ')'" in str(spec.rejected[0])
    assert "no 'name:'" in str(spec.rejected[1])
    assert "non_differentiable" in str(spec.rejected[2])
    assert [m.split(": ")[0] for m in messages] == [
        f"{path}:4, entry 'cos(Tensor self -> Tensor', column 17",
        f"{path}:7",
        f"{path}:11, entry 'tan', key 'non_differentiable'",
    ]
    assert all("not loaded" in m for m in messages) and spec.warnings == tuple(messages)


def test_strict_loading_still_stops_at_the_first_broken_entry(tmp_path):
    path = _write(tmp_path, BROKEN, "broken.yaml")
    with pytest.raises(SchemaError) as info:
        load_spec(path)
    assert info.value.location.line == 4 and f"{path}:4" in str(info.value)


def test_coverage_counts_rejected_entries_and_measures_the_rest(tmp_path):
    path = _write(tmp_path, BROKEN, "broken.yaml")
    (fc,) = coverage(path).files
    assert fc.entries == 2 and fc.entries_rejected == 3
    assert fc.entries_parsed == 2 and fc.formulas_parsed == fc.formulas == 2
    assert [r.split(": ")[0].split(",")[0] for r in fc.rejected] == [f"{path}:4", f"{path}:7", f"{path}:11"]


# ==================================================================================================
# The installed torch's own file (torch 2.13): its coverage report, and the entries whose formulas
# it spells otherwise than the seed files (`.div(other, "trunc")`, *_jvp helpers, sgn_backward's
# argument order, the schemas of elu_backward, gelu_backward, softplus_backward, _symint helpers)
# translate. tests/check/test_parity.py compares those entries with torch under torch's file.
# ==================================================================================================

TORCH_SPELLINGS = (
    "fmod.Tensor",
    "remainder.Tensor",
    "clamp.Tensor",
    "sgn",
    "_to_copy",
    "elu",
    "celu",
    "elu_backward",
    "gelu",
    "gelu_backward",
    "softplus",
    "softplus_backward",
    "mean.dim",
    "amax",
    "amin",
    "logsumexp",
    "logcumsumexp",
    "norm.Scalar",
    "norm.ScalarOpt_dim",
    "dist",
    "mm",
    "addmm",
    "mse_loss",
    "smooth_l1_loss",
    "binary_cross_entropy_with_logits",
    "_log_softmax",
    "_softmax",
    "glu",
    "max_pool2d_with_indices",
    "slice.Tensor",
    "cholesky_solve",
    "cholesky_inverse",
    "native_layer_norm",
    "native_group_norm",
    "renorm",
    "glu_backward",
    "binary_cross_entropy",
    "binary_cross_entropy_backward",
    "nansum",
    "embedding_dense_backward",
    "_embedding_bag_dense_backward",
    "slow_conv_dilated2d",
)


def test_coverage_of_torch_spec_ranks_what_is_missing():
    """The coverage report of torch's file counts the entries shared with the seed files and
    ranks what still keeps entries from translating, most entries first."""
    pytest.importorskip("torch")
    from jaxderiv.spec import shipped_spec_files, torch_spec_file

    (fc,) = coverage(str(torch_spec_file())).files
    seed = {e.name for p in shipped_spec_files() for e in load_spec(p)}
    shared = [e.name for e in load_spec(from_torch=True) if e.name in seed]
    assert fc.entries_translated > 470
    counts = [n for _, n in fc.missing.most_common()]
    assert counts == sorted(counts, reverse=True) and counts
    assert fc.seed_entries == len(shared)
    assert fc.seed_entries_translated == fc.seed_entries - len(fc.seed_untranslated)
    assert not set(TORCH_SPELLINGS) & set(fc.seed_untranslated)


def test_entries_in_torchs_spellings_build_from_torchs_file():
    """Every formula of these entries translates from torch's own file (no missing helper)."""
    pytest.importorskip("torch")
    from jaxderiv import Registry
    from jaxderiv.spec import torch_spec_file

    registry = Registry(load_spec(from_torch=True))
    for name in TORCH_SPELLINGS:
        op = registry.op(name)
        assert op.entry.location.file == str(torch_spec_file()), name
        assert op.formulas["vjp"] != "none", name


def test_coverage_run_counts_only_entries_whose_formulas_run(tmp_path):
    """`coverage(run=True)`: a formula that builds but raises on a sample (a view to a size the
    gradient cannot take) is not counted as translated; a memory format where TensorOptions
    go (`zeros_like(grad, at::MemoryFormat::Preserve)`, as C++ converts it) runs."""
    path = _write(
        tmp_path,
        "- name: sin(Tensor self) -> Tensor\n"
        "  self: grad.view({7, 7}) * self.cos()\n"
        "- name: cos(Tensor self) -> Tensor\n"
        "  self: zeros_like(grad, at::MemoryFormat::Preserve) - grad * self.sin()\n",
        "runs.yaml",
    )
    (built,) = coverage(path).files
    assert built.entries_translated == 2 and built.entries_run is None
    (ran,) = coverage(path, run=True).files
    assert ran.entries_translated == 1 and ran.entries_run == 1
    assert [name for name, _ in ran.run_errors] == ["sin"] and "view" in ran.run_errors[0][1]
