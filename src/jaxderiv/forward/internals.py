"""Forward implementations of ATen's internal ops that derivatives.yaml lists: autograd's own
constructors (`_efficientzerotensor`, `_new_zeros_with_same_feature_meta`) and the entries torch
tests its autograd codegen with (`_test_*`). Each follows what torch 2.13 returns for a dense
CPU tensor."""

from __future__ import annotations

import jax.numpy as jnp

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
