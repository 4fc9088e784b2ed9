"""The op database: every entry's record (`jaxderiv.records`), built once every family module
of `jaxderiv.forward` has declared its ops' records beside their forwards.

    >>> from jaxderiv.check.opdb import record
    >>> record("acos").domain, record("acos").complex
    ((-0.9, 0.9), True)
"""

from __future__ import annotations

import functools
import sys
from typing import Mapping

from .. import forward
from ..records import FamilyTraits, OpRecord
from ..records.declarations import freeze, lookup, replaced

__all__ = ["database", "record", "replaced", "family_of", "families_where", "traits"]


def family_of(declared: OpRecord) -> str:
    """The family of an entry: the module of `jaxderiv.forward` that holds its forward and record
    (`not_applicable` for an entry declared without meaning in JAX, which has no forward)."""
    found = forward.implementation(declared.name)
    if found is not None:
        return found.__module__.rsplit(".", 1)[-1]
    return "not_applicable" if declared.not_applicable else ""


def database() -> Mapping[str, OpRecord]:
    """Every declared record, by entry name (the forward families are imported on the first call)."""
    forward.load()
    return freeze(family_of)


def record(name: str) -> OpRecord:
    """Entry `name`'s record; the empty record where nothing is declared."""
    database()
    return lookup(name)


@functools.cache  # asked for every row of a precision mode; the modules are loaded once
def traits(family: str) -> FamilyTraits:
    """What family module `family` of `jaxderiv.forward` declares of its ops (its `FAMILY`, a
    dict of FamilyTraits' fields); no traits for a module that declares none, or for "" (no forward)."""
    forward.load()
    module = sys.modules.get(f"{forward.__name__}.{family}") if family else None
    return FamilyTraits(**getattr(module, "FAMILY", {}))


@functools.cache
def families_where(trait: str) -> tuple[str, ...]:
    """The family modules whose `FAMILY` sets `trait` (`"low_precision"`), sorted."""
    forward.load()
    prefix = forward.__name__ + "."
    names = (m[len(prefix) :] for m in list(sys.modules) if m.startswith(prefix))
    return tuple(sorted(n for n in names if "." not in n and getattr(traits(n), trait)))
