"""A spec file's PyTorch release is data: detected from its content (never its name) or given."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import load_spec
from jaxderiv.errors import SpecError
from jaxderiv.spec import FINGERPRINTS, UNDETERMINABLE, detect_version, parse_version, read_spec_text

FORMULAS = Path(__file__).resolve().parents[2] / "formulas"
V1_7, V1_10, V2_14_1 = (
    FORMULAS / "derivatives_v1_7.yaml",
    FORMULAS / "derivatives_v1_10_flat.yaml",
    FORMULAS / "derivatives_v2_14_1.yaml",
)


def _torch_file() -> Path:
    from jaxderiv.spec import torch_spec_file

    try:
        return torch_spec_file()
    except SpecError:
        pytest.skip("torch is not installed")


def _neutral(tmp_path, source: Path) -> Path:
    """The same bytes under a name that says nothing about a version."""
    folder = tmp_path / "x"
    folder.mkdir(exist_ok=True)
    target = folder / "derivatives.yaml"
    shutil.copyfile(source, target)
    assert target.read_bytes() == source.read_bytes()
    return target


@pytest.mark.parametrize(
    "source, release, marker",
    [
        (V1_7, (1, 7), "entry `complex`"),
        (V1_10, (1, 10), "entry `_neg_view`"),
        ("torch", (2, 13), "entry `_foreach_mm`"),
        (V2_14_1, (2, 14, 1), "entry `linalg_polar`"),
    ],
)
def test_each_release_is_detected_under_a_neutral_name(tmp_path, source, release, marker):
    path = _neutral(tmp_path, _torch_file() if source == "torch" else source)
    version = load_spec(path).version
    assert version.release == release
    assert version.how == f"detected from content: {marker}"
    assert str(version) == f"PyTorch {'.'.join(map(str, release))} (detected from content: {marker})"


def test_a_versioned_looking_name_plays_no_part(tmp_path):
    """1.7's bytes named like 2.13 are 1.7; one entry named like 1.7 is undeterminable."""
    disguised = tmp_path / "derivatives_v2_13.yaml"
    shutil.copyfile(V1_7, disguised)
    assert load_spec(disguised).version.release == (1, 7)
    single = tmp_path / "derivatives_v1_7.yaml"
    single.write_text("- name: sqrt(Tensor self) -> Tensor\n  self: grad / (2 * result)\n")
    version = load_spec(single).version
    assert (
        version.release is None
        and version.how == UNDETERMINABLE == "undeterminable: newest assumed; pass --torch-version"
    )


def _release_index():
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    try:
        import make_release_contents
    finally:
        sys.path.pop(0)
    return make_release_contents.read()


def _release_of(label: str) -> tuple[int, ...]:
    """ "1.10.0" -> (1, 10); "2.14.1" -> (2, 14, 1); "0.4.1" -> (0, 4, 1); "1.11.0-main" -> (1, 11)."""
    parts = tuple(int(x) for x in label.removesuffix("-main").split("."))
    return parts if parts[0] == 0 or parts == (2, 14, 1) else parts[:2]


def test_the_release_index_is_the_files_content():
    """The index the tests below read holds what `Content.of` reads of each file: checked on the
    files this repository has (1.7, 2.14.1) and the installed torch's (2.13)."""
    from jaxderiv.spec import Content

    index = _release_index()
    assert list(index)[0] == "0.4.0" and len(index) == 31
    assert index["1.7"] == Content.of(load_spec(V1_7).entries)
    assert index["2.14.1"] == Content.of(load_spec(V2_14_1).entries)
    assert index["2.13.0"] == Content.of(load_spec(_torch_file()).entries)


def test_fingerprints_are_each_releases_own():
    """Every marker is in its release's file and in no older release's file, for every release
    from 0.4.0 to 2.14.1 (the index of the release files themselves decides the table)."""
    from jaxderiv.spec import has_marker

    index = _release_index()
    releases = {label: _release_of(label) for label in index}
    for release, markers in FINGERPRINTS:
        mine = [label for label, r in releases.items() if r == release]
        assert mine, f"no release file for {release}"
        for m in markers:
            for label in mine:
                assert has_marker(index[label], m), (release, m, label)
            for label, r in releases.items():
                if r < release:
                    assert not has_marker(index[label], m), (release, m, label)


def test_every_release_from_0_4_is_detected():
    index = _release_index()
    found = {label: detect_version(content).release for label, content in index.items()}
    assert found == {label: _release_of(label) for label in index}
    assert len(set(found.values())) == 31


def test_fingerprints_catch_a_marker_an_older_release_has():
    """The check above can fail: 1.7's old marker `_bmm` is in 1.6's file too (it called 1.6 "1.7")."""
    from jaxderiv.spec import has_marker

    index = _release_index()
    assert has_marker(index["1.6.0"], ("entry", "_bmm")) and has_marker(index["1.7"], ("entry", "_bmm"))


