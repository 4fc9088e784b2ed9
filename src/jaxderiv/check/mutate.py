"""Mutation testing of the checker: rewrite formulas in well-typed ways, count how many it catches.

Each mutant changes one spot of one formula's syntax tree (never its text), is written into
a spec file of its own holding the mutated entry and its neighbours in the source file (the
entries its formulas call, and those whose formulas call it), and is checked with `check_all`
on the entry and its callers: a formula of a called entry (`_softmax_backward_data`'s) is
differentiated only through its callers' higher orders. A mutant is killed when some mode
reports it failed (or errored). The kill rate measures how
much wrong mathematics the checker can see. Run `python -m jaxderiv.check.mutate --help`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import yaml

from ..errors import JaxderivError
from ..expr import (
    Attr,
    Binary,
    Call,
    Index,
    Name,
    Node,
    Num,
    Unary,
    children,
    with_children,
    to_source,
)
from ..normalize import Kind, derivative
from ..registry import Registry
from ..translate import METADATA_METHODS, SHAPE_ONLY_CALLS, SHAPE_ONLY_METHODS
from ..spec import Entry, Formula, load_spec, shipped_spec_files

__all__ = ["KINDS", "Mutant", "mutants_of", "family_of", "entry_yaml", "run_mutant", "main"]

# Every kind of rewrite, with what it does.
KINDS = {
    "factor2": "the whole formula times 2",
    "drop_conj": "one `.conj()` removed",
    "sign": "the whole formula negated, or one `+` made `-` (and back)",
    "swap": "the operands of one `-` or `/` swapped",
    "half_grad": "one `grad`, `grads[i]` or tangent `x_t` times 0.5",
    "arg_shift": "one integer argument of a call (`dim` or a literal) plus 1",
    "result_to_input": "one `result` replaced by the op's first tensor input",
    # Wrong only where the float64 first-order modes cannot look:
    "detach": "one value read of an input or `result` made `.detach()`: first derivatives unchanged, "
    "the formula's own derivative (second order) loses that term",
    "cancel": "one value read of an input `x` made `10000 - (10000 - x)`: exact in reals, about 1e-12 "
    "off in float64 and 1e-3 in float32 (made only for the families the float32 mode checks)",
    "cast": "one value read of `grad`, `result` or a differentiable input made `.to(at::kFloat)`: a "
    "dtype-losing cast, about 6e-8 off in float64 (the imaginary part lost on complex inputs)",
}


@dataclasses.dataclass(frozen=True)
class Mutant:
    op: str  # the entry's ATen name
    key: str  # the formula's key: "self", "self, other", "result"
    kind: str  # one of KINDS
    original: str  # the formula's text
    mutated: str  # the rewritten formula's text
    family: str = ""  # the forward module of the op: unary, binary, ...


# -- tree surgery ------------------------------------------------------------------------


def _rewrites(node: Node, site) -> Iterator[Node]:
    """Every tree made from `node` by rewriting one sub-node `n` into each of `site(n, parent)`."""

    def walk(n: Node, parent: Node | None) -> Iterator[Node]:
        yield from site(n, parent)
        kids = list(children(n))
        for i, kid in enumerate(kids):
            for new in walk(kid, n):
                yield with_children(n, kids[:i] + [new] + kids[i + 1 :])

    yield from walk(node, None)


def _is_conj_call(n: Node) -> bool:
    return isinstance(n, Call) and not n.args and isinstance(n.func, Attr) and n.func.name == "conj"


def _half(n: Node) -> Node:
    return Binary("*", n, Num("0.5", 0.5))


def _int_args(entry: Entry) -> set[str]:
    return {a.name for a in entry.schema.arguments if a.type.base in ("int", "SymInt") and not a.type.is_list}


# `x.new_zeros(sizes)` reads only x's dtype and device.
_FACTORY_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})


def _value_read(n: Node, parent: Node | None, names: list[str]) -> bool:
    """`n` is one of `names` read for its value: not a function's name, not only its metadata
    (`self.sizes()`) or shape (`zeros_like(self)`), whose rewrite would change nothing."""
    if not isinstance(n, Name) or n.name not in names:
        return False
    if isinstance(parent, Attr):
        return parent.name not in METADATA_METHODS | _FACTORY_METHODS
    if isinstance(parent, Call):
        if parent.func is n:
            return False
        if isinstance(parent.func, Name) and parent.func.name.removeprefix("at::") in SHAPE_ONLY_CALLS:
            return False
        if isinstance(parent.func, Attr) and parent.func.name in SHAPE_ONLY_METHODS:
            return False
    return True


def _low_precision_families() -> frozenset[str]:
    from .opdb import families_where

    return frozenset(families_where("low_precision"))


def mutants_of(entry: Entry, formula: Formula, family: str = "") -> list[Mutant]:
    """The mutants of one formula, in a fixed order; rewrites that print to the same text are dropped."""
    tree = derivative(formula).require_parsed()
    is_forward = formula in entry.forward
    tensors = [a.name for a in entry.schema.arguments if a.is_tensor]
    tangents = {f"{t}_t" for t in tensors}
    inputs = tensors + [f"{t}_p" for t in tensors]  # a backward formula's names, a result formula's
    int_args = _int_args(entry)
    # the float values a formula reads: a cast of an integer index or mask would fail to run, not
    # lose precision
    differentiable = sorted({n.strip() for f in entry.backward for n in f.key.split(",")} & set(tensors))
    cast_names = [
        "grad",
        "result",
        *differentiable,
        *(f"{t}_p" for t in differentiable),
        *(f"{t}_t" for t in differentiable),
    ]
    low_precision = family in _low_precision_families()

    def conj(n, parent):
        if _is_conj_call(n):
            yield n.func.obj

    def sign_term(n, parent):
        if isinstance(n, Binary) and n.op in "+-":
            yield dataclasses.replace(n, op="-" if n.op == "+" else "+")

    def swap(n, parent):
        if isinstance(n, Binary) and n.op in ("-", "/"):
            yield dataclasses.replace(n, left=n.right, right=n.left)

    def half(n, parent):
        if isinstance(n, Name) and (n.name == "grad" or (is_forward and n.name in tangents)):
            yield _half(n)
        elif isinstance(n, Index) and isinstance(n.obj, Name) and n.obj.name == "grads":
            yield _half(n)

    def arg_shift(n, parent):
        if isinstance(n, Call):
            for i, a in enumerate(n.args):
                if (isinstance(a, Name) and a.name in int_args) or (isinstance(a, Num) and isinstance(a.value, int)):
                    args = list(n.args)
                    args[i] = Binary("+", a, Num("1", 1))
                    yield dataclasses.replace(n, args=tuple(args))

    def result(n, parent):
        if isinstance(n, Name) and n.name == "result" and tensors:
            yield Name(tensors[0])

    def detach(n, parent):
        if _value_read(n, parent, inputs + ["result"]):
            yield Call(Attr(n, "detach"), ())

    def cast_(n, parent):
        if _value_read(n, parent, cast_names):
            yield Call(Attr(n, "to"), (Name("at::kFloat"),))

    def cancel(n, parent):
        if _value_read(n, parent, inputs):
            big = Num("10000", 10000)
            yield Binary("-", big, Binary("-", big, n))  # XLA folds (x + c) - c back to x, not this

    candidates: list[tuple[str, Node]] = [("factor2", Binary("*", Num("2", 2), tree)), ("sign", Unary("-", tree))]
    sites = [
        ("drop_conj", conj),
        ("sign", sign_term),
        ("swap", swap),
        ("half_grad", half),
        ("arg_shift", arg_shift),
        ("result_to_input", result),
        ("detach", detach),
        ("cast", cast_),
    ]
    if low_precision:
        sites.append(("cancel", cancel))
    for kind, site in sites:
        candidates += [(kind, new) for new in _rewrites(tree, site)]
    out, seen = [], {formula.text}
    for kind, new in candidates:
        text = to_source(new)
        if text not in seen:
            seen.add(text)
            out.append(Mutant(entry.name, formula.key, kind, formula.text, text, family))
    return out


# -- running -----------------------------------------------------------------------------


def _item(entry: Entry, replace: dict[str, str]) -> dict:
    item: dict = {"name": str(entry.schema)}
    for f in entry.backward + entry.forward:
        item[f.key] = replace.get(f.key, f.text)
    if entry.output_differentiability is not None:
        item["output_differentiability"] = list(entry.output_differentiability)
    if entry.non_differentiable:
        item["non_differentiable"] = list(entry.non_differentiable)
    return item


def entry_yaml(entry: Entry, replace: dict[str, str] | None = None, context: Sequence[Entry] = ()) -> str:
    """A spec file holding `entry`, with the formulas keyed in `replace` swapped in, and the
    `context` entries as they are."""
    items = [_item(entry, replace or {})] + [_item(e, {}) for e in context if e.name != entry.name]
    return yaml.safe_dump(items, sort_keys=False, width=10**6)


@functools.lru_cache(maxsize=4)
def _call_graph(path: str) -> tuple[Registry, dict[str, frozenset[str]]]:
    """The spec file at `path` as a registry and, for each entry, the entries its backward
    formulas call (the calls the registry runs as that entry's op, so that their formulas are
    differentiated)."""
    from .checker import entries_called

    registry = Registry(load_spec(path))
    graph: dict[str, frozenset[str]] = {}
    for entry in registry.spec:
        try:
            called = entries_called(registry.op(entry.name))
        except JaxderivError:  # an entry that does not translate (TranslationError, ...) calls nothing
            called = set()
        graph[entry.name] = frozenset(registry.spec[n].name for n in called)
    return registry, graph


def neighbours(entry: Entry) -> tuple[list[Entry], list[str]]:
    """The entries of `entry`'s source file that its formulas call, and the names of those whose
    formulas call it (its callers)."""
    registry, graph = _call_graph(entry.location.file)
    spec = registry.spec
    callers = sorted(n for n, called in graph.items() if entry.name in called and n != entry.name)
    named = graph.get(entry.name, frozenset()) | set(callers)
    return [spec[n] for n in sorted(named) if n != entry.name], callers


def family_of(name: str) -> str:
    """The forward module an op's implementation lives in (unary, binary, ...), or "" for none."""
    from ..forward import implementation

    fn = implementation(name)
    return fn.__module__.rsplit(".", 1)[-1] if fn is not None else ""


