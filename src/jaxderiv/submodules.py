"""Importing every module of a package once: how `forward/` and `helpers/` register their contents."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable

__all__ = ["import_once"]

_imported: set[str] = set()


def import_once(package: str, path: Iterable[str]) -> None:
    """Import each module of `package` (its `__path__` is `path`) the first time it is asked for:
    importing a family module registers what it declares."""
    if package not in _imported:
        _imported.add(package)
        for module in pkgutil.iter_modules(path):
            importlib.import_module(f"{package}.{module.name}")