def test_detection_without_the_newer_markers_falls_back_a_release():
    """2.14.1's file without its three markers reads as 2.13: detection is by markers only."""
    newest = load_spec(V2_14_1)
    kept = {
        n: e
        for n, e in newest.entries.items()
        if n
        not in (
            "linalg_polar",
            "linalg_matrix_sqrth",
            "erf",
            "erfc",
            "special_erfcx",
            "erfinv",
            "special_ndtri",
            "special_log_ndtr",
        )
    }
    version = detect_version(kept)
    assert version.release == (2, 13), version


def test_torch_version_given_overrides_detection(tmp_path):
    path = _neutral(tmp_path, V1_10)
    spec = load_spec(path, torch_version="1.7")
    assert spec.version.release == (1, 7) and spec.version.how == "given"
    assert all(e.version is spec.version for e in spec)
    assert load_spec(path, torch_version="2.14.1").version.release == (2, 14, 1)
    assert read_spec_text(path.read_text(), str(path), torch_version=(1, 11)).version.release == (1, 11)
    with pytest.raises(SpecError, match="expected MAJOR.MINOR"):
        load_spec(path, torch_version="seven")
    assert parse_version("v2.13").release == (2, 13)


def test_given_version_picks_the_revised_helper_meaning(tmp_path):
    """softmax_double_backward means the derivative through `self` before 1.11: one 1.7 entry
    with no fingerprint checks right only when its release is given."""
    from jaxderiv.check import check_all
    from jaxderiv.check.mutate import entry_yaml

    path = tmp_path / "derivatives.yaml"
    path.write_text(entry_yaml(load_spec(V1_7)["_softmax_backward_data"]))
    rows = lambda spec: [
        (r.mode, r.status) for r in check_all(spec, ops=["_softmax_backward_data"], modes=["vjp"]).rows
    ]  # noqa: E731
    assert rows(load_spec(path, torch_version="1.7")) == [("vjp", "passed")]
    assert rows(load_spec(path)) == [("vjp", "failed")]


def test_neutral_copy_of_1_7_checks_as_the_original(tmp_path):
    ops = ["_softmax", "_softmax_backward_data", "addmm"]
    verdict = lambda path: [(r.op, r.mode, r.status) for r in jaxderiv.check_all(load_spec(path), ops=ops)]  # noqa: E731
    original, neutral = verdict(V1_7), verdict(_neutral(tmp_path, V1_7))
    assert neutral == original
    assert {s for _, _, s in original} <= {"passed", "not_applicable"}, original
    assert ("_softmax", "vjp_vjp", "passed") in original and ("addmm", "vjp", "passed") in original


def test_pre_complex_release_checks_complex_only_where_its_formulas_allow(tmp_path):
    """addmm's 1.7 formula `maybe_multiply(grad, beta)` lacks the conj a complex beta needs:
    the checker leaves out the complex-beta sample and says why; given 1.10, the same text fails."""
    report = jaxderiv.check_all(load_spec(V1_7), ops=["addmm"], modes=["vjp"])
    (row,) = report.rows
    assert row.status == "passed" and "beta is complex" in row.reason and "PyTorch 1.7" in row.reason
    as_newer = jaxderiv.check_all(
        load_spec(_neutral(tmp_path, V1_7), torch_version="1.10"), ops=["addmm"], modes=["vjp"]
    )
    assert as_newer.rows[0].status == "failed" and "complex128" in as_newer.rows[0].reason
    assert "PyTorch 1.7 (detected from content: entry `complex`)" in report.summary()


@pytest.mark.parametrize(
    "name, call",
    [
        ("sqrt", lambda op, z: op(z)),
        ("rsqrt", lambda op, z: op(z)),
        ("tan", lambda op, z: op(z)),
        ("reciprocal", lambda op, z: op(z)),
        ("mv", lambda op, z: op(jnp.stack([z, z]), z)),
    ],
)
def test_real_only_formula_refuses_complex_derivatives(name, call):
    """The seed registry takes these entries from 1.7, written for real tensors: a complex
    derivative raises naming the entry, file:line and release; values and real derivatives work.
    The default registry's are torch 2.14.1's, written for complex too."""
    from jaxderiv.op import RealOnlyDerivative

    assert jaxderiv.op(name).real_only is None and jaxderiv.op(name).entry.version.release == (2, 14, 1)
    op = jaxderiv.seed_registry().op(name)
    z = jnp.array([1.2 + 0.5j, 0.7 - 0.3j])
    assert jnp.iscomplexobj(call(op, z))  # the forward is fine
    with pytest.raises(RealOnlyDerivative) as info:
        jax.grad(lambda z: jnp.real(call(op, z)).sum())(z)
    message = str(info.value)
    assert f"entry {name!r}" in message and "PyTorch 1.7" in message and "derivatives_v1_7.yaml:" in message
    assert f"{V1_7}:{op.entry.location.line}" in message
    x = jnp.array([1.2, 0.7])
    assert np.all(np.isfinite(np.asarray(jax.grad(lambda x: call(op, x).sum())(x))))


