"""Shared conversions and comparisons of the tests that use torch 2.13 as the oracle."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

__all__ = ["to_torch", "to_numpy", "random_like", "assert_same"]


def to_torch(v):
    """Arrays (and NumPy scalars) become tensors, dtypes torch dtypes; anything else is passed on."""
    if isinstance(v, np.dtype):
        return getattr(torch, str(v))
    if isinstance(v, (np.ndarray, np.generic)):
        return torch.from_numpy(np.array(v))
    return v


def to_numpy(t):
    """Detached, with conjugate and negative views resolved."""
    return t.numpy(force=True)


def random_like(rng, x):
    """A standard normal array shaped like `x`, complex when `x` is."""
    x = np.asarray(x)
    r = np.asarray(rng.normal(size=x.shape))
    return r + 1j * rng.normal(size=x.shape) if np.iscomplexobj(x) else r


def assert_same(ours, theirs, rtol=1e-10, atol=1e-12):
    """Same shapes, dtypes and values; NaNs and infinities in the same places."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
