"""Checker inputs of the distance ops and `_trilinear`.

Distances have kinks where two points share a coordinate (p <= 1, and the inf-norm's sign),
where two coordinates tie for the largest difference (p = inf) and where two points meet:
the points drawn here differ by at least 0.05 in every coordinate and, per pair, their
largest coordinate difference leads the next one by at least 0.05.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ...forward.distance import _reduce
from ..opdb import parity_differs, samples
from ..samples import Sample

P_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)
MARGIN = 0.05


def _clear(a, b):
    """Whether every pair (row of a, row of b) is away from the distance kinks."""
    diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
    top = np.sort(diff, axis=-1)
    return diff.min() > MARGIN and (top[..., -1] - top[..., -2]).min() > MARGIN


def _points(rng, shape, other_shape=None):
    """Rows away from the kinks against themselves (pdist) or against `other_shape` rows (cdist)."""
    while True:
        a = rng.normal(size=shape)
        if other_shape is None:
            i, j = np.triu_indices(shape[0], 1)
            if _clear(a[i][:, None, :], a[j][:, None, :]):
                return a
            continue
        b = rng.normal(size=other_shape)
        if _clear(a, b):
            return a, b


@samples("_pdist_forward")
def _pdist(op, rng, dtype=np.float64):
    return [Sample((), {"self": _points(rng, (4, 3)), "p": p}, f"p={p}") for p in P_VALUES]


def _distances(diff, p):
    """The p-distances of the differences `diff` (the forward's reduction), as the backward ops take them."""
    return np.asarray(_reduce(jnp.asarray(diff), p))


# p values with a derivative of the backward op: its double-backward branches (torch 2.14 writes
# one; the seeds' is not_implemented). The grad argument is `grad` in the seeds, `grad_output` in 2.14.
_BACKWARD_P = (0.5, 1.5, 2.0, 3.0)


@samples("_pdist_backward")
def _pdist_backward(op, rng, dtype=np.float64):
    x = _points(rng, (4, 3))
    i, j = np.triu_indices(4, 1)
    grad_name = op.schema.arguments[0].name
    return [
        Sample(
            (), {grad_name: rng.normal(size=len(i)), "self": x, "p": p, "pdist": _distances(x[i] - x[j], p)}, f"p={p}"
        )
        for p in _BACKWARD_P
    ]


def _cdist_cases(rng):
    """(x1, x2, p, compute_mode): batch broadcast, every p, and the matmul form of p = 2."""
    for p in (0.5, 1.0, 2.0, 3.0, math.inf):  # pdist's samples cover every p branch; these the batching
        x1, x2 = _points(rng, (2, 3, 3), (4, 3))
        yield x1, x2, p, None
    x1, x2 = _points(rng, (3, 2), (2, 4, 2))
    yield x1, x2, 2.0, 1


@samples("_cdist_forward")
def _cdist(op, rng, dtype=np.float64):
    return [
        Sample((), {"x1": a, "x2": b, "p": p, "compute_mode": m}, f"p={p} compute_mode={m}")
        for a, b, p, m in _cdist_cases(rng)
    ]


@samples("_cdist_backward")
def _cdist_backward(op, rng, dtype=np.float64):
    grad_name = op.schema.arguments[0].name
    x1, x2 = _points(rng, (3, 2), (4, 2))
    out = []
    for p in _BACKWARD_P:
        dist = _distances(x1[:, None] - x2[None], p)
        out.append(
            Sample((), {grad_name: rng.normal(size=dist.shape), "x1": x1, "x2": x2, "p": p, "cdist": dist}, f"p={p}")
        )
    b1, b2 = _points(rng, (2, 3, 2), (4, 2))  # x2 broadcast over x1's batch
    dist = _distances(b1[..., :, None, :] - b2[None, None], 2.0)
    out.append(
        Sample((), {grad_name: rng.normal(size=dist.shape), "x1": b1, "x2": b2, "p": 2.0, "cdist": dist}, "p=2 batched")
    )
    return out


@samples("_euclidean_dist")
def _euclidean(op, rng, dtype=np.float64):
    x1, x2 = _points(rng, (2, 3, 4), (5, 4))
    return [Sample((), {"x1": x1, "x2": x2}, "batched, x2 broadcast")]


def _rand(rng, shape, dtype):
    x = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


@samples("_trilinear")
def _trilinear(op, rng, dtype=np.float64):
    """bilinear's call (x1, W, x2 -> N x out), and one with a dim summed that two inputs lack."""
    n, in1, in2, out = 3, 2, 4, 2
    bilinear = {
        "i1": _rand(rng, (n, in1), dtype),
        "i2": _rand(rng, (out, in1, in2), dtype),
        "i3": _rand(rng, (n, in2), dtype),
        "expand1": (1, 3),
        "expand2": (0,),
        "expand3": (1, 2),
        "sumdim": (2, 3),
        "unroll_dim": 1,
    }
    other = {
        "i1": _rand(rng, (2, 3), dtype),
        "i2": _rand(rng, (3, 4), dtype),
        "i3": _rand(rng, (2, 4), dtype),
        "expand1": (2,),
        "expand2": (0,),
        "expand3": (1,),
        "sumdim": (1,),
        "unroll_dim": 0,
    }
    return [Sample((), bilinear, "bilinear"), Sample((), other, "sum over a shared dim")]


parity_differs(
    ("vjp",),
    "torch 2.14.1 gives the backward ops a derivative (`_pdist_backward_backward`, `_cdist_backward_backward`; "
    "checked against JAX's autodiff of the op); torch 2.13's is not_implemented, so torch raises where jaxderiv "
    "computes",
    "_pdist_backward",
    "_cdist_backward",
    seed_spec=False,
    newest_spec=True,
)
