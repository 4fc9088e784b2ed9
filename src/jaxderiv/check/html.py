"""A check report as one self-contained HTML page: summary, per-family table, per-op rows."""

from __future__ import annotations

import datetime
import os
from collections import Counter, defaultdict
from html import escape
from typing import Mapping

from ..spec import Entry
from .report import STATUSES, Report, Row

__all__ = ["entries_of", "family_of", "to_html"]

_COLORS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "error": "#cf222e",
    "known_failure": "#9a6700",
    "no_forward": "#9a6700",
    "not_applicable": "#57606a",
}

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #1f2328; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; margin: .5em 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
td:first-child code { white-space: nowrap; word-break: normal; }
.status { font-weight: 600; }
.ok { color: #1a7f37; } .bad { color: #cf222e; }
details summary { cursor: pointer; }
"""


def family_of(op: str) -> str:
    """The op's family: the forward module that implements it (`unary`, `linalg`...)."""
    from ..forward import implementation

    fn = implementation(op)
    if fn is None:
        return "not implemented"
    return fn.__module__.rsplit(".", 1)[-1]


def entries_of(specs) -> dict[tuple[str, str], Entry]:
    """(op, spec file name) -> the entry, for the given Spec objects: a row's provenance."""
    return {(e.name, os.path.basename(e.location.file or "")): e for spec in specs for e in spec}


def _where(entry: Entry | None, row: Row) -> str:
    return f"{os.path.basename(entry.location.file or '')}:{entry.location.line}" if entry is not None else row.spec


def _formula_cell(entry: Entry | None, row: Row) -> str:
    """The mode's label, and the entry's formula texts with their lines to unfold."""
    label = f"<code>{escape(row.formula)}</code>"
    if entry is None:
        return label
    chosen = entry.forward if row.mode == "jvp" and entry.forward else entry.backward
    texts = "\n".join(f"{f.key}: {f.text}  (line {f.location.line})" for f in chosen)
    return f"<details><summary>{label}</summary><code>{escape(texts)}</code></details>" if texts else label


def _status(s: str) -> str:
    return f'<span class="status" style="color:{_COLORS.get(s, "#000")}">{escape(s)}</span>'


def _proof(row: Row) -> str:
    return f'<br><small title="sympy proof over the reals">proved ({escape(row.proof)})</small>' if row.proof else ""


def _repro(row: Row) -> str:
    return f'<br><small>reproduce:</small> <code class="repro">{escape(row.repro)}</code>' if row.repro else ""


def _err(v) -> str:
    return "" if v is None else f"{v:.1e}"


def _counts_table(groups: Mapping[str, list[Row]], first: str) -> str:
    head = "".join(f"<th>{escape(s)}</th>" for s in STATUSES)
    rows = []
    for key, members in groups.items():
        c = Counter(r.status for r in members)
        cells = "".join(f'<td class="num">{c.get(s, 0) or ""}</td>' for s in STATUSES)
        rows.append(f'<tr><td>{escape(key)}</td>{cells}<td class="num">{sum(r.seconds for r in members):.1f}</td></tr>')
    return f"<table><tr><th>{escape(first)}</th>{head}<th>seconds</th></tr>{''.join(rows)}</table>"


def to_html(
    report: Report,
    *,
    title: str = "jaxderiv check",
    entries: Mapping[tuple[str, str], Entry] | None = None,
    families: Mapping[str, str] | None = None,
    elapsed: float | None = None,
) -> str:
    """The report as HTML. `entries` gives each (op, spec file) row's entry (see `entries_of`)
    for provenance and formula texts; `families` each op's family (default: `family_of`)."""
    entries = entries or {}
    family = dict(families or {})
    for r in report:
        if r.op not in family:
            family[r.op] = family_of(r.op)
    ok = bool(report)
    verdict = "all checks passed" if ok else f"{len(report.failures)} checks failed or errored"
    n_entries = len({(r.op, r.spec) for r in report})
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    took = f" in {elapsed:.0f} s" if elapsed is not None else ""

    parts = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{_CSS}</style></head><body>',
        f"<h1>{escape(title)}</h1>",
        f'<section id="summary"><h2>Summary</h2><p class="{"ok" if ok else "bad"}"><strong>{escape(verdict)}</strong>: '
        f"{n_entries} entries, {len(report)} checks{took} ({when}).</p>",
        *(f'<p class="version">{escape(f)}: {escape(v)}</p>' for f, v in getattr(report, "versions", {}).items()),
        _counts_table({m: [r for r in report if r.mode == m] for m in dict.fromkeys(r.mode for r in report)}, "mode"),
        "</section>",
    ]
    by_family: dict[str, list[Row]] = defaultdict(list)
    for r in report:
        by_family[family[r.op]].append(r)
    parts += [
        '<section id="families"><h2>Per family</h2>',
        _counts_table(dict(sorted(by_family.items())), "family"),
        "</section>",
    ]

    failures = report.failures
    if failures:
        parts.append(
            '<section id="failures"><h2>Failures</h2><table><tr><th>op</th><th>entry</th><th>mode</th><th>status</th><th>reason</th>'
            "<th>reproduce</th></tr>"
        )
        for r in failures:
            where = _where(entries.get((r.op, r.spec)), r)
            parts.append(
                f"<tr><td><code>{escape(r.op)}</code></td><td>{escape(where)}</td><td>{escape(r.mode)}</td><td>{_status(r.status)}</td><td><code>{escape(r.reason)}</code></td><td><code>{escape(r.repro)}</code></td></tr>"
            )
        parts.append("</table></section>")

    parts.append(
        '<section id="rows"><h2>Every check</h2><table><tr><th>op</th><th>family</th><th>entry (file:line)</th><th>mode</th>'
        "<th>status</th><th>max abs err</th><th>max rel err</th><th>s</th><th>formula used</th><th>reason</th></tr>"
    )
    for r in report:
        entry = entries.get((r.op, r.spec))
        parts.append(
            f"<tr><td><code>{escape(r.op)}</code></td><td>{escape(family[r.op])}</td><td>{escape(_where(entry, r))}</td><td>{escape(r.mode)}</td>"
            f'<td>{_status(r.status)}{_proof(r)}</td><td class="num">{_err(r.max_abs_err)}</td><td class="num">{_err(r.max_rel_err)}</td>'
            f'<td class="num">{r.seconds:.2f}</td><td>{_formula_cell(entry, r)}</td><td><code>{escape(r.reason)}</code>{_repro(r)}</td></tr>'
        )
    parts.append("</table></section></body></html>")
    return "\n".join(parts)
