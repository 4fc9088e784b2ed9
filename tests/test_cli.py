"""Tests for `python -m jaxderiv`: check and coverage, as subprocesses (run side by side) and in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxderiv.cli import main

ROOT = Path(__file__).resolve().parents[1]
FORMULAS = ROOT / "formulas"
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

WRONG_SIN = """\
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj() * 3
"""


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Start every subprocess at once (each pays for importing JAX), then wait for all."""
    d = tmp_path_factory.mktemp("cli")
    wrong = d / "wrong.yaml"
    wrong.write_text(WRONG_SIN)
    commands = {
        "check": [
            "check",
            "--ops",
            "acos,sin",
            "--modes",
            "vjp,jvp",
            "--json",
            str(d / "r.json"),
            "--markdown",
            str(d / "r.md"),
        ],
        "wrong": ["check", "--spec", str(wrong), "--ops", "sin", "--modes", "vjp", "--json", str(d / "w.json")],
        "coverage": ["coverage", "--json", str(d / "c.json")],
    }
    procs = {
        k: subprocess.Popen(
            [sys.executable, "-m", "jaxderiv", *args],
            cwd=d,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, args in commands.items()
    }
    out = {}
    for k, p in procs.items():
        stdout, stderr = p.communicate(timeout=300)
        out[k] = (p.returncode, stdout, stderr)
    return d, out


def test_check_exits_0_and_writes_files(runs):
    d, out = runs
    rc, stdout, stderr = out["check"]
    assert rc == 0, stdout + stderr
    assert "OK" in stdout and "3 entries" in stdout  # acos is also checked from the older file
    rows = json.loads((d / "r.json").read_text())
    assert {(r["op"], r["mode"]) for r in rows} == {(op, m) for op in ("acos", "sin") for m in ("vjp", "jvp")}
    assert all(set(r) == ROW_KEYS for r in rows)
    assert all(r["status"] == "passed" for r in rows)
    md = (d / "r.md").read_text()
    assert md.startswith("| op | spec | mode | status |")
    assert (
        "| `acos` | derivatives_v1_10_flat.yaml | vjp | passed |" in md
        and "| `sin` | derivatives_v1_7.yaml | jvp | passed |" in md
    )


def test_check_of_wrong_spec_exits_1(runs):
    d, out = runs
    rc, stdout, stderr = out["wrong"]
    assert rc == 1, stdout + stderr
    assert "FAILED" in stdout and "sin" in stdout
    rows = json.loads((d / "w.json").read_text())
    assert [(r["op"], r["mode"], r["status"]) for r in rows] == [("sin", "vjp", "failed")]
    assert "wrong.yaml" not in rows[0]["formula"] and "line 2" in rows[0]["formula"]


def test_coverage_reports_both_shipped_files(runs):
    d, out = runs
    rc, stdout, stderr = out["coverage"]
    assert rc == 0, stdout + stderr
    data = json.loads((d / "c.json").read_text())
    # the default files only: formulas/derivatives_v2_14_1.yaml is a reference, not loaded by default
    files = sorted(FORMULAS / n for n in ("derivatives_v1_7.yaml", "derivatives_v1_10_flat.yaml"))
    assert sorted(Path(f["file"]).name for f in data) == sorted(p.name for p in files)
    for f in data:
        text = Path(f["file"]).read_text()
        assert f["entries"] == sum(1 for line in text.splitlines() if line.startswith("- name:"))
        assert 0 < f["formulas_parsed"] <= f["formulas"]
        assert 0 <= f["entries_with_forward"] <= f["entries_translated"] <= f["entries"]
        assert isinstance(f["missing"], dict)
        assert Path(f["file"]).name in stdout
    by_name = {Path(f["file"]).name: f for f in data}
    assert by_name["derivatives_v1_7.yaml"]["entries"] == 486
    assert by_name["derivatives_v1_10_flat.yaml"]["entries"] == 199
    assert by_name["derivatives_v1_10_flat.yaml"]["entries_with_result_formula"] > 0
    assert by_name["derivatives_v1_7.yaml"]["entries_with_result_formula"] == 0
    assert by_name["derivatives_v1_7.yaml"]["version"] == "PyTorch 1.7 (detected from content: entry `complex`)"
    assert "version PyTorch 1.10 (detected from content: entry `_neg_view`)" in stdout


# -- in-process: cheaper once JAX is imported -------------------------------------------------------


def test_bad_spec_exits_2_with_location(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    # (an unknown key is only a warning now: a key given twice still rejects the file)
    bad.write_text("- name: sin(Tensor self) -> Tensor\n  self: grad\n  self: grad * 2\n")
    assert main(["check", "--spec", str(bad), "--ops", "sin", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3" in err and "self" in err


def test_coverage_of_one_spec(tmp_path, capsys):
    spec = tmp_path / "one.yaml"
    spec.write_text(
        "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos()\n- name: cos(Tensor self) -> Tensor\n  self: grad * not_a_helper_xyz(self)\n"
    )
    out = tmp_path / "c.json"
    assert main(["coverage", "--spec", str(spec), "--json", str(out)]) == 0
    (f,) = json.loads(out.read_text())
    assert f["file"] == str(spec) and f["entries"] == 2 and f["formulas"] == 2
    assert f["entries_translated"] == 1
    assert f["missing"] == {"not_a_helper_xyz": 1}
    assert "not_a_helper_xyz" in capsys.readouterr().out


def test_in_process_check_of_wrong_and_right_spec(tmp_path, capsys):
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(WRONG_SIN)
    assert main(["check", "--spec", str(wrong), "--ops", "sin", "--modes", "vjp", "--quiet"]) == 1
    wrong.write_text(WRONG_SIN.replace(" * 3", ""))
    assert main(["check", "--spec", str(wrong), "--ops", "sin", "--modes", "vjp", "--quiet"]) == 0
    assert "OK" in capsys.readouterr().out


def test_usage_errors():
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        main(["frobnicate"])
