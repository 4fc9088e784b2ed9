"""The op database: all that jaxderiv's verification knows about one entry, as one frozen record.

In the shape of PyTorch's OpInfo and JAX's GradTestSpec: an entry's samples and domain, whether
it is checked on complex inputs, which modes are known to fail or have no meaning (each scoped
to a mode, with its reason), and what the parity run against torch needs (kink inputs, the torch
call to compare with, known differences). The checker, the parity run, coverage and the tests
read records; none keeps a dict of its own keyed by op names.

Records are declared in the family modules of `check/families` with the small functions below
(`samples`, `domain`, `complex_ok`, `known_failure`, `definition`, ...), each adding to one entry's record;
`database()` imports every family once and freezes the records. An entry declared nowhere has
the empty record (schema-default samples on [-2, 2], real inputs, every mode checked). A field
declared twice for one entry is an error, so a fact is stated once.

    >>> from jaxderiv.check.opdb import record
    >>> record("acos").domain, record("acos").complex
    ((-0.9, 0.9), True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import pkgutil
import sys
import types
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from .symbolic import Definition

if TYPE_CHECKING:
    from ..op import Op
    from .samples import Sample

__all__ = [
    "OpRecord",
    "NotApplicable",
    "Equivalent",
    "ReferenceTolerance",
    "Difference",
    "Gauge",
    "Definition",
    "database",
    "record",
    "without_meaning",
    "definition",
    "replaced",
    "samples",
    "domain",
    "complex_ok",
    "compiled_apart",
    "real_only",
    "known_failure",
    "reference_tolerance",
    "not_applicable",
    "kinks",
    "torch_equivalent",
    "parity_in_float32",
    "parity_tolerance",
    "not_compared",
    "parity_differs",
    "parity_samples",
    "gauge",
    "FIRST_ORDER_MODES",
]

# The modes a declaration holds for unless it names others.
FIRST_ORDER_MODES = ("vjp", "jvp", "vjp_vjp")
SampleFn = Callable[..., "list[Sample]"]  # (op, rng, dtype=np.float64) -> [Sample]


@dataclasses.dataclass(frozen=True)
class NotApplicable:
    """Why one mode of an entry has no meaning, and for which ops of the entry (None: all)."""

    reason: str
    when: Callable[["Op"], bool] | None = None  # selects the ops (of differing schemas) it holds for

    def holds_for(self, op: "Op | None") -> bool:
        """Whether it holds for `op` (any op of the entry when None)."""
        return self.when is None or op is None or self.when(op)


@dataclasses.dataclass(frozen=True)
class ReferenceTolerance:
    """A looser tolerance than the checker's float64 `Tolerance` against JAX autodiff of the
    forward, for a formula that computes part of a float64 derivative in lower precision (as
    torch does), with the measured error, and for which ops of the entry (None: all)."""

    rtol: float
    atol: float
    reason: str
    when: Callable[["Op"], bool] | None = None

    def holds_for(self, op: "Op | None") -> bool:
        """Whether it holds for `op` (any op of the entry when None)."""
        return self.when is None or op is None or self.when(op)


@dataclasses.dataclass(frozen=True)
class Equivalent:
    """The torch call that computes what the op computes, where torch cannot run the op itself.

    `call(aten, a)` gets the sample's arguments by name, as torch values, and returns torch's
    outputs; only that many of the op's outputs are compared (the rest are workspaces).
    """

    call: Callable
    reason: str
    # only where the op's schema is not torch's (a seed signature torch 2.13 changed): False for
    # ops torch cannot run on CPU under any schema
    schema_change: bool = False


@dataclasses.dataclass(frozen=True)
class Difference:
    """Where jaxderiv's results differ from torch's for a known reason: the parity columns that
    differ and why. `torch_spec` says the difference holds for torch's own file as well;
    `seed_spec=False`, that it holds for torch's own file only; `newest_spec`, whether it holds for
    torch 2.14.1's formulas (the default registry's; None: as for torch's own file)."""

    columns: tuple[str, ...]
    reason: str
    torch_spec: bool = False  # also a known difference when the rules are torch's own file's
    seed_spec: bool = True  # a known difference under the seed files' formulas
    newest_spec: bool | None = None  # under torch 2.14.1's (None: as torch_spec)


