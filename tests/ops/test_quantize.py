"""Fake quantization against PyTorch 2.13: outputs, masks and the spec's straight-through
gradients, including inputs exactly at rounding ties (half to even), on the clamp bounds and
beyond them. The 1.7-only `*_backward` ops, gone from torch 2.13, are compared with the
cachemask ops that replaced them."""

from __future__ import annotations

import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.forward import implementation

torch = pytest.importorskip("torch")
aten = torch.ops.aten

QMIN, QMAX = 0, 15


def _inputs(rng, shape, scale, zero_point):
    """Values on rounding ties, on the clamp bounds and past them, and generic ones."""
    k = rng.integers(QMIN - 4, QMAX + 5, size=shape)
    offset = rng.choice([-0.5, 0.5, 0.0, 0.3, -0.2], size=shape)
    return (k - zero_point + offset) * scale


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _vjp(name, arrays, rest, ct):
    op = jaxderiv.op(name)
    first = lambda *xs: (lambda y: y[0] if isinstance(y, tuple) else y)(op(*xs, *rest))
    y, pullback = jax.vjp(first, *map(jnp.asarray, arrays))
    return y, pullback(jnp.asarray(ct))


def _torch_vjp(fn, arrays, rest, ct, wrt):
    ts = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, wrt)]
    out = fn(*ts, *rest)
    y = out[0] if isinstance(out, tuple) else out
    grads = torch.autograd.grad(y, [t for t in ts if t.requires_grad], torch.tensor(ct))
    return out, [g.numpy() for g in grads]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_per_tensor_matches_torch(dtype):
    rng = np.random.default_rng(0)
    x = _inputs(rng, (4, 5), 0.1, 3).astype(dtype)
    ct = rng.normal(size=x.shape).astype(dtype)
    args = (0.1, 3, QMIN, QMAX)  # 0.1 is inexact in float32: ATen's float32 scale matters
    for name in ("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask"):
        y, (g,) = _vjp(name, [x], args, ct)
        out, (t_g,) = _torch_vjp(getattr(aten, name), [x], args, ct, [True])
        t_y = out[0] if isinstance(out, tuple) else out
        assert y.dtype == dtype
        _close(y, t_y.detach().numpy(), 1e-6 if dtype == np.float32 else 1e-12)
        _close(g, t_g)
    _, mask = jaxderiv.op("fake_quantize_per_tensor_affine_cachemask")(jnp.asarray(x), *args)
    np.testing.assert_array_equal(
        mask, aten.fake_quantize_per_tensor_affine_cachemask(torch.tensor(x), *args)[1].numpy()
    )
    ours = implementation("fake_quantize_per_tensor_affine_backward")
    np.testing.assert_array_equal(
        ours(jnp.asarray(ct), jnp.asarray(x), *args), ct * mask
    )  # 1.7's op: grad where not clamped


@pytest.mark.parametrize("enabled", [1, 0])
def test_tensor_qparams_matches_torch(enabled):
    rng = np.random.default_rng(1)
    x = _inputs(rng, (3, 4), 0.25, 2)
    ct = rng.normal(size=x.shape)
    qparams = [np.array([0.25], np.float32), np.array([2], np.int32), np.array([enabled], np.int64)]
    name = "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"
    y, (g,) = _vjp(name, [x], qparams + [QMIN, QMAX], ct)
    tq = [torch.tensor(q) for q in qparams]
    tx = torch.tensor(x, requires_grad=True)
    t_y, t_mask = getattr(aten, name)(tx, *tq, QMIN, QMAX)
    (t_g,) = torch.autograd.grad(t_y, tx, torch.tensor(ct))
    _close(y, t_y.detach().numpy())
    _close(g, t_g.numpy())
    np.testing.assert_array_equal(jaxderiv.op(name)(jnp.asarray(x), *qparams, QMIN, QMAX)[1], t_mask.numpy())


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_per_channel_matches_torch(axis):
    rng = np.random.default_rng(2)
    shape = (3, 3, 3)
    scale = np.array([0.1, 0.25, 0.3], np.float32)
    zp = np.array([3, 0, 15], np.int32)
    view = [1, 1, 1]
    view[axis] = 3
    x = _inputs(rng, shape, scale.reshape(view).astype(np.float64), zp.reshape(view))
    ct = rng.normal(size=shape)
    rest = (axis % 3, QMIN, QMAX)
    for name in ("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask"):
        y, (g,) = _vjp(name, [x], [scale, zp, *rest], ct)
        out, (t_g,) = _torch_vjp(
            lambda t: getattr(aten, name)(t, torch.tensor(scale), torch.tensor(zp), *rest), [x], [], ct, [True]
        )
        t_y = out[0] if isinstance(out, tuple) else out
        _close(y, t_y.detach().numpy())
        _close(g, t_g)
    mask = aten.fake_quantize_per_channel_affine_cachemask(
        torch.tensor(x), torch.tensor(scale), torch.tensor(zp), *rest
    )[1].numpy()
    ours = implementation("fake_quantize_per_channel_affine_backward")
    np.testing.assert_array_equal(
        ours(jnp.asarray(ct), jnp.asarray(x), jnp.asarray(scale), jnp.asarray(zp), *rest), ct * mask
    )


