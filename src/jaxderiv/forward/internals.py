"""Forward implementations of ATen's internal ops that derivatives.yaml lists: autograd's own
constructors (`_efficientzerotensor`, `_new_zeros_with_same_feature_meta`) and the entries torch
tests its autograd codegen with (`_test_*`). Each follows what torch 2.13 returns for a dense
CPU tensor."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..records import Sample, known_failure, samples
from . import impl


@impl("_efficientzerotensor")
def _efficientzerotensor(size, dtype=None, layout=None, device=None, pin_memory=None):
    """torch's storage-less zero tensor (forward-mode AD's zero tangent); here, zeros."""
    return jnp.zeros(tuple(size), dtype or jnp.float32)


@impl("_new_zeros_with_same_feature_meta")
def _new_zeros_with_same_feature_meta(self, other, self_num_batch_dims=0):
    """Zeros shaped as self's leading `self_num_batch_dims` dimensions followed by all of
    other's, in other's dtype (forward AD's tangent for a batched primal)."""
    batch = jnp.shape(self)[:self_num_batch_dims]
    return jnp.zeros(batch + jnp.shape(other), jnp.result_type(other))


@impl("_test_warn_in_autograd", "_test_autograd_multiple_dispatch.fullcoverage")
def _test_clone(self):
    """A copy of self: the forward of torch's autograd test ops, whose entries state the
    derivative (a warning in the backward; a `Default:` dispatch formula)."""
    return jnp.array(self)


@impl("_test_autograd_multiple_dispatch_view")
def _test_autograd_multiple_dispatch_view(self):
    """self viewed as one dimension."""
    return jnp.reshape(self, (-1,))


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# ATen's internal ops that derivatives.yaml lists (forward/internals.py): what the checker and
# the parity run need of them.
#
# `_test_autograd_multiple_dispatch.fullcoverage` is torch's test of which dispatch key's formula
# autograd runs: its `Default:` formula, `grad.expand(self.sizes()) + 1`, adds 1 on purpose, so
# it is not the derivative of its forward (a copy) and torch's own gradient carries the same +1.
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
