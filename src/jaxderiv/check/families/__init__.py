"""Sample inputs and domains per op family, one module each (imported by check.samples), and
what the parity run against torch needs of each entry (kink inputs, torch calls, differences).

A family module never imports torch at its top level (the core package never does): a torch
call given to `torch_equivalent` gets `torch.ops.aten` passed in, and one that needs torch
itself imports it inside the function.
"""

from __future__ import annotations

import numpy as np

# The reason of a torch equivalent for an op with no CPU kernel in torch, before its colon.
CUDA_ONLY = "torch has no CPU kernel for this CUDA/ROCm op"


def vector(*values: float) -> np.ndarray:
    """A float64 vector: a kink input of the parity run."""
    return np.asarray(values, np.float64)


def matrix(rows) -> np.ndarray:
    """A float64 array of nested rows: a kink input of the parity run."""
    return np.asarray(rows, np.float64)
