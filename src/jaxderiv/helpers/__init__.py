"""PyTorch's FunctionsManual helpers, tensor methods and at:: functions, keyed by their exact names.

Each module registers its names into `jaxderiv.namespace` on import; `load()` imports them all.
"""

from __future__ import annotations

from ..submodules import import_once


def load() -> None:
    """Import every module of this package: each registers its names."""
    import_once(__name__, __path__)
