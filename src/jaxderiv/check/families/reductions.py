"""Checker inputs of the reductions, scans, sorting and selection ops.

Each op is called on a few small tensors with its argument variants: dims as int, list and
negative, keepdim, 0-d and one-element inputs, zeros for prod and cumprod (their helpers'
special paths), a NaN for nansum and nanmedian, -inf for logsumexp. Values are drawn apart
(no ties, no zeros unless placed): ties are kinks, which the torch tests cover instead.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, complex_ok, kinks, known_failure, parity_differs, samples, torch_equivalent
from ..samples import Sample, draw
from . import matrix, vector

SHAPE = (3, 4)


def _x(rng, dtype, shape=SHAPE, lo=-2.0, hi=2.0):
    """Values at least 0.1 from zero and, on real inputs, 0.05 from each other."""
    for _ in range(100):
        x = draw(rng, shape, lo, hi, dtype)
        flat = np.sort(np.real(x).ravel())
        if flat.size < 2 or np.min(np.diff(flat)) > 0.05:
            return x
    raise ValueError("no well separated values in 100 draws")


def _with(x, values):
    """x with its first entries replaced (zeros, NaN, -inf at chosen places)."""
    x = x.copy()
    x.flat[: len(values)] = values
    return x


def _register(*names, complex_=False):
    """Samples `fn(rng, dtype) -> [(args, kwargs, label)]` for `names`."""

    def deco(fn):
        @samples(*names)
        def make(op, rng, dtype=np.float64):
            return [Sample(tuple(a), dict(k), label) for a, k, label in fn(rng, dtype)]

        if complex_:
            complex_ok(*names)
        return fn

    return deco


_DIMS = (((1,), False), ((-1, 0), True), ((0,), True))


@_register("sum", "mean", "prod", complex_=True)
def _full_reductions(rng, dtype):
    return [((_x(rng, dtype),), {}, "3x4"), ((_x(rng, dtype, ()),), {}, "0-d"), ((_x(rng, dtype, (1,)),), {}, "1")]


@_register("sum.dim_IntList", "mean.dim", complex_=True)
def _dim_reductions(rng, dtype):
    out = [((_x(rng, dtype), list(d), k), {}, f"dim={d} keepdim={k}") for d, k in _DIMS]
    return out + [((_x(rng, dtype, ()), [0], False), {}, "0-d")]


@_register("nansum")
def _nansum(rng, dtype):
    return [((_with(_x(rng, dtype), [np.nan]),), {}, "NaN"), ((_x(rng, dtype, ()),), {}, "0-d")]


@_register("nansum.dim_IntList")
def _nansum_dim(rng, dtype):
    return [((_with(_x(rng, dtype), [np.nan]), list(d), k), {}, f"NaN dim={d} keepdim={k}") for d, k in _DIMS]


def _zeros(rng, dtype, shape=SHAPE):
    """One zero in one row, two in another: prod's and cumprod's special paths."""
    x = _x(rng, dtype, shape)
    x[0, 1] = 0
    x[1, 0] = x[1, 2] = 0
    return x


@_register("prod.dim_int", complex_=True)
def _prod_dim(rng, dtype):
    return [
        ((_x(rng, dtype), 1), {}, "dim=1"),
        ((_zeros(rng, dtype), 1, True), {}, "zeros dim=1 keepdim"),
        ((_zeros(rng, dtype), -2), {}, "zeros dim=-2"),
        ((_x(rng, dtype, ()), 0), {}, "0-d"),
    ]


@_register("cumsum", complex_=True)
def _cumsum(rng, dtype):
    return [((_x(rng, dtype), 1), {}, "dim=1"), ((_x(rng, dtype, ()), 0), {}, "0-d")]


@_register("cumprod", complex_=True)
def _cumprod(rng, dtype):
    return [
        ((_x(rng, dtype), 0), {}, "dim=0"),
        ((_zeros(rng, dtype), -1), {}, "zeros dim=-1"),
        ((_x(rng, dtype, ()), 0), {}, "0-d"),
    ]


known_failure(
    "spec (PyTorch 1.10's cumprod_jvp, as FunctionsManual writes it): past the first zero the tangent is "
    "cumprod(where(first_zero, self_t, self_p)), right at the point but not around it, so its derivative in "
    "the zero's coordinate drops the other factors' terms (measured: 0 where JAX gives -2.34, sample 'zeros dim=-1')",
    "cumprod",
    modes=("vjp_jvp",),
)


@_register("cummax", "cummin")
def _scans(rng, dtype):
    return [
        ((_x(rng, dtype), 1), {}, "dim=1"),
        ((_x(rng, dtype), -2), {}, "dim=-2"),
        ((_x(rng, dtype, ()), 0), {}, "0-d"),
    ]


@_register("logcumsumexp", complex_=True)
def _logcumsumexp(rng, dtype):
    """ATen takes complex inputs too: its backward's complex branch conjugates."""
    return _scans(rng, dtype)


