"""FunctionsManual's helpers for torch's own autograd test ops."""

from __future__ import annotations

import warnings

from ..namespace import helper


@helper("warn_backwards")
def warn_backwards(grad_output):
    """The gradient unchanged, with the warning torch emits in the backward (here, when the
    backward is traced)."""
    warnings.warn("Warn from backward", UserWarning, stacklevel=2)
    return grad_output