@dataclasses.dataclass(frozen=True)
class Gauge:
    """Outputs defined only up to a unit factor per column (eigenvectors, singular vectors U) or
    per row (Vh): two correct implementations may return them multiplied by different signs
    (complex: phases). Comparisons with torch align each such column's (row's) factor first and
    carry it over to the tangents and cotangents of that output; complex cotangents are projected
    onto the ones that do not depend on the factor (torch refuses the others)."""

    columns: tuple[int, ...]  # outputs whose columns (last axis) each carry a free unit factor
    rows: tuple[int, ...] = ()  # outputs whose rows (second-to-last axis) do
    reason: str = ""
    # the output whose last axis counts the vectors with a free factor (SVD's S); columns (rows)
    # past that many form an orthonormal basis of a complement (full_matrices), unique only up to
    # a unitary: their values are compared through the space they span
    counted_by: int | None = None


@dataclasses.dataclass(frozen=True)
class OpRecord:
    """Everything verification knows about one derivatives.yaml entry (by its name, `clamp.Tensor`)."""

    name: str
    family: str = ""  # the check/families module that declares it ("" where nothing is declared)
    # --- the checker ---
    samples: SampleFn | None = None  # its sample inputs; None: the schema default (samples.default_samples)
    domain: tuple[float, float] | None = None  # the interval tensor inputs are drawn from; None: [-2, 2]
    complex: bool = False  # also checked on complex128 inputs
    real_only: Mapping[str, str] = dataclasses.field(
        default_factory=dict
    )  # mode -> why that mode is checked on real inputs only
    known_failures: Mapping[str, str] = dataclasses.field(
        default_factory=dict
    )  # mode -> why its check is known to fail (still run; a failure is reported `known_failure`)
    not_applicable: str | None = None  # why the entry has no meaning in JAX (reported, not run)
    not_applicable_modes: Mapping[str, NotApplicable] = dataclasses.field(
        default_factory=dict
    )  # mode -> why that mode has no meaning
    compiled_apart: str | None = None  # why each sample and mode compiles as its own program (measured)
    reference_tolerance: ReferenceTolerance | None = None  # a looser float64 tolerance against autodiff, measured
    # --- the parity run against torch ---
    kinks: tuple[tuple, ...] = ()  # hand-picked argument tuples where finite differences cannot judge
    torch_equivalent: Equivalent | None = None  # the torch call to compare with, where torch cannot run the op
    parity_float32: str | None = None  # why torch is asked in float32 (a CPU kernel that takes float32 only)
    parity_rtol: tuple[float, str] | None = None  # (rtol, why): a looser tolerance than parity's RTOL, measured
    parity_samples: tuple | None = None  # samples for the parity run instead of the checker's
    not_compared: str | None = None  # why the parity run does not compare the entry with torch
    difference: Difference | None = None  # a known difference from torch's results
    gauge: Gauge | None = None  # outputs defined up to a unit factor per column or row
    # --- the sympy proofs (check/proofs.py) ---
    definition: Definition | None = None  # the op in sympy, the reference its formulas are proved against
    without_meaning: str | None = None  # why the op has no meaning over the reals to prove its formulas against

    def __post_init__(self) -> None:
        for key in _MAPPINGS:  # read-only views: a record is frozen all through
            object.__setattr__(self, key, types.MappingProxyType(dict(getattr(self, key))))

    def known_failure(self, mode: str) -> str | None:
        """Why `mode` is known to fail, if declared."""
        return self.known_failures.get(mode)

    def not_applicable_in(self, mode: str, op: "Op | None" = None) -> str | None:
        """Why `mode` has no meaning (for `op`, when the declaration selects ops), if declared."""
        declared = self.not_applicable_modes.get(mode)
        return declared.reason if declared is not None and declared.holds_for(op) else None

    def checks_complex(self, mode: str | None = None) -> bool:
        """Whether complex128 samples are checked (in `mode`, which may be real-only)."""
        return self.complex and (mode is None or mode not in self.real_only)

    def real_only_in(self, mode: str) -> str | None:
        """Why complex samples are left out in `mode`, where the entry is otherwise checked on them."""
        return self.real_only.get(mode) if self.complex else None

    def declared(self) -> dict[str, Any]:
        """The fields declared for the entry (those that differ from the empty record), for reading."""
        empty = OpRecord(self.name)
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "name" and getattr(self, f.name) != getattr(empty, f.name)
        }


