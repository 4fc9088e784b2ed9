"""What changed between two spec files: entries added, removed, and whose formulas changed."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from ..spec import Entry, Spec, load_spec

if TYPE_CHECKING:
    from .diff_numeric import Verdict

__all__ = ["Change", "SpecDiff", "diff_specs"]


def _formulas(entry: Entry) -> dict[str, str]:
    """key -> formula text, backward and forward keys together; `output_differentiability` too,
    since it changes which outputs get a gradient."""
    out = {f.key: " ".join(f.text.split()) for f in entry.backward + entry.forward}
    if entry.output_differentiability is not None:
        out["output_differentiability"] = str(list(entry.output_differentiability))
    return out


@dataclasses.dataclass
class Change:
    """One entry present in both files whose formulas differ."""

    name: str
    old: Entry
    new: Entry
    keys: dict[str, tuple[str | None, str | None]]  # key -> (old text, new text); None = absent
    schema_changed: bool = False
    status: dict[str, str] = dataclasses.field(default_factory=dict)  # mode -> check status in the new file
    numeric: "Verdict | None" = None  # whether the gradient changes, both files' ops evaluated (diff_numeric)


@dataclasses.dataclass
class SpecDiff:
    old_file: str
    new_file: str
    added: list[Entry]
    removed: list[Entry]
    changed: list[Change]
    unchanged: int
    old_version: str = ""  # each file's PyTorch release and how it was found
    new_version: str = ""
    verdicts: list = dataclasses.field(
        default_factory=list
    )  # diff_numeric.Verdict of each entry not unchanged, if computed
    specs: tuple = dataclasses.field(default=(), repr=False)  # (old Spec, new Spec), for numeric_verdicts

    def numeric(self, progress=None, seed: int = 0) -> list:
        """Evaluate both files' ops on each changed entry (diff_numeric): whether its gradient changes."""
        from ..registry import Registry
        from .diff_numeric import numeric_verdicts

        self.verdicts = numeric_verdicts(self, Registry(self.specs[0]), Registry(self.specs[1]), progress, seed)
        return self.verdicts

    def to_text(self) -> str:
        """The diff for a terminal: counts, then each entry with its changed keys."""
        lines = [
            f"{self.old_file} -> {self.new_file}: {len(self.added)} added, {len(self.removed)} removed, "
            f"{len(self.changed)} changed, {self.unchanged} unchanged",
        ]
        lines += [f"{f}: {v}" for f, v in ((self.old_file, self.old_version), (self.new_file, self.new_version)) if v]
        if self.verdicts:
            from .diff_numeric import counts

            lines.append(
                "numeric (A = old, B = new): " + ", ".join(f"{n} {k}" for k, n in counts(self.verdicts).items())
            )
        if self.added:
            lines += ["", "added:"] + [f"  + {e.name}  ({e.location.line})" for e in self.added]
        if self.removed:
            lines += ["", "removed:"] + [f"  - {e.name}  ({e.location.line})" for e in self.removed]
        if self.changed:
            lines += ["", "changed:"]
            for c in self.changed:
                status = ", ".join(f"{m} {s}" for m, s in c.status.items())
                where = f"{c.old.location.line} -> {c.new.location.line}"
                lines.append(f"  ~ {c.name}  ({where}){'  [' + status + ']' if status else ''}")
                if c.schema_changed:
                    lines.append(f"      schema: {c.old.schema}")
                    lines.append(f"           -> {c.new.schema}")
                for key, (a, b) in c.keys.items():
                    lines.append(f"      {key}: {a if a is not None else '(absent)'}")
                    lines.append(f"      {' ' * len(key)}  -> {b if b is not None else '(absent)'}")
                if c.numeric is not None:
                    lines.append(f"      => {c.numeric}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        """The diff as a JSON-ready dict."""
        return {
            "old": self.old_file,
            "new": self.new_file,
            "added": [e.name for e in self.added],
            "removed": [e.name for e in self.removed],
            "changed": [
                {
                    "name": c.name,
                    "schema_changed": c.schema_changed,
                    "status": c.status,
                    "keys": {k: {"old": a, "new": b} for k, (a, b) in c.keys.items()},
                    **({"numeric": c.numeric.to_json()} if c.numeric is not None else {}),
                }
                for c in self.changed
            ],
            **({"numeric_counts": _counts(self.verdicts)} if self.verdicts else {}),
            "unchanged": self.unchanged,
            "old_version": self.old_version,
            "new_version": self.new_version,
        }


def _counts(verdicts) -> dict[str, int]:
    from .diff_numeric import counts

    return counts(verdicts)


def _load(spec: Spec | str | os.PathLike) -> tuple[Spec, str]:
    if isinstance(spec, Spec):
        files = {e.location.file for e in spec if e.location.file}
        return spec, (os.path.basename(next(iter(files))) if len(files) == 1 else "<spec>")
    return load_spec(spec), os.path.basename(os.fspath(spec))


def diff_specs(
    old: Spec | str | os.PathLike, new: Spec | str | os.PathLike, numeric: bool = False, progress=None, seed: int = 0
) -> SpecDiff:
    """Compare two spec files entry by entry (by ATen name with overload).

    An entry has changed when a formula's text differs (whitespace aside), a key was added or
    dropped, or its `output_differentiability` or signature changed. numeric: also evaluate both
    files' ops on each changed entry's samples and kink inputs (`SpecDiff.numeric`): whether its
    gradient changes or only its spelling; `progress(name)` is called after each.
    """
    a, a_name = _load(old)
    b, b_name = _load(new)
    added = [e for e in b if e.name not in a]
    removed = [e for e in a if e.name not in b]
    changed, unchanged = [], 0
    for e in b:
        if e.name not in a:
            continue
        before, after = _formulas(a[e.name]), _formulas(e)
        keys = {
            k: (before.get(k), after.get(k))
            for k in list(before) + [k for k in after if k not in before]
            if before.get(k) != after.get(k)
        }
        schema_changed = str(a[e.name].schema) != str(e.schema)
        if keys or schema_changed:
            changed.append(Change(e.name, a[e.name], e, keys, schema_changed))
        else:
            unchanged += 1
    result = SpecDiff(a_name, b_name, added, removed, changed, unchanged, str(a.version), str(b.version), specs=(a, b))
    if numeric:
        result.numeric(progress, seed)
    return result
