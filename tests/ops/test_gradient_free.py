"""Forwards of ATen ops that carry no gradient (`nondifferentiable.impl`: linspace, logspace,
floor_divide, heaviside, isinf, isposinf, isneginf, isin, bucketize, allclose, empty_permuted,
detach, _chunk_cat, histogram and histogramdd's ops) and hash_tensor (an entry whose result is
not differentiable), against torch 2.13: values, dtypes and shapes on edge inputs (0-size, 0-d,
integer and bool dtypes, negative values, NaN and infinities), and an error where torch raises.

linspace and logspace are compared bit for bit: their bounds convert as c10 converts Scalars,
integer dtypes truncate as C++ does, linspace's points are fused multiply-adds as ATen's AVX2 and
AVX512 kernels compute them, and logspace's powers are the C library's. The last test shows the
comparison catching the NumPy-style forwards these replace.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv.forward import implementation
from jaxderiv.forward import OpKind, kind_of

torch = pytest.importorskip("torch")
from jaxderiv.torch._values import jax_dtype, to_numpy  # noqa: E402

aten = torch.ops.aten
nan, inf = float("nan"), float("inf")
# ATen's x86 builds with fused multiply-add; elsewhere linspace may round differently by an ulp
FMA = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


def _jax(v):
    """A torch argument as the forwards take it (tensors as arrays, dtypes as NumPy dtypes)."""
    if isinstance(v, torch.Tensor):
        return jnp.asarray(to_numpy(v), jax_dtype(v.dtype))
    if isinstance(v, torch.dtype):
        return jax_dtype(v)
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, torch.Tensor) for x in v):
        return [_jax(x) for x in v]
    return v


def _leaves(x):
    return [y for v in x for y in _leaves(v)] if isinstance(x, (list, tuple)) else [x]


def _differs(got, want, rtol=0.0) -> str:
    """Why `got` (jaxderiv's) is not torch's `want`, or "" when it is: the same Python bool, or
    the same shapes, dtypes and values (NaN where torch has NaN; `rtol` 0: bit for bit)."""
    if isinstance(want, bool):
        return "" if got is want else f"{got!r}, torch {want!r}"
    got, want = _leaves(got), _leaves(want)
    if len(got) != len(want):
        return f"{len(got)} outputs, torch {len(want)}"
    for g, w in zip(got, want):
        g, w = np.asarray(g), to_numpy(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"{g.dtype}{g.shape}, torch {w.dtype}{w.shape}"
        wide = np.complex128 if g.dtype.kind == "c" else np.float64 if g.dtype.kind == "f" else g.dtype
        g, w = g.astype(wide), w.astype(wide)
        same = (
            np.array_equal(g, w, equal_nan=True) if not rtol else np.allclose(g, w, rtol=rtol, atol=0, equal_nan=True)
        )
        if not same:
            return f"values {g.ravel()[:6]}, torch {w.ravel()[:6]}"
    return ""


def _agree(name, torch_fn, *args, tolerance=0.0, **kwargs):
    """jaxderiv's forward of `name` agrees with torch on these arguments (to `tolerance`
    relatively; 0: bit for bit), or both raise."""
    try:
        want = torch_fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - torch refuses the input: so must jaxderiv
        with pytest.raises(Exception):  # noqa: B017, PT011
            implementation(name)(*map(_jax, args), **{k: _jax(v) for k, v in kwargs.items()})
        return
    got = implementation(name)(*map(_jax, args), **{k: _jax(v) for k, v in kwargs.items()})
    why = _differs(got, want, tolerance)
    assert not why, f"{name}{tuple(getattr(a, 'shape', a) for a in args)} {kwargs}: {why}"


GRADIENT_FREE = [
    "linspace",
    "linspace.Tensor_Tensor",
    "linspace.Tensor_Scalar",
    "linspace.Scalar_Tensor",
    "logspace",
    "logspace.Tensor_Tensor",
    "logspace.Tensor_Scalar",
    "logspace.Scalar_Tensor",
    "floor_divide",
    "floor_divide.Scalar",
    "heaviside",
    "isinf",
    "isposinf",
    "isneginf",
    "isin.Tensor_Tensor",
    "isin.Tensor_Scalar",
    "isin.Scalar_Tensor",
    "bucketize.Tensor",
    "bucketize.Scalar",
    "allclose",
    "empty_permuted",
    "detach",
    "_chunk_cat",
    "histogram.bin_ct",
    "histogram.bins_tensor",
    "_histogramdd_bin_edges",
    "_histogramdd_from_bin_cts",
    "_histogramdd_from_bin_tensors",
    "signbit",
    "searchsorted.Tensor",
    "searchsorted.Scalar",
    "repeat_interleave.Tensor",
    "nonzero_static",
    "scatter.reduce",
    "scatter.value_reduce",
    "new_empty_strided",
    "_embedding_bag_forward_only",
    "resize_",
    "resize_as_",
]


def test_they_are_registered_as_carrying_no_gradient():
    carries_none = (OpKind.GRADIENT_FREE, OpKind.NO_DERIVATIVE, OpKind.RANDOM)
    assert [n for n in GRADIENT_FREE if kind_of(n) not in carries_none] == []
    assert implementation("hash_tensor") is not None and kind_of("hash_tensor") is OpKind.DIFFERENTIABLE


# -- linspace, logspace -----------------------------------------------------------------------

RANGE_DTYPES = [
    None,
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "complex64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
]
STARTS, ENDS, STEPS = (-2.0, 0, 4.3, -3, 1, 2.5j), (-3, 1, 50, 1e3, 7.7), (0, 1, 2, 3, 7, 50)


def _range_calls(dtype):
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    for start, end, steps in itertools.product(STARTS, ENDS, STEPS):
        yield "linspace", torch.linspace, (start, end, steps), kw
        for base in ((), (2.0,), (1.1,), (-2.0,)):
            yield "logspace", torch.logspace, (start, end, steps, *base), kw


def _complex_power_tolerance(name, dtype, args, otherwise):
    """Complex logspace: 1e-6, or 1e-4 for a negative base (its log has the phase pi, so the
    powers' phases, and float32 rounding differences with them, grow with the exponent)."""
    if name != "logspace" or not (dtype == "complex64" or isinstance(args[0], complex)):
        return otherwise
    return 1e-4 if args[3:] and args[3] < 0 else 1e-6


@pytest.mark.skipif(not FMA, reason="ATen's linspace kernel without fused multiply-add rounds differently")
@pytest.mark.parametrize("dtype", RANGE_DTYPES, ids=str)
def test_linspace_and_logspace_are_atens_bit_for_bit(dtype):
    """Integer dtypes truncate the bounds first (uint8 wraps -3 to 253), then each point; a
    value out of range converts as x86 does; float overflow of a bound raises as c10 does; a
    single point is the (untruncated) start; steps=0 is empty; bool is refused (but for 0 or 1
    steps). Complex logspace is compared to 1e-6 (1e-4 for a negative base): ATen's powers are
    the C library's cpow, here exp(x log base)."""
    for name, fn, args, kw in _range_calls(dtype):
        _agree(name, fn, *args, tolerance=_complex_power_tolerance(name, dtype, args, 0.0), **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_linspace_and_logspace_agree_within_an_ulp(dtype):
    """The same comparison at rtol 1e-6 (ints exactly), on any CPU."""
    for name, fn, args, kw in _range_calls(dtype):
        _agree(name, fn, *args, tolerance=_complex_power_tolerance(name, dtype, args, 1e-6 * (dtype != "int64")), **kw)


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
def test_the_tensor_overloads_read_0d_bounds(fn):
    """0-d int64, float32 and bool tensors as either bound (ATen's `.item()`), dtype None or
    given; a 1-d bound is refused."""
    t = getattr(torch, fn)
    bounds = [torch.tensor(-2), torch.tensor(4.3), torch.tensor(True), 7, -1.5]
    for start, end, steps, dtype in itertools.product(
        bounds, bounds, (1, 2, 5, 50), (None, torch.int64, torch.float64)
    ):
        if not isinstance(start, torch.Tensor) and not isinstance(end, torch.Tensor):
            continue
        overload = f"{fn}.{'Tensor' if isinstance(start, torch.Tensor) else 'Scalar'}_{'Tensor' if isinstance(end, torch.Tensor) else 'Scalar'}"
        _agree(
            overload,
            t,
            start,
            end,
            steps,
            **({} if dtype is None else {"dtype": dtype}),
            tolerance=0.0 if FMA else 1e-6,
        )
    _agree(f"{fn}.Tensor_Tensor", t, torch.tensor([1.0]), torch.tensor(4.0), 3)


def test_under_jit_the_bounds_may_be_traced():
    """Traced 0-d bounds compute with jax.numpy: within an ulp of torch, integers exact."""
    lin = jax.jit(lambda s, e: implementation("linspace.Tensor_Tensor")(s, e, 50, dtype=np.dtype("int32")))
    np.testing.assert_array_equal(
        lin(jnp.asarray(-2.0), jnp.asarray(50)), torch.linspace(-2.0, 50, 50, dtype=torch.int32)
    )
    lin = jax.jit(lambda s, e: implementation("linspace.Tensor_Scalar")(s, e, 50))
    want = torch.linspace(torch.tensor(-2.0), 7.7, 50)
    # XLA divides by the constant count through its reciprocal: the step may be an ulp off
    np.testing.assert_allclose(lin(jnp.asarray(-2.0, jnp.float32), 7.7), want.numpy(), rtol=1e-6, atol=1e-6 * 7.7)
    log = jax.jit(lambda s: implementation("logspace.Tensor_Scalar")(s, 4.0, 7, 1.1, dtype=np.dtype("complex64")))
    np.testing.assert_allclose(
        log(jnp.asarray(1 + 1j)), torch.logspace(torch.tensor(1 + 1j), 4.0, 7, 1.1).numpy(), rtol=1e-6
    )


# -- arithmetic with no derivative: floor_divide, heaviside -------------------------------------

NUMERATORS = [7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, inf, -inf, nan, 5.5, -5.5, 1e300]
DENOMINATORS = [2.0, 2.0, -2.0, -2.0, 0.0, 0.0, -0.0, 2.0, 3.0, 1.0, 0.5, 0.25, 1e-300]
BINARY_DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int8, torch.uint8, torch.bool]


def _values(values, dtype):
    t = torch.tensor(values, dtype=torch.float64)
    return (
        t.to(dtype) if dtype.is_floating_point else torch.nan_to_num(t, 0.0, 100.0, -100.0).clamp(-100, 100).to(dtype)
    )


@pytest.mark.parametrize(("a", "b"), list(itertools.product(BINARY_DTYPES, repeat=2)), ids=str)
def test_floor_divide_and_heaviside(a, b):
    """floor_divide: ATen's type promotion (a 0-d tensor and a Python scalar rank below a tensor),
    rounding toward -inf, integers by integer division; bool is refused. heaviside: `values` at
    either zero, 0 at NaN; both tensors of one dtype."""
    x = _values(NUMERATORS, a)
    y = (
        _values(DENOMINATORS, b)
        if b.is_floating_point
        else torch.tensor([2, 2, -2, -2, 1, 1, 3, 2, 3, 1, 5, 4, 7]).to(b)
    )
    if b in (torch.uint8, torch.bool):
        y = y.abs().clamp(min=1) if b != torch.bool else torch.ones(13, dtype=torch.bool)
    _agree("floor_divide", torch.floor_divide, x, y)
    _agree("floor_divide", torch.floor_divide, x, y[2])
    _agree("floor_divide", torch.floor_divide, x[:0], y[:0])
    for s in (2, -2.5, 3, 0.5):
        _agree("floor_divide.Scalar", torch.floor_divide, x, s)
    _agree("heaviside", torch.heaviside, x, y.to(a))
    _agree("heaviside", torch.heaviside, x[3], y.to(a))
    _agree("heaviside", torch.heaviside, x, y)  # different dtypes: refused unless equal


def test_integer_floor_division_by_zero_raises_as_aten_does():
    with pytest.raises(ZeroDivisionError):
        implementation("floor_divide")(jnp.asarray([7]), jnp.asarray([0]))
    with pytest.raises(ZeroDivisionError):
        implementation("floor_divide.Scalar")(jnp.asarray([7]), 0)
    assert implementation("floor_divide.Scalar")(jnp.zeros(0, jnp.int64), 0).shape == (0,)  # nothing divided
    _agree(
        "floor_divide", torch.floor_divide, torch.tensor([-128], dtype=torch.int8), torch.tensor([-1], dtype=torch.int8)
    )


# -- queries: isinf, isin, bucketize, allclose ---------------------------------------------------

SPECIAL = torch.tensor([nan, inf, -inf, 0.0, -0.0, 1.5, -2.0, 3.0, 1e30])


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8", "bool", "complex64"]
)
@pytest.mark.parametrize("name", ["isinf", "isposinf", "isneginf"])
def test_infinity_queries(name, dtype):
    """False for integers and bools; complex: either part infinite (isposinf/isneginf refuse it)."""
    dt = getattr(torch, dtype)
    x = torch.complex(SPECIAL, SPECIAL.flip(0)).to(dt) if dt.is_complex else SPECIAL.to(dt)
    for v in (x, x[:0], x[1], x.reshape(3, 3)):
        _agree(name, getattr(torch, name), v)


