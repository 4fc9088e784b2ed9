"""Op records: what verification knows about each derivatives.yaml entry, declared beside the
op's forward in its family module of `jaxderiv.forward` and frozen once they have all run.

A family module declares with the functions of `declarations` (or the same fields passed to
`forward.impl`) and builds samples with `sample`'s makers:

    from ..records import complex_ok, domain, samples, Sample, draw

    domain(-0.9, 0.9, "acos", "asin", "atanh")
    complex_ok("acos", "asin")

The package imports nothing of jaxderiv but its own modules, so the forwards and the checker
both build on it. A record's sympy definition uses `symbolic.sp`, which imports sympy on first use.
"""

from __future__ import annotations

from . import symbolic_math
from .declarations import (
    complex_ok,
    compiled_apart,
    declare,
    definition,
    domain,
    gauge,
    kinks,
    known_failure,
    not_applicable,
    not_compared,
    parity_differs,
    parity_in_float32,
    parity_samples,
    parity_tolerance,
    real_only,
    reference_tolerance,
    samples,
    torch_equivalent,
    without_meaning,
)
from .record import (
    FIRST_ORDER_MODES,
    Difference,
    Equivalent,
    FamilyTraits,
    Gauge,
    NotApplicable,
    OpKind,
    OpRecord,
    ReferenceTolerance,
    Sample,
)
from .sample import CUDA_ONLY, DEFAULT_SHAPES, default_samples, domain_of, draw, matrix, values_with, vector
from .symbolic import Definition, sp

__all__ = [
    "CUDA_ONLY",
    "DEFAULT_SHAPES",
    "FIRST_ORDER_MODES",
    "Definition",
    "Difference",
    "Equivalent",
    "FamilyTraits",
    "Gauge",
    "NotApplicable",
    "OpKind",
    "OpRecord",
    "ReferenceTolerance",
    "Sample",
    "complex_ok",
    "compiled_apart",
    "declare",
    "default_samples",
    "definition",
    "domain",
    "domain_of",
    "draw",
    "gauge",
    "kinks",
    "known_failure",
    "matrix",
    "not_applicable",
    "not_compared",
    "parity_differs",
    "parity_in_float32",
    "parity_samples",
    "parity_tolerance",
    "real_only",
    "reference_tolerance",
    "samples",
    "sp",
    "symbolic_math",
    "torch_equivalent",
    "values_with",
    "vector",
    "without_meaning",
]
