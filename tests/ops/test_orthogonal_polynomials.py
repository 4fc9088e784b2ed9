"""torch.special's orthogonal polynomials against PyTorch 2.13: values, NaN and inf patterns, dtypes.

Every op of jaxderiv.forward.orthogonal_polynomials, in all three overloads, is compared with
torch on a grid of x (inside and outside [-1, 1], the closed-form points +-1, 0, 1/2, huge and
infinite x, NaN) and n (negative, 0 to 40, fractional, the thresholds of ATen's trigonometric
forms and of the Hermite limits, huge, inf, NaN). Values agree to rounding: the recurrences and
the trigonometric forms amplify a rounding difference by up to about n, so the tolerance grows
with n, relative to max(|value|, 1). The one excluded case: x = NaN with n >= 2 for the
polynomials whose ATen kernel then returns an uninitialized variable (torch's value is
whatever memory held; jaxderiv gives NaN).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, load_spec
from jaxderiv.check import check_all

torch = pytest.importorskip("torch")

NAMES = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
# ATen returns an uninitialized `r` for x = NaN, n >= 2 (its loop stops before the first step).
UNINITIALIZED = set(NAMES) - {"chebyshev_polynomial_t", "hermite_polynomial_h", "hermite_polynomial_he"}
OVERLOADS = [f"special_{n}{o}" for n in NAMES for o in ("", ".x_scalar", ".n_scalar")]

_rng = np.random.default_rng(2026)
XS = np.concatenate(
    [
        _rng.uniform(-1, 1, 60),
        _rng.uniform(-3, 3, 60),
        _rng.uniform(0, 1, 40),
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
            1 + 1e-9,
            -1 - 1e-9,
            1e-300,
            1e10,
            -1e10,
            1e155,
            np.inf,
            -np.inf,
            np.nan,
        ],
    ]
)
NS = np.concatenate(
    [
        np.arange(-3, 41),
        [0.5, -0.5, 2.9, -2.9, 63, 100, 128, 129, 200, 511, 512, 513, 1000, np.nan, np.inf, -np.inf, 1e19, 1e20],
    ]
)


@pytest.fixture(scope="module")
def registry():
    return Registry(load_spec(from_torch=True))


def _degree(n):
    """static_cast<int64_t>: truncation; NaN, inf and out-of-range degrees are negative."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(n) & (np.abs(n) < 2.0**63), np.trunc(n), -1)


def _assert_matches(name, x, n, ours, theirs, per_degree):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    x, n = np.broadcast_arrays(np.asarray(x, ours.dtype), np.asarray(n, ours.dtype))
    compared = np.ones(ours.shape, bool)
    if name in UNINITIALIZED:
        compared &= ~(np.isnan(x) & (_degree(n) >= 2))
    finite = np.isfinite(theirs)
    # NaN and infinities (with their sign) in the same places
    np.testing.assert_array_equal(np.where(compared & ~finite, theirs, 0), np.where(compared & ~finite, ours, 0))
    assert np.all(np.isfinite(ours[compared & finite]))
    scale = np.fmax(np.abs(theirs), 1) * np.maximum(np.abs(_degree(n)), 1) * per_degree
    with np.errstate(invalid="ignore"):
        err = np.abs(np.where(compared & finite, ours - theirs, 0))
    if err.size and not np.all(err <= scale):
        worst = np.unravel_index(np.argmax(err / scale), err.shape)
        raise AssertionError(f"x={x[worst]!r} n={n[worst]!r}: {ours[worst]!r} vs {theirs[worst]!r}")


@pytest.mark.parametrize("dtype, per_degree", [(np.float64, 1e-14), (np.float32, 2e-5)], ids=["float64", "float32"])
@pytest.mark.parametrize("name", NAMES)
def test_grid_against_torch(registry, name, dtype, per_degree):
    X, N = (a.astype(dtype) for a in np.meshgrid(XS.astype(dtype), NS.astype(dtype)))
    theirs = getattr(torch.special, name)(torch.from_numpy(X), torch.from_numpy(N)).numpy()
    ours = registry.op(f"special_{name}")(jnp.asarray(X), jnp.asarray(N))
    _assert_matches(name, X, N, ours, theirs, per_degree)


@pytest.mark.parametrize("name", NAMES)
def test_large_degrees(registry, name):
    """The trigonometric forms for |x| < 1 and the recurrences' overflow to inf and NaN for |x| > 1."""
    x = np.concatenate([_rng.uniform(-1, 1, 20), [1.5, -1.5, 1.01, -1.01, 3.0, -3.0]])
    X, N = np.meshgrid(x, [1500.0, 5000.0])
    theirs = getattr(torch.special, name)(torch.from_numpy(X), torch.from_numpy(N)).numpy()
    ours = registry.op(f"special_{name}")(jnp.asarray(X), jnp.asarray(N))
    _assert_matches(name, X, N, ours, theirs, 1e-14)