def _pool(dtype, shape, gen):
    """Values with repeats (and, for floats, NaN and -0.0): what isin and bucketize tell apart."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    low = 0 if dtype == torch.uint8 else -5
    t = (torch.randint(low, 6, shape, generator=gen) / (2 if dtype.is_floating_point else 1)).to(dtype)
    if dtype.is_floating_point and t.numel() > 1:
        t.view(-1)[:2] = torch.tensor([nan, -0.0])
    return t


ISIN_DTYPES = [
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.int8,
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.bool,
]


@pytest.mark.parametrize("dtype", ISIN_DTYPES, ids=str)
def test_isin(dtype):
    """Both of ATen's kernels (few test elements: compare each; many: sort): promotion as each
    promotes, NaN never in, -0.0 in 0.0, `invert`, and `assume_unique` on repeating elements
    as ATen's sort then answers; 0-size and 0-d operands; bool (and complex) refused."""
    gen = torch.Generator().manual_seed(0)
    shapes = [(), (0,), (3,), (4, 5), (100,)]
    for s1, s2, other in itertools.product(shapes, shapes, (dtype, torch.float64)):
        e, t = _pool(dtype, s1, gen), _pool(other, s2, gen)
        for unique, invert in itertools.product((False, True), repeat=2):
            _agree("isin.Tensor_Tensor", torch.isin, e, t, assume_unique=unique, invert=invert)
    for scalar in (2, 2.5, 1.1, -1, 300, True):
        for s in [(), (3,), (20,)]:
            t = _pool(dtype, s, gen)
            for invert in (False, True):
                _agree("isin.Scalar_Tensor", torch.isin, scalar, t, invert=invert)
                _agree("isin.Tensor_Scalar", torch.isin, t, scalar, invert=invert)