def test_real_only_guard_reads_the_values_not_the_op():
    """1.7's sub.Tensor is wrong only for a complex alpha: complex tensors with a real alpha
    differentiate; a complex alpha raises. A grad-only 1.7 entry (neg) takes complex."""
    from jaxderiv.op import RealOnlyDerivative

    sub = jaxderiv.seed_registry().op("sub.Tensor")
    assert sub.entry.version.release == (1, 7)
    a, b = jnp.array([1.0 + 1.0j]), jnp.array([0.5 - 2.0j])
    g = jax.grad(lambda b: jnp.real(sub(a, b, alpha=2.0)).sum())(b)
    np.testing.assert_allclose(np.asarray(g), [-2.0])
    with pytest.raises(RealOnlyDerivative, match="alpha is complex"):
        jax.grad(lambda b: jnp.real(sub(a, b, alpha=1.0 + 1.0j)).sum())(b)
    assert jaxderiv.seed_registry().op("det").real_only is None  # a FunctionsManual helper call: complex-aware


def test_same_text_as_a_newer_release_accepts_complex(tmp_path):
    """The guard is the release's, not the text's: 1.7's sqrt entry given as 1.10 differentiates complex."""
    path = tmp_path / "derivatives.yaml"
    path.write_text("- name: sqrt(Tensor self) -> Tensor\n  self: grad / (2 * result)\n")
    op = jaxderiv.Registry(load_spec(path, torch_version="1.10")).op("sqrt")
    assert op.real_only is None
    jax.grad(lambda z: jnp.real(op(z)).sum())(jnp.array([1.0 + 1.0j]))
    assert jaxderiv.Registry(load_spec(path, torch_version="1.7")).op("sqrt").real_only is not None


def test_trailing_semicolon_is_accepted(spec_from_text):
    spec = spec_from_text(
        "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos();\n  result: self_t * self_p.cos() ;\n"
    )
    op = jaxderiv.Registry(spec).op("sin")
    x = jnp.array([0.3, 1.1])
    np.testing.assert_allclose(np.asarray(jax.grad(lambda x: op(x).sum())(x)), np.cos([0.3, 1.1]))
    np.testing.assert_allclose(np.asarray(jax.jvp(op, (x,), (jnp.ones(2),))[1]), np.cos([0.3, 1.1]))
    with pytest.raises(jaxderiv.FormulaError):
        jaxderiv.parse_formula("grad;;")


def test_unknown_key_warns_with_file_and_line(write_spec):
    from jaxderiv.spec import SpecWarning

    path = write_spec("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos()\n  slef: grad\n")
    with pytest.warns(SpecWarning, match=rf"{path}:3.*'slef'"):
        spec = load_spec(path)
    assert [f.key for f in spec["sin"].backward] == ["self"]


CMATH = {
    "M_PI": math.pi,
    "M_PI_2": math.pi / 2,
    "M_PI_4": math.pi / 4,
    "M_1_PI": 1 / math.pi,
    "M_2_PI": 2 / math.pi,
    "M_2_SQRTPI": 2 / math.sqrt(math.pi),
    "M_SQRT2": math.sqrt(2),
    "M_SQRT1_2": 1 / math.sqrt(2),
    "M_E": math.e,
    "M_LOG2E": math.log2(math.e),
    "M_LOG10E": math.log10(math.e),
    "M_LN2": math.log(2),
    "M_LN10": math.log(10),
}


@pytest.mark.parametrize("name", sorted(CMATH))
def test_cmath_constant_resolves_to_its_value(spec_from_text, name):
    """`grad * M_X` in a formula is the constant's value times grad."""
    spec = spec_from_text(f"- name: mul.Scalar(Tensor self, Scalar other) -> Tensor\n  self: grad * {name}\n")
    op = jaxderiv.Registry(spec).op("mul.Scalar")
    g = jax.grad(lambda x: op(x, 3.0).sum())(jnp.ones(2))
    np.testing.assert_allclose(np.asarray(g), [CMATH[name]] * 2, rtol=1e-15)


def test_torch_2_14_1_file_is_the_default_and_the_seeds_stay_apart():
    from jaxderiv.spec import load_seed_spec, newest_spec_file, shipped_spec_files

    assert newest_spec_file() == V2_14_1 and V2_14_1 not in shipped_spec_files()
    assert "linalg_polar" in load_spec() and "linalg_polar" in load_spec(V2_14_1)
    assert "linalg_polar" not in load_seed_spec()


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxderiv", *args], capture_output=True, text=True, timeout=600)


def test_cli_torch_version_flag(tmp_path):
    path = _neutral(tmp_path, V1_10)
    out = _cli("coverage", "--spec", str(path), "--torch-version", "1.7")
    assert out.returncode == 0, out.stderr
    assert "version PyTorch 1.7 (given)" in out.stdout
    out = _cli("coverage", "--spec", str(path))
    assert "version PyTorch 1.10 (detected from content: entry `_neg_view`)" in out.stdout
    bad = _cli("check", "--spec", str(path), "--ops", "sin", "--torch-version", "x.y")
    assert bad.returncode == 2 and "expected MAJOR.MINOR" in bad.stderr
