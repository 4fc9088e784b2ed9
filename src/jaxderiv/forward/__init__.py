"""Forward implementations of ATen ops on JAX, one module per family.

Each implementation takes the schema's arguments positionally, in schema order: Tensors as
JAX arrays (None for an absent optional), Tensor lists as lists, other arguments as Python
values with the schema's defaults applied. It returns an array, or a tuple for tuple returns.
In-place entries (`abs_`) use their out-of-place op's implementation unless they have their own.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

__all__ = ["IMPLS", "impl", "implementation", "callable_named"]

IMPLS: dict[str, Callable] = {}


def impl(*names: str):
    """Register a forward implementation under the ATen names (`add.Tensor`, `abs`)."""

    def deco(fn):
        for n in names:
            if n in IMPLS:
                raise ValueError(f"forward implementation of {n!r} registered twice")
            IMPLS[n] = fn
        return fn

    return deco


def implementation(name: str) -> Callable | None:
    """The forward of `name`, falling back from `abs_.x` / `abs_` to `abs.x` / `abs`."""
    _load()
    if name in IMPLS:
        return IMPLS[name]
    base, _, overload = name.partition(".")
    if base.endswith("_") and not base.endswith("__"):
        functional = base[:-1] + ("." + overload if overload else "")
        return IMPLS.get(functional)
    return None


def callable_named(name: str) -> Callable | None:
    """What a formula's call `name(...)` or `x.name(...)` may use: the forward registered as
    `name`, else the only registered overload `name.X` (`x.transpose(0, 1)` is transpose.int).
    Overloaded names need an explicit helper or method that picks the overload."""
    found = implementation(name)
    if found is not None or "." in name:
        return found
    overloads = [n for n in IMPLS if n.partition(".")[0] == name]
    return IMPLS[overloads[0]] if len(overloads) == 1 else None


_loaded = False


def _load() -> None:
    """Import every module of this package: each registers its implementations."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
