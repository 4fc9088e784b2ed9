"""Forward implementations of ATen's padding ops and their *_backward ops, by index maps.

Reflection and replication padding read input index src(o) at output index o along each
padded (trailing) dimension; their backward ops scatter-add the gradient through the same maps.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import impl
from .shapes import T, register_shape_cases


@impl("constant_pad_nd")
def constant_pad_nd(self, pad, value=0):
    """pad = (last_lo, last_hi, second_last_lo, ...); negative pads crop."""
    if len(pad) % 2 or len(pad) // 2 > self.ndim:
        raise RuntimeError(
            f"constant_pad_nd: padding length {len(pad)} must be even and at most twice the dims ({self.ndim})"
        )
    pairs = [(0, 0, 0)] * self.ndim
    for i in range(len(pad) // 2):
        pairs[self.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1], 0)
    return jax.lax.pad(self, jnp.asarray(value, self.dtype), pairs)


def _source(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    i = np.arange(-lo, n + hi)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if lo >= n or hi >= n:
        raise RuntimeError(f"reflection padding ({lo}, {hi}) must be smaller than the input dimension {n}")
    i = np.abs(i)
    return np.where(i >= n, 2 * (n - 1) - i, i)


def _maps(shape, padding, mode):
    """(dim, source indices) for each padded dim, padding given from the last dim backwards."""
    k = len(padding) // 2
    return [
        (len(shape) - 1 - j, _source(shape[len(shape) - 1 - j], padding[2 * j], padding[2 * j + 1], mode))
        for j in range(k)
    ]


def _pad(x, padding, mode):
    for d, src in _maps(x.shape, padding, mode):
        x = jnp.take(x, src, axis=d)
    return x


def _pad_backward(grad_output, self, padding, mode):
    g = grad_output
    for d, src in _maps(self.shape, padding, mode):
        moved = jnp.moveaxis(g, d, 0)
        acc = jnp.zeros((self.shape[d],) + moved.shape[1:], g.dtype).at[src].add(moved)
        g = jnp.moveaxis(acc, 0, d)
    return g


def _register_padding(name: str, mode: str):
    impl(name)(lambda self, padding: _pad(self, padding, mode))
    impl(name + "_backward")(lambda grad_output, self, padding: _pad_backward(grad_output, self, padding, mode))


for _n in ("1d", "2d", "3d"):
    _register_padding("reflection_pad" + _n, "reflect")
    _register_padding("replication_pad" + _n, "edge")


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the padding ops: constant, reflection and replication padding in 1-D to
# 3-D, and their backward ops.
#
# Linear in their differentiable input, so no kinks; the cases pad each side by a different
# amount (one side 0), and constant_pad_nd also crops with negative pads. A backward entry's
# grad_output has the padded shape. Cases are written as shapes.py's are (argument tuples,
# tensors as T(shape)).
register_shape_cases(
    "constant_pad_nd", cases=[(T(2, 3), (1, 2)), (T(2, 3, 4), (1, 0, -1, 2)), (T(3, 4), (-1, -1, 1, 0), 0.5)]
)
_PADS: dict[str, list[tuple[Any, tuple[int, ...]]]] = {
    "reflection_pad1d": [(T(2, 5), (2, 1)), (T(2, 3, 5), (1, 3))],
    "reflection_pad2d": [(T(2, 4, 5), (1, 2, 3, 0))],
    "replication_pad1d": [(T(2, 5), (2, 1)), (T(2, 3, 5), (0, 3))],
    "replication_pad2d": [(T(2, 4, 5), (1, 2, 3, 0))],
    "replication_pad3d": [(T(1, 2, 3, 4), (1, 0, 2, 1, 1, 2))],
    "reflection_pad3d": [(T(1, 3, 3, 4), (1, 0, 2, 1, 1, 2))],
}


def _padded(shape, pad):
    out = list(shape)
    for j in range(len(pad) // 2):
        out[-1 - j] += pad[2 * j] + pad[2 * j + 1]
    return T(*out)


for _name, _cases in _PADS.items():
    register_shape_cases(_name, cases=_cases)
    register_shape_cases(_name + "_backward", cases=[(_padded(x.shape, p), x, p) for x, p in _cases])