def _modes(entry: Entry, key: str | None = None, family: str = "") -> list[str]:
    """Modes in the order most likely to kill a mutant of formula `key` first: the float64
    first-order ones, then the second-order ones, then float32 for the families it runs on."""
    forward = any(f.key == key for f in entry.forward)
    modes = (
        ["jvp", "vjp", "vjp_jvp", "vjp_vjp", "jvp_vjp"] if forward else ["vjp", "vjp_vjp", "jvp", "jvp_vjp", "vjp_jvp"]
    ) + ["vjp_vjp_vjp"]
    return modes + (["float32"] if family in _low_precision_families() else [])


def _copy_spec(path: str, entry: Entry):
    """The one-entry copy at `path`, loaded with its source's PyTorch release passed explicitly:
    a single entry rarely holds a fingerprint, and the release picks the meaning of helpers
    PyTorch revised (namespace.resolve) and whether complex inputs are accepted."""
    release = entry.version.text if entry.version is not None and entry.version.release else None
    return load_spec(path, torch_version=release)


def run_mutant(
    mutant: Mutant, entry: Entry, *, seed: int = 0, modes: list[str] | None = None, callers: Sequence[str] | None = None
) -> dict:
    """Check `mutant` mode by mode (`modes`, default all that apply) until one fails, on the
    entry and `callers` (default: every caller in its file, see `neighbours`; the baseline
    keeps those whose unmutated check passes). Returns its verdict: killed, by which mode, why."""
    from .checker import check_all

    verdict = dataclasses.asdict(mutant) | {"killed": False, "mode": None, "status": "passed", "reason": ""}
    context, every_caller = neighbours(entry)
    callers = every_caller if callers is None else callers
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mutant.yaml")
        with open(path, "w") as fh:
            fh.write(entry_yaml(entry, {mutant.key: mutant.mutated}, context))
        spec = _copy_spec(path, entry)
        statuses = []
        for mode in modes or _modes(entry, mutant.key, mutant.family or family_of(entry.name)):
            rows = check_all(spec, ops=[entry.name, *callers], modes=[mode], seed=seed).rows
            bad = [r for r in rows if _failing(r)]
            statuses += [r.status for r in rows]
            if bad:
                return verdict | {"killed": True, "mode": mode, "status": bad[0].status, "reason": bad[0].reason[:300]}
    verdict["status"] = "passed" if "passed" in statuses else (statuses[0] if statuses else "none")
    return verdict


