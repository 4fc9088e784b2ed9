"""PyTorch's FunctionsManual helpers, tensor methods and at:: functions, keyed by their exact names.

Each module registers its names into `jaxderiv.namespace` on import; `load()` imports them all.
"""

from __future__ import annotations

import importlib
import pkgutil

_loaded = False


def load() -> None:
    """Import every module of this package: each registers its names."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
