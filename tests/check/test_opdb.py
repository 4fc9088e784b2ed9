"""The op database: one frozen record per entry, declared once, beside its forward in its family module."""

from __future__ import annotations

import ast
import dataclasses
import glob
import inspect
import pathlib
import subprocess
import sys

import pytest

from jaxderiv import records
from jaxderiv.check import opdb
from jaxderiv.records import declarations
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
        assert (SRC / "forward" / f"{r.family}.py").is_file(), name
    acos = opdb.record("acos")
    with pytest.raises(dataclasses.FrozenInstanceError):
        acos.domain = (0.0, 1.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        acos.known_failures["vjp"] = "no"  # type: ignore[index]


def _name_positions(fn) -> slice:
    """The positional arguments of a declaration function that name entries: its `*names`, or its
    first argument `name` (`definition("clamp", fn, "self", "min", "max")` names one entry)."""
    params = list(inspect.signature(fn).parameters.values())
    starred = [i for i, p in enumerate(params) if p.kind is p.VAR_POSITIONAL and p.name == "names"]
    return slice(starred[0], None) if starred else slice(0, 1)


# The functions of jaxderiv.records that declare facts of the entries they name, and where the names are.
DECLARATIONS = {
    n: _name_positions(getattr(declarations, n))
    for n in set(declarations.__all__) - {"declare", "freeze", "frozen", "lookup", "replaced"}
}


def _misplaced_declarations(source: str, module: str) -> list[str]:
    """Entries the family module `module` (source text) declares records for whose forward is in
    another module of jaxderiv.forward (or which have no forward, outside not_applicable.py):
    every string argument of a declaration call (`domain(0, 1, "acos")`, `@samples("mm")`,
    `@impl("abs", complex=True)`) that names an entry of a record or a forward counts."""
    known = set(opdb.database())
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "impl" and node.keywords:
            named = node.args
        elif node.func.id in DECLARATIONS:
            named = node.args[DECLARATIONS[node.func.id]]
        else:
            continue
        for arg in named:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value in known):
                continue
            forward = implementation(arg.value)
            home = forward.__module__.rsplit(".", 1)[-1] if forward is not None else "not_applicable"
            if home != module:
                where = f"its forward is in forward/{home}.py" if forward is not None else "it has no forward"
                out.append(f"{arg.value}: declared in forward/{module}.py, but {where}")
    return out


def test_each_record_is_declared_beside_its_forward():
    """An entry's record is declared in forward/<family>.py, where its forward is; an entry with
    no forward (sparse layouts, fbgemm's packed weights) in not_applicable.py. huber_loss's
    domain declared in activation.py, say, fails with

        AssertionError: assert ['huber_loss: declared in forward/activation.py,
        but its forward is in forward/losses.py'] == []
    """
    misplaced = [
        line
        for path in sorted((SRC / "forward").glob("*.py"))
        for line in _misplaced_declarations(path.read_text(), path.stem)
    ]
    assert misplaced == []
    wrong = 'domain(0.1, 3.0, "acos", "huber_loss")\n@samples("coalesce")\ndef f(op, rng, dtype=None): ...\n'
    assert sorted(_misplaced_declarations(wrong, "activation")) == [
        "acos: declared in forward/activation.py, but its forward is in forward/unary.py",
        "coalesce: declared in forward/activation.py, but it has no forward",
        "huber_loss: declared in forward/activation.py, but its forward is in forward/losses.py",
    ]


def test_a_record_family_is_its_forward_module():
    """The family is where the forward is, whichever module's code made the declaration."""
    assert opdb.record("huber_loss").family == "losses" and opdb.record("coalesce").family == "not_applicable"
    assert all(opdb.family_of(r) == r.family for r in opdb.database().values())


def test_impl_declares_record_fields_with_the_forward(fresh_database):
    from jaxderiv import forward

    try:
        forward.impl("x_op", domain=(0.1, 3.0), complex=True)(lambda self: self)
        with pytest.raises(TypeError, match="no record field domian"):
            forward.impl("y_op", domian=(0.1, 3.0))(lambda self: self)
        assert declarations._drafts["x_op"] == {"domain": (0.1, 3.0), "complex": True}
    finally:
        forward.IMPLS.pop("x_op", None)
        forward.IMPLS.pop("y_op", None)


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
    assert r == records.OpRecord("no_such_entry") and r.declared() == {}
    assert not r.checks_complex() and r.known_failure("vjp") is None and r.not_applicable_in("vjp") is None


@pytest.fixture
def fresh_database(monkeypatch):
    """Declarations made now go to an empty database, as the family modules' do on first use."""
    monkeypatch.setattr(declarations, "_drafts", {})
    monkeypatch.setattr(declarations, "_records", None)


def test_a_fact_declared_twice_is_an_error(fresh_database):
    records.domain(0.0, 1.0, "x")
    records.domain(0.0, 1.0, "x")  # the same value again is harmless
    with pytest.raises(ValueError, match="x: domain declared twice"):
        records.domain(0.0, 2.0, "x")
    records.known_failure("a reason", "x", modes=("vjp",))
    records.known_failure("another reason", "x", modes=("jvp",))  # other modes merge
    with pytest.raises(ValueError, match="known_failures for vjp declared twice"):
        records.known_failure("a third reason", "x", modes=("vjp",))


def test_declaring_after_the_database_is_built_is_an_error():
    opdb.database()
    with pytest.raises(RuntimeError, match="already built"):
        records.complex_ok("acos")


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
    for path in [*(SRC / "check").rglob("*.py"), *(SRC / "records").rglob("*.py")]:
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
    assert "record: forward/unary.py" in text and "complex: True" in text
    assert "known_failures: jvp: spec bug" in text
    assert "sympy definition: of self (forward/unary.py)" in text
    assert "record: none declared" in describe("no_such_entry", load_seed_spec())


def test_op_command_prints_the_description(capsys):
    assert main(["op", "acos"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("acos\n") and "domain: (-0.9, 0.9)" in out
