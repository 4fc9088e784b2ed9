"""An op's record: all that jaxderiv's verification knows about one derivatives.yaml entry, frozen.

In the shape of PyTorch's OpInfo and JAX's GradTestSpec: an entry's samples and domain, whether
it is checked on complex inputs, which modes are known to fail or have no meaning (each scoped
to a mode, with its reason), and what the parity run against torch needs (kink inputs, the torch
call to compare with, known differences). Records are declared beside the op's forward
(`jaxderiv.forward`, one family module each) with `records.declarations`'s functions.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from typing import Any, Callable, Mapping

from .symbolic import Definition

__all__ = [
    "OpKind",
    "OpRecord",
    "NotApplicable",
    "Equivalent",
    "ReferenceTolerance",
    "Difference",
    "Gauge",
    "FIRST_ORDER_MODES",
    "SampleFn",
    "Sample",
]


class OpKind(enum.Enum):
    """How an op's outputs relate to gradients, declared with its forward (`forward.impl(kind=)`)."""

    DIFFERENTIABLE = "differentiable"  # the default: its derivatives.yaml entry says
    GRADIENT_FREE = "gradient_free"  # constructors, asserts, queries: inputs held constant
    NO_DERIVATIVE = "no_derivative"  # torch marks it as requiring grad, ATen implements no derivative
    RANDOM = "random"  # a sampler with no entry: no gradient, values drawn from a key


# The modes a declaration holds for unless it names others.
FIRST_ORDER_MODES = ("vjp", "jvp", "vjp_vjp")


@dataclasses.dataclass
class Sample:
    """One call of an op: positional and keyword arguments, with a short description."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    label: str = ""
    # Gauge freedom (svd, eig, symeig...): derivatives exist only for some functions of the
    # outputs, or only along some input directions. `outputs` maps the list of differentiable
    # outputs to the list of arrays the checker compares (a gauge-invariant function of them);
    # `tangents` projects a list of input directions onto the admissible ones (Hermitian
    # perturbations for an op that reads one triangle); gradients are compared after it.
    outputs: Callable[[list], list] | None = None
    tangents: Callable[[list], list] | None = None
    # Where the spec defines a gradient that is not the forward's derivative by design (a
    # straight-through estimator), the function it is the derivative of: called like the
    # forward implementation, it replaces the forward as the reference (JAX autodiff and
    # finite differences) of the first-order checks.
    reference: Callable | None = None


SampleFn = Callable[..., "list[Sample]"]  # (op, rng, dtype=np.float64) -> [Sample]


@dataclasses.dataclass(frozen=True)
class NotApplicable:
    """Why one mode of an entry has no meaning, and for which ops of the entry (None: all)."""

    reason: str
    when: Callable[[Any], bool] | None = None  # selects the ops (of differing schemas) it holds for

    def holds_for(self, op: Any) -> bool:
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
    when: Callable[[Any], bool] | None = None

    def holds_for(self, op: Any) -> bool:
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
class FamilyTraits:
    """What a family module of `jaxderiv.forward` says of all its ops: its module-level
    `FAMILY = {"elementwise": True, ...}` holds these fields."""

    elementwise: bool = False  # its entries are listed for the sympy proofs (check/proofs.py)
    low_precision: bool = False  # its entries are checked in float32 and bfloat16 too


@dataclasses.dataclass(frozen=True)
class OpRecord:
    """Everything verification knows about one derivatives.yaml entry (by its name, `clamp.Tensor`)."""

    name: str
    family: str = ""  # the jaxderiv.forward module of its forward (where it is declared); "" for none
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
    hermitian_inputs: tuple[str, ...] = ()  # inputs the OpInfo replay perturbs along Hermitian directions only
    # --- the sympy proofs (check/proofs.py) ---
    definition: Definition | None = None  # the op in sympy, the reference its formulas are proved against
    without_meaning: str | None = None  # why the op has no meaning over the reals to prove its formulas against

    def __post_init__(self) -> None:
        for key in MAPPINGS:  # read-only views: a record is frozen all through
            object.__setattr__(self, key, types.MappingProxyType(dict(getattr(self, key))))

    def known_failure(self, mode: str) -> str | None:
        """Why `mode` is known to fail, if declared."""
        return self.known_failures.get(mode)

    def not_applicable_in(self, mode: str, op: Any = None) -> str | None:
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


# The mapping fields: keyed by mode, merged across declarations.
MAPPINGS = frozenset({"real_only", "known_failures", "not_applicable_modes"})
