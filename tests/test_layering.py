"""The import layering of jaxderiv, read from the source with `ast` (nothing is imported; lazy
imports inside functions and imports under `if TYPE_CHECKING:` count too):

  - `jaxderiv.forward` (the ops) never imports `jaxderiv.helpers` (the formulas' helpers); the other
    direction is allowed: a helper calls the ops it differentiates;
  - `jaxderiv.tensor_utils`, which both share, imports neither;
  - the files of every subpackage of jaxderiv (check, torch, helpers, forward, records, spectools,
    nn, and any added later: they are found on disk) import each other without a cycle;
  - the shared utilities have one definition, in tensor_utils.py;
  - the formula pipeline imports one way: spec -> grammar -> normalize -> translate -> rules -> op
    -> registry (a stage imports only those before it);
  - the top-level modules and subpackages import one way, bottom up along LAYERS;
  - no module imports another module's private names, nor another package's private modules.

Each check is also run on a constructed example it must fail (`test_cycle_finder`, `test_a_private_import_is_found`,
`test_a_lazy_import_cycle_in_a_new_subpackage_is_found`, `_pipeline_violations`,
`test_a_lazy_import_against_the_layers_is_found`).

How it fails (verified on a copy of src/ with one import put back, run with PYTHONPATH at the copy):
`from ..helpers.rnn import _bias_grads` added to forward/rnn.py gives

    test_forward_does_not_import_helpers - AssertionError: forward must not import helpers
    (see jaxderiv/tensor_utils.py): ['jaxderiv.forward.rnn -> jaxderiv.helpers.rnn']

and `from .forward_mode import amaxamin_jvp` added inside a function of helpers/reductions.py gives

    test_no_import_cycle_between_files[jaxderiv.helpers] - AssertionError: import cycle among the
    files of jaxderiv.helpers: jaxderiv.helpers.forward_mode -> jaxderiv.helpers.reductions ->
    jaxderiv.helpers.forward_mode
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jaxderiv

PACKAGE = Path(jaxderiv.__file__).resolve().parent
ROOT = PACKAGE.parent  # where the top-level package `jaxderiv` lies; a constructed example passes its own


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(name: str, root: Path = ROOT) -> bool:
    return (root.joinpath(*name.split(".")) / "__init__.py").is_file()


def _is_module(name: str, root: Path = ROOT) -> bool:
    return _is_package(name, root) or root.joinpath(*name.split(".")).with_suffix(".py").is_file()


def _from_target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a `from ... import` statement in `package` imports from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    return ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """The jaxderiv modules that the file at `path` imports, anywhere in it."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "jaxderiv")
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if target.split(".")[0] != "jaxderiv":
                continue
            # `from .pkg import mod` imports the module pkg.mod; `from .mod import name`, mod itself
            subs = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}", root)]
            out.update(subs or [target])
    return out