@pytest.mark.parametrize("zero_point", [3.0, 3.4, 2.5, -2.0, 17.6])
@pytest.mark.parametrize("grad_factor", [1.0, 0.5])
def test_learnable_per_tensor_matches_torch(zero_point, grad_factor):
    """Zero points off the grid, on a half (forward and backward round it differently) and clamped."""
    rng = np.random.default_rng(3)
    x = _inputs(rng, (4, 5), 0.25, 3).astype(np.float32)  # ATen's learnable backward is float32 only
    ct = rng.normal(size=x.shape).astype(np.float32)
    arrays = [x, np.array([0.25], np.float32), np.array([zero_point], np.float32)]
    rest = (QMIN, QMAX, grad_factor)
    y, g = _vjp("_fake_quantize_learnable_per_tensor_affine", arrays, rest, ct)
    t_y, t_g = _torch_vjp(aten._fake_quantize_learnable_per_tensor_affine, arrays, rest, ct, [True] * 3)
    _close(y, t_y.detach().numpy())
    for a, b in zip(g, t_g):
        assert a.shape == b.shape
        _close(a, b, 1e-5)


@pytest.mark.parametrize("grad_factor", [1.0, 0.5])
def test_learnable_per_channel_matches_torch(grad_factor):
    rng = np.random.default_rng(4)
    scale = np.array([0.125, 0.25, 0.5], np.float32)
    zp = np.array([3.3, -1.0, 14.6], np.float32)
    x = _inputs(rng, (2, 3, 4), scale[:, None], np.round(zp)[:, None]).astype(np.float32)
    ct = rng.normal(size=x.shape).astype(np.float32)
    rest = (1, QMIN, QMAX, grad_factor)
    y, g = _vjp("_fake_quantize_learnable_per_channel_affine", [x, scale, zp], rest, ct)
    t_y, t_g = _torch_vjp(aten._fake_quantize_learnable_per_channel_affine, [x, scale, zp], rest, ct, [True] * 3)
    _close(y, t_y.detach().numpy())
    for a, b in zip(g, t_g):
        assert a.shape == b.shape and a.dtype == b.dtype
        _close(a, b, 1e-5)


def test_learnable_backward_ops_match_torch():
    rng = np.random.default_rng(5)
    x = _inputs(rng, (3, 4), 0.25, 3).astype(np.float32)
    ct = rng.normal(size=x.shape).astype(np.float32)
    qparams = (np.array([0.25], np.float32), np.array([3.4], np.float32))
    name = "_fake_quantize_learnable_per_tensor_affine_backward"
    ours = implementation(name)(jnp.asarray(ct), jnp.asarray(x), *map(jnp.asarray, qparams), QMIN, QMAX, 0.5)
    theirs = getattr(aten, name)(torch.tensor(ct), torch.tensor(x), *map(torch.tensor, qparams), QMIN, QMAX, 0.5)
    for a, b in zip(ours, theirs):
        _close(a, b.numpy(), 1e-5)


