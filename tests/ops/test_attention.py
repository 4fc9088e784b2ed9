"""Fused scaled-dot-product attention ops against torch 2.13 (float64 on CPU).

torch runs only `_scaled_dot_product_flash_attention_for_cpu` on CPU; it has no forward-mode or
second derivative for it, so jvp is compared with torch.func.jvp of the same attention written
in torch ops. The CUDA-only ops are compared with the CPU op's values and gradients.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, check_all, load_spec

torch = pytest.importorskip("torch")

CPU = "_scaled_dot_product_flash_attention_for_cpu"


@pytest.fixture(scope="module")
def registry():
    return Registry(load_spec(from_torch=True))


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _qkv(seed, L=4, S=5, E=3, B=2, H=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, H, L, E)), rng.normal(size=(B, H, S, E)), rng.normal(size=(B, H, S, E))


def _bool_mask(L, S):
    mask = np.ones((L, S), bool)
    mask[0, 1:] = False
    mask[-1, :2] = False
    return mask


def _additive(mask):
    return np.where(mask, 0.0, -np.inf)


# (label, L, S, is_causal, attn_mask(L, S) or None, scale)
CASES = [
    ("plain", 4, 5, False, None, None),
    ("causal L<S", 4, 5, True, None, None),
    ("causal L>S", 6, 3, True, None, None),
    ("additive mask broadcast", 4, 5, False, lambda L, S: np.random.default_rng(7).normal(size=(1, 3, L, S)), None),
    ("-inf mask", 4, 5, False, lambda L, S: _additive(_bool_mask(L, S)), None),
    (
        "fully masked row",
        3,
        4,
        False,
        lambda L, S: np.where(np.arange(L)[:, None] == 1, -np.inf, 0.0) + np.zeros((L, S)),
        None,
    ),
    ("scale", 4, 5, False, None, 0.37),
    ("causal mask scale", 5, 5, True, lambda L, S: np.random.default_rng(8).normal(size=(L, S)), 1.5),
]


def _case(case, seed=0):
    label, L, S, causal, mask, scale = case
    q, k, v = _qkv(seed, L, S)
    return q, k, v, causal, (None if mask is None else mask(L, S)), scale


def _t(x):
    return None if x is None else torch.tensor(np.asarray(x))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward_and_logsumexp_match_torch(registry, case):
    q, k, v, causal, mask, scale = _case(case)
    out, lse = registry.op(CPU)(q, k, v, 0.0, causal, attn_mask=mask, scale=scale)
    t_out, t_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        _t(q), _t(k), _t(v), 0.0, causal, attn_mask=_t(mask), scale=scale
    )
    assert (
        out.shape == tuple(t_out.shape)
        and lse.shape == tuple(t_lse.shape)
        and str(lse.dtype) == str(t_lse.dtype).split(".")[1]
    )
    np.testing.assert_allclose(out, t_out.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, t_lse.numpy(), rtol=1e-12, atol=1e-12)


def test_float32_and_bfloat16_dtypes_match_torch(registry):
    q, k, v = _qkv(1)
    for jdt, tdt in ((jnp.float32, torch.float32), (jnp.bfloat16, torch.bfloat16)):
        out, lse = registry.op(CPU)(*(jnp.asarray(x, jdt) for x in (q, k, v)), 0.0, True)
        t_out, t_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            *(_t(x).to(tdt) for x in (q, k, v)), 0.0, True
        )
        assert out.dtype == jdt and lse.dtype == jnp.float32 and t_lse.dtype == torch.float32
        tol = 1e-5 if jdt == jnp.float32 else 3e-2
        np.testing.assert_allclose(np.asarray(out, np.float64), t_out.double().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(lse, t_lse.numpy(), rtol=tol, atol=tol)


def test_boolean_mask_means_keep(registry):
    """torch's CPU op takes only float masks; a boolean one (True = attend, as
    F.scaled_dot_product_attention) equals the additive 0 / -inf mask."""
    q, k, v = _qkv(2)
    mask = _bool_mask(4, 5)
    a = registry.op(CPU)(q, k, v, attn_mask=mask)
    b = registry.op(CPU)(q, k, v, attn_mask=_additive(mask))
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_vjp_matches_torch_autograd(registry, case):
    q, k, v, causal, mask, scale = _case(case, seed=3)
    op = registry.op(CPU)
    out, vjp = jax.vjp(lambda a, b, c: op(a, b, c, 0.0, causal, attn_mask=mask, scale=scale)[0], q, k, v)
    ct = np.random.default_rng(4).normal(size=out.shape)
    ours = vjp(ct)
    leaves = [_t(x).requires_grad_() for x in (q, k, v)]
    t_out, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *leaves, 0.0, causal, attn_mask=_t(mask), scale=scale
    )
    theirs = torch.autograd.grad(t_out, leaves, _t(ct))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-10, atol=1e-12)


def _torch_math(q, k, v, causal, mask, scale):
    """Attention in torch ops (torch has no forward AD for the fused op)."""
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -float("inf"))
    if mask is not None:
        s = s + mask
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v


@pytest.mark.parametrize(
    "case", [c for c in CASES if c[0] != "fully masked row"], ids=[c[0] for c in CASES if c[0] != "fully masked row"]
)
def test_jvp_matches_torch_func_jvp(registry, case):
    q, k, v, causal, mask, scale = _case(case, seed=5)
    tangents = _qkv(6, q.shape[-2], k.shape[-2])
    op = registry.op(CPU)
    _, ours = jax.jvp(lambda a, b, c: op(a, b, c, 0.0, causal, attn_mask=mask, scale=scale)[0], (q, k, v), tangents)
    _, theirs = torch.func.jvp(
        lambda a, b, c: _torch_math(a, b, c, causal, _t(mask), scale),
        tuple(map(_t, (q, k, v))),
        tuple(map(_t, tangents)),
    )
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="forward AD"):
        torch.func.jvp(
            lambda a: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(a, _t(k), _t(v))[0], (_t(q),), (_t(q),)
        )


def test_fused_ops_agree_with_the_cpu_op(registry):
    """The CUDA-only variants: same output and gradients as the CPU op; torch's meta shapes for the rest."""
    q, k, v = _qkv(9, L=33, S=5, B=1, H=2)
    bias = np.random.default_rng(10).normal(size=(1, 2, 33, 5))
    ref_out, ref_lse = registry.op(CPU)(q, k, v, 0.0, True, attn_mask=bias, scale=0.5)
    calls = {
        "_scaled_dot_product_efficient_attention": lambda a, b, c: (a, b, c, bias, True, 0.0, True),
        "_scaled_dot_product_cudnn_attention": lambda a, b, c: (a, b, c, bias, True, 0.0, True),
        "_scaled_dot_product_fused_attention_overrideable": lambda a, b, c: (a, b, c, bias, 0.0, True),
    }
    ct = np.random.default_rng(11).normal(size=ref_out.shape)
    ref_grads = jax.vjp(lambda a, b, c: registry.op(CPU)(a, b, c, 0.0, True, attn_mask=bias, scale=0.5)[0], q, k, v)[1](
        ct
    )
    fake = torch._subclasses.fake_tensor.FakeTensorMode()
    for name, args in calls.items():
        op = registry.op(name)
        outs = op(*args(q, k, v), scale=0.5)
        with fake:
            metas = getattr(torch.ops.aten, name)(
                *[
                    torch.empty(np.shape(x), dtype=torch.float64) if isinstance(x, np.ndarray) else x
                    for x in args(q, k, v)
                ],
                scale=0.5,
            )
        assert len(outs) == len(metas)
        for i, (ours, meta) in enumerate(zip(outs, metas)):
            if isinstance(meta, torch.Tensor):  # None (undefined) outputs are empty arrays here
                assert np.shape(ours) == tuple(meta.shape), (name, i)
            elif meta is not None:
                assert ours == meta, (name, i)
        np.testing.assert_allclose(outs[0], ref_out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            np.reshape(outs[1], outs[1].shape[:2] + (-1,))[..., :33], ref_lse, rtol=1e-12, atol=1e-12
        )
        grads = jax.vjp(lambda a, b, c: op(*args(a, b, c), scale=0.5)[0], q, k, v)[1](ct)
        for a, b in zip(grads, ref_grads):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_efficient_attention_bias_gradient(registry):
    """d(attn_bias) = dS, summed over the dimensions the bias broadcasts: vs torch autograd of
    the CPU op, whose float mask torch differentiates through its math."""
    q, k, v = _qkv(12)
    bias = np.random.default_rng(13).normal(size=(1, 3, 4, 5))
    op = registry.op("_scaled_dot_product_efficient_attention")
    out, vjp = jax.vjp(lambda b: op(q, k, v, b, True)[0], bias)
    ct = np.random.default_rng(14).normal(size=out.shape)
    leaf = _t(bias).requires_grad_()
    (theirs,) = torch.autograd.grad(_torch_math(_t(q), _t(k), _t(v), False, leaf, None), leaf, _t(ct))
    np.testing.assert_allclose(vjp(ct)[0], theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_is_refused(registry):
    q, k, v = _qkv(15)
    with pytest.raises(ValueError, match="Generator"):
        registry.op(CPU)(q, k, v, 0.1)


def test_checker_passes_the_spec_and_fails_a_wrong_formula(write_spec):
    entry = (
        "- name: _scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0.0, "
        "bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)\n"
        "  output_differentiability: [True, False]\n"
        "  query, key, value: {}\n"
    )
    right = (
        "_scaled_dot_product_flash_attention_for_cpu_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal, "
        "attn_mask, scale)"
    )
    wrong = right.replace("is_causal,", "!is_causal,")  # the causal mask flipped in the backward
    good = check_all(write_spec(entry.format(right)), ops=[CPU], modes=("vjp", "jvp", "vjp_vjp"))
    assert {r.status for r in good} == {"passed"}, good.summary()
    bad = check_all(write_spec(entry.format(wrong)), ops=[CPU], modes=("vjp",))
    assert {r.status for r in bad} == {"failed"}, bad.summary()


def _band_mask(L, S, left, right, bottom_right):
    d = np.arange(S)[None, :] - np.arange(L)[:, None] - (S - L if bottom_right else 0)
    keep = np.ones((L, S), bool)
    if right >= 0:
        keep &= d <= right
    if left >= 0:
        keep &= d >= -left
    return keep


# (name, args of (B, L, H, E) q, k, v, kwargs, the visible band (left, right, bottom-right), bias?)
KERNELS = [
    ("_flash_attention_forward", lambda q, k, v, b: (q, k, v, None, None, 4, 6, 0.0, True, False), {}, (-1, 0, True)),
    (
        "_flash_attention_forward",
        lambda q, k, v, b: (q, k, v, None, None, 4, 6, 0.0, False, False),
        {"window_size_left": 2, "window_size_right": 1},
        (2, 1, True),
    ),
    (
        "_efficient_attention_forward",
        lambda q, k, v, b: (q, k, v, b, None, None, None, None, 0.0, 1, True),
        {},
        (-1, 0, False),
    ),
    (
        "_efficient_attention_forward",
        lambda q, k, v, b: (q, k, v, b, None, None, None, None, 0.0, 2, True),
        {},
        (-1, 0, True),
    ),
]


@pytest.mark.parametrize("name, args, kwargs, band", KERNELS, ids=lambda x: x if isinstance(x, str) else None)
def test_cuda_kernel_entry_points_agree_with_the_cpu_op_under_their_mask(registry, name, args, kwargs, band):
    """flash-attention's and the efficient kernel's own ops, (B, L, H, E) layout: the CPU op's
    output and gradients with the band the kernel applies (flash: causal and windows aligned
    bottom-right; efficient: custom_mask_type 1 top-left, 2 bottom-right) as its mask."""
    q, k, v = _qkv(16, L=4, S=6, E=3, B=1, H=2)
    with_bias = name == "_efficient_attention_forward"
    bias = np.random.default_rng(17).normal(size=(1, 2, 4, 6)) if with_bias else None
    mask = _additive(_band_mask(4, 6, *band)) + (bias if with_bias else 0.0)
    ct = np.random.default_rng(18).normal(size=(1, 2, 4, 3))
    tq, tk, tv = (_t(x).requires_grad_() for x in (q, k, v))
    t_out, _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(tq, tk, tv, attn_mask=_t(mask))
    t_grads = torch.autograd.grad(t_out, (tq, tk, tv), _t(ct))

    def blhe(x):
        return np.swapaxes(x, 1, 2)

    op = registry.op(name)
    out, vjp = jax.vjp(lambda a, b, c: op(*args(a, b, c, bias), **kwargs)[0], blhe(q), blhe(k), blhe(v))
    np.testing.assert_allclose(blhe(out), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    for ours, theirs in zip(vjp(blhe(ct)), t_grads):
        np.testing.assert_allclose(blhe(ours), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_cudnn_kernel_entry_point_is_the_sdpa_op(registry):
    q, k, v = _qkv(19, L=4, S=6, B=1, H=2)
    ours = registry.op("_cudnn_attention_forward")(q, k, v, None, None, None, 4, 6, True, 0.0, True)
    sdpa = registry.op("_scaled_dot_product_cudnn_attention")(q, k, v, None, True, 0.0, True)
    for a, b in zip(ours, sdpa):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_packed_variable_length_batches_are_refused(registry):
    q, k, v = (np.swapaxes(x, 1, 2)[0] for x in _qkv(20, B=1))
    cum = np.array([0, 2, 4], np.int32)
    with pytest.raises(ValueError, match="cum_seq_q, cum_seq_k given: variable-length"):
        registry.op("_flash_attention_forward")(q, k, v, cum, cum, 2, 2, 0.0, False, False)