def _graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of `package` (a subpackage of jaxderiv), those of its own subpackages
    included, -> the jaxderiv modules it imports."""
    folder = root.joinpath(*package.split("."))
    return {_module_name(p, root): _imports(p, root) for p in sorted(folder.rglob("*.py"))}


def _subpackages(root: Path = ROOT) -> list[str]:
    """Every subpackage of jaxderiv, at any depth (a folder with an __init__.py)."""
    top = root / "jaxderiv"
    return sorted(_module_name(p, root) for p in top.rglob("__init__.py") if p.parent != top)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_packages_are_found():
    found = _subpackages()
    named = ["check", "forward", "helpers", "nn", "records", "spectools", "torch"]
    assert set(found) >= {f"jaxderiv.{p}" for p in named}, found
    helpers, forward = _graph("jaxderiv.helpers"), _graph("jaxderiv.forward")
    assert "jaxderiv.helpers.linalg" in helpers and "jaxderiv.forward.rnn" in forward
    assert "jaxderiv.forward.linalg" in helpers["jaxderiv.helpers.linalg"]  # the allowed direction is seen
    assert "jaxderiv.tensor_utils" in forward["jaxderiv.forward.rnn"]


def test_forward_does_not_import_helpers():
    bad = [
        f"{m} -> {t}"
        for m, ts in _graph("jaxderiv.forward").items()
        for t in sorted(ts)
        if _inside(t, "jaxderiv.helpers")
    ]
    assert not bad, f"forward must not import helpers (see jaxderiv/tensor_utils.py): {bad}"


def test_tensor_utils_imports_neither_package():
    imported = _imports(PACKAGE / "tensor_utils.py")
    assert not [t for t in imported if _inside(t, "jaxderiv.helpers") or _inside(t, "jaxderiv.forward")], imported


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` (restricted to its own nodes) as a path, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in graph or nxt == node:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_cycle_finder():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("package", _subpackages())
def test_no_import_cycle_between_files(package):
    cycle = _cycle(_graph(package))
    assert cycle is None, f"import cycle among the files of {package}: {' -> '.join(cycle)}"


def test_a_lazy_import_cycle_in_a_new_subpackage_is_found(tmp_path):
    """A subpackage nobody listed is found, and an import inside a function (or under
    TYPE_CHECKING) closes a cycle as well as one at the top of a file."""
    pkg = tmp_path / "jaxderiv" / "newpkg"
    pkg.mkdir(parents=True)
    (tmp_path / "jaxderiv" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from .a import f\n\n    return f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import a\n")
    assert _subpackages(tmp_path) == ["jaxderiv.newpkg"]
    graph = _graph("jaxderiv.newpkg", tmp_path)
    assert graph["jaxderiv.newpkg.c"] == {"jaxderiv.newpkg.a"}
    assert _cycle(graph) == ["jaxderiv.newpkg.a", "jaxderiv.newpkg.b", "jaxderiv.newpkg.a"]


SHARED = {
    "mH",
    "_mH",
    "mT",
    "_mT",
    "_right_solve_upper",
    "_right_solve_upper_h",
    "_right_solve_lower",
    "solve_triangular_right",
    "lstm_gate_grads",
    "_lstm_gate_grads",
    "gru_gate_grads",
    "_gru_gate_grads",
}


@pytest.mark.parametrize("package", ["helpers", "forward"])
def test_shared_utilities_are_defined_once(package):
    folder = PACKAGE / package
    again = [
        f"{p.name}: {node.name}"
        for p in sorted(folder.glob("*.py"))
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in SHARED
    ]
    assert not again, f"defined again outside jaxderiv/tensor_utils.py: {again}"


# The formula pipeline, bottom up: each stage imports only the stages below it (spec.py reads
# text; grammar.py parses it; normalize.py resolves kinds and rewrites; translate.py compiles
# trees; rules.py and op.py build ops; registry.py holds them). Any stage may import the shared
# leaf modules (errors, expr, schema, namespace, ...), which import none of these.
PIPELINE = ("spec", "grammar", "normalize", "translate", "rules", "op", "registry")


def _pipeline_violations(imports_of) -> list[str]:
    """`stage -> later stage` for each import against the pipeline; `imports_of(stage)` is the
    set of jaxderiv modules the stage's file imports."""
    layer = {f"jaxderiv.{m}": i for i, m in enumerate(PIPELINE)}
    return [
        f"jaxderiv.{m} -> {t}" for i, m in enumerate(PIPELINE) for t in sorted(imports_of(m)) if layer.get(t, -1) > i
    ]


def test_formula_pipeline_imports_one_way():
    bad = _pipeline_violations(lambda m: _imports(PACKAGE / f"{m}.py"))
    assert not bad, f"a stage of the formula pipeline imports a later one: {bad}"
    assert "jaxderiv.normalize" in _imports(PACKAGE / "op.py")  # the allowed direction is seen
    assert _pipeline_violations(lambda m: {"jaxderiv.translate"} if m == "normalize" else set()) == [
        "jaxderiv.normalize -> jaxderiv.translate"
    ]


# The whole package, bottom up (docs/architecture.md draws it): a module or subpackage imports
# only what comes before it here. The root `__init__` (re-exports) is left out.
LAYERS = (
    "errors",
    "submodules",
    "expr",
    "cxx",
    "tensor_utils",
    "schema",
    "grammar",
    "spec",
    "normalize",  # text to trees
    "records",  # what verification knows of an op, declared with its forward
    "forward",
    "namespace",
    "translate",
    "rules",
    "helpers",
    "entry_rules",
    "application",
    "op",
    "registry",
    "literal",  # trees to ops
    "nn",
    "torch",  # users of the ops
    "check",  # verification (the OpInfo replay resolves overloads as jaxderiv.torch runs them)
    "spectools",  # tools
    "cli",
    "__main__",  # the command line, over all of it
)


def _units(root: Path = ROOT) -> dict[str, set[str]]:
    """Each top-level module or subpackage of jaxderiv -> the top-level ones it imports."""
    out: dict[str, set[str]] = {}
    for path in sorted((root / "jaxderiv").rglob("*.py")):
        name = _module_name(path, root).split(".")
        if len(name) < 2:
            continue
        out.setdefault(name[1], set()).update(
            t.split(".")[1] for t in _imports(path, root) if t.count(".") >= 1 and t.split(".")[1] != name[1]
        )
    return out


