"""Edge inputs of the elementwise ops against torch 2.13: NaN, ±inf and signed zeros, 0-d and
empty tensors, float32 and bfloat16.

Forward values, dtypes and shapes must equal torch.ops.aten's, and so must the gradients of
`jax.vjp` (with a cotangent of ones) and `torch.autograd.grad`: a rule keeps its input's dtype.
Both registries: the seed files' (`seed`) and the default one's entries that come from torch
2.14.1's file (`default`). Where a formula differs from torch 2.13's at an edge point,
DIFFERENCES says which point and why, and the test asserts that the difference is still there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv.forward import implementation
from jaxderiv.registry import default_registry, seed_registry
from jaxderiv.spec import shipped_spec_files

torch = pytest.importorskip("torch")
aten = torch.ops.aten

REGISTRIES = {"seed": seed_registry(), "default": default_registry()}
FAMILIES = ("unary", "binary", "special", "activation")
# Entries whose aten call needs what these tests do not give (complex inputs only, or a bound).
# `_lazy_clone`: torch 2.13's own kernel refuses a 0-d input ("Expected storage != nullptr").
UNSUITED = {"_conj", "view_as_real", "view_as_complex", "clamp", "_lazy_clone"}

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -1.5, 3.0])
OTHER = np.array([1.0, np.nan, 2.0, -np.inf, 0.0, np.inf, -0.0, -2.0])

# (registry, op) -> ({input index: element indices of SPECIAL/OTHER}, why the gradients differ there)
DIFFERENCES = {
    ("seed", "logit"): ({0: [4]}, "the formula's differentiable branch (GradMode enabled) gives grad / (x (1 - x)) = -inf at -0.0; "
                              "torch's first-order backward runs the logit_backward kernel, +inf at either zero"),
    ("default", "logit"): ({0: [4]}, "as the seed's: the same formula"),
    ("seed", "xlogy.Tensor"): ({1: [4]}, "the 1.10 formula for `other` is 0 where self == 0; torch 2.13's is grad * self / other (NaN at 0 / 0)"),
    ("seed", "special_xlog1py"): ({0: [3]}, "the 1.10 formula for `self` is grad * log1p(other) (NaN at other = -inf); torch 2.13 masks self == 0, "
                                        "other <= -1 to 0"),
    ("default", "fmax"): ({0: [0, 4], 1: [1, 4]}, "torch 2.14.1's formula, masked_fill_inplace_if_safe(where(self == other, grad / 2, grad), "
                                                  "self < other, 0), gives a NaN input the gradient where fmax returned the other "
                                                  "input (torch 2.13: 0), and splits a tie (-0.0, 0.0) half and half (torch 2.13: all to self)"),
    ("default", "fmin"): ({0: [0, 4], 1: [1, 4]}, "as fmax's: torch 2.14.1's formula gives a NaN input the gradient and splits ties"),
}  # fmt: skip
# op -> (rtol of the float64 gradients, why torch's own float64 values are less precise)
LOOSER = {
    "hardsigmoid": (1e-7, "ATen's hardsigmoid_backward multiplies by 1.0f / 6.0f, a float32 constant, in every dtype")
}


def _elementwise(which: str):
    """(registry, entry, aten overload, number of tensor inputs) of the elementwise entries whose
    tensor arguments are `self` or `self, other` and whose other arguments all have defaults; of
    the default registry, those that come from torch 2.14.1's file (the rest are the seeds')."""
    out = []
    registry = REGISTRIES[which]
    seeds = {str(p) for p in shipped_spec_files()}
    for name in registry.names():
        if which == "default" and registry.spec[name].location.file in seeds:
            continue
        base, _, overload = name.partition(".")
        impl = implementation(name)
        schema = registry.spec[name].schema
        if impl is None or base.endswith("_") or "backward" in base or name in UNSUITED or len(schema.returns) != 1:
            continue
        if impl.__module__.rsplit(".", 1)[-1] not in FAMILIES:
            continue
        tensors = [a.name for a in schema.arguments if a.is_tensor]
        if tensors not in (["self"], ["self", "other"]) or any(
            not a.is_tensor and a.default is None for a in schema.arguments
        ):
            continue
        packet = getattr(aten, base, None)
        if packet is not None and hasattr(packet, overload or "default"):
            out.append((which, name, getattr(packet, overload or "default"), len(tensors)))
    return out


ELEMENTWISE = _elementwise("seed") + _elementwise("default")
IDS = [f"{e[0]}-{e[1]}" for e in ELEMENTWISE]


def _stated(which, name) -> list[int]:
    """Positions of the tensor inputs the spec gives a formula (not `not_implemented`) for."""
    op = REGISTRIES[which].op(name)
    stated = {n for f in op.entry.backward if not f.text.startswith("not_implemented") for n in f.names}
    tensors = [a.name for a in op.schema.arguments if a.is_tensor]
    return [i for i, n in enumerate(tensors) if n in op.differentiable_inputs and n in stated]


def _ours(which, name, xs, cotangent=None):
    """The op's value and, for the inputs the spec differentiates, its vjp (None elsewhere)."""
    op = REGISTRIES[which].op(name)
    xs = [jnp.asarray(x) for x in xs]
    wanted = _stated(which, name)

    def fn(*free):
        args = list(xs)
        for i, v in zip(wanted, free):
            args[i] = v
        return op(*args)

    value, pullback = jax.vjp(fn, *[xs[i] for i in wanted])
    if not wanted or not jnp.issubdtype(value.dtype, jnp.inexact):
        return np.asarray(value), [None] * len(xs)
    ct = jnp.ones_like(value) if cotangent is None else cotangent
    grads = dict(zip(wanted, pullback(ct)))
    return value, [grads.get(i) for i in range(len(xs))]