def test_isin_promotes_as_each_of_atens_kernels_does():
    """1.1 against float32 test elements: found by the element kernel (a wrapped number takes the
    tensor's dtype), not by the sorting one (its elements are flattened float64)."""
    few, many = torch.tensor([1.1] + [5.0] * 8), torch.tensor([1.1] + [5.0] * 19)
    assert implementation("isin.Scalar_Tensor")(1.1, _jax(few)).item() is True
    assert implementation("isin.Scalar_Tensor")(1.1, _jax(many)).item() is False
    _agree("isin.Scalar_Tensor", torch.isin, 1.1, few)
    _agree("isin.Scalar_Tensor", torch.isin, 1.1, many)
    _agree("isin.Tensor_Tensor", torch.isin, torch.tensor(1.1, dtype=torch.float64), many)
    for invert in (False, True):  # repeated elements with assume_unique: ATen's answer, not membership
        _agree(
            "isin.Tensor_Tensor",
            torch.isin,
            torch.tensor([1, 1, 3]),
            torch.arange(5, 40),
            assume_unique=True,
            invert=invert,
        )


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.int8, torch.float16], ids=str
)
def test_bucketize(dtype):
    """ATen's bisection (right: upper bound), out_int32, empty and odd-sized boundaries, 0-d and
    0-size inputs, a Scalar input as a wrapped number."""
    gen = torch.Generator().manual_seed(0)
    for count, right, out_int32 in itertools.product((0, 1, 2, 5, 8, 9, 33), (False, True), (False, True)):
        b = _pool(dtype, (count,), gen).nan_to_num(3.0).msort()
        kw = {"right": right, "out_int32": out_int32}
        for shape in ((), (0,), (7,), (3, 4)):
            _agree("bucketize.Tensor", torch.bucketize, _pool(dtype, shape, gen), b, **kw)
        for scalar in (1, -1.5, 2**40):
            _agree("bucketize.Scalar", torch.bucketize, scalar, b, **kw)