def _failing(row) -> bool:
    """Failed, errored, or failed as a declared known failure."""
    return row.status in ("failed", "error", "known_failure")


def _baseline(entry: Entry) -> list[str] | None:
    """The callers whose checks pass beside the unmutated entry, written as its mutants are;
    None where the entry itself does not pass every mode (its mutants would prove nothing)."""
    from .checker import check_all

    context, callers = neighbours(entry)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "baseline.yaml")
        with open(path, "w") as fh:
            fh.write(entry_yaml(entry, None, context))
        rows = check_all(
            _copy_spec(path, entry), ops=[entry.name, *callers], modes=_modes(entry, family=family_of(entry.name))
        ).rows
    own = [r for r in rows if r.op == entry.name]
    if not any(r.status == "passed" for r in own) or any(_failing(r) for r in own):
        return None
    return [c for c in callers if not any(_failing(r) for r in rows if r.op == c)]


def baseline_ok(entry: Entry) -> bool:
    """Whether the unmutated entry, written the same way, passes every mode (else mutants prove nothing)."""
    return _baseline(entry) is not None


def _work(args) -> dict | list[Mutant]:
    """One unit for a worker process: ('baseline', entry) or ('mutant', mutant, entry, callers)."""
    if args[0] == "baseline":
        return {"op": args[1].name, "callers": _baseline(args[1])}
    return run_mutant(args[1], args[2], callers=args[3])


