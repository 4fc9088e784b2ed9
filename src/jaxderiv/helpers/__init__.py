"""PyTorch's FunctionsManual helpers, tensor methods and at:: functions, keyed by their exact names.

Each module registers its names into `jaxderiv.namespace` on import; `load()` imports them all.
"""

from __future__ import annotations

_loaded = False


def load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import core, pointwise, tensor_methods  # noqa: F401  (registers on import)
