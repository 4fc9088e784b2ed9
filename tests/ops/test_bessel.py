"""torch.special's Bessel and Airy functions against PyTorch 2.13: values, edges, dtypes.

Each op of jaxderiv.forward.bessel is compared with torch on a wide grid: both signs, 0, the
branch points of ATen's approximations (5 for J and Y; 8 for I; 2 for K; 2.09, 8.3203353 and
103.892 for Ai), tiny and huge magnitudes, overflow and underflow of exp, +-inf and NaN.
float64 values agree to ~1e-13 relative; near the zeros of the oscillating functions (J, Y, Ai
below 0) the error is measured against the function's envelope instead, for Ai below 0 times
its phase 2/3 |x|^3/2, whose rounding alone moves the value by that much. Subnormal numbers are
left out: XLA on CPU flushes them to zero (a subnormal input acts as 0, a subnormal result is 0).
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
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
]
OSCILLATING = {"airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0"}

_rng = np.random.default_rng(7)
_EDGES = [
    0.0,
    -0.0,
    1e-6,
    1e-5,
    0.99999e-5,
    0.5,
    -0.5,
    2.0,
    -2.0,
    2.09,
    -2.09,
    5.0,
    -5.0,
    8.0,
    -8.0,
    8.3203353,
    103.892,
    103.9,
    700.0,
    709.0,
    710.0,
    750.0,
    1e10,
    1e300,
    -1e300,
    1e-300,
    -1e-300,
    np.inf,
    -np.inf,
    np.nan,
]
XS = np.concatenate(
    [
        _rng.uniform(-10, 10, 800),
        _rng.uniform(-120, 120, 800),
        np.exp(_rng.uniform(-30, 7, 400)),
        -np.exp(_rng.uniform(-30, 7, 400)),
        _EDGES,
    ]
)


@pytest.fixture(scope="module")
def registry():
    return Registry(load_spec(from_torch=True))


def _assert_matches(name, x, ours, theirs, rtol):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    x = np.asarray(x, ours.dtype)
    tiny = np.finfo(ours.dtype).tiny
    normal = ~((np.abs(x) < tiny) & (x != 0)) & ~((np.abs(theirs) < tiny) & (theirs != 0))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(np.where(normal & ~finite, theirs, 0), np.where(normal & ~finite, ours, 0))
    ok = normal & finite
    assert np.all(np.isfinite(ours[ok]))
    # the oscillating ones: relative to their envelope (|x|^-1/2, Ai's |x|^-1/4) near their zeros
    with np.errstate(divide="ignore", over="ignore"):
        envelope = np.fmin(1.0, np.abs(x) ** -0.25) if name in OSCILLATING else 0.0
        if name == "airy_ai":  # sin and cos of t = 2/3 |x|^3/2: one rounding of t is t * eps
            envelope = envelope * np.where(x < 0, np.fmax(1.0, 2 / 3 * np.abs(x) ** 1.5), 1.0)
    with np.errstate(invalid="ignore"):
        err = np.abs(np.where(ok, ours - theirs, 0))
    bound = np.where(ok, rtol * (np.abs(np.where(ok, theirs, 0)) + envelope), np.inf)
    if err.size and not np.all(err <= bound):
        worst = np.unravel_index(np.argmax(err / np.where(bound > 0, bound, tiny)), err.shape)
        raise AssertionError(f"{name} at x={x[worst]!r}: {ours[worst]!r} vs {theirs[worst]!r}")


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 4e-6)], ids=["float64", "float32"])
@pytest.mark.parametrize("name", NAMES)
def test_grid_against_torch(registry, name, dtype, rtol):
    x = XS.astype(dtype)
    theirs = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
    _assert_matches(name, x, registry.op(f"special_{name}")(jnp.asarray(x)), theirs, rtol)


@pytest.mark.parametrize("name", NAMES)
def test_dtypes_and_shapes(registry, name):
    """Integers and bools compute in float32; 0-d and 0-size tensors; a (2, 3) float64 array."""
    f, op = getattr(torch.special, name), registry.op(f"special_{name}")
    for x in (
        np.arange(-4, 12, dtype=np.int64),
        np.array([3, -2], np.int32),
        np.array([True, False]),
        np.array(2.5),
        np.array(-3.0, np.float32),
        np.zeros((0, 4)),
        _rng.uniform(-6, 6, (2, 3)),
    ):
        theirs = f(torch.from_numpy(x)).numpy()
        ours = op(jnp.asarray(x))
        _assert_matches(name, x, ours, theirs, 1e-13 if theirs.dtype == np.float64 else 4e-6)


def test_special_values(registry):
    op = lambda name, x: float(registry.op(f"special_{name}")(jnp.asarray(x, jnp.float64)))
    assert op("bessel_j0", 0.0) == 1 and op("bessel_j1", 0.0) == 0
    assert op("bessel_y0", 0.0) == -np.inf and np.isnan(op("bessel_y0", -1.0)) and np.isnan(op("bessel_y1", -1.0))
    assert op("modified_bessel_k0", 0.0) == np.inf and np.isnan(op("modified_bessel_k1", -0.5))
    assert op("modified_bessel_i0", -3.0) == op("modified_bessel_i0", 3.0)
    assert op("modified_bessel_i1", -3.0) == -op("modified_bessel_i1", 3.0)
    assert np.isnan(op("airy_ai", np.inf)) and np.isnan(op("airy_ai", -np.inf)) and op("airy_ai", 200.0) == 0
    assert op("spherical_bessel_j0", np.inf) == 0 and op("spherical_bessel_j0", 0.0) == 1
    assert np.isnan(op("bessel_j0", np.inf))  # ATen's asymptotic form at inf: cos(inf) is NaN
    for name in NAMES:
        assert np.isnan(op(name, np.nan))


def test_under_jit_and_vmap(registry):
    f = registry.op("special_airy_ai")
    x = jnp.linspace(-12.0, 12.0, 41)
    expected = torch.special.airy_ai(torch.from_numpy(np.asarray(x))).numpy()
    np.testing.assert_allclose(jax.jit(f)(x), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jax.vmap(f)(x), expected, rtol=1e-13, atol=1e-15)


def test_complex_raises(registry):
    with pytest.raises(TypeError):
        registry.op("special_bessel_j0")(jnp.ones(2, jnp.complex64))


def test_checker_reports_not_applicable(registry):
    """torch's file declares these non_differentiable: the checker has nothing to verify."""
    names = [f"special_{n}" for n in NAMES]
    rows = check_all(ops=names, registry=registry)
    assert {r.op for r in rows} == set(names)
    assert {r.status for r in rows} == {"not_applicable"}
