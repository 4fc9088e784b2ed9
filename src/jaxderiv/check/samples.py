"""The samples the checker runs an op on: its record's, else the schema default, in float64 or complex128."""

from __future__ import annotations

import numpy as np

from ..op import Op
from ..records import Sample, default_samples
from .opdb import record

__all__ = ["samples_for"]


def samples_for(op: Op, rng: np.random.Generator, complex_: bool = False) -> list[Sample]:
    """The samples of `op`: its registered function's, else the schema default; complex128 if asked."""
    dtype = np.complex128 if complex_ else np.float64
    fn = record(op.name).samples
    made = list(fn(op, rng, dtype=dtype)) if fn is not None else default_samples(op, rng, dtype)
    # Formulas their release wrote for real tensors only are not asked about complex values (Op.real_only).
    accepts = getattr(op, "accepts_complex", None) if complex_ else None
    return [s for s in made if accepts(s.args, s.kwargs)] if accepts is not None else made