_UNBIASED = (True, False)


@_register("var", "std", "var_mean", "std_mean", complex_=True)
def _moments(rng, dtype):
    return [((_x(rng, dtype), u), {}, f"unbiased={u}") for u in _UNBIASED]


@_register("var.dim", "std.dim", "var_mean.dim", "std_mean.dim", complex_=True)
def _moments_dim(rng, dtype):
    return [
        ((_x(rng, dtype), list(d), u, k), {}, f"dim={d} unbiased={u} keepdim={k}")
        for (d, k), u in zip(_DIMS, (True, False, True))
    ]


@_register("var.correction", "std.correction", "var_mean.correction", "std_mean.correction", complex_=True)
def _moments_correction(rng, dtype):
    """Newer files' overloads: a correction (None meaning 1) instead of `unbiased`."""
    cases = [(None, None, False), ([1], 0, True), ([0, 1], 2.5, False)]
    return [
        ((_x(rng, dtype), d), {"correction": c, "keepdim": k}, f"dim={d} correction={c} keepdim={k}")
        for d, c, k in cases
    ]


_P = (2, 1, 3, 1.5, 0.5, np.inf, -np.inf, 0)


@_register("norm.Scalar", complex_=True)
def _norms(rng, dtype):
    return [((_x(rng, dtype), p), {}, f"p={p}") for p in _P]


@_register("dist", complex_=True)
def _dists(rng, dtype):
    """other broadcast against self; the difference kept from zero and ties by drawing it."""
    out = []
    for p in _P:
        other = _x(rng, dtype, (4,))
        out.append(((other + _x(rng, dtype), other, p), {}, f"p={p}"))
    return out


parity_differs(
    ("vjp", "complex"),
    "torch 2.13 cannot differentiate dist at p=0 with respect to `other`: its norm_backward gives an "
    "undefined tensor for p=0, which the formula negates (RuntimeError: Expected a proper Tensor but got "
    "None); jaxderiv gives the zero gradient, the derivative of the count of nonzero differences",
    "dist",
    torch_spec=True,
)


@_register("norm.ScalarOpt_dim", complex_=True)
def _norms_dim(rng, dtype):
    variants = [(None, [1], False), (1, [-1, 0], True), (np.inf, [0], False), (3, [1], True), (0.5, [0], False)]
    return [((_x(rng, dtype), p, d, k), {}, f"p={p} dim={d} keepdim={k}") for p, d, k in variants]


# The dtype overloads' formulas convert self to grad's (real) dtype: real inputs only.
@_register("norm.ScalarOpt_dtype")
def _norms_dtype(rng, dtype):
    return [((_x(rng, dtype), p), {"dtype": np.dtype(dtype)}, f"p={p}") for p in (2, 1.5, np.inf)]


@_register("norm.ScalarOpt_dim_dtype")
def _norms_dim_dtype(rng, dtype):
    return [
        ((_x(rng, dtype), p, [1], k), {"dtype": np.dtype(dtype)}, f"p={p} keepdim={k}")
        for p, k in ((2, False), (3, True))
    ]


@_register("renorm")
def _renorm(rng, dtype):
    """maxnorm between the slices' norms (one scaled, one not), kept apart from each."""
    out = []
    for p, dim in ((2, 0), (1, 1), (3, -1)):
        x = _x(rng, dtype)
        d = dim % 2
        norms = np.sort(np.sum(np.abs(x) ** p, axis=1 - d) ** (1 / p))
        out.append(((x, p, dim, float(norms[0] + norms[1]) / 2), {}, f"p={p} dim={dim}"))
    return out


@_register("logsumexp", complex_=True)
def _logsumexp(rng, dtype):
    return [
        ((_x(rng, dtype), [1], False), {}, "dim=1"),
        ((_with(_x(rng, dtype), [-np.inf]), [-1, 0], True), {}, "-inf dims=-1,0 keepdim"),
        ((_x(rng, dtype, ()), [0], False), {}, "0-d"),
    ]


@_register("max", "min", "median")
def _extremes(rng, dtype):
    return [((_x(rng, dtype),), {}, "3x4"), ((_x(rng, dtype, ()),), {}, "0-d")]


@_register("nanmedian")
def _nanmedian(rng, dtype):
    return [((_with(_x(rng, dtype), [np.nan, np.nan]),), {}, "NaN"), ((_x(rng, dtype, (5,)),), {}, "5")]


@_register("amax", "amin")
def _amax(rng, dtype):
    return [
        ((_x(rng, dtype), [], False), {}, "all"),
        ((_x(rng, dtype), [1], True), {}, "dim=1 keepdim"),
        ((_x(rng, dtype), [-1, 0], False), {}, "dims=-1,0"),
    ]


