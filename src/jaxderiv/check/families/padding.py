"""Checker inputs of the padding ops: constant, reflection and replication padding in 1-D to
3-D, and their backward ops.

Linear in their differentiable input, so no kinks; the cases pad each side by a different
amount (one side 0), and constant_pad_nd also crops with negative pads. A backward entry's
grad_output has the padded shape. Cases are written as shapes.py's are (argument tuples,
tensors as T(shape)).
"""

from __future__ import annotations

from typing import Any

from .shapes import T, _register

_register("constant_pad_nd", cases=[(T(2, 3), (1, 2)), (T(2, 3, 4), (1, 0, -1, 2)), (T(3, 4), (-1, -1, 1, 0), 0.5)])
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
    _register(_name, cases=_cases)
    _register(_name + "_backward", cases=[(_padded(x.shape, p), x, p) for x, p in _cases])
