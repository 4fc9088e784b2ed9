"""How much of a spec file jaxderiv covers: parsed, translated, implemented, verified; missing helpers."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path

from .. import helpers
from ..forward import implementation
from ..errors import JaxderivError
from ..normalize import Kind, normalize
from ..op import Op
from ..spec import load_spec, shipped_spec_files
from ..translate import unresolved_names

__all__ = ["coverage", "Coverage", "FileCoverage"]


@dataclasses.dataclass
class FileCoverage:
    file: str
    version: str = ""  # its PyTorch release and how that was found
    entries: int = 0
    entries_rejected: int = 0  # entries the file has that could not be read (not in `entries`)
    rejected: list = dataclasses.field(default_factory=list)  # why, each naming file:line
    entries_parsed: int = 0  # loaded entries every formula of which parses
    formulas: int = 0
    formulas_parsed: int = 0
    entries_translated: int = 0  # every formula of the entry builds into a rule
    entries_with_forward: int = 0  # a forward implementation exists
    entries_with_result_formula: int = 0
    verified: dict = dataclasses.field(default_factory=dict)  # mode -> entries passed
    # With `run`: entries with a forward whose vjp and jvp ran on their first checker sample
    # (None: not run). An entry whose formulas raise there is not counted as translated.
    entries_run: int | None = None
    run_errors: list = dataclasses.field(default_factory=list)  # (entry, why) of formulas that raised
    missing: Counter = dataclasses.field(default_factory=Counter)  # helper -> entries needing it
    errors: list = dataclasses.field(default_factory=list)  # (entry, message) of formulas that fail
    failing: Counter = dataclasses.field(default_factory=Counter)  # why entries fail to build -> entries
    seed_entries: int = 0  # entries the shipped seed files also have (0 when this is a shipped file)
    seed_entries_translated: int = 0
    seed_untranslated: list = dataclasses.field(default_factory=list)  # those shared entries that do not build

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["missing"] = dict(self.missing.most_common())
        d["failing"] = dict(self.failing.most_common())
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
            if f.version:
                lines.append(f"  version {f.version}")
            if f.entries_rejected:
                lines.append(f"  entries that could not be read: {f.entries_rejected} (not counted below)")
                lines.extend(f"    {why}" for why in f.rejected[:top])
            lines.append(
                f"  entries {f.entries}; formulas parsed {f.formulas_parsed}/{f.formulas}; "
                f"entries translated {f.entries_translated}/{f.entries}; with result formula {f.entries_with_result_formula}; "
                f"with forward implementation {f.entries_with_forward}/{f.entries}"
            )
            if f.entries_run is None:
                lines.append("  formulas not run on samples (--run counts only entries whose formulas run)")
            else:
                lines.append(
                    f"  run on their first checker sample (vjp and jvp): {f.entries_run} of the "
                    f"{f.entries_run + len(f.run_errors)} built entries with a forward; {len(f.run_errors)} raised "
                    "(not counted as translated)"
                )
                lines.extend(f"    {name}: {why}" for name, why in f.run_errors[:top])
            if f.verified:
                lines.append("  verified (passed): " + ", ".join(f"{m} {n}" for m, n in f.verified.items()))
            if f.seed_entries:
                lines.append(
                    f"  entries shared with the shipped seed files: translated {f.seed_entries_translated}/{f.seed_entries}"
                )
            if f.missing:
                lines.append(f"  missing helpers and methods, by entries that need them (top {top}):")
                for name, n in f.missing.most_common(top):
                    lines.append(f"    {n:4d}  {name}")
            if f.failing:
                lines.append(f"  other translation errors, by entries they stop (top {top}):")
                for cause, n in f.failing.most_common(top):
                    lines.append(f"    {n:4d}  {cause}")
            if f.seed_untranslated:
                from ..check.opdb import record

                meaningless = [n for n in f.seed_untranslated if record(n).not_applicable]
                rest = [n for n in f.seed_untranslated if n not in meaningless]
                lines.append("  shared with the seed files but not translated: " + (", ".join(rest) or "none"))
                if meaningless:
                    lines.append(
                        f"    and {len(meaningless)} with no JAX meaning (the seed's do not translate either): "
                        + ", ".join(meaningless)
                    )
        return "\n".join(lines)


# `file:line, entry 'x', key 'y', column 3: ` before a translation error's cause.
_LOCATION = re.compile(r"^.*?(column \d+|key '[^']*'|entry '[^']*'): ")


def _cause(message: str) -> str:
    """A translation error without its location, and without the list of variables an unknown
    name message appends: the same cause reads the same for every entry."""
    cause = _LOCATION.sub("", message, count=1)
    return cause.split(": not a variable of this formula")[0]


def _seed_names(path: str | Path) -> set[str]:
    """Names of the shipped seed files' entries, unless `path` is one of those files."""
    shipped = shipped_spec_files()
    if any(Path(path).resolve() == p.resolve() for p in shipped):
        return set()
    return {e.name for p in shipped for e in load_spec(p)}


