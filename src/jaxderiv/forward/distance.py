"""Forward implementations of ATen's distance ops (pdist, cdist, the Euclidean matmul form)
and of `_trilinear`, the product-and-sum kernel behind `bilinear`.

A p-distance reduces |x_i - x_j| over the last dim: p = 0 counts nonzero differences, p = inf
takes their maximum, any other p is (sum |d|^p)^(1/p). The `*_backward` ops are ATen's
distance kernels' backward: per pair, the derivative of that reduction with respect to the
difference, 0 where the distance is 0 (ATen's subgradient).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..records import Sample, parity_differs, samples
from . import impl


def _check_float(name, *xs):
    for x in xs:
        if not jnp.issubdtype(x.dtype, jnp.floating):
            raise RuntimeError(f"{name} only supports floating-point dtypes, got {x.dtype}")


def _reduce(diff, p):
    """The p-distance of differences `diff` over their last dim."""
    a = jnp.abs(diff)
    if p == 0:
        return jnp.sum(a != 0, axis=-1).astype(diff.dtype)
    if p == 1:
        return jnp.sum(a, axis=-1)
    if p == 2:
        return jnp.sqrt(jnp.sum(a * a, axis=-1))
    if math.isinf(p):
        return jnp.max(a, axis=-1, initial=0.0)
    return jnp.sum(a**p, axis=-1) ** (1.0 / p)


def _pair_grad(diff, grad, dist, p):
    """ATen's per-coordinate backward of one p-distance: d dist / d diff, times grad.

    `grad` and `dist` broadcast against `diff` (they lack its last dim, given as size 1).
    """
    zero = dist == 0
    safe = jnp.where(zero, 1.0, dist)
    if p == 0:
        return jnp.zeros_like(diff * grad)
    if p == 1:
        return grad * jnp.sign(diff)
    if math.isinf(p):
        return grad * jnp.sign(diff) * (jnp.abs(diff) == dist)
    if p == 2:
        return jnp.where(zero, 0.0, grad * diff / safe)
    a = jnp.abs(diff)
    if p < 2:  # |d|^(p-1) sign(d): 0 at d == 0 for p >= 1, ATen's 0 for p < 1
        skip = zero | ((a == 0) & (p < 1))
        value = jnp.sign(diff) * jnp.where(skip, 1.0, a) ** (p - 1) * grad / safe ** (p - 1)
        return jnp.where(skip, 0.0, value)
    return jnp.where(zero, 0.0, diff * a ** (p - 2) * grad / safe ** (p - 1))


def pair_grad_partials(diff, dist, p):
    """The pieces of `_pair_grad` = grad * u(diff, dist), with `dist` an input of its own (as the
    backward ops take it): u, its elementwise derivative in diff (the Jacobian is diagonal) and
    its derivative in dist. u is piecewise constant for p in {0, 1, inf}; otherwise
    u = sign(d) |d|^(p-1) / dist^(p-1), du/dd = (p-1) |d|^(p-2) / dist^(p-1), du/ddist = -(p-1) u / dist,
    each 0 where ATen's u is set to 0 (dist 0; d 0 for p < 2, where |d|^(p-2) has no value)."""
    u = _pair_grad(diff, jnp.ones((), diff.dtype), dist, p)
    if p in (0, 1) or math.isinf(p):
        zero = jnp.zeros_like(u)
        return u, zero, zero
    a = jnp.abs(diff)
    skip = (dist == 0) | ((a == 0) & (p < 2))
    safe_a, safe_dist = jnp.where(skip, 1.0, a), jnp.where(dist == 0, 1.0, dist)
    du_dd = jnp.where(skip, 0.0, (p - 1) * safe_a ** (p - 2) / safe_dist ** (p - 1))
    du_ddist = jnp.where(dist == 0, 0.0, -(p - 1) * u / safe_dist)
    return u, du_dd, du_ddist


# -- pdist: the distances between the rows of one matrix, i < j in row-major order -------------


def pairs(n):
    i, j = np.triu_indices(n, 1)
    return jnp.asarray(i), jnp.asarray(j)