_MAPPINGS = {"real_only", "known_failures", "not_applicable_modes"}
_drafts: dict[str, dict[str, Any]] = {}
_records: dict[str, OpRecord] | None = None


def _family() -> str:
    """The family module whose top level makes the declaring call (not one whose helper it calls)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if ".check.families." in module and frame.f_code.co_name == "<module>":
            return module.rsplit(".", 1)[-1]
        frame = frame.f_back
    return ""


def _declare(name: str, **fields: Any) -> None:
    """Add fields to entry `name`'s record. A mapping field merges by mode; any field stated twice
    with another value is an error naming both."""
    if _records is not None:
        raise RuntimeError(f"op database already built: declare {name!r} in a family module of jaxderiv.check.families")
    draft = _drafts.setdefault(name, {})
    family = _family()
    if draft.get("family", family) != family and family:
        raise ValueError(
            f"{name}: declared in check/families/{draft['family']}.py and {family}.py; an entry's record lives in one family"
        )
    draft.setdefault("family", family)
    for key, value in fields.items():
        if key in _MAPPINGS:
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


def database() -> Mapping[str, OpRecord]:
    """Every declared record, by entry name (the families are imported on the first call)."""
    global _records
    if _records is None:
        from . import families

        for module in pkgutil.iter_modules(families.__path__):
            importlib.import_module(f"{families.__name__}.{module.name}")
        _records = {name: OpRecord(name, **draft) for name, draft in _drafts.items()}
    return types.MappingProxyType(_records)


def record(name: str) -> OpRecord:
    """Entry `name`'s record; the empty record where nothing is declared."""
    return database().get(name) or OpRecord(name)


@contextlib.contextmanager
def replaced(name: str, **changes: Any) -> Iterator[OpRecord]:
    """Entry `name`'s record with `changes` for the duration (tests: a declaration taken away or added)."""
    database()
    assert _records is not None
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


# --- declarations, called by the family modules ---


def samples(*names: str):
    """Decorator: a function `(op, rng, dtype=np.float64) -> [Sample]` gives these entries' samples."""

    def deco(fn):
        for n in names:
            _declare(n, samples=fn)
        return fn

    return deco


def domain(lo: float, hi: float, *names: str) -> None:
    """Tensor inputs of these entries' default samples are drawn from [lo, hi]."""
    for n in names:
        _declare(n, domain=(lo, hi))


def complex_ok(*names: str) -> None:
    """These entries are also checked on complex128 inputs (their formulas have the complex form)."""
    for n in names:
        _declare(n, complex=True)


def compiled_apart(reason: str, *names: str) -> None:
    """Compile each of these entries' (mode, sample) checks as its own XLA program instead of
    one program for the entry: for entries so large that compiling them together costs more than
    the per-program overhead saves (the reason gives the measured times)."""
    for n in names:
        _declare(n, compiled_apart=reason)


