"""The names a formula may use: helpers, tensor methods, constants and templates.

Registries are plain dicts filled by small decorators; modules under `helpers/` fill them
at import. The translator resolves every name of a formula against these tables, so only
names registered here can ever reach JAX.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

__all__ = [
    "HELPERS",
    "METHODS",
    "CONSTANTS",
    "TEMPLATES",
    "REVISIONS",
    "Overloads",
    "helper",
    "method",
    "constant",
    "template",
    "lookup_helper",
    "plain",
    "CMATH_CONSTANTS",
]

HELPERS: dict[str, Callable] = {}  # free functions: FunctionsManual helpers, at:: functions, types
METHODS: dict[str, Callable] = {}  # `obj.name(args)`: called as fn(obj, *args)
CONSTANTS: dict[str, Any] = {}  # names used as values: `at::Reduction::Mean`, `M_PI`
TEMPLATES: dict[str, Callable] = {}  # `base<args>`: fn(*template_args) -> callable or value
# Helpers PyTorch kept the name of but gave another meaning: name -> [(first PyTorch version, fn)],
# oldest first. A formula gets the meaning of its spec file's PyTorch version.
REVISIONS: dict[str, list[tuple[tuple[int, ...], Callable]]] = {}

# Qualifiers that do not change meaning here: `at::where` is `where`.
_NAMESPACES = (
    "at::native::",
    "at::",
    "std::",
    "c10::",
    "torch::autograd::generated::details::",
    "torch::autograd::generated::",
)


class Overloads:
    """C++ overloads of one helper, told apart by their number of arguments (`svd_backward`
    takes torch.svd's 7 or linalg.svd's 6): a formula's call picks the one its arguments fit."""

    def __init__(self, name: str, fns: list[Callable]):
        self.name, self.fns = name, fns

    def pick(self, n: int) -> Callable | None:
        for fn in self.fns:
            try:
                inspect.signature(fn).bind(*range(n))
            except TypeError:
                continue
            return fn
        return None

    def __call__(self, *args):
        fn = self.pick(len(args))
        if fn is None:
            raise TypeError(f"no overload of {self.name!r} takes {len(args)} arguments")
        return fn(*args)


def _register(table: dict, names: tuple[str, ...], overload: bool = False):
    def deco(fn):
        for n in names or (fn.__name__.rstrip("_"),):
            if n in table and not overload:
                raise ValueError(f"{n!r} is registered twice")
            if overload:
                if n not in table:
                    raise ValueError(f"{n!r}: an overload needs the function it overloads registered first")
                first = table[n]
                table[n] = Overloads(n, (first.fns if isinstance(first, Overloads) else [first]) + [fn])
            else:
                table[n] = fn
        return fn

    return deco


def helper(*names: str, since: tuple[int, ...] | None = None, overload: bool = False):
    """Register a function under each of `names` (default: its Python name). With `since`, it
    is the meaning a helper already registered under that name has in PyTorch's files from
    version `since` on (`softmax_double_backward` differentiates through `output` from 1.11).
    With `overload`, it is another C++ overload of that helper, taking another number of
    arguments (see `Overloads`)."""
    if since is None:
        return _register(HELPERS, names, overload)

    def deco(fn):
        for n in names or (fn.__name__.rstrip("_"),):
            REVISIONS[n] = sorted(REVISIONS.get(n, []) + [(tuple(since), fn)], key=lambda r: r[0])
        return fn

    return deco


def method(*names: str):
    """Register a tensor method under each of `names`; the object comes first."""
    return _register(METHODS, names)


def template(*names: str):
    return _register(TEMPLATES, names)


def constant(name: str, value: Any) -> None:
    """Register a value; the same name again is an error unless it is the same value (the
    <cmath> constants below are registered here and may also be registered by a family)."""
    if name in CONSTANTS and not (
        CONSTANTS[name] is value or (type(CONSTANTS[name]) is type(value) and CONSTANTS[name] == value)
    ):
        raise ValueError(f"{name!r} is registered twice")
    CONSTANTS[name] = value


# <cmath>'s POSIX constants, which newer files write instead of literals (2.14's erf: `M_2_SQRTPI`).
CMATH_CONSTANTS = {
    "M_E": math.e,
    "M_LOG2E": 1 / math.log(2),
    "M_LOG10E": 1 / math.log(10),
    "M_LN2": math.log(2),
    "M_LN10": math.log(10),
    "M_PI": math.pi,
    "M_PI_2": math.pi / 2,
    "M_PI_4": math.pi / 4,
    "M_1_PI": 1 / math.pi,
    "M_2_PI": 2 / math.pi,
    "M_2_SQRTPI": 2 / math.sqrt(math.pi),
    "M_SQRT2": math.sqrt(2),
    "M_SQRT1_2": math.sqrt(0.5),
}
for _name, _value in CMATH_CONSTANTS.items():
    constant(_name, _value)


def unqualified(name: str) -> str:
    for ns in _NAMESPACES:
        if name.startswith(ns):
            return name[len(ns) :]
    return name.lstrip(":")


def plain(name: str) -> str:
    """`new_zeros_symint` -> `new_zeros`: newer files' SymInt spellings mean the plain function
    here, where sizes are always concrete integers."""
    return name[: -len("_symint")] if name.endswith("_symint") else name


def lookup_helper(table: dict, name: str, version: tuple[int, ...] | None = None):
    """The entry for `name` as written, else without its namespace qualifier, else without a
    `_symint` suffix, else None. For a helper PyTorch revised, the meaning it has in `version`
    (a spec file's PyTorch version; None, a file of unknown version, gets the newest)."""
    for candidate in (name, unqualified(name), plain(unqualified(name))):
        if candidate in table:
            found = table[candidate]
            if table is HELPERS:
                for since, fn in REVISIONS.get(candidate, ()):
                    if version is None or version >= since:
                        found = fn
            return found
    return None