def test_bucketize_edge_inputs():
    """NaN values go past every boundary; a NaN boundary sends the search right as ATen's does;
    mixed dtypes promote (a 0-d tensor ranking below the boundaries); boundaries must be 1-d;
    bool and complex are refused."""
    values = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, nan, -inf, inf])
    for right in (False, True):
        _agree("bucketize.Tensor", torch.bucketize, values, torch.tensor([1.0, nan, 3.0, 4.0]), right=right)
        _agree("bucketize.Tensor", torch.bucketize, values, torch.tensor([-inf, 0.0, 1.0, inf]), right=right)
        _agree(
            "bucketize.Tensor",
            torch.bucketize,
            torch.tensor(1.1, dtype=torch.float64),
            torch.tensor([1.1]),
            right=right,
        )
        _agree("bucketize.Scalar", torch.bucketize, 1.1, torch.tensor([1.1]), right=right)
    _agree("bucketize.Tensor", torch.bucketize, torch.tensor([1.5, 2.5]), torch.tensor([1, 2, 3]))
    _agree("bucketize.Tensor", torch.bucketize, torch.tensor([1, 2]), torch.tensor([1.5, 2.5], dtype=torch.float64))
    _agree(
        "bucketize.Tensor",
        torch.bucketize,
        torch.tensor([200], dtype=torch.uint8),
        torch.tensor([-1, 100], dtype=torch.int8),
    )
    _agree("bucketize.Tensor", torch.bucketize, torch.tensor([1]), torch.tensor([[1]]))
    _agree("bucketize.Tensor", torch.bucketize, torch.tensor([True]), torch.tensor([False, True]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8", "bool", "complex64"])
def test_allclose(dtype):
    """A Python bool: |a - b| <= atol + |rtol * b| where finite, or equal (NaN with equal_nan);
    integers and bools measured in float32; shapes broadcast."""
    dt = getattr(torch, dtype)
    pairs = [
        ([1.0, nan], [1.0, nan]),
        ([100.0], [101.0]),
        ([100.0], [102.0]),
        ([0.0], [255.0]),
        ([inf], [inf]),
        ([inf], [-inf]),
    ]
    pairs += [([1.0], [1.00001001]), ([], []), ([[1.0], [1.0]], [1.0, 1.0]), ([1.0, 2.0, 3.0], [1.05, 2.2, 2.9])]
    for (a, b), rtol, atol, equal_nan in itertools.product(
        pairs, (0.0, 1e-5, 0.1), (0.0, 1e-2, 1.0, inf), (False, True)
    ):
        ta, tb = torch.tensor(a), torch.tensor(b)
        if not (dt.is_floating_point or dt.is_complex):
            ta, tb = ta.nan_to_num(0.0, 0.0, 0.0), tb.nan_to_num(0.0, 0.0, 0.0)
        _agree("allclose", torch.allclose, ta.to(dt), tb.to(dt), rtol=rtol, atol=atol, equal_nan=equal_nan)


def test_allclose_edges():
    _agree("allclose", torch.allclose, torch.tensor([2**60]), torch.tensor([2**60 + 1]), rtol=0.0, atol=0.5)  # float32
    _agree("allclose", torch.allclose, torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))  # dtypes differ
    _agree("allclose", torch.allclose, torch.tensor([1.0]), torch.tensor([1.0]), rtol=-1.0)
    _agree("allclose", torch.allclose, torch.ones(2, 3), torch.ones(3, 2))
    traced = jax.jit(lambda a, b: implementation("allclose")(a, b))(jnp.ones(3), jnp.ones(3))
    assert traced.shape == () and bool(traced)  # under tracing: a 0-d bool array


# -- constructors and layout: empty_permuted, detach, _chunk_cat ---------------------------------


def test_empty_permuted_has_the_logical_shape_and_dtype():
    """Its values are uninitialised in ATen (compared by shape and dtype, as `empty`'s)."""
    for size in [(), (0,), (1,), (1, 3, 5), (5, 3, 1), (1, 0, 5, 1)]:
        for layout, dtype in itertools.product(
            itertools.permutations(range(len(size))), (None, torch.int8, torch.float64)
        ):
            want = torch.empty_permuted(size, layout, **({} if dtype is None else {"dtype": dtype}))
            got = implementation("empty_permuted")(
                list(size), list(layout), dtype=None if dtype is None else _jax(dtype)
            )
            assert (got.shape, got.dtype) == (tuple(want.shape), to_numpy(want).dtype)
    for layout in [(0, 0), (0,), (0, 2)]:
        _agree("empty_permuted", torch.empty_permuted, (2, 3), layout)


def test_detach_is_the_value_with_no_gradient():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    for v in (x, torch.tensor(3), torch.zeros(0, 2, dtype=torch.bool)):
        _agree("detach", torch.detach, v)
    grad = jax.grad(lambda a: implementation("detach")(a).sum() + 2 * a.sum())(jnp.ones(3))
    np.testing.assert_array_equal(grad, [2.0, 2.0, 2.0])


def test_chunk_cat():
    """OpInfo's cases (padding to a multiple of num_chunks; tensors of different ranks with a
    non-negative dim) and the refusals of torch's decomposition (empty tensors, num_chunks < 1,
    mismatched leading sizes or dtypes)."""
    gen = torch.Generator().manual_seed(0)
    cases = [
        ([(1, 2, 3), (1, 2, 3)], -1, 5),
        ([(1, 2, 129), (1, 2, 297)], -1, 5),
        ([(1, 2, 3), (1, 2, 3)], 1, 5),
        ([(3, 3, 2, 1), (1, 4, 2, 2), (2, 1, 3, 3)], 0, 2),
        ([(2, 3, 3), (2, 3, 1, 2), (2, 3)], 1, 3),
        ([(4,)], 0, 7),
        ([(2, 3, 3), (2, 3, 1, 2)], -1, 2),
        ([(2, 0)], 0, 2),
        ([(2, 2)], 0, 0),
        ([], 0, 2),
        ([(2, 2), (3, 2)], 1, 2),
    ]
    for sizes, dim, chunks in cases:
        _agree("_chunk_cat", torch._chunk_cat, [torch.randn(s, generator=gen) for s in sizes], dim, chunks)
    _agree("_chunk_cat", torch._chunk_cat, [torch.arange(5).reshape(1, 5)], 1, 2)
    _agree("_chunk_cat", torch._chunk_cat, [torch.arange(5).reshape(1, 5), torch.ones(1, 3)], 1, 2)


# -- hash_tensor (an entry: its result is declared not differentiable) ----------------------------


def test_hash_tensor():
    """XOR of the 64-bit patterns of the elements widened to float64 / int64, as uint64; ATen
    refuses an empty reduction (all dims of an empty tensor, or an empty dim) and complex."""
    gen = torch.Generator().manual_seed(0)
    inputs = [
        torch.tensor([1.0, 2.0, 3.0]),
        torch.tensor([-1], dtype=torch.int8),
        torch.tensor([255], dtype=torch.uint8),
        torch.tensor([True, False, True]),
        torch.tensor([1.5], dtype=torch.float16),
        torch.tensor([nan, -0.0, inf]),
        torch.tensor(3.0),
        torch.zeros(0),
        torch.zeros(2, 0),
        torch.randn(3, 4, 5, generator=gen, dtype=torch.float64),
        torch.randint(-100, 100, (4, 5), generator=gen, dtype=torch.int32),
        torch.tensor([1j]),
    ]
    for x, dim, keepdim in itertools.product(inputs, ([], 0, -1, [0, 1]), (False, True)):
        _agree("hash_tensor", torch.hash_tensor, x, dim, keepdim=keepdim)
    _agree("hash_tensor", torch.hash_tensor, torch.ones(2), mode=1)


# -- histogram, histogramdd --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_histograms(dtype):
    """OpInfo's shapes (0-d, 0-size, 1 and 3 coordinates) with and without weights and density,
    bin edges from a count (the data's range, or a given one) or given; sums may round apart."""
    gen = torch.Generator().manual_seed(0)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    make = lambda *s: torch.randn(s, generator=gen, dtype=dtype) * 3  # noqa: E731
    for size, bins, weighted, density in itertools.product(
        ((), (5, 5), (5, 0, 5), (300,)), (1, 3), (False, True), (False, True)
    ):
        x, w = make(*size), (make(*size) if weighted else None)
        _agree("histogram.bin_ct", aten.histogram.bin_ct, x, bins, weight=w, density=density, tolerance=tol)
        _agree(
            "histogram.bin_ct",
            aten.histogram.bin_ct,
            x,
            bins,
            range=[-1.0, 2.0],
            weight=w,
            density=density,
            tolerance=tol,
        )
        edges = torch.sort(make(bins + 1))[0]
        _agree("histogram.bins_tensor", aten.histogram.bins_tensor, x, edges, weight=w, density=density, tolerance=tol)
    for size, counts, weighted, density in itertools.product(
        ((5, 1, 3), (5, 0, 2), (40, 2)), ((1, 1, 1), (2, 3, 2)), (False, True), (False, True)
    ):
        x, counts = make(*size), list(counts[: size[-1]])
        w = make(*size[:-1]) if weighted else None
        for name in ("_histogramdd_bin_edges", "_histogramdd_from_bin_cts"):
            _agree(name, getattr(aten, name), x, counts, weight=w, density=density, tolerance=tol)
        edges = [torch.sort(make(c + 1))[0] for c in counts]
        _agree(
            "_histogramdd_from_bin_tensors",
            aten._histogramdd_from_bin_tensors,
            x,
            edges,
            weight=w,
            density=density,
            tolerance=tol,
        )


def test_histogram_edge_inputs():
    """NaN and out-of-range points skipped; equal min and max widened by 0.5; no data: [0, 1]
    (density NaN); unsorted edges bin as ATen's bisection does; points on linspace edges land as
    ATen's interpolation and local search put them; refusals (NaN range, inverted range, integer
    input, no bin, edges of another dtype, a 1-d histogramdd input, a bins list of the wrong size)."""
    h = aten.histogram
    _agree("histogram.bin_ct", h.bin_ct, torch.tensor([1.0, nan, 5.0, 3.0, 0.0]), 3, range=[0.0, 3.0])
    _agree("histogram.bin_ct", h.bin_ct, torch.tensor([2.0, 2.0]), 4)
    _agree("histogram.bin_ct", h.bin_ct, torch.zeros(0), 3, density=True)
    _agree("histogram.bins_tensor", h.bins_tensor, torch.tensor([0.5, 1.5, 2.5]), torch.tensor([0.0, 2.0, 1.0, 3.0]))
    _agree("histogram.bin_ct", h.bin_ct, torch.linspace(-1, 1, 2001), 100)
    _agree("histogram.bin_ct", h.bin_ct, torch.linspace(-1, 1, 2001, dtype=torch.float64), 77)
    refused = [
        (h.bin_ct, (torch.tensor([1.0, nan]), 3), {}),
        (h.bin_ct, (torch.tensor([1.0]), 3), {"range": [3.0, 0.0]}),
        (h.bin_ct, (torch.tensor([1, 2]), 3), {}),
        (h.bin_ct, (torch.tensor([0.5]), 0), {}),
        (h.bins_tensor, (torch.tensor([0.5]), torch.tensor([0.0])), {}),
        (h.bins_tensor, (torch.tensor([0.5]), torch.tensor([0.0, 1.0], dtype=torch.float64)), {}),
        (aten._histogramdd_bin_edges, (torch.tensor([0.0, 1.0]), [2]), {}),
        (aten._histogramdd_bin_edges, (torch.randn(5, 2), [3]), {}),
        (aten._histogramdd_from_bin_cts, (torch.randn(5, 2), [2, 2]), {"weight": torch.ones(4)}),
    ]
    for op, args, kwargs in refused:
        with pytest.raises(RuntimeError):
            op(*args, **kwargs)
        _agree(str(op).removeprefix("aten.").removesuffix(".default"), op, *args, **kwargs)


# -- the comparison catches what these forwards replace ------------------------------------------


def test_the_numpy_style_forwards_would_be_caught():
    """The same comparison on NumPy's semantics: jnp.linspace does not truncate the bounds of an
    integer range, jnp.heaviside is NaN at NaN, jnp.searchsorted orders a NaN boundary last,
    jnp.isin ignores the promotion of ATen's sorting kernel, floor division in float32
    without ATen's fmod-based rounding, and unfused linspace points, all differ from torch."""
    assert _differs(jnp.linspace(2.9, 9.9, 3).astype(jnp.int64), torch.linspace(2.9, 9.9, 3, dtype=torch.int64))
    x = torch.tensor([-1.0, 0.0, 2.0, nan])
    assert _differs(jnp.heaviside(_jax(x), jnp.full(4, 0.5, jnp.float32)), torch.heaviside(x, torch.full((4,), 0.5)))
    values, edges = torch.tensor([0.0, 2.0, 5.0]), torch.tensor([1.0, nan, 3.0, 4.0])
    assert _differs(jnp.searchsorted(_jax(edges), _jax(values)), torch.bucketize(values, edges))
    many = torch.tensor([1.1] + [5.0] * 19)
    assert _differs(jnp.isin(jnp.asarray(1.1, jnp.float32), _jax(many)), torch.isin(1.1, many))
    a, b = torch.tensor([1.0], dtype=torch.float32), torch.tensor([0.1], dtype=torch.float32)
    assert _differs(jnp.floor(_jax(a) / _jax(b)), torch.floor_divide(a, b))
    s, e, n = 1.0, -3.0, 50
    step = (e - s) / (n - 1)
    unfused = [s + step * i if i < n // 2 else e - step * (n - 1 - i) for i in range(n)]
    if FMA:
        assert _differs(np.asarray(unfused), torch.linspace(s, e, n, dtype=torch.float64))
    for wrong, name, args in [
        (lambda *a, **k: implementation("isinf")(*a, **k) | True, "isinf", (torch.tensor([1.0, inf]),)),
        (lambda *a, **k: implementation("linspace")(*a, **k)[::-1], "linspace", (0.0, 1.0, 5)),
    ]:
        assert _differs(wrong(*map(_jax, args)), getattr(torch, name)(*args))


@pytest.mark.parametrize(
    "name, args",
    [
        ("heaviside", lambda x: (x, jnp.full_like(x, 0.5))),
        ("floor_divide", lambda x: (x, 2.0)),
        ("_chunk_cat", lambda x: ([x], 0, 2)),
        ("histogram.bin_ct", lambda x: (x, 3)),
        ("scatter.reduce", lambda x: (x, 0, jnp.asarray([0, 0]), x[:2], "add")),
        ("scatter.value_reduce", lambda x: (x, 0, jnp.asarray([1, 1]), 2.0, "multiply")),
        ("resize_", lambda x: (x, [2, 3])),
        ("resize_as_", lambda x: (x, jnp.zeros(2))),
    ],
)
def test_ops_without_an_aten_derivative_raise_when_differentiated(name, args):
    """torch marks their results as requiring grad and raises in backward; jaxderiv.torch runs
    them so that differentiating raises too (a zero gradient would be silently wrong), and
    only then: the forward runs, under jit as well."""
    from jaxderiv.errors import NotImplementedDerivative
    from jaxderiv.torch.resolve import resolve, torch_registry

    assert torch.randn(2, requires_grad=True).heaviside(torch.zeros(2)).requires_grad
    run = resolve(name, torch_registry()).fn
    x = jnp.asarray([-1.0, 0.0, 2.5, 3.0])
    first = run(*args(x))
    jax.jit(lambda x: run(*args(x)))(x)
    with pytest.raises(NotImplementedDerivative, match=f"aten::{name} is not implemented"):
        jax.grad(lambda x: jnp.sum(jax.tree.leaves(run(*args(x)))[0]))(x)
    assert first is not None


# -- signbit, searchsorted, repeat_interleave.Tensor, nonzero_static -------------------------------


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.int64, torch.int8, torch.uint8, torch.bool], ids=str
)
def test_signbit(dtype):
    """The sign bit: -0.0 and a NaN with its sign bit set count, +NaN does not; integers are
    `< 0`; 0-d and 0-size inputs; complex refused."""
    values = torch.tensor([-0.0, 0.0, nan, -nan, -inf, inf, -2.5, 3.0, -1.0, 200.0])
    x = values.to(dtype) if dtype.is_floating_point else values.nan_to_num(0.0, 0.0, 0.0).to(dtype)
    for v in (x, x.reshape(2, 5), x[3], x[:0]):
        _agree("signbit", torch.signbit, v)
    _agree("signbit", torch.signbit, torch.tensor([1j]))


