"""The op database: one frozen record per entry, declared once, in one family module."""

from __future__ import annotations

import ast
import dataclasses
import glob
import pathlib
import subprocess
import sys

import pytest

from jaxderiv.check import opdb
from jaxderiv.check.describe import describe
from jaxderiv.cli import main
from jaxderiv.forward import implementation
from jaxderiv.spec import load_seed_spec, load_spec, shipped_spec_files, torch_spec_file

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "jaxderiv"


def test_every_record_names_an_entry_of_a_spec_file():
    """A record whose name no spec file has is stale (a renamed entry): it would silently apply to nothing."""
    names = set()
    for path in [*shipped_spec_files(), torch_spec_file(), *glob.glob(str(SRC.parents[1] / "formulas" / "*.yaml"))]:
        names |= set(load_spec(path, strict=False).entries)
    stale = sorted(n for n in opdb.database() if n not in names)
    assert stale == []


def test_records_are_frozen_and_name_their_family_module():
    db = opdb.database()
    assert len(db) > 500
    for name, r in db.items():
        assert r.name == name
        assert (SRC / "check" / "families" / f"{r.family}.py").is_file(), name
    acos = opdb.record("acos")
    with pytest.raises(dataclasses.FrozenInstanceError):
        acos.domain = (0.0, 1.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        acos.known_failures["vjp"] = "no"  # type: ignore[index]


def _misplaced_records() -> list[str]:
    """Records whose family module is not named like their forward's module (forward/<family>.py),
    or, for an entry with no forward, not not_applicable.py."""
    out = []
    for name, r in opdb.database().items():
        forward = implementation(name)
        home = forward.__module__.rsplit(".", 1)[-1] if forward is not None else "not_applicable"
        if r.family != home:
            where = f"its forward is in forward/{home}.py" if forward is not None else "it has no forward"
            out.append(f"{name}: declared in check/families/{r.family}.py, but {where}")
    return out


def test_each_record_lives_in_the_family_named_like_its_forward():
    """An entry's record is declared in check/families/<family>.py, where its forward is
    forward/<family>.py; an entry with no forward (sparse layouts, fbgemm's packed weights) in
    not_applicable.py. huber_loss's record declared in activation.py, say, fails with

        AssertionError: assert ['huber_loss: declared in check/families/activation.py,
        but its forward is in forward/losses.py'] == []
    """
    assert _misplaced_records() == []
    with opdb.replaced("huber_loss", family="activation"), opdb.replaced("coalesce", family="nn"):
        assert sorted(_misplaced_records()) == [
            "coalesce: declared in check/families/nn.py, but it has no forward",
            "huber_loss: declared in check/families/activation.py, but its forward is in forward/losses.py",
        ]


def test_the_database_is_built_without_sympy_and_holds_the_sympy_definitions():
    """sympy is the `proofs` extra: the family modules name it through `symbolic.sp`, which imports
    it only when a definition is called (by the proofs), so the records load without it."""
    code = (
        "import sys; sys.modules['sympy'] = None\n"  # `import sympy` raises ModuleNotFoundError
        "from jaxderiv.check.opdb import record\n"
        "d = record('clamp').definition\n"
        "assert d.args == ('self', 'min', 'max') and record('clamp').family == 'binary', d\n"
        "try:\n"
        "    d.fn(1.0, 0.0, 2.0)\n"
        "except ModuleNotFoundError as e:\n"
        "    print('needs', e.name)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "needs sympy\n"


def test_an_undeclared_entry_has_the_empty_record():
    r = opdb.record("no_such_entry")
    assert r == opdb.OpRecord("no_such_entry") and r.declared() == {}
    assert not r.checks_complex() and r.known_failure("vjp") is None and r.not_applicable_in("vjp") is None


@pytest.fixture
def fresh_database(monkeypatch):
    """Declarations made now go to an empty database, as the family modules' do on first use."""
    monkeypatch.setattr(opdb, "_drafts", {})
    monkeypatch.setattr(opdb, "_records", None)
    monkeypatch.setattr(opdb, "database", lambda: opdb._records or {})


def test_a_fact_declared_twice_is_an_error(fresh_database):
    opdb.domain(0.0, 1.0, "x")
    opdb.domain(0.0, 1.0, "x")  # the same value again is harmless
    with pytest.raises(ValueError, match="x: domain declared twice"):
        opdb.domain(0.0, 2.0, "x")
    opdb.known_failure("a reason", "x", modes=("vjp",))
    opdb.known_failure("another reason", "x", modes=("jvp",))  # other modes merge
    with pytest.raises(ValueError, match="known_failures for vjp declared twice"):
        opdb.known_failure("a third reason", "x", modes=("vjp",))


def test_declaring_after_the_database_is_built_is_an_error():
    opdb.database()
    with pytest.raises(RuntimeError, match="already built"):
        opdb.complex_ok("acos")


def test_replaced_restores_the_record():
    before = opdb.record("acos")
    with opdb.replaced("acos", complex=False, known_failures={"vjp": "temporary"}) as r:
        assert opdb.record("acos") is r and not r.complex and r.known_failure("vjp") == "temporary"
    assert opdb.record("acos") == before
    with opdb.replaced("no_such_entry", domain=(0.0, 1.0)):
        assert opdb.record("no_such_entry").domain == (0.0, 1.0)
    assert "no_such_entry" not in opdb.database()


def test_no_checker_module_keeps_a_dict_of_its_own_keyed_by_op_names():
    """What verification knows about an op is in its record: the dicts the records replaced are gone."""
    retired = {
        "SAMPLES",
        "DOMAINS",
        "COMPLEX",
        "REAL_ONLY",
        "KNOWN_FAILURES",
        "NOT_APPLICABLE",
        "NOT_APPLICABLE_MODES",
        "KINKS",
        "EQUIVALENTS",
        "FLOAT32",
        "NOT_COMPARED",
        "DIFFERENCES",
        "TORCH_SPEC_DIFFERENCES",
        "WITHOUT_MEANING",
        "DEFINITIONS",
    }
    for path in (SRC / "check").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            assert not names & retired, f"{path.relative_to(SRC)} defines {names & retired}"


def test_describe_shows_entries_forward_and_record():
    text = describe("angle", load_seed_spec())
    assert "entry derivatives_v1_10_flat.yaml:" in text and "angle_backward(self_t, self_p)" in text
    assert "forward: forward/unary.py:" in text
    assert "record: check/families/unary.py" in text and "complex: True" in text
    assert "known_failures: jvp: spec bug" in text
    assert "sympy definition: of self (check/families/unary.py)" in text
    assert "record: none declared" in describe("no_such_entry", load_seed_spec())


def test_op_command_prints_the_description(capsys):
    assert main(["op", "acos"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("acos\n") and "domain: (-0.9, 0.9)" in out