def _layer_violations(units: dict[str, set[str]]) -> list[str]:
    rank = {u: i for i, u in enumerate(LAYERS)}
    return [
        f"jaxderiv.{u} -> jaxderiv.{t}"
        for u, ts in sorted(units.items())
        for t in sorted(ts)
        if t in rank and rank[t] > rank.get(u, -1)
    ]


def test_every_module_has_a_layer():
    assert sorted(set(_units()) - set(LAYERS)) == [], "add the new module to LAYERS (and docs/architecture.md)"


def test_the_package_imports_one_way():
    bad = _layer_violations(_units())
    assert not bad, f"an import against the layers of docs/architecture.md: {bad}"
    assert "op" in _units()["registry"]  # the allowed direction is seen
    assert _layer_violations({"spec": {"check"}}) == ["jaxderiv.spec -> jaxderiv.check"]


def test_layers_name_each_unit_once():
    assert len(set(LAYERS)) == len(LAYERS), [u for u in LAYERS if LAYERS.count(u) > 1]


def test_a_lazy_import_against_the_layers_is_found(tmp_path):
    """A file deep in a lower unit that imports a higher unit inside a function is caught, as
    a whole unit: `spectools` (above `check`) imported from a module of `records` (below it)."""
    top = tmp_path / "jaxderiv"
    (top / "records").mkdir(parents=True)
    (top / "spectools").mkdir()
    for path in (top / "__init__.py", top / "records" / "__init__.py", top / "spectools" / "__init__.py"):
        path.write_text("")
    (top / "spectools" / "tool.py").write_text("from ..records import sample\n")
    (top / "records" / "sample.py").write_text("def draw():\n    from ..spectools.tool import x\n\n    return x\n")
    (top / "errors.py").write_text("import jaxderiv.records.sample\n")
    units = _units(tmp_path)
    assert units == {"errors": {"records"}, "records": {"spectools"}, "spectools": {"records"}}
    assert _layer_violations(units) == ["jaxderiv.errors -> jaxderiv.records", "jaxderiv.records -> jaxderiv.spectools"]


def _private_imports(root: Path = ROOT) -> list[str]:
    """Imports of another module's private names: `from .mod import _name` (a function, class or
    constant of mod), and a private module (`_values`) imported from outside its own package.
    A private name is its module's own; what another module needs is given a public name."""
    bad = []
    for path in sorted((root / "jaxderiv").rglob("*.py")):
        module = _module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                target = _from_target(node, package)
                names = [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                target, names = "", [a.name for a in node.names]
            else:
                continue
            for full in [target, *names]:
                if full.split(".")[0] != "jaxderiv":
                    continue
                parts = full.split(".")
                for k, part in enumerate(parts[1:], 1):
                    if not part.startswith("_") or part.startswith("__"):
                        continue
                    owner = ".".join(parts[:k])  # the module or package that the private name belongs to
                    if _is_module(".".join(parts[: k + 1]), root):
                        if not _inside(module, owner):
                            bad.append(f"{module} imports {'.'.join(parts[: k + 1])} (private to {owner})")
                    elif owner != module:
                        bad.append(f"{module} imports {owner}.{part}")
                    break
    return sorted(set(bad))


def test_no_module_imports_another_modules_private_names():
    bad = _private_imports()
    assert not bad, f"private names imported from another module (give them a public name): {bad}"


def test_a_private_import_is_found(tmp_path):
    """`from .b import _helper` and another package's private module are caught; a package's
    own private module and a dunder are not."""
    top = tmp_path / "jaxderiv"
    (top / "pkg").mkdir(parents=True)
    (top / "other").mkdir()
    for path in (top / "__init__.py", top / "pkg" / "__init__.py", top / "other" / "__init__.py"):
        path.write_text("")
    (top / "pkg" / "b.py").write_text("def _helper():\n    pass\n")
    (top / "pkg" / "_hidden.py").write_text("X = 1\n")
    (top / "pkg" / "a.py").write_text("from . import _hidden\nfrom .b import _helper\nfrom .. import __version__\n")
    (top / "other" / "c.py").write_text("from ..pkg._hidden import X\n")
    assert _private_imports(tmp_path) == [
        "jaxderiv.other.c imports jaxderiv.pkg._hidden (private to jaxderiv.pkg)",
        "jaxderiv.pkg.a imports jaxderiv.pkg.b._helper",
    ]