def test_signbit_catches_a_comparison():
    """x < 0 would miss -0.0 and -nan."""
    x = torch.tensor([-0.0, -nan])
    assert implementation("signbit")(_jax(x)).tolist() == [True, True]
    assert _differs(_jax(x) < 0, torch.signbit(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8], ids=str)
def test_searchsorted(dtype):
    """1-d and batched sequences, left/right by `right` or `side`, a sorter (each row's order),
    int32 results, 0-size and 0-d values, NaN values (past everything) as ATen bisects."""
    gen = torch.Generator().manual_seed(0)
    for lead, m, k in itertools.product(((), (2,), (2, 3)), (0, 1, 4, 7), (0, 1, 5)):
        seq = _pool(dtype, (*lead, m), gen)
        if dtype.is_floating_point:
            seq = seq.nan_to_num(3.0)
        shuffled = seq
        seq, _ = torch.sort(seq, dim=-1)
        sorter = torch.argsort(shuffled, dim=-1, stable=True)
        values = _pool(dtype, (*lead, k), gen)
        for right, side, out_int32 in itertools.product((False, True), (None, "left", "right"), (False, True)):
            kw = {"right": right, "side": side, "out_int32": out_int32}
            _agree("searchsorted.Tensor", torch.searchsorted, seq, values, **kw)
            _agree("searchsorted.Tensor", torch.searchsorted, shuffled, values, sorter=sorter, **kw)
            if not lead:
                _agree("searchsorted.Tensor", torch.searchsorted, seq, values.reshape(1, k, 1)[0, :, 0], **kw)
                if k:
                    _agree("searchsorted.Tensor", torch.searchsorted, seq, values[0].reshape(()), **kw)
                for scalar in (1, -2.5, 300):
                    _agree("searchsorted.Scalar", torch.searchsorted, seq, scalar, **kw)


