"""Sample inputs per op for the checker: a default from the schema, domains and overrides per op."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Callable

import numpy as np

from ..op import Op

__all__ = ["Sample", "SAMPLES", "DOMAINS", "COMPLEX", "samples", "domain", "complex_ok", "real_only", "known_failure", "not_applicable", "samples_for", "checks_complex", "draw", "default_samples"]


@dataclasses.dataclass
class Sample:
    """One call of an op: positional and keyword arguments, with a short description."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    label: str = ""
    # Gauge freedom (svd, eig, symeig...): derivatives exist only for some functions of the
    # outputs, or only along some input directions. `outputs` maps the list of differentiable
    # outputs to the list of arrays the checker compares (a gauge-invariant function of them);
    # `tangents` projects a list of input directions onto the admissible ones (Hermitian
    # perturbations for an op that reads one triangle); gradients are compared after it.
    outputs: Callable[[list], list] | None = None
    tangents: Callable[[list], list] | None = None
    # Where the spec defines a gradient that is not the forward's derivative by design (a
    # straight-through estimator), the function it is the derivative of: called like the
    # forward implementation, it replaces the forward as the reference (JAX autodiff and
    # finite differences) of the first-order checks.
    reference: Callable | None = None


SAMPLES: dict[str, Callable[[Op, np.random.Generator], list[Sample]]] = {}
DOMAINS: dict[str, tuple[float, float]] = {}  # the interval tensor inputs are drawn from
COMPLEX: set[str] = set()  # ops also checked on complex128 inputs
REAL_ONLY: dict[tuple[str, str], str] = {}  # (op, mode) -> why that mode is checked on real inputs only
# (op, mode) -> why its check is known to fail: a spec bug or a gap not closed yet.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}
# op -> why it has no meaning in JAX (sparse layouts, packed int8 weights): reported, not run.
NOT_APPLICABLE: dict[str, str] = {}
NOT_APPLICABLE_MODES: dict[tuple[str, str], tuple[str, Callable | None]] = {}  # (op, mode) -> why that mode is not applicable
# Shapes of the tensor inputs in the default samples: same shape, broadcasting, 0-d.
DEFAULT_SHAPES = (((2, 3), (2, 3)), ((2, 3), (3,)), ((), ()))


def samples(*names: str):
    """Register a function `(op, rng, dtype=np.float64) -> [Sample]` giving these ops' samples."""

    def deco(fn):
        for n in names:
            SAMPLES[n] = fn
        return fn

    return deco


def domain(lo: float, hi: float, *names: str) -> None:
    for n in names:
        DOMAINS[n] = (lo, hi)


def known_failure(reason: str, *names: str, modes=("vjp", "jvp", "vjp_vjp")) -> None:
    """Declare that these ops' checks fail for a stated reason. The checker still runs them:
    a failure is reported as `skipped` with the reason and the measured error, a pass as
    `passed`, so a fixed gap shows at once."""
    for n in names:
        for m in modes:
            KNOWN_FAILURES[(n, m)] = reason


def not_applicable(reason: str, *names: str, modes=None, when: Callable[[Op], bool] | None = None) -> None:
    """Declare that these entries have no JAX meaning (or, with `modes`, that those modes have
    none: a second derivative the spec does not define, for the entries `when(op)` selects):
    the report lists them as `not_applicable` with the reason instead of checking them."""
    for n in names:
        if modes is None:
            NOT_APPLICABLE[n] = reason
        else:
            NOT_APPLICABLE_MODES.update({(n, m): (reason, when) for m in modes})


def not_applicable_reason(name: str, mode: str | None = None, op: Op | None = None) -> str | None:
    """Why the entry (mode None) or one of its modes (of `op`, this entry) is not applicable, if declared."""
    _load()
    if mode is None:
        return NOT_APPLICABLE.get(name)
    reason, when = NOT_APPLICABLE_MODES.get((name, mode), (None, None))
    return reason if reason is not None and (when is None or op is None or when(op)) else None


def known_failure_reason(name: str, mode: str) -> str | None:
    _load()
    return KNOWN_FAILURES.get((name, mode))


def complex_ok(*names: str) -> None:
    COMPLEX.update(names)


def draw(rng: np.random.Generator, shape, lo: float, hi: float, dtype=np.float64) -> np.ndarray:
    """Values in [lo, hi], kept at least 0.1 from 0 when the interval straddles it (kinks)."""
    x = rng.uniform(lo, hi, size=shape)
    if lo < 0 < hi:
        x = np.where(np.abs(x) < 0.1, np.copysign(0.1, x) + 0.05 * np.sign(x + 1e-300), x)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * draw(rng, shape, lo, hi)
    return x.astype(dtype)


def _scalar_value(arg):
    base = arg.type.base
    if base == "bool":
        return False
    if base in ("int", "SymInt"):
        return 1
    return 0.5


def default_samples(op: Op, rng: np.random.Generator, dtype=np.float64) -> list[Sample]:
    """Elementwise-style samples: every Tensor input in each of DEFAULT_SHAPES."""
    lo, hi = DOMAINS.get(op.name, DOMAINS.get(op.name.split(".")[0].rstrip("_"), (-2.0, 2.0)))
    out = []
    for shapes in DEFAULT_SHAPES:
        args, kwargs, k = [], {}, 0
        for a in op.schema.arguments:
            if a.is_tensor:
                shape = shapes[min(k, len(shapes) - 1)]
                k += 1
                value = draw(rng, shape, lo, hi, dtype) if a.default is None else None
            elif a.default is not None:
                continue
            elif a.is_tensor_list:
                value = [draw(rng, shapes[0], lo, hi, dtype) for _ in range(2)]
            else:
                value = _scalar_value(a)
            (kwargs.__setitem__(a.name, value) if a.kwarg_only else args.append(value))
        out.append(Sample(tuple(args), kwargs, "x".join(map(str, shapes[0])) + (" bcast" if shapes[0] != shapes[1] else "")))
    return out


_loaded = False


def _load() -> None:
    """Import every module of check/families: each registers its ops' samples and domains."""
    global _loaded
    if not _loaded:
        _loaded = True
        from . import families

        for module in pkgutil.iter_modules(families.__path__):
            importlib.import_module(f"{families.__name__}.{module.name}")


def samples_for(op: Op, rng: np.random.Generator, complex_: bool = False) -> list[Sample]:
    """The samples of `op`: its registered function's, else the schema default; complex128 if asked."""
    _load()
    dtype = np.complex128 if complex_ else np.float64
    fn = SAMPLES.get(op.name)
    made = list(fn(op, rng, dtype=dtype)) if fn is not None else default_samples(op, rng, dtype)
    # Formulas their release wrote for real tensors only are not asked about complex values (Op.real_only).
    accepts = getattr(op, "accepts_complex", None) if complex_ else None
    return [s for s in made if accepts(s.args, s.kwargs)] if accepts is not None else made


def real_only(reason: str, *names: str, modes=("vjp", "jvp", "vjp_vjp")) -> None:
    """Check these complex-capable ops on real inputs only in `modes`, for the stated reason
    (a mode that runs an older file's formulas, written before they took complex inputs)."""
    for n in names:
        REAL_ONLY.update({(n, m): reason for m in modes})


def real_only_reason(name: str, mode: str) -> str | None:
    _load()
    return REAL_ONLY.get((name, mode)) if name in COMPLEX else None


def checks_complex(name: str, mode: str | None = None) -> bool:
    """Whether op `name` is also checked on complex128 inputs (in `mode`, if given)."""
    _load()
    return name in COMPLEX and (mode is None or (name, mode) not in REAL_ONLY)
