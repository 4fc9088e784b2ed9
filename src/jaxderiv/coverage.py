"""How much of a spec file jaxderiv covers: parsed, translated, implemented, verified; missing helpers."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from . import helpers
from .forward import implementation
from .errors import JaxderivError
from .grammar import parse_formula
from .op import Op
from .spec import AUTO_FORMULAS, load_spec, shipped_spec_files
from .translate import unresolved_names

__all__ = ["coverage", "Coverage", "FileCoverage"]


@dataclasses.dataclass
class FileCoverage:
    file: str
    entries: int = 0
    formulas: int = 0
    formulas_parsed: int = 0
    entries_translated: int = 0  # every formula of the entry builds into a rule
    entries_with_forward: int = 0  # a forward implementation exists
    entries_with_result_formula: int = 0
    verified: dict = dataclasses.field(default_factory=dict)  # mode -> entries passed
    missing: Counter = dataclasses.field(default_factory=Counter)  # helper -> entries needing it
    errors: list = dataclasses.field(default_factory=list)  # (entry, message) of formulas that fail

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["missing"] = dict(self.missing.most_common())
        return d


@dataclasses.dataclass
class Coverage:
    files: list[FileCoverage]

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.files]

    def table(self, top: int = 25) -> str:
        lines = []
        for f in self.files:
            lines.append(f"{f.file}")
            lines.append(f"  entries {f.entries}; formulas parsed {f.formulas_parsed}/{f.formulas}; "
                         f"entries translated {f.entries_translated}/{f.entries}; with result formula {f.entries_with_result_formula}; "
                         f"with forward implementation {f.entries_with_forward}/{f.entries}")
            if f.verified:
                lines.append("  verified (passed): " + ", ".join(f"{m} {n}" for m, n in f.verified.items()))
            if f.missing:
                lines.append(f"  missing helpers and methods, by entries that need them (top {top}):")
                for name, n in f.missing.most_common(top):
                    lines.append(f"    {n:4d}  {name}")
        return "\n".join(lines)


def _file_coverage(path: str, verify: bool) -> FileCoverage:
    from .check import check_all
    from .registry import Registry

    helpers.load()
    spec = load_spec(path)
    fc = FileCoverage(file=str(path), entries=len(spec))
    implemented = []
    for entry in spec:
        fc.entries_with_result_formula += bool(entry.forward)
        ok = True
        needs = set()
        for f in entry.backward + entry.forward:
            if f.text in AUTO_FORMULAS:
                continue
            fc.formulas += 1
            try:
                tree = parse_formula(f.text)
            except JaxderivError as e:
                ok = False
                fc.errors.append((entry.name, str(e.located(f.location))))
                continue
            fc.formulas_parsed += 1
            needs |= unresolved_names(tree)
        for name in needs:
            fc.missing[name] += 1
        if needs or not ok:
            continue
        try:
            Op(entry, None)
        except JaxderivError as e:
            fc.errors.append((entry.name, str(e)))
            continue
        fc.entries_translated += 1
        if implementation(entry.name) is not None:
            fc.entries_with_forward += 1
            implemented.append(entry.name)
    if verify and implemented:
        report = check_all(ops=implemented, registry=Registry(spec))
        fc.verified = {m: sum(1 for r in report if r.mode == m and r.status == "passed") for m in ("vjp", "jvp", "vjp_vjp")}
    return fc


def coverage(spec_path: str | Path | None = None, verify: bool = False) -> Coverage:
    """Coverage of one spec file, or of each shipped file when no path is given."""
    paths = [spec_path] if spec_path else [str(p) for p in shipped_spec_files()]
    return Coverage([_file_coverage(p, verify) for p in paths])