def test_searchsorted_edge_inputs():
    """NaN boundaries and values; promotion across dtypes; ATen's refusals (0-d sequence, a
    scalar with a batched one, leading dims that differ, opposite side and right, a bad side,
    a sorter of the wrong dtype, shape or range; bool)."""
    seq = torch.tensor([1.0, 2.0, nan, 4.0])
    values = torch.tensor([nan, 1.0, 2.0, 4.0, -inf, inf])
    for right in (False, True):
        _agree("searchsorted.Tensor", torch.searchsorted, seq, values, right=right)
        _agree("searchsorted.Tensor", torch.searchsorted, seq.to(torch.float64), values.to(torch.float32), right=right)
        _agree(
            "searchsorted.Tensor", torch.searchsorted, torch.tensor([1, 2, 3]), torch.tensor([1.5, 2.0]), right=right
        )
        _agree("searchsorted.Scalar", torch.searchsorted, torch.tensor([1, 2, 3]), 2.5, right=right)
    batched = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    refused = [
        (torch.tensor(1.0), torch.tensor([1.0]), {}),
        (batched, torch.tensor([1.0]), {}),
        (batched, torch.zeros(3, 1), {}),
        (batched, 2.5, {}),
        (seq, values, {"side": "left", "right": True}),
        (seq, values, {"side": "middle"}),
        (seq, values, {"sorter": torch.tensor([0, 1, 2, 3], dtype=torch.int32)}),
        (seq, values, {"sorter": torch.tensor([0, 1, 2])}),
        (seq, values, {"sorter": torch.tensor([0, 1, 2, 4])}),
        (seq, values, {"sorter": torch.tensor([0, -1, 2, 3])}),
        (torch.tensor([False, True]), torch.tensor([True]), {}),
    ]
    for a, b, kw in refused:
        name = "searchsorted.Scalar" if isinstance(b, float) else "searchsorted.Tensor"
        with pytest.raises(RuntimeError):
            torch.searchsorted(a, b, **kw)
        with pytest.raises(Exception):  # noqa: B017, PT011
            implementation(name)(_jax(a), _jax(b), **{k: _jax(v) for k, v in kw.items()})
    _agree("searchsorted.Tensor", torch.searchsorted, torch.zeros(0, 3), torch.zeros(0, 5))
    run = jax.jit(lambda s, v, o: implementation("searchsorted.Tensor")(s, v, sorter=o))
    got = run(_jax(batched.flip(-1)), _jax(torch.tensor([[2.5], [3.5]])), jnp.asarray([[1, 0], [1, 0]]))
    assert got.tolist() == torch.searchsorted(batched, torch.tensor([[2.5], [3.5]])).tolist()