@pytest.mark.parametrize("name", NAMES)
def test_scalar_overloads_and_dtypes(registry, name):
    """x_scalar and n_scalar, and ATen's promotion: integers and bools compute in float32, a Python
    number is a wrapped number, a 0-d tensor does not outrank a dimensioned one."""
    f = getattr(torch.special, name)
    xi = np.array([0, 1, 2, -1, 3], np.int64)
    ni = np.array([0, 1, 2, 3, 7], np.int64)
    x64 = _rng.uniform(-1.5, 1.5, (3, 1))
    n32 = np.array([0, 3, 9, 12], np.float32)
    cases = [
        ("", (xi, ni)),  # int, int -> float32
        ("", (np.array([True, False, True]), np.array([2, 3, 4], np.int32))),  # bool, int32 -> float32
        ("", (x64, n32)),  # float64 (3, 1) with float32 (4,) -> float64, broadcast
        ("", (x64.astype(np.float32), np.array(5.0))),  # a 0-d float64 n does not promote float32
        ("", (np.array(0.25), np.array(6.0))),  # 0-d
        ("", (np.zeros((0, 3)), np.zeros((3,)))),  # 0-size
        (".x_scalar", (0.3, ni)),  # Python float x, int64 n -> float32
        (".x_scalar", (2, n32)),  # Python int x -> float32
        (".x_scalar", (-0.7, ni.astype(np.float64) + 7)),  # float64 n
        (".n_scalar", (xi, 3)),  # int x, Python int n -> float32
        (".n_scalar", (x64, 10)),
        (".n_scalar", (x64.astype(np.float32), 4.7)),  # 4.7 truncates to 4
        (".n_scalar", (x64, -2)),
    ]
    for overload, (x, n) in cases:
        tx = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
        tn = torch.from_numpy(n) if isinstance(n, np.ndarray) else n
        theirs = f(tx, tn).numpy()
        ours = registry.op(f"special_{name}{overload}")(
            jnp.asarray(x) if isinstance(x, np.ndarray) else x, jnp.asarray(n) if isinstance(n, np.ndarray) else n
        )
        _assert_matches(name, x, n, ours, theirs, 1e-14 if theirs.dtype == np.float64 else 2e-5)


def test_special_values(registry):
    """ATen's closed forms and edges, spelled out."""
    op = lambda name, x, n: np.asarray(
        registry.op(f"special_{name}")(jnp.asarray(x, jnp.float64), jnp.asarray(n, jnp.float64))
    )
    nan, inf = np.nan, np.inf
    assert op("chebyshev_polynomial_t", -1.0, 3.0) == -1 and op("chebyshev_polynomial_u", -1.0, 3.0) == -4
    assert op("chebyshev_polynomial_t", 0.5, -1.0) == 0 and op("legendre_polynomial_p", 0.5, nan) == 0
    assert op("chebyshev_polynomial_t", 0.5, inf) == 0 and op("laguerre_polynomial_l", 0.5, 1e20) == 0
    assert op("chebyshev_polynomial_t", 2.0, 2.9) == 7  # n truncates to 2
    assert op("chebyshev_polynomial_t", 2.0, -0.5) == 1  # and -0.5 to 0
    assert np.isnan(op("chebyshev_polynomial_t", nan, 5.0))
    assert np.isnan(op("hermite_polynomial_h", 0.5, 513.0)) and np.isfinite(op("hermite_polynomial_h", 0.5, 100.0))
    assert op("laguerre_polynomial_l", 0.0, 7.0) == 1
    assert op("shifted_chebyshev_polynomial_w", 1.0, 3.0) == 7 and op("shifted_chebyshev_polynomial_v", 0.0, 3.0) == -7
    assert np.isnan(op("chebyshev_polynomial_t", inf, 3.0)) and op("chebyshev_polynomial_t", inf, 2.0) == inf
    # the recurrence stops at NaN: a huge degree at |x| > 1 overflows, then is NaN, as in torch
    assert np.isnan(op("chebyshev_polynomial_t", 3.0, 10**6))


def test_under_jit_and_vmap(registry):
    f = registry.op("special_legendre_polynomial_p")
    x, n = jnp.linspace(-1.2, 1.2, 7), jnp.arange(7.0)
    expected = torch.special.legendre_polynomial_p(
        torch.from_numpy(np.asarray(x)), torch.from_numpy(np.asarray(n))
    ).numpy()
    np.testing.assert_allclose(jax.jit(f)(x, n), expected, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(jax.vmap(f)(x, n), expected, rtol=1e-14, atol=1e-14)


def test_complex_raises(registry):
    with pytest.raises(TypeError):
        registry.op("special_chebyshev_polynomial_t")(jnp.ones(2, jnp.complex128), jnp.ones(2))


def test_checker_reports_not_applicable(registry):
    """torch's file declares every input non_differentiable: the checker has nothing to verify."""
    rows = check_all(ops=OVERLOADS, registry=registry)
    assert {r.op for r in rows} == set(OVERLOADS)
    assert {r.status for r in rows} == {"not_applicable"}
