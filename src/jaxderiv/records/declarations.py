"""Declaring op records: the small functions a family module of `jaxderiv.forward` calls beside
its forwards (`samples`, `domain`, `complex_ok`, `known_failure`, `kinks`, `torch_equivalent`...),
each adding to one entry's record, or the same fields given to `forward.impl(...)` directly.

A field declared twice for one entry is an error, so a fact is stated once. `freeze` turns the
drafts into records once every family module has run (`jaxderiv.check.opdb.database()` does);
an entry declared nowhere has the empty record (schema-default samples on [-2, 2], real inputs,
every mode checked).
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
from typing import Any, Callable, Iterator, Mapping

from .record import (
    MAPPINGS,
    FIRST_ORDER_MODES,
    Difference,
    Equivalent,
    Gauge,
    NotApplicable,
    OpRecord,
    ReferenceTolerance,
    Sample,
)
from .symbolic import Definition

__all__ = [
    "declare",
    "freeze",
    "frozen",
    "lookup",
    "replaced",
    "samples",
    "domain",
    "complex_ok",
    "compiled_apart",
    "real_only",
    "known_failure",
    "reference_tolerance",
    "not_applicable",
    "without_meaning",
    "definition",
    "kinks",
    "torch_equivalent",
    "parity_in_float32",
    "parity_tolerance",
    "parity_samples",
    "gauge",
    "not_compared",
    "parity_differs",
]

_drafts: dict[str, dict[str, Any]] = {}
_records: dict[str, OpRecord] | None = None


def declare(name: str, **fields: Any) -> None:
    """Add `fields` (OpRecord's) to entry `name`'s record. A mapping field merges by mode; any
    field stated twice with another value is an error naming both."""
    if _records is not None:
        raise RuntimeError(f"op records already built: declare {name!r} in its family module of jaxderiv.forward")
    unknown = set(fields) - _FIELDS
    if unknown:
        raise TypeError(
            f"{name}: no record field {', '.join(sorted(unknown))} (OpRecord has {', '.join(sorted(_FIELDS))})"
        )
    draft = _drafts.setdefault(name, {})
    for key, value in fields.items():
        if key in MAPPINGS:
            merged = dict(draft.get(key, {}))
            clash = [m for m in value if m in merged and merged[m] != value[m]]
            if clash:
                raise ValueError(f"{name}: {key} for {', '.join(clash)} declared twice")
            merged.update(value)
            draft[key] = merged
        elif key in draft and draft[key] != value:
            raise ValueError(f"{name}: {key} declared twice ({draft[key]!r} and {value!r})")
        else:
            draft[key] = value


_FIELDS = frozenset(f.name for f in dataclasses.fields(OpRecord)) - {"name", "family"}


def freeze(family_of: Callable[[OpRecord], str]) -> Mapping[str, OpRecord]:
    """The records, built from the drafts once (later calls return the same); `family_of(record)`
    names the forward module of each (the family modules must all have run before)."""
    global _records
    if _records is None:
        built = (OpRecord(name, **draft) for name, draft in _drafts.items())
        _records = {r.name: dataclasses.replace(r, family=family_of(r)) for r in built}
    return types.MappingProxyType(_records)


def frozen() -> bool:
    """Whether the records are built."""
    return _records is not None


def lookup(name: str) -> OpRecord:
    """Entry `name`'s record (the empty record where nothing is declared); the records must be built."""
    if _records is None:
        raise RuntimeError("op records not built yet: call jaxderiv.check.opdb.database() first")
    return _records.get(name) or OpRecord(name)


@contextlib.contextmanager
def replaced(name: str, **changes: Any) -> Iterator[OpRecord]:
    """Entry `name`'s record with `changes` for the duration (tests: a declaration taken away or added)."""
    if _records is None:
        raise RuntimeError("op records not built yet: call jaxderiv.check.opdb.database() first")
    old = _records.get(name)
    new = dataclasses.replace(old or OpRecord(name), **changes)
    _records[name] = new
    try:
        yield new
    finally:
        if old is None:
            del _records[name]
        else:
            _records[name] = old


def samples(*names: str):
    """Decorator: a function `(op, rng, dtype=np.float64) -> [Sample]` gives these entries' samples."""

    def deco(fn):
        for n in names:
            declare(n, samples=fn)
        return fn

    return deco


def domain(lo: float, hi: float, *names: str) -> None:
    """Tensor inputs of these entries' default samples are drawn from [lo, hi]."""
    for n in names:
        declare(n, domain=(lo, hi))


def complex_ok(*names: str) -> None:
    """These entries are also checked on complex128 inputs (their formulas have the complex form)."""
    for n in names:
        declare(n, complex=True)


def compiled_apart(reason: str, *names: str) -> None:
    """Compile each of these entries' (mode, sample) checks as its own XLA program instead of
    one program for the entry: for entries so large that compiling them together costs more than
    the per-program overhead saves (the reason gives the measured times)."""
    for n in names:
        declare(n, compiled_apart=reason)


def real_only(reason: str, *names: str, modes: tuple[str, ...] = FIRST_ORDER_MODES) -> None:
    """Check these complex-capable entries on real inputs only in `modes`, for the stated reason
    (a mode that runs an older file's formulas, written before they took complex inputs)."""
    for n in names:
        declare(n, real_only={m: reason for m in modes})


def known_failure(reason: str, *names: str, modes: tuple[str, ...] = FIRST_ORDER_MODES) -> None:
    """Declare that these entries' checks fail in `modes` for a stated reason. The checker still
    runs them: a failure is reported as `known_failure` with the reason and the measured error, a pass
    as `passed`, so a fixed gap shows at once."""
    for n in names:
        declare(n, known_failures={m: reason for m in modes})


def reference_tolerance(
    rtol: float, atol: float, reason: str, *names: str, when: Callable[[Any], bool] | None = None
) -> None:
    """The checker compares these entries' float64 derivatives with JAX autodiff of the forward at
    `rtol`/`atol` instead of `Tolerance.ref_rtol`/`ref_atol` (for the ops `when(op)` selects), for
    the stated reason: say which part of the formula runs in lower precision and the error measured."""
    for n in names:
        declare(n, reference_tolerance=ReferenceTolerance(rtol, atol, reason, when))


def not_applicable(
    reason: str, *names: str, modes: tuple[str, ...] | None = None, when: Callable[[Any], bool] | None = None
) -> None:
    """Declare that these entries have no JAX meaning (or, with `modes`, that those modes have
    none: a second derivative the spec does not define, for the entries `when(op)` selects):
    the report lists them as `not_applicable` with the reason instead of checking them."""
    for n in names:
        if modes is None:
            declare(n, not_applicable=reason)
        else:
            declare(n, not_applicable_modes={m: NotApplicable(reason, when) for m in modes})


def without_meaning(reason: str, *names: str) -> None:
    """These elementwise entries have no sympy definition for the proofs, for the stated reason
    (random, complex-valued, boolean-valued, ...)."""
    for n in names:
        declare(n, without_meaning=reason)


def definition(
    name: str,
    fn: Callable[..., Any],
    *args: str,
    lo: float = -2.0,
    hi: float = 2.0,
    ranges: tuple[tuple[str, float, float], ...] = (),
    fixed: tuple[tuple[str, Any], ...] = (),
    booleans: tuple[str, ...] = (),
    derived: tuple[tuple[str, Callable[..., Any], tuple[str, ...]], ...] = (),
) -> None:
    """Entry `name` in sympy, for the proofs: `fn` of the symbols of the schema arguments `args`
    (an expression, or a tuple of one per output), written with `symbolic.sp` so that sympy is
    imported only when the proofs call it. Tensor inputs are sampled in [lo, hi], other symbols
    in 0.5 .. 1.5 unless `ranges` says otherwise; `fixed` gives values of arguments left
    unmodelled, `booleans` the masks, `derived` the inputs that stand for a function of others."""
    declare(
        name,
        definition=Definition(fn, args, (lo, hi), tuple(ranges), tuple(fixed), tuple(booleans), tuple(derived)),
    )


def kinks(name: str, *argument_tuples: tuple) -> None:
    """Inputs of entry `name` where finite differences cannot judge (kinks, ties, zeros), on
    which the parity run compares with torch."""
    declare(name, kinks=tuple(argument_tuples))


def torch_equivalent(equivalent: Equivalent, *names: str) -> None:
    """The parity run asks torch `equivalent.call` for these entries, which torch cannot run by name."""
    for n in names:
        declare(n, torch_equivalent=equivalent)


def parity_in_float32(reason: str, *names: str) -> None:
    """The parity run compares these entries in float32 on both sides, for the stated reason."""
    for n in names:
        declare(n, parity_float32=reason)


def parity_tolerance(rtol: float, reason: str, *names: str) -> None:
    """The parity run compares these entries at relative tolerance `rtol` instead of its RTOL,
    for the stated reason (say what torch computes less precisely, and the error measured)."""
    for n in names:
        declare(n, parity_rtol=(rtol, reason))


def parity_samples(name: str, *samples_: "Sample") -> None:
    """Samples of the parity run for `name`, instead of the checker's."""
    declare(name, parity_samples=tuple(samples_))


def gauge(declared: Gauge, *names: str) -> None:
    """These entries' outputs `declared.columns` (`.rows`) are defined up to a unit factor per
    column (row): comparisons with torch align the factors before comparing."""
    for n in names:
        declare(n, gauge=declared)


def not_compared(reason: str, *names: str) -> None:
    """The parity run does not compare these entries with torch, for the stated reason."""
    for n in names:
        declare(n, not_compared=reason)


def parity_differs(
    columns: tuple[str, ...],
    reason: str,
    *names: str,
    torch_spec: bool = False,
    seed_spec: bool = True,
    newest_spec: bool | None = None,
) -> None:
    """These entries' parity `columns` differ from torch for the stated reason (`torch_spec`: with
    torch's own file's formulas too; `seed_spec=False`: with torch's own file's only;
    `newest_spec`: with torch 2.14.1's, None meaning as with torch's own file's)."""
    for n in names:
        declare(n, difference=Difference(tuple(columns), reason, torch_spec, seed_spec, newest_spec))