def test_repeat_interleave_tensor():
    """arange(len(repeats)) repeated, in repeats' dtype (int32, int64); zeros and an empty
    repeats; output_size as the sum (jit then works) or not (refused, as ATen refuses it);
    repeats not 1-d, negative or of another dtype refused; under jit without output_size a
    clear error."""
    name, fn = "repeat_interleave.Tensor", aten.repeat_interleave.Tensor
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.float32):
        for r in ([1, 2, 0, 3], [0, 0], [], [5]):
            _agree(name, fn, torch.tensor(r, dtype=dtype))
    r = torch.tensor([3, 0, 2])
    _agree(name, fn, r, output_size=5)
    _agree(name, fn, r, output_size=4)
    _agree(name, fn, r, output_size=6)
    for bad in (torch.tensor(2), torch.tensor([[1, 2]]), torch.tensor([1, -1])):
        _agree(name, fn, bad)
    run = implementation(name)
    np.testing.assert_array_equal(jax.jit(lambda r: run(r, output_size=5))(_jax(r)), fn(r).numpy())
    with pytest.raises(jax.errors.ConcretizationTypeError, match="output_size"):
        jax.jit(run)(_jax(r))


def test_nonzero_static():
    """(size, ndim) int64 coordinates in row-major order, padded with fill_value or cut at size;
    0-d (size, 0) and 0-size inputs; bool, int, complex and NaN (nonzero) elements; a negative
    size refused; under jit."""
    gen = torch.Generator().manual_seed(0)
    inputs = [
        torch.tensor([1.0, 0.0, nan, -0.0, 2.0]),
        torch.tensor([[True, False], [True, True]]),
        torch.randint(-1, 2, (3, 4, 2), generator=gen),
        torch.tensor([0j, 1j]),
        torch.tensor(3.0),
        torch.tensor(0),
        torch.zeros(0, 3),
    ]
    for x, size, fill in itertools.product(inputs, (0, 1, 3, 30), (-1, 7)):
        _agree("nonzero_static", torch.nonzero_static, x, size=size, fill_value=fill)
    _agree("nonzero_static", torch.nonzero_static, inputs[0], size=-1)
    x = inputs[2]
    got = jax.jit(lambda v: implementation("nonzero_static")(v, size=10))(_jax(x))
    np.testing.assert_array_equal(got, torch.nonzero_static(x, size=10).numpy())


# -- scatter.reduce, scatter.value_reduce ------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.int64, torch.int32, torch.bool], ids=str)
def test_scatter_reduce_add_and_multiply(dtype):
    """Repeated indices accumulate (self's element included), negative dims, an index smaller
    than self and src, 0-d self, an empty index; a Scalar value converted to self's dtype;
    ATen's refusals (another reduce, src of another dtype, out-of-range or int32 indices)."""
    gen = torch.Generator().manual_seed(0)
    make = lambda *s: _pool(dtype, s, gen).nan_to_num(1.5) if dtype.is_floating_point else _pool(dtype, s, gen)  # noqa: E731
    self_, src = make(3, 4), make(4, 5)
    index = torch.tensor([[0, 1, 0, 2], [2, 2, 0, 1]])
    for reduce, dim in itertools.product(("add", "multiply"), (0, 1, -1, -2)):
        idx = index if dim in (0, -2) else index.clamp(max=3)
        _agree("scatter.reduce", torch.scatter, self_, dim, idx, src, reduce=reduce)
        for value in (2, -1.5, True):
            _agree("scatter.value_reduce", torch.scatter, self_, dim, idx, value, reduce=reduce)
        _agree("scatter.reduce", torch.scatter, self_, dim, idx[:, :0], src, reduce=reduce)
        _agree("scatter.reduce", torch.scatter, make(), 0, torch.tensor([0, 0]), make(2), reduce=reduce)
        _agree("scatter.value_reduce", torch.scatter, make(), 0, torch.tensor(0), 3, reduce=reduce)
    _agree("scatter.reduce", torch.scatter, self_, 0, index, src, reduce="sum")
    _agree("scatter.reduce", torch.scatter, self_, 0, index, src.to(torch.complex64), reduce="add")
    _agree("scatter.reduce", torch.scatter, self_, 0, index + 2, src, reduce="add")
    _agree("scatter.value_reduce", torch.scatter, self_, 0, index - 1, 2, reduce="add")
    _agree("scatter.value_reduce", torch.scatter, self_, 0, index.int(), 2, reduce="add")


def test_scatter_reduce_is_not_overwriting():
    """Repeated indices: add sums them all and multiply multiplies them all into self."""
    x, idx, src = torch.ones(3), torch.tensor([0, 0, 2]), torch.tensor([2.0, 3.0, 4.0])
    assert implementation("scatter.reduce")(_jax(x), 0, _jax(idx), _jax(src), reduce="multiply").tolist() == [6, 1, 4]
    assert implementation("scatter.reduce")(_jax(x), 0, _jax(idx), _jax(src), reduce="add").tolist() == [6, 1, 5]


# -- new_empty_strided, resize_, resize_as_ ------------------------------------------------------


def test_new_empty_strided_has_the_shape_and_dtype():
    """Values uninitialised in ATen (compared by shape and dtype): self's dtype unless given;
    a stride of another length or a negative size refused."""
    for self_, size, dtype in itertools.product(
        (torch.zeros(2, dtype=torch.int8), torch.ones(3, 3)), ((), (0,), (2, 3), (1, 0, 4)), (None, torch.float64)
    ):
        stride = tuple(range(len(size)))
        want = torch.ops.aten.new_empty_strided(self_, size, stride, **({} if dtype is None else {"dtype": dtype}))
        got = implementation("new_empty_strided")(_jax(self_), list(size), list(stride), dtype=_jax(dtype))
        assert (got.shape, got.dtype) == (tuple(want.shape), to_numpy(want).dtype)
    _agree("new_empty_strided", torch.ops.aten.new_empty_strided, torch.ones(2), (2, 3), (1,))
    _agree("new_empty_strided", torch.ops.aten.new_empty_strided, torch.ones(2), (2, -3), (3, 1))