@impl("_pdist_forward")
def _pdist_forward(self, p=2):
    _check_float("pdist", self)
    if self.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = pairs(self.shape[0])
    return _reduce(self[i] - self[j], p)


@impl("_pdist_backward")
def _pdist_backward(grad_output, self, p, pdist):
    """1.7's schema names grad_output `grad` (registry.RENAMED_ARGUMENTS)."""
    i, j = pairs(self.shape[0])
    part = _pair_grad(self[i] - self[j], grad_output[:, None], pdist[:, None], p)
    return jnp.zeros_like(self).at[i].add(part).at[j].add(-part)


# -- cdist: the distances between the rows of x1 and those of x2, batched ----------------------


def expanded(x1, x2):
    """x1 and x2 with their batch dims broadcast together (ATen's expand_batch_portion)."""
    batch = jnp.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return jnp.broadcast_to(x1, batch + x1.shape[-2:]), jnp.broadcast_to(x2, batch + x2.shape[-2:])


def _uses_matmul(x1, x2, p, compute_mode):
    """ATen's choice of the matmul form of the Euclidean distance (compute_mode 0/None: > 25 rows)."""
    mode = 0 if compute_mode is None else compute_mode
    return p == 2 and (mode == 1 or (mode == 0 and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))


@impl("_cdist_forward")
def _cdist_forward(x1, x2, p, compute_mode):
    _check_float("cdist", x1, x2)
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    x1, x2 = expanded(x1, x2)
    if _uses_matmul(x1, x2, p, compute_mode):
        return _euclidean_dist(x1, x2)
    return _reduce(x1[..., :, None, :] - x2[..., None, :, :], p)


@impl("_cdist_backward")
def _cdist_backward(grad_output, x1, x2, p, cdist):
    """The gradient of x1, in x1's batch-expanded shape (the engine sums it back). 1.7's schema
    names grad_output `grad` (registry.RENAMED_ARGUMENTS)."""
    x1, x2 = expanded(x1, x2)
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return jnp.sum(_pair_grad(diff, grad_output[..., None], cdist[..., None], p), axis=-2)


@impl("_euclidean_dist")
def _euclidean_dist(x1, x2):
    """sqrt(max(|x1|^2 - 2 x1.x2 + |x2|^2, 0)) by one matmul of padded rows, as ATen computes it."""
    n1 = jnp.sum(x1 * x1, axis=-1, keepdims=True)
    n2 = jnp.sum(x2 * x2, axis=-1, keepdims=True)
    left = jnp.concatenate([x1 * -2, n1, jnp.ones_like(n1)], axis=-1)
    right = jnp.concatenate([x2, jnp.ones_like(n2), n2], axis=-1)
    return jnp.sqrt(jnp.maximum(left @ jnp.swapaxes(right, -1, -2), 0))


# -- _trilinear: i1 * i2 * i3, each unsqueezed at its expand dims, summed over sumdim ----------


def _unsqueezed(x, expand, total):
    for d in range(total):
        if d in expand:
            x = jnp.expand_dims(x, d)
    return x


@impl("_trilinear")
def trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """ATen's _trilinear; `unroll_dim` only picks the order ATen loops in, not the value."""
    total = i1.ndim + len(expand1)
    e1, e2, e3 = ({d % total for d in e} for e in (expand1, expand2, expand3))
    product = _unsqueezed(i1, e1, total) * _unsqueezed(i2, e2, total) * _unsqueezed(i3, e3, total)
    return jnp.sum(product, axis=tuple(sorted({d % total for d in sumdim})))


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the distance ops and `_trilinear`.
#
# Distances have kinks where two points share a coordinate (p <= 1, and the inf-norm's sign),
# where two coordinates tie for the largest difference (p = inf) and where two points meet:
# the points drawn here differ by at least 0.05 in every coordinate and, per pair, their
# largest coordinate difference leads the next one by at least 0.05.
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
def _pdist_backward_samples(op, rng, dtype=np.float64):
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
def _cdist_backward_samples(op, rng, dtype=np.float64):
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
def _trilinear_samples(op, rng, dtype=np.float64):
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
