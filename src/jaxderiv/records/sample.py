"""Sample inputs of an op's checks: the `Sample` a record's sample function returns, the schema
default (`default_samples`) and the value makers family modules share (`draw`, `vector`, `matrix`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .declarations import lookup
from .record import Sample

__all__ = ["Sample", "DEFAULT_SHAPES", "CUDA_ONLY", "domain_of", "draw", "default_samples", "vector", "matrix"]

# The reason of a torch equivalent for an op with no CPU kernel in torch, before its colon.
CUDA_ONLY = "torch has no CPU kernel for this CUDA/ROCm op"


# Shapes of the tensor inputs in the default samples: same shape, broadcasting, 0-d.
DEFAULT_SHAPES = (((2, 3), (2, 3)), ((2, 3), (3,)), ((), ()))


def domain_of(name: str) -> tuple[float, float]:
    """The interval entry `name`'s default samples draw from: its own, its base op's, else [-2, 2]."""
    own = lookup(name).domain
    return own or lookup(name.split(".")[0].rstrip("_")).domain or (-2.0, 2.0)


def values_with(values: Sequence, paths: Sequence[tuple[int, int | None]], xs: Sequence) -> list:
    """`values` with the value at each path replaced by the matching x: (i, None) is values[i],
    (i, j) element j of the list or tuple values[i]. Lists and tuples are copied, as lists."""
    out = [list(v) if isinstance(v, (list, tuple)) else v for v in values]
    for (i, j), x in zip(paths, xs):
        if j is None:
            out[i] = x
        else:
            out[i][j] = x
    return out


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
        # `dim`: the last one, which every shape has (a 0-d tensor accepts -1 and 0 only)
        return -1 if arg.name == "dim" else 1
    return 0.5


def default_samples(op: Any, rng: np.random.Generator, dtype=np.float64) -> list[Sample]:
    """Elementwise-style samples: every Tensor input in each of DEFAULT_SHAPES."""
    lo, hi = domain_of(op.name)
    out = []
    for shapes in DEFAULT_SHAPES:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        k = 0
        for a in op.schema.arguments:
            value: Any
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
        out.append(
            Sample(tuple(args), kwargs, "x".join(map(str, shapes[0])) + (" bcast" if shapes[0] != shapes[1] else ""))
        )
    return out


def vector(*values: float) -> np.ndarray:
    """A float64 vector: a kink input of the parity run."""
    return np.asarray(values, np.float64)


def matrix(rows) -> np.ndarray:
    """A float64 array of nested rows: a kink input of the parity run."""
    return np.asarray(rows, np.float64)