def test_resize_keeps_the_leading_elements():
    """The first min(numel) elements in row-major order are self's, in self's dtype (0-d, 0-size,
    int and bool too); the grown tail is uninitialised in ATen (zeros here: compared up to it)."""
    gen = torch.Generator().manual_seed(0)
    for x in (
        torch.randn(2, 3, generator=gen),
        torch.arange(5, dtype=torch.int32),
        torch.tensor(True),
        torch.zeros(0, 2),
    ):
        for size in ((), (0,), (3, 2), (6,), (1, 2), (4, 5), (2, 0, 3)):
            for name, call in (
                ("resize_", lambda t: torch.ops.aten.resize_(t, list(size))),
                ("resize_as_", lambda t: torch.ops.aten.resize_as_(t, torch.empty(size))),
            ):
                want = call(x.clone())
                arg = list(size) if name == "resize_" else jnp.zeros(size)
                got = np.asarray(implementation(name)(_jax(x), arg))
                assert (got.shape, got.dtype) == (tuple(want.shape), to_numpy(want).dtype)
                kept = min(x.numel(), want.numel())
                np.testing.assert_array_equal(got.reshape(-1)[:kept], to_numpy(want).reshape(-1)[:kept])
                assert not got.reshape(-1)[kept:].any()
    with pytest.raises(Exception):  # noqa: B017, PT011
        implementation("resize_")(jnp.ones(3), [2, -1])


# -- _embedding_bag's padding_idx, _embedding_bag_forward_only -----------------------------------


def _bags(trial, rng):
    """Random bags (empty ones too; a last offset at the end when include_last_offset)."""
    nw, dim, n = rng.integers(1, 6), rng.integers(1, 4), rng.integers(0, 9)
    dtype = (torch.float32, torch.float64)[trial % 2]
    w = torch.tensor(rng.normal(size=(nw, dim)) if trial % 3 else rng.integers(-2, 3, size=(nw, dim))).to(dtype)
    idx = torch.tensor(rng.integers(0, nw, size=n))
    n_bags = rng.integers(1, 5)
    offsets = torch.tensor(np.sort(np.concatenate([[0], rng.integers(0, n + 1, size=n_bags - 1)])))
    last = bool(trial % 4 == 1)
    if last:
        offsets = torch.cat([offsets, torch.tensor([n])])
    mode, padding_idx = int(rng.integers(0, 3)), int(rng.integers(-1, nw))
    psw = torch.tensor(rng.uniform(0.5, 2, size=n)).to(dtype) if mode == 0 and trial % 5 < 2 else None
    return w, idx, offsets, mode, psw, last, padding_idx


@pytest.mark.parametrize("name", ["_embedding_bag", "_embedding_bag_forward_only"])
def test_embedding_bag_padding_idx(name):
    """Entries naming padding_idx are left out of their bags in every mode (sum with and without
    per_sample_weights, mean's divisor, max and its indices); bags of padding only, empty bags
    (max_indices 0 there), ties in max (the first wins); sum mode's bag_size and max_indices are
    zeros and mean's max_indices is bag_size, as ATen's CPU kernel leaves them. Left out:
    offset2bag for float32 sum (ATen's fbgemm path leaves it empty)."""
    rng = np.random.default_rng(0)
    fn = getattr(aten, name)
    for trial in range(120):
        w, idx, offsets, mode, psw, last, pad = _bags(trial, rng)
        args = (w, idx, offsets, False, mode, False, psw, last, pad)
        want = fn(*args)
        got = implementation(name)(*map(_jax, args))
        compared = [0, 2, 3] + ([] if mode == 0 and w.dtype == torch.float32 else [1])
        why = _differs(
            [got[k] for k in compared], [want[k] for k in compared], 1e-6 if w.dtype == torch.float32 else 1e-12
        )
        assert not why, f"{name} trial {trial} mode {mode} padding_idx {pad}: {why}"
    weight = torch.arange(15.0).reshape(5, 3)
    got = implementation(name)(
        _jax(weight), jnp.asarray([2, 2, 1]), jnp.asarray([0, 2]), False, 1, False, None, False, 2
    )
    assert got[0].tolist() == [[0.0, 0.0, 0.0], [3.0, 4.0, 5.0]] and got[2].tolist() == [0, 1]


def test_embedding_bag_padding_idx_gradient():
    """The weight gradient through _embedding_bag with padding_idx (jaxderiv.torch's registry
    runs its derivatives.yaml formula on the forward's bag_size) is torch's; the padding row
    gets none. _embedding_bag_forward_only has no derivative: differentiating raises."""
    from jaxderiv.errors import NotImplementedDerivative
    from jaxderiv.torch.resolve import resolve, torch_registry

    rng = np.random.default_rng(1)
    w = torch.tensor(rng.normal(size=(5, 3)))
    idx, offsets = torch.tensor([0, 2, 4, 2, 1, 2, 3]), torch.tensor([0, 2, 2, 5, 6])
    op = resolve("_embedding_bag", torch_registry()).fn
    for mode, pad in itertools.product((0, 1, 2), (-1, 2, 4)):
        psw = torch.tensor(rng.uniform(0.5, 1.5, size=7)) if mode == 0 else None
        ct = torch.tensor(rng.normal(size=(5, 3)))
        tw = w.clone().requires_grad_()
        (want,) = torch.autograd.grad(
            aten._embedding_bag(tw, idx, offsets, False, mode, False, psw, False, pad)[0], tw, ct
        )
        fwd = lambda a: op(a, _jax(idx), _jax(offsets), False, mode, False, _jax(psw), False, pad)[0]  # noqa: B023, E731
        (got,) = jax.vjp(fwd, _jax(w))[1](_jax(ct))
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-12, atol=1e-12)
        if pad >= 0:
            assert not np.asarray(got)[pad].any()
    only = resolve("_embedding_bag_forward_only", torch_registry()).fn
    with pytest.raises(NotImplementedDerivative):
        jax.grad(lambda a: jnp.sum(only(a, _jax(idx), _jax(offsets), False, 0, False, None, False, 2)[0]))(_jax(w))


# -- tril_indices, triu_indices ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices(name):
    """Every size to 5 x 5 and every offset that matters (and beyond), int64 and int32; a
    negative size and a float dtype are refused, as torch refuses them."""
    t = getattr(torch, name)
    for row, col, offset in itertools.product(range(6), range(6), range(-7, 8)):
        _agree(name, t, row, col, offset)
    for dtype in (torch.int32, torch.int64, torch.float32):
        _agree(name, t, 4, 3, -1, dtype=dtype)
    _agree(name, t, -1, 3)
    assert kind_of(name) is OpKind.GRADIENT_FREE


def test_triangle_indices_catch_the_other_triangle():
    """The comparison fails on the other triangle's indices: the two are not interchangeable."""
    assert _differs(implementation("tril_indices")(4, 3, 0), torch.triu_indices(4, 3, 0))