def select(
    spec_path, families: list[str] | None, ops: list[str] | None, per_op: int, kinds: list[str] | None = None
) -> list[tuple[Entry, list[Mutant]]]:
    """For each implemented entry in the chosen families, up to `per_op` mutants spread over
    `kinds` (default all)."""
    unknown = sorted(set(kinds or ()) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown mutant kind(s) {unknown}; the kinds are {sorted(KINDS)}")
    chosen = []
    for entry in load_spec(spec_path):
        family = family_of(entry.name)
        if not family or (families and family not in families) or (ops and entry.name not in ops):
            continue
        every = [
            m
            for f in entry.backward + entry.forward
            if derivative(f).kind is Kind.WRITTEN
            for m in mutants_of(entry, f, family)
        ]
        by_kind = defaultdict(list)
        for m in every:
            if not kinds or m.kind in kinds:
                by_kind[m.kind].append(m)
        picked: list[Mutant] = []
        while len(picked) < per_op and any(by_kind.values()):  # round robin over kinds, rarest first
            for kind in sorted(by_kind, key=lambda k: len(by_kind[k])):
                if by_kind[kind] and len(picked) < per_op:
                    picked.append(by_kind[kind].pop(0))
        if picked:
            chosen.append((entry, picked))
    return chosen


def _map(jobs: int, items: list):
    if jobs <= 1:
        return map(_work, items)
    pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"))
    return pool.map(_work, items, chunksize=1)


def summarize(verdicts: list[dict]) -> dict:
    """Kill rate overall, per family and per kind, and the survivors."""

    def rate(vs):
        n = len(vs)
        k = sum(v["killed"] for v in vs)
        return {"mutants": n, "killed": k, "kill_rate": round(k / n, 4) if n else None}

    by = lambda key: {g: rate([v for v in verdicts if v[key] == g]) for g in sorted({v[key] for v in verdicts})}  # noqa: E731
    return {
        "overall": rate(verdicts),
        "per_family": by("family"),
        "per_kind": by("kind"),
        "survivors": [v for v in verdicts if not v["killed"]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxderiv.check.mutate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default=None, help="spec file to mutate (default: the newest shipped file)")
    parser.add_argument("--families", default=None, help="comma-separated forward families (unary,binary,...)")
    parser.add_argument("--ops", default=None, help="comma-separated entry names")
    parser.add_argument("--per-op", type=int, default=3, help="mutants per entry, spread over kinds")
    parser.add_argument("--kinds", default=None, help="comma-separated mutant kinds (default all): " + ", ".join(KINDS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", default=None, help="write every verdict and the summary here")
    a = parser.parse_args(argv)
    spec_path = a.spec or str(shipped_spec_files()[-1])
    split = lambda s: s.split(",") if s else None  # noqa: E731
    start = time.perf_counter()
    chosen = select(spec_path, split(a.families), split(a.ops), a.per_op, split(a.kinds))
    baselines = {r["op"]: r["callers"] for r in _map(a.jobs, [("baseline", e) for e, _ in chosen])}
    skipped = sorted(n for n, callers in baselines.items() if callers is None)
    work = [("mutant", m, e, baselines[e.name]) for e, ms in chosen if baselines[e.name] is not None for m in ms]
    verdicts = []
    for v in _map(a.jobs, work):
        verdicts.append(v)
        mark = "killed " if v["killed"] else "SURVIVED"
        print(f"{mark} {v['op']} [{v['key']}] {v['kind']}: {v['mutated'][:100]}", flush=True)
    summary = summarize(verdicts) | {"baseline_not_passing": skipped, "seconds": round(time.perf_counter() - start, 1)}
    o = summary["overall"]
    print(
        f"\n{o['killed']}/{o['mutants']} mutants killed ({100 * (o['kill_rate'] or 0):.1f}%) in {summary['seconds']} s"
    )
    for group in ("per_family", "per_kind"):
        print(group + ": " + ", ".join(f"{g} {r['killed']}/{r['mutants']}" for g, r in summary[group].items()))
    if skipped:
        print("not mutated (unmutated entry does not pass): " + ", ".join(skipped))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"summary": summary, "verdicts": verdicts}, fh, indent=1)
    return 0 if not summary["survivors"] else 1


if __name__ == "__main__":
    sys.exit(main())