def test_straight_through_gradient_under_jit():
    """A quantization-aware loss: jit(grad) passes the gradient straight through rounding."""
    rng = np.random.default_rng(6)
    arrays = (_inputs(rng, (8,), 0.25, 3).astype(np.float32), np.array([0.25], np.float32), np.array([3.0], np.float32))
    op = jaxderiv.op("_fake_quantize_learnable_per_tensor_affine")
    loss = lambda x, s, z: jnp.sum(op(x, s, z, QMIN, QMAX, 1.0) ** 2)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(*arrays)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_loss = (aten._fake_quantize_learnable_per_tensor_affine(*ts, QMIN, QMAX, 1.0) ** 2).sum()
    for a, b in zip(grads, torch.autograd.grad(t_loss, ts)):
        _close(a, b.numpy(), 1e-5)


# -- observer fused with fake quantization ------------------------------------------------------


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize(
    "observe,fake_quant,start",
    [(1, 1, "empty"), (1, 1, "running"), (0, 1, "running"), (1, 0, "running"), (1, 1, "tiny")],
)
def test_fused_moving_avg_obs_fq_helper_as_torch(per_row, symmetric, observe, fake_quant, start):
    """Outputs, masks and the straight-through gradient, from an empty running range (inf), a
    running one, and a range so small that ATen raises the scale to its minimum."""
    rng = np.random.default_rng(
        zlib.crc32(repr((per_row, symmetric, observe, fake_quant, start)).encode())
    )  # not hash(): str hashes vary per process
    x = (rng.normal(size=(3, 5)) * (1e-6 if start == "tiny" else 2.0)).astype(np.float32)
    n = 3 if per_row else 1
    empty = start != "running"
    lo = np.full(n, np.inf if empty else -0.5, np.float32)
    hi = np.full(n, -np.inf if empty else 0.7, np.float32)

    def args(make):
        return (
            make(np.array([observe])),
            make(np.array([fake_quant])),
            make(lo.copy()),
            make(hi.copy()),
            make(np.ones(n, np.float32)),
            make(np.zeros(n, np.int32)),
            0.01,
            0,
            255,
            0,
            per_row,
            symmetric,
        )

    op = jaxderiv.op("_fused_moving_avg_obs_fq_helper")
    ct = rng.normal(size=x.shape).astype(np.float32)
    (out, mask), vjp = jax.vjp(lambda x: op(x, *args(jnp.asarray)), jnp.asarray(x))
    tx = torch.from_numpy(x).requires_grad_()
    tout, tmask = aten._fused_moving_avg_obs_fq_helper(tx, *args(torch.from_numpy))
    (tg,) = torch.autograd.grad(tout, tx, torch.from_numpy(ct))
    # Bit-exact but for per-row symmetric scales, whose float32 arithmetic ATen orders
    # differently: there one value in ~50 calls differs by one unit in the last place.
    np.testing.assert_array_max_ulp(np.asarray(out), tout.detach().numpy(), maxulp=1)
    np.testing.assert_array_equal(np.asarray(mask), tmask.numpy())
    g = vjp((jnp.asarray(ct), np.zeros(mask.shape, jax.dtypes.float0)))[0]
    np.testing.assert_array_equal(np.asarray(g), tg.numpy())
    if fake_quant and start == "running":
        assert 0 < int(mask.sum()) < mask.size  # the clamp range is crossed


@pytest.mark.parametrize(
    "formula, status",
    [
        ("fake_quantize_per_tensor_affine_backward(grad, self, scale, zero_point, quant_min, quant_max)", "passed"),
        ("grad", "failed"),  # the mask dropped: the clamped range gets a gradient
        ("fake_quantize_per_tensor_affine_backward(grad, self, scale, zero_point, quant_min + 1, quant_max)", "failed"),
        ("2 * fake_quantize_per_tensor_affine_backward(grad, self, scale, zero_point, quant_min, quant_max)", "failed"),
    ],
)
def test_checker_judges_the_straight_through_estimator(write_spec, formula, status):
    """The check differentiates the estimator's surrogate (identity inside the range, constant
    outside), so a wrong mask or factor fails while PyTorch's formula passes."""
    from jaxderiv import check_all

    path = write_spec(
        "- name: fake_quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> Tensor\n"
        f"  self: {formula}\n"
    )
    report = check_all(path, ops=["fake_quantize_per_tensor_affine"], modes=("vjp", "jvp"))
    assert {r.status for r in report} == {status}, report.summary()