def _theirs(which, name, top, xs, dtype=None):
    """torch's value and the gradient of each input the spec differentiates (None elsewhere)."""
    wanted = _stated(which, name)
    tx = [torch.from_numpy(np.array(x)) for x in xs]
    tx = [(t.to(dtype) if dtype is not None else t).requires_grad_(i in wanted) for i, t in enumerate(tx)]
    value = top(*tx)
    if not value.requires_grad:
        return value, [None] * len(xs)
    grads = torch.autograd.grad(
        value, [tx[i] for i in wanted], torch.ones_like(value), allow_unused=True, materialize_grads=True
    )
    found = dict(zip(wanted, grads))
    return value, [found.get(i) for i in range(len(xs))]


def _numpy(t):
    return t.float().numpy(force=True) if t.dtype == torch.bfloat16 else t.numpy(force=True)


@pytest.mark.parametrize("which, name, top, n", ELEMENTWISE, ids=IDS)
def test_nan_inf_and_signed_zeros_match_torch(which, name, top, n):
    xs = [SPECIAL, OTHER][:n]
    value, grads = _ours(which, name, xs)
    t_value, t_grads = _theirs(which, name, top, xs)
    assert np.asarray(value).dtype == _numpy(t_value).dtype
    np.testing.assert_allclose(np.asarray(value), _numpy(t_value), rtol=1e-12, equal_nan=True, err_msg="forward")
    for i, (g, tg) in enumerate(zip(grads, t_grads)):
        if g is None or tg is None:
            continue
        g, tg = np.asarray(g), _numpy(tg)
        assert g.dtype == tg.dtype
        at = DIFFERENCES[which, name][0].get(i) if (which, name) in DIFFERENCES else None
        if at:
            for k in at:
                assert not np.isclose(g[k], tg[k], equal_nan=True), f"{name}: the listed difference at {k} is gone"
            g, tg = np.delete(g, at), np.delete(tg, at)
        np.testing.assert_allclose(
            g, tg, rtol=LOOSER.get(name, (1e-10,))[0], equal_nan=True, err_msg=f"gradient of input {i}"
        )


@pytest.mark.parametrize("shape", [(), (0,), (0, 3)], ids=["0-d", "empty", "empty-2d"])
@pytest.mark.parametrize("which, name, top, n", ELEMENTWISE, ids=IDS)
def test_zero_d_and_empty_tensors(which, name, top, n, shape):
    xs = [np.full(shape, 0.5), np.full(shape, 1.5)][:n]
    value, grads = _ours(which, name, xs)
    t_value, t_grads = _theirs(which, name, top, xs)
    assert np.shape(value) == tuple(t_value.shape) and np.asarray(value).dtype == _numpy(t_value).dtype
    for g, tg in zip(grads, t_grads):
        if g is not None and tg is not None:
            assert np.shape(g) == tuple(tg.shape) and np.asarray(g).dtype == _numpy(tg).dtype


TOLERANCES = {"float32": (1e-5, 1e-6), "bfloat16": (3e-2, 3e-2)}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("which, name, top, n", ELEMENTWISE, ids=IDS)
def test_low_precision_keeps_the_dtype_and_matches_torch(which, name, top, n, dtype):
    """Inputs in (0.2, 0.8) (inside every domain the float64 tests use): the forward and every
    gradient come back in the input's dtype, close to torch's in that dtype; where ATen has no
    kernel for the dtype, both refuse it."""
    rng = np.random.default_rng(0)
    xs = [rng.uniform(0.2, 0.8, size=(7,)) for _ in range(n)]
    jdt, tdt = getattr(jnp, dtype), getattr(torch, dtype)
    try:
        t_value, t_grads = _theirs(which, name, top, xs, tdt)
    except NotImplementedError:  # torch has no such kernel in this dtype: its float32 values, rounded,
        try:  # unless jaxderiv's forward refuses the dtype as ATen does
            _ours(which, name, [jnp.asarray(x, jdt) for x in xs])
        except TypeError as e:
            assert "as in ATen" in str(e)
            return
        t_value, t_grads = _theirs(which, name, top, xs, torch.float32)
        t_value, t_grads = t_value.to(tdt), [None if g is None else g.to(tdt) for g in t_grads]
    except RuntimeError as e:  # ATen refuses the dtype (`"ndtri_cpu" not implemented for 'BFloat16'`)
        assert "not implemented for" in str(e)
        with pytest.raises(TypeError, match="as in ATen"):
            _ours(which, name, [jnp.asarray(x, jdt) for x in xs])
        return
    value, grads = _ours(which, name, [jnp.asarray(x, jdt) for x in xs])
    rtol, atol = TOLERANCES[dtype]
    assert str(jnp.asarray(value).dtype) == str(t_value.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.asarray(value, np.float64), _numpy(t_value), rtol=rtol, atol=atol, equal_nan=True)
    for g, tg in zip(grads, t_grads):
        if g is None or tg is None:
            continue
        assert g.dtype == jdt, f"gradient in {g.dtype}, input in {dtype}"
        np.testing.assert_allclose(np.asarray(g, np.float64), _numpy(tg), rtol=rtol, atol=atol, equal_nan=True)


def test_the_edge_tests_cover_every_elementwise_family():
    for which in REGISTRIES:
        families = {implementation(n).__module__.rsplit(".", 1)[-1] for w, n, _, _ in ELEMENTWISE if w == which}
        assert families == set(FAMILIES) and sum(w == which for w, *_ in ELEMENTWISE) >= 90, which
