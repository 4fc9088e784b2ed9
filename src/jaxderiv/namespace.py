"""The names a formula may use: helpers, tensor methods, constants and templates.

Registries are plain dicts filled by small decorators; modules under `helpers/` fill them
at import. The translator resolves every name of a formula against these tables, so only
names registered here can ever reach JAX.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Any, Callable

__all__ = [
    "HELPERS",
    "METHODS",
    "CONSTANTS",
    "TEMPLATES",
    "Helper",
    "helper",
    "resolve",
    "method",
    "constant",
    "template",
    "lookup",
    "plain",
    "CMATH_CONSTANTS",
]

HELPERS: dict[str, "Helper | Callable"] = {}  # free functions: FunctionsManual helpers, at:: functions, types
METHODS: dict[str, Callable] = {}  # `obj.name(args)`: called as fn(obj, *args)
CONSTANTS: dict[str, Any] = {}  # names used as values: `at::Reduction::Mean`, `M_PI`
TEMPLATES: dict[str, Callable] = {}  # `base<args>`: fn(*template_args) -> callable or value

# Qualifiers that do not change meaning here: `at::where` is `where`.
_NAMESPACES = (
    "at::native::",
    "at::",
    "std::",
    "c10::",
    "torch::autograd::generated::details::",
    "torch::autograd::generated::",
)


@dataclasses.dataclass(frozen=True)
class Variant:
    """One meaning of a helper: a Python function, the PyTorch release from which the files
    call the helper with that meaning (None: from the first), and the argument counts it takes."""

    fn: Callable
    since: tuple[int, ...] | None

    def takes(self, n: int) -> bool:
        try:
            inspect.signature(self.fn).bind(*range(n))
        except TypeError:
            return False
        return True

    def arities(self) -> str:
        params = inspect.signature(self.fn).parameters.values()
        required = sum(p.default is inspect.Parameter.empty for p in params)
        return str(required) if required == len(params) else f"{required} to {len(params)}"


class Helper:
    """A FunctionsManual helper (or at:: function) as the spec files call it: every meaning
    registered under its name. PyTorch changed helpers two ways between releases, and both are
    variants here: another signature under the same name (`svd_backward` takes torch.svd's 7
    arguments or linalg.svd's 6: told apart by the call's argument count), and another meaning
    under the same signature (`softmax_double_backward` differentiates through `output` from
    1.11: told apart by the spec file's release). `resolve` picks one; calling a Helper picks
    the newest meaning that takes the arguments."""

    def __init__(self, name: str):
        self.name = name
        self.variants: list[Variant] = []

    def add(self, fn: Callable, since: tuple[int, ...] | None) -> None:
        new = Variant(fn, since)
        for old in self.variants:
            if old.since == since and any(old.takes(n) and new.takes(n) for n in range(16)):
                raise ValueError(
                    f"{self.name!r} is registered twice for the same argument count and release "
                    f"({old.fn.__qualname__} and {fn.__qualname__})"
                )
        self.variants.append(new)

    def pick(self, n_args: int | None, version: tuple[int, ...] | None = None) -> Callable:
        """The variant a call with `n_args` arguments (None: any) means in release `version`
        (None: the newest); TypeError naming the argument counts taken, where none fits."""
        fits = [v for v in self.variants if n_args is None or v.takes(n_args)]
        if not fits:
            counts = " or ".join(sorted({v.arities() for v in self.variants}))
            raise TypeError(f"takes {counts} arguments")
        valid = [v for v in fits if v.since is None or version is None or version >= v.since]
        if not valid:  # a release before every variant's `since`: the oldest meaning
            return min(fits, key=lambda v: v.since or ()).fn
        return max(valid, key=lambda v: v.since or ()).fn

    def __call__(self, *args):
        return self.pick(len(args))(*args)

    def __repr__(self) -> str:
        return f"<helper {self.name}: {len(self.variants)} variant(s)>"


def _register(table: dict, names: tuple[str, ...]):
    def deco(fn):
        for n in names or (fn.__name__.rstrip("_"),):
            if n in table:
                raise ValueError(f"{n!r} is registered twice")
            table[n] = fn
        return fn

    return deco


def helper(*names: str, since: tuple[int, ...] | None = None):
    """Register a function as a variant of the helper under each of `names` (default: its
    Python name). Variants of one name differ in the number of arguments they take, or in
    `since`: the PyTorch release from which spec files call the helper with this meaning
    (`softmax_double_backward` differentiates through `output` from 1.11). See `Helper`."""

    def deco(fn):
        for n in names or (fn.__name__.rstrip("_"),):
            HELPERS.setdefault(n, Helper(n)).add(fn, tuple(since) if since is not None else None)
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


def lookup(table: dict, name: str):
    """The entry of `table` for `name` as written, else without its namespace qualifier, else
    without a `_symint` suffix, else None."""
    for candidate in (name, unqualified(name), plain(unqualified(name))):
        if candidate in table:
            return table[candidate]
    return None


def resolve(name: str, n_args: int | None = None, version: tuple[int, ...] | None = None) -> Callable | None:
    """The one resolver of helper names, used by the translator, coverage and the proofs: the
    function a formula's call `name(...)` with `n_args` arguments means in PyTorch release
    `version` (None: the newest), namespace qualifier and `_symint` suffix dropped; None for an
    unknown name, TypeError where no variant takes that many arguments."""
    found = lookup(HELPERS, name)
    if found is None or not isinstance(found, Helper):  # a plain function put in the table (tests)
        return found
    return found.pick(n_args, version)