def _run_on_a_sample(fc: FileCoverage, implemented: list[str], registry, seed: set, progress, cache) -> None:
    """Run each implemented entry's vjp and jvp on its first checker sample; an entry whose
    formulas raise there (a formula that builds but fails when run) is not translated."""
    from ..check import check_all

    report = check_all(
        ops=implemented, modes=("vjp", "jvp"), registry=registry, sample=0, progress=progress, compilation_cache=cache
    )
    raised: dict[str, str] = {}
    for r in report:
        if r.status == "error" and r.op not in raised:
            raised[r.op] = r.reason
    fc.run_errors = sorted(raised.items())
    fc.entries_run = len(implemented) - len(raised)
    fc.entries_translated -= len(raised)
    for name, why in raised.items():
        fc.failing[_cause(why)] += 1
        if name in seed:
            fc.seed_entries_translated -= 1
            fc.seed_untranslated.append(name)


def _file_coverage(
    path: str | Path, verify: bool, torch_version=None, run: bool = False, progress=None, cache=None
) -> FileCoverage:
    from ..check import check_all
    from ..registry import Registry

    import warnings

    from ..spec import SpecWarning

    helpers.load()
    # Per entry: one entry that cannot be read is counted and named, the others are measured.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecWarning)
        spec = load_spec(path, torch_version=torch_version, strict=False)
    seed = _seed_names(path)
    fc = FileCoverage(
        file=str(path),
        version=str(spec.version),
        entries=len(spec),
        entries_rejected=len(spec.rejected),
        rejected=[str(e) for e in spec.rejected],
    )
    implemented = []
    for entry in spec:
        fc.entries_with_result_formula += bool(entry.forward)
        ok = True
        needs = set()
        derivatives = normalize(entry)
        for d in derivatives.backward + derivatives.forward:
            if d.kind in (Kind.AUTO_ELEMENT_WISE, Kind.AUTO_LINEAR):
                continue
            fc.formulas += 1
            if d.parsed is None:
                assert d.error is not None  # set exactly when the text does not parse
                ok = False
                fc.errors.append((entry.name, str(d.error.located(d.location))))
                continue
            fc.formulas_parsed += 1
            needs |= unresolved_names(d.parsed, entry.version.release if entry.version is not None else None)
        fc.entries_parsed += ok
        shared = entry.name in seed
        fc.seed_entries += shared
        if entry.dispatch not in (None, "Default"):
            # Formulas for nested or CUDA tensors only: what they would need is beside the point.
            needs = set()
        for name in needs:
            fc.missing[name] += 1
        if needs or not ok:
            if shared:
                fc.seed_untranslated.append(entry.name)
            continue
        try:
            Op(entry, None)
        except JaxderivError as e:
            fc.errors.append((entry.name, str(e)))
            fc.failing[_cause(str(e))] += 1
            if shared:
                fc.seed_untranslated.append(entry.name)
            continue
        fc.entries_translated += 1
        fc.seed_entries_translated += shared
        if implementation(entry.name) is not None:
            fc.entries_with_forward += 1
            implemented.append(entry.name)
    if run and implemented:
        _run_on_a_sample(fc, implemented, Registry(spec), seed, progress, cache)
    if verify and implemented:
        report = check_all(ops=implemented, registry=Registry(spec))
        fc.verified = {
            m: sum(1 for r in report if r.mode == m and r.status == "passed") for m in ("vjp", "jvp", "vjp_vjp")
        }
    return fc


def coverage(
    spec_path: str | Path | None = None,
    verify: bool = False,
    torch_version=None,
    *,
    run: bool = False,
    progress=None,
    compilation_cache=None,
) -> Coverage:
    """Coverage of one spec file (of release `torch_version` if given, else detected), or of
    each default shipped file when no path is given. `run`: also run every implemented entry's
    vjp and jvp on its first checker sample and count as translated only the entries whose
    formulas run (minutes; `progress` and `compilation_cache` as for `check_all`)."""
    if torch_version is not None and not spec_path:
        raise ValueError("torch_version applies to one spec file")
    paths = [spec_path] if spec_path else [str(p) for p in shipped_spec_files()]
    return Coverage([_file_coverage(p, verify, torch_version, run, progress, compilation_cache) for p in paths])