@_register("max.dim", "min.dim", "median.dim")
def _selections(rng, dtype):
    return [
        ((_x(rng, dtype), 1, False), {}, "dim=1"),
        ((_x(rng, dtype), -2, True), {}, "dim=-2 keepdim"),
        ((_x(rng, dtype, ()), 0, False), {}, "0-d"),
    ]


@_register("mode")
def _mode(rng, dtype):
    """Distinct values: the mode is each slice's smallest (repeated values are kinks)."""
    return [((_x(rng, dtype), 1, False), {}, "dim=1"), ((_x(rng, dtype), -2, True), {}, "dim=-2 keepdim")]


@_register("nanmedian.dim")
def _nanmedian_dim(rng, dtype):
    return [
        ((_with(_x(rng, dtype), [np.nan]), 1, False), {}, "NaN dim=1"),
        ((_x(rng, dtype), -2, True), {}, "dim=-2 keepdim"),
    ]


@_register("kthvalue")
def _kthvalue(rng, dtype):
    return [((_x(rng, dtype), 2, 1, False), {}, "k=2 dim=1"), ((_x(rng, dtype), 3, -2, True), {}, "k=3 dim=-2 keepdim")]


@_register("topk")
def _topk(rng, dtype):
    return [((_x(rng, dtype), 2), {}, "k=2"), ((_x(rng, dtype), 2, 0, False), {}, "k=2 dim=0 smallest")]


@_register("sort")
def _sort(rng, dtype):
    return [
        ((_x(rng, dtype),), {}, "dim=-1"),
        ((_x(rng, dtype), 0, True), {}, "dim=0 descending"),
        ((_x(rng, dtype, ()),), {}, "0-d"),
    ]


@_register("sort.stable")
def _sort_stable(rng, dtype):
    return [
        ((_x(rng, dtype),), {"stable": True}, "stable dim=-1"),
        ((_x(rng, dtype),), {"stable": None, "dim": 0, "descending": True}, "dim=0 descending"),
        ((_x(rng, dtype, ()),), {"stable": False}, "0-d"),
    ]


@_register("any.dims", "all.dims")
def _any_all_dims(rng, dtype):
    """Zeros among the values; None reduces every dim, an empty list none."""
    x = _x(rng, dtype) * (rng.random((3, 4)) < 0.7)
    return [
        ((x, None, False), {}, "dim=None"),
        ((x, [1], True), {}, "dim=1 keepdim"),
        ((x, [-1, 0], False), {}, "dims=-1,0"),
        ((x, [], False), {}, "dims=[]"),
    ]


@_register("_is_all_true", "_is_any_true")
def _is_true(rng, dtype):
    """Bool inputs only, as ATen requires."""
    return [
        ((rng.random((3, 4)) < 0.5,), {}, "bool 3x4"),
        ((np.ones((2,), bool),), {}, "all True"),
        ((np.zeros((0,), bool),), {}, "empty"),
    ]


@_register("aminmax")
def _aminmax(rng, dtype):
    """Over all elements (keepdim or not), one dim (negative), a 0-d input."""
    return [
        ((_x(rng, dtype),), {}, "3x4 all"),
        ((_x(rng, dtype),), {"keepdim": True}, "3x4 all keepdim"),
        ((_x(rng, dtype),), {"dim": 1}, "dim=1"),
        ((_x(rng, dtype),), {"dim": -2, "keepdim": True}, "dim=-2 keepdim"),
        ((_x(rng, dtype, ()),), {"dim": 0}, "0-d dim=0"),
    ]


@_register("segment_reduce")
def _segment_reduce(rng, dtype):
    """Every reduction by lengths along axis 0, by batched offsets along axis 1, with `initial`;
    an empty segment where its value is finite (sum's 0, prod's 1; not NaN or infinities)."""
    out = []
    for reduce in ("sum", "mean", "max", "min", "prod"):
        lengths = np.array([2, 0, 3] if reduce in ("sum", "prod") else [2, 3], np.int64)
        out.append(((_x(rng, dtype, (5, 2)), reduce), {"lengths": lengths}, f"{reduce} lengths={lengths.tolist()}"))
        out.append(
            (
                (_x(rng, dtype, (2, 5)), reduce),
                {"offsets": np.array([[0, 2, 5], [0, 1, 5]], np.int64), "axis": 1},
                f"{reduce} offsets axis=1",
            )
        )
    for reduce in ("sum", "mean", "prod"):
        out.append(
            (
                (_x(rng, dtype, (5,)), reduce),
                {"lengths": np.array([4, 1], np.int64), "initial": 1.5},
                f"{reduce} initial=1.5",
            )
        )
    return out


