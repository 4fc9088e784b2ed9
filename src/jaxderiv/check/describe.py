"""What jaxderiv knows about one op, on one page: its spec entries, forward implementation and op record.

`python -m jaxderiv op clamp.Tensor` prints it; `describe(name)` returns the text.
"""

from __future__ import annotations

import inspect
import os

from ..forward import implementation
from ..spec import Spec, load_spec, newest_spec_file, shipped_spec_files
from ..records import Difference, OpRecord
from .opdb import record

__all__ = ["describe"]


def _where(fn) -> str:
    """`forward/unary.py:41` for a function of the package; its module otherwise."""
    try:
        path, line = inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return getattr(fn, "__module__", "?")
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{os.path.relpath(path, package) if path else '?'}:{line}"


def _show(key: str, value) -> str:
    if callable(value) and hasattr(value, "__name__"):
        return f"{value.__name__} ({_where(value)})"
    if isinstance(value, Difference):
        files = " and ".join(
            w for w, on in (("the seed files", value.seed_spec), ("torch's own file", value.torch_spec)) if on
        )
        return f"{', '.join(value.columns)} differ ({files}): {value.reason}"
    if key in ("kinks", "parity_samples"):  # argument tuples of arrays: how many, not the arrays
        return f"{len(value)} input(s)"
    if hasattr(value, "items"):  # mode -> reason: modes sharing a reason on one line
        modes: dict[str, list[str]] = {}
        for mode, v in value.items():
            modes.setdefault(str(getattr(v, "reason", v)), []).append(mode)
        return "; ".join(f"{', '.join(ms)}: {reason}" for reason, ms in modes.items())
    return str(getattr(value, "reason", value))


def describe(name: str, spec: Spec | None = None) -> str:
    """The entries of `name` in `spec` (default: every shipped file, the seeds and torch 2.14.1's)
    with their formulas and file:line, where its forward is, and every field its op record declares."""
    files = [*shipped_spec_files(), newest_spec_file()]
    specs = [spec] if spec is not None else [load_spec(p) for p in files]
    lines = [name]
    found = [s[name] for s in specs if name in s]
    for entry in found:
        where = entry.location
        lines.append(f"  entry {os.path.basename(where.file or '')}:{where.line}")
        for f in entry.backward + entry.forward:
            lines.append(f"    {f.key}: {f.text}")
        if entry.non_differentiable:
            lines.append(f"    non_differentiable: {', '.join(entry.non_differentiable)}")
    if not found:
        lines.append("  entry: none in " + ", ".join(os.path.basename(f) for s in specs for f in s.files))
    fn = implementation(name)
    lines.append(f"  forward: {_where(fn) if fn is not None else 'none'}")
    r = record(name)
    declared = r.declared()
    family = declared.pop("family", "")
    declared.pop("definition", None)  # shown on a line of its own below, with without_meaning
    declared.pop("without_meaning", None)
    lines.append(
        f"  record: forward/{family}.py"
        if family
        else "  record: none declared (schema-default samples on [-2, 2], real inputs, every mode)"
    )
    lines.extend(f"    {k}: {_show(k, v)}" for k, v in declared.items())
    lines.append(f"  sympy definition: {_definition(r)}")
    return "\n".join(lines)


def _definition(r: OpRecord) -> str:
    """Whether the proofs have the op's meaning in sympy (its record's definition), or why not."""
    if r.definition is not None:
        return f"of {', '.join(r.definition.args)} (forward/{r.family}.py)"
    return f"none: {r.without_meaning}" if r.without_meaning else "none"
