"""The import layering of `jaxderiv.forward`, `jaxderiv.helpers` and `jaxderiv.tensor_utils`, read
from the source with `ast` (nothing is imported, lazy imports inside functions count too):

  - `jaxderiv.forward` (the ops) never imports `jaxderiv.helpers` (the formulas' helpers); the other
    direction is allowed: a helper calls the ops it differentiates;
  - `jaxderiv.tensor_utils`, which both share, imports neither;
  - the files of `jaxderiv.helpers` (and of `jaxderiv.forward`) import each other without a cycle;
  - the shared utilities have one definition, in tensor_utils.py;
  - the formula pipeline imports one way: spec -> grammar -> normalize -> translate -> rules -> op
    -> registry (a stage imports only those before it).

How it fails (verified on a copy of src/ with one import put back, run with PYTHONPATH at the copy):
`from ..helpers.rnn import _bias_grads` added to forward/rnn.py gives

    test_forward_does_not_import_helpers - AssertionError: forward must not import helpers
    (see jaxderiv/tensor_utils.py): ['jaxderiv.forward.rnn -> jaxderiv.helpers.rnn']

and `from .forward_mode import amaxamin_jvp` added inside a function of helpers/reductions.py gives

    test_no_import_cycle_between_files[helpers] - AssertionError: import cycle among the files of
    jaxderiv.helpers: jaxderiv.helpers.forward_mode -> jaxderiv.helpers.reductions ->
    jaxderiv.helpers.forward_mode
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jaxderiv

PACKAGE = Path(jaxderiv.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(name: str) -> bool:
    return (PACKAGE.parent.joinpath(*name.split(".")) / "__init__.py").is_file()


def _is_module(name: str) -> bool:
    return _is_package(name) or PACKAGE.parent.joinpath(*name.split(".")).with_suffix(".py").is_file()


def _imports(path: Path) -> set[str]:
    """The jaxderiv modules that the file at `path` imports, anywhere in it."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "jaxderiv")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "jaxderiv":
                continue
            # `from .pkg import mod` imports the module pkg.mod; `from .mod import name`, mod itself
            subs = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")]
            out.update(subs or [target])
    return out


def _graph(package: str) -> dict[str, set[str]]:
    """Each module of `package` (a subpackage of jaxderiv) -> the jaxderiv modules it imports."""
    folder = PACKAGE.parent.joinpath(*package.split("."))
    return {_module_name(p): _imports(p) for p in sorted(folder.glob("*.py"))}


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_packages_are_found():
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


@pytest.mark.parametrize("package", ["helpers", "forward"])
def test_no_import_cycle_between_files(package):
    graph = _graph(f"jaxderiv.{package}")
    cycle = _cycle(graph)
    assert cycle is None, f"import cycle among the files of jaxderiv.{package}: {' -> '.join(cycle)}"


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
    "check",
    "spectools",  # verification, tools
    "nn",
    "torch",  # users of the ops
    "cli",
    "__main__",  # the command line, over all of it (`parity --opinfo` runs jaxderiv.torch's replay)
)


def _units() -> dict[str, set[str]]:
    """Each top-level module or subpackage of jaxderiv -> the top-level ones it imports."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path).split(".")
        if len(name) < 2:
            continue
        out.setdefault(name[1], set()).update(
            t.split(".")[1] for t in _imports(path) if t.count(".") >= 1 and t.split(".")[1] != name[1]
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