def _repeated(rng, dtype):
    """A 4x3 tensor with repeated values, rows and consecutive runs (rows 0 and 1 equal, row 3 = row 0)."""
    x = rng.choice(np.array([-1.5, 0.5, 2.0]), size=(4, 3)).astype(dtype)
    x[1], x[3] = x[0], x[0]
    return x


@_register("_unique2")
def _unique2(rng, dtype):
    x = _repeated(rng, dtype)
    return [
        ((x, True, True, True), {}, "4x3 ties, inverse and counts"),
        ((x, False, False, False), {}, "4x3 ties, values only"),
    ]


@_register("unique_dim", "unique_dim_consecutive")
def _unique_dim(rng, dtype):
    x = _repeated(rng, dtype)
    return [
        ((x, 0), {}, "4x3 dim=0 repeated rows"),
        ((x, -1), {"return_inverse": True, "return_counts": True}, "4x3 dim=-1"),
    ]


@_register("unique_consecutive")
def _unique_consecutive(rng, dtype):
    x = _repeated(rng, dtype)
    return [((x, True, True), {}, "4x3 flattened runs"), ((x,), {"dim": 0}, "4x3 dim=0 runs of rows")]


# -- parity with torch ------------------------------------------------------------------------
# Ties: torch splits the gradient among equal extremes, or picks one index.
kinks("max", (vector(1.0, 3.0, 3.0, -1.0),))
kinks("min", (vector(1.0, -3.0, 2.0, -3.0),))
kinks("max.dim", (matrix([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), 1))
kinks("min.dim", (matrix([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), 1))
kinks("amax", (matrix([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), [1]), (matrix([[1.0, 3.0], [3.0, -1.0]]),))
kinks(
    "amin",
    (matrix([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), [1]),
    (matrix([[1.0, -3.0], [-3.0, 1.0]]),),
    (matrix([[1.0, -3.0, -3.0], [2.0, 2.0, 2.0]]), [1], True),
)
# ties within rows and across the whole input, for both outputs (torch splits the gradient evenly);
# over a dim (keyword-only, which a kink tuple cannot pass) in tests/ops/test_reductions.py
kinks("aminmax", (matrix([[1.0, 3.0, 3.0, -2.0], [-2.0, 0.5, -2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]),))
kinks("median", (vector(1.0, 2.0, 2.0, 3.0, 2.0),))
kinks("nanmedian", (vector(1.0, 2.0, 2.0, np.nan, 2.0),))
kinks("median.dim", (matrix([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]]), 1))
kinks("nanmedian.dim", (matrix([[1.0, 2.0, 2.0], [5.0, 5.0, 5.0]]), 1))
# the norm's kink: the zero vector
kinks("norm.Scalar", (np.zeros(3), 2), (np.zeros(3), 1), (vector(0.0, 1.0, -2.0), 1))
kinks("norm.ScalarOpt_dim", (np.zeros((2, 3)), 2, [1]), (matrix([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]), float("inf"), [1]))
# prod's special paths: one zero, two zeros
kinks("prod", (vector(2.0, 0.0, 3.0),), (vector(2.0, 0.0, 0.0, 3.0),))
kinks("prod.dim_int", (matrix([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, 3.0]]), 1))
kinks("cumprod", (vector(2.0, 0.0, 3.0, 0.0, 1.5), 0))
# sorting and selection with equal values: which index torch picks carries the gradient
kinks("sort", (vector(2.0, 1.0, 2.0, 1.0, 3.0),), (vector(2.0, 1.0, 2.0, 1.0, 3.0), -1, True))
kinks("topk", (vector(2.0, 1.0, 3.0, 3.0, 1.0), 2), (vector(2.0, 1.0, 3.0, 3.0, 1.0), 2, -1, False))
kinks("kthvalue", (vector(2.0, 1.0, 2.0, 1.0, 3.0), 2))
kinks("mode", (vector(2.0, 1.0, 2.0, 1.0, 3.0),))
torch_equivalent(
    Equivalent(
        lambda aten, a: aten.nansum(a["self"], a["dim"], a["keepdim"], dtype=a.get("dtype")),
        "torch 2.13 merged the overload into nansum",
        True,
    ),
    "nansum.dim_IntList",
)
parity_differs(
    ("jvp", "kinks", "complex"),
    "torch.func.jvp of aten.norm.Scalar raises in torch 2.13 (its forward gradient "
    "has the input's shape, not the 0-d result's); jaxderiv evaluates the result formula (seed files: "
    "transposes the backward formula)",
    "norm.Scalar",
    torch_spec=True,
)
parity_differs(
    ("jvp",),
    "torch.func.jvp of aten.norm.ScalarOpt_dtype raises in torch 2.13, as for norm.Scalar",
    "norm.ScalarOpt_dtype",
    torch_spec=True,
)