def real_only(reason: str, *names: str, modes: tuple[str, ...] = FIRST_ORDER_MODES) -> None:
    """Check these complex-capable entries on real inputs only in `modes`, for the stated reason
    (a mode that runs an older file's formulas, written before they took complex inputs)."""
    for n in names:
        _declare(n, real_only={m: reason for m in modes})


def known_failure(reason: str, *names: str, modes: tuple[str, ...] = FIRST_ORDER_MODES) -> None:
    """Declare that these entries' checks fail in `modes` for a stated reason. The checker still
    runs them: a failure is reported as `known_failure` with the reason and the measured error, a pass
    as `passed`, so a fixed gap shows at once."""
    for n in names:
        _declare(n, known_failures={m: reason for m in modes})


def reference_tolerance(
    rtol: float, atol: float, reason: str, *names: str, when: Callable[["Op"], bool] | None = None
) -> None:
    """The checker compares these entries' float64 derivatives with JAX autodiff of the forward at
    `rtol`/`atol` instead of `Tolerance.ref_rtol`/`ref_atol` (for the ops `when(op)` selects), for
    the stated reason: say which part of the formula runs in lower precision and the error measured."""
    for n in names:
        _declare(n, reference_tolerance=ReferenceTolerance(rtol, atol, reason, when))


def not_applicable(
    reason: str, *names: str, modes: tuple[str, ...] | None = None, when: Callable[["Op"], bool] | None = None
) -> None:
    """Declare that these entries have no JAX meaning (or, with `modes`, that those modes have
    none: a second derivative the spec does not define, for the entries `when(op)` selects):
    the report lists them as `not_applicable` with the reason instead of checking them."""
    for n in names:
        if modes is None:
            _declare(n, not_applicable=reason)
        else:
            _declare(n, not_applicable_modes={m: NotApplicable(reason, when) for m in modes})


def without_meaning(reason: str, *names: str) -> None:
    """These elementwise entries have no sympy definition for the proofs, for the stated reason
    (random, complex-valued, boolean-valued, ...)."""
    for n in names:
        _declare(n, without_meaning=reason)


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
    _declare(
        name,
        definition=Definition(fn, args, (lo, hi), tuple(ranges), tuple(fixed), tuple(booleans), tuple(derived)),
    )


def kinks(name: str, *argument_tuples: tuple) -> None:
    """Inputs of entry `name` where finite differences cannot judge (kinks, ties, zeros), on
    which the parity run compares with torch."""
    _declare(name, kinks=tuple(argument_tuples))


def torch_equivalent(equivalent: Equivalent, *names: str) -> None:
    """The parity run asks torch `equivalent.call` for these entries, which torch cannot run by name."""
    for n in names:
        _declare(n, torch_equivalent=equivalent)


def parity_in_float32(reason: str, *names: str) -> None:
    """The parity run compares these entries in float32 on both sides, for the stated reason."""
    for n in names:
        _declare(n, parity_float32=reason)


def parity_tolerance(rtol: float, reason: str, *names: str) -> None:
    """The parity run compares these entries at relative tolerance `rtol` instead of its RTOL,
    for the stated reason (say what torch computes less precisely, and the error measured)."""
    for n in names:
        _declare(n, parity_rtol=(rtol, reason))


def parity_samples(name: str, *samples_: "Sample") -> None:
    """Samples of the parity run for `name`, instead of the checker's."""
    _declare(name, parity_samples=tuple(samples_))


def gauge(declared: Gauge, *names: str) -> None:
    """These entries' outputs `declared.columns` (`.rows`) are defined up to a unit factor per
    column (row): comparisons with torch align the factors before comparing."""
    for n in names:
        _declare(n, gauge=declared)


def not_compared(reason: str, *names: str) -> None:
    """The parity run does not compare these entries with torch, for the stated reason."""
    for n in names:
        _declare(n, not_compared=reason)


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
        _declare(n, difference=Difference(tuple(columns), reason, torch_spec, seed_spec, newest_spec))
