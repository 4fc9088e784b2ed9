"""Check results: one row per op and mode, a summary, JSON and Markdown."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Iterable

__all__ = ["Row", "Report", "STATUSES"]

# known_failure: a check the op's record declares failing (opdb.known_failure) ran and failed;
# no_forward: the entry has no forward implementation, so nothing could be checked.
STATUSES = ("passed", "failed", "error", "known_failure", "no_forward", "not_applicable")


@dataclasses.dataclass
class Row:
    op: str  # ATen name, e.g. "add.Tensor"
    mode: str  # one of checker.MODES
    status: str  # one of STATUSES
    max_abs_err: float | None = None  # worst absolute difference over samples and references
    max_rel_err: float | None = None  # worst relative difference
    reason: str = ""  # why it failed, errored, failed as declared or was not checked
    seconds: float = 0.0  # wall time of this check
    formula: str = ""  # which formula the mode evaluated
    spec: str = ""  # the spec file the entry's formulas came from
    proof: str = ""  # "symbolic" or "numerical" when sympy proved the mode's formulas (real inputs)
    repro: str = ""  # a failed or errored row: the command line that checks this op, mode and sample again
    complex_samples: int = 0  # how many of the compared samples had complex inputs
    warned: str = ""  # warnings the op's formulas emitted while checked (as torch's backward does)

    def to_json(self) -> dict:
        """The row as a JSON-ready dict; `repro` and `warned` only where the row has them."""
        out = dataclasses.asdict(self)
        for key in ("repro", "warned"):
            if not out[key]:
                del out[key]
        return out


class Report:
    """All rows of a check run. `bool(report)` is False iff anything failed or errored."""

    def __init__(self, rows: Iterable[Row] = (), versions: dict[str, str] | None = None):
        self.rows: list[Row] = list(rows)
        # spec file -> its PyTorch release and how it was found ("PyTorch 1.7 (detected from content: ...)")
        self.versions: dict[str, str] = dict(versions or {})

    def __bool__(self) -> bool:
        return not self.failures

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    @property
    def failures(self) -> list[Row]:
        """The rows that failed or errored."""
        return [r for r in self.rows if r.status in ("failed", "error")]

    def counts(self) -> dict[str, Counter]:
        """Per mode, how many rows have each status."""
        out: dict[str, Counter] = {}
        for r in self.rows:
            out.setdefault(r.mode, Counter())[r.status] += 1
        return out

    def summary(self) -> str:
        """A table of statuses per mode, then one line per failure."""
        lines = [f"{'mode':<11} " + " ".join(f"{s:>14}" for s in STATUSES)]
        for mode, c in self.counts().items():
            lines.append(f"{mode:<11} " + " ".join(f"{c.get(s, 0):>14}" for s in STATUSES))
        on_complex = Counter(r.mode for r in self.rows if r.complex_samples and r.status in ("passed", "failed"))
        if on_complex:
            entries = len({(r.op, r.spec) for r in self.rows if r.complex_samples and r.status in ("passed", "failed")})
            lines.append(
                f"compared on complex inputs: {entries} entries ("
                + ", ".join(f"{m} {n}" for m, n in on_complex.items())
                + ")"
            )
        proved = Counter(r.mode for r in self.rows if r.proof and r.status == "passed")
        if proved:
            lines.append("also proved with sympy, over the reals: " + ", ".join(f"{m} {n}" for m, n in proved.items()))
        for r in self.failures:
            where = f" ({r.spec})" if r.spec else ""
            lines.append(f"{r.status.upper()}: {r.op}{where} [{r.mode}] {r.reason}")
            if r.repro:
                lines.append(f"    repro: {r.repro}")
        lines += [f"spec {f}: {v}" for f, v in self.versions.items()]
        return "\n".join(lines)

    def to_json(self) -> list[dict]:
        """Every row as a JSON-ready dict."""
        return [r.to_json() for r in self.rows]

    def write_json(self, path) -> None:
        """Write `to_json()` to a file."""
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=1)

    def to_markdown(self) -> str:
        """Every row as a Markdown table."""
        out = [
            "| op | spec | mode | status | proof | max abs err | max rel err | formula | reason | repro |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        fmt = lambda v: "" if v is None else f"{v:.2e}"
        for r in self.rows:
            reason = r.reason.replace("|", "\\|").replace("\n", " ")
            repro = f"`{r.repro}`" if r.repro else ""
            errors = f"{fmt(r.max_abs_err)} | {fmt(r.max_rel_err)}"
            out.append(
                f"| `{r.op}` | {r.spec} | {r.mode} | {r.status} | {r.proof} | {errors} | {r.formula} | {reason} | {repro} |"
            )
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return f"<Report {len(self.rows)} rows, {len(self.failures)} failures>"