def _shipped(version):
    """The shipped spec file derivatives_<version>*.yaml, loaded."""
    from jaxderiv.spec import load_spec, shipped_spec_files

    return load_spec(next(p for p in shipped_spec_files() if os.path.basename(p).startswith(f"derivatives_{version}")))


def _backward_call(formula):
    """The `*_backward(...)` call of a learnable entry's formula `grad.defined() ? call : empty`."""
    return formula.split(" ? ")[1].split(" : ")[0]


def _per_input(call, scale="{}", zero_point="{}"):
    """The formula split into one formula per input, each taking its element of the call's tuple."""
    parts = {"self": "{}", "scale": scale, "zero_point": zero_point}
    return {k: f.format(f"std::get<{i}>({call})") for i, (k, f) in enumerate(parts.items())}


PER_TENSOR, PER_CHANNEL = "_fake_quantize_learnable_per_tensor_affine", "_fake_quantize_learnable_per_channel_affine"
_LEARNABLE_MUTANTS = [
    # (spec file, entry, formulas of the temporary entry from the shipped call, expected status)
    ("v1_10", PER_TENSOR, lambda c: {"self, scale, zero_point": c}, "passed"),
    ("v1_10", PER_TENSOR, lambda c: _per_input(c), "passed"),
    ("v1_10", PER_TENSOR, lambda c: {"self, scale, zero_point": c.replace(", grad_factor)", ")")}, "failed"),
    ("v1_10", PER_TENSOR, lambda c: _per_input(c, scale="2 * {}"), "failed"),
    ("v1_10", PER_TENSOR, lambda c: _per_input(c, zero_point="zeros_like(zero_point)"), "failed"),
    ("v1_10", PER_CHANNEL, lambda c: {"self, scale, zero_point": c}, "passed"),
    (
        "v1_10",
        PER_CHANNEL,
        lambda c: {"self, scale, zero_point": c.replace(", grad_factor)", ", 2 * grad_factor)")},
        "failed",
    ),
    ("v1_7", PER_CHANNEL, lambda c: _per_input(c, scale="2 * {}"), "failed"),
    ("v1_7", PER_TENSOR, lambda c: _per_input(c, zero_point="-{}"), "failed"),
]


@pytest.mark.parametrize(
    "spec, name, mutate, status",
    _LEARNABLE_MUTANTS,
    ids=[f"{m[0]}-{m[1][15:]}-{i}-{m[3]}" for i, m in enumerate(_LEARNABLE_MUTANTS)],
)
def test_checker_judges_the_learned_step_estimator(write_spec, spec, name, mutate, status):
    """The learnable entries' checks differentiate LSQ's straight-through forward: PyTorch's
    formula passes (also split per input), a doubled scale gradient, a dropped or doubled
    grad_factor, a dropped or negated zero point gradient fail, in every mode."""
    from jaxderiv import check_all

    entry = _shipped(spec)[name]
    lines = [f"- name: {entry.schema}"] + [
        f'  {k}: "{f}"' for k, f in mutate(_backward_call(entry.backward[0].text)).items()
    ]
    report = check_all(write_spec("\n".join(lines) + "\n"), ops=[name], modes=("vjp", "jvp", "vjp_vjp"))
    assert {r.status for r in report} == {status}, report.summary()


@pytest.mark.parametrize(
    "formula, status",
    [("fake_quantize_per_tensor_affine_cachemask_backward(grad, mask)", "passed"), ("grad", "failed")],
)
def test_checker_judges_the_fused_observer_estimator(write_spec, formula, status):
    """With fake quantization on, a gradient that ignores the mask (clamped inputs) fails."""
    from jaxderiv import check_all

    name = "_fused_moving_avg_obs_fq_helper"
    path = write_spec(f"- name: {_shipped('v1_10')[name].schema}\n  self: {formula}\n")
    report = check_all(path, ops=[name], modes=("vjp", "jvp"))
    assert {r.status for r in report} == {status}, report.summary()
