"""ATen's internal ops that derivatives.yaml lists (forward/internals.py): what the checker and
the parity run need of them.

`_test_autograd_multiple_dispatch.fullcoverage` is torch's test of which dispatch key's formula
autograd runs: its `Default:` formula, `grad.expand(self.sizes()) + 1`, adds 1 on purpose, so
it is not the derivative of its forward (a copy) and torch's own gradient carries the same +1.
"""

from __future__ import annotations

import numpy as np

from ..opdb import known_failure, samples
from ..samples import Sample

known_failure(
    "torch's autograd test op: its Default formula `grad.expand(self.sizes()) + 1` adds 1 to every "
    "element on purpose (torch's tests read which dispatch key's formula ran), so it is not the "
    "derivative of the forward, a copy; measured error exactly 1.0 per element, the same as "
    "torch 2.13's own gradient",
    "_test_autograd_multiple_dispatch.fullcoverage",
    modes=("vjp",),
)


@samples("_efficientzerotensor")
def _zeros_samples(op, rng, dtype=np.float64):
    return [Sample(([2, 3],), {}, "2x3"), Sample(([0, 4],), {}, "0x4"), Sample(([],), {}, "0-d")]
