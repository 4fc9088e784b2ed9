"""Checker samples of the fused scaled-dot-product attention ops.

Attention is smooth in query, key, value and an additive mask, so no input needs to avoid a
kink; samples use L != S, causal (top-left, with no fully hidden row), 0/-inf and additive
broadcast masks (torch's CPU op takes no boolean mask, so parity runs use the 0/-inf form
torch converts one to; tests/ops/test_attention.py covers boolean masks), and an explicit scale.
dropout_p is 0: the schemas carry no random key.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, samples, torch_equivalent
from ..samples import Sample
from . import CUDA_ONLY


def _qkv(rng, dtype, L=3, S=4, E=4):
    return (
        rng.normal(size=(1, 2, L, E)).astype(dtype),
        rng.normal(size=(1, 2, S, E)).astype(dtype),
        rng.normal(size=(1, 2, S, E)).astype(dtype),
    )


def _bool_mask(L=3, S=4):
    """Each row keeps at least one key."""
    mask = np.ones((L, S), bool)
    mask[0, 1:] = False
    mask[1, 2] = False
    return mask


@samples("_scaled_dot_product_flash_attention_for_cpu")
def _flash_for_cpu(op, rng, dtype=np.float64):
    return [
        Sample(_qkv(rng, dtype), {}, "L=3 S=4"),
        Sample((*_qkv(rng, dtype), 0.0, True), {}, "causal L=3 S=4"),
        Sample(_qkv(rng, dtype), {"attn_mask": rng.normal(size=(1, 1, 3, 4))}, "additive mask, broadcast over B, H"),
        Sample(
            _qkv(rng, dtype),
            {"attn_mask": np.where(_bool_mask(), 0.0, -np.inf)},
            "0/-inf mask (a boolean one, as torch converts it)",
        ),
        Sample((*_qkv(rng, dtype, L=4, S=2, E=3), 0.0, True), {"scale": 0.7}, "causal L=4 S=2, scale=0.7"),
    ]


@samples("_scaled_dot_product_efficient_attention")
def _efficient(op, rng, dtype=np.float64):
    return [
        Sample((*_qkv(rng, dtype), None, True), {}, "no bias"),
        Sample(
            (*_qkv(rng, dtype), rng.normal(size=(1, 2, 3, 4)), True, 0.0, True),
            {"scale": 0.5},
            "bias, causal, scale=0.5",
        ),
    ]


@samples("_scaled_dot_product_flash_attention")
def _flash(op, rng, dtype=np.float64):
    return [
        Sample(_qkv(rng, dtype), {}, "L=3 S=4"),
        Sample((*_qkv(rng, dtype), 0.0, True), {"scale": 0.5}, "causal, scale=0.5"),
    ]


@samples("_scaled_dot_product_cudnn_attention")
def _cudnn(op, rng, dtype=np.float64):
    return [
        Sample((*_qkv(rng, dtype), rng.normal(size=(1, 1, 3, 4)), True), {}, "bias (not differentiated by the spec)")
    ]


@samples("_scaled_dot_product_fused_attention_overrideable")
def _overrideable(op, rng, dtype=np.float64):
    return [
        Sample((*_qkv(rng, dtype), rng.normal(size=(1, 2, 3, 4))), {}, "bias"),
        Sample((*_qkv(rng, dtype), None, 0.0, True), {}, "causal, no bias"),
    ]


def _blhe(rng, dtype, L=3, S=4, E=4):
    """flash-attention's and the efficient kernel's (B, L, H, E) layout."""
    return tuple(np.swapaxes(x, 1, 2) for x in _qkv(rng, dtype, L, S, E))


@samples("_flash_attention_forward")
def _flash_kernel(op, rng, dtype=np.float64):
    """Dense batches (no cum_seq_q/k); causal bottom-right (row i sees keys j <= i + S - L)."""
    return [
        Sample((*_blhe(rng, dtype), None, None, 3, 4, 0.0, False, False), {}, "L=3 S=4"),
        Sample((*_blhe(rng, dtype), None, None, 3, 4, 0.0, True, False), {"scale": 0.5}, "causal bottom-right, scale"),
        Sample(
            (*_blhe(rng, dtype, L=4, S=4), None, None, 4, 4, 0.0, True, False),
            {"window_size_left": 1},
            "causal sliding window of 2 keys",
        ),
        Sample(
            (*_blhe(rng, dtype), None, None, 3, 4, 0.0, False, False),
            {"window_size_left": 0, "window_size_right": 1},
            "window (0, 1)",
        ),
    ]


@samples("_efficient_attention_forward")
def _efficient_kernel(op, rng, dtype=np.float64):
    return [
        Sample((*_blhe(rng, dtype), None, None, None, None, None, 0.0, 0, True), {}, "no mask, logsumexp"),
        Sample(
            (*_blhe(rng, dtype), rng.normal(size=(1, 2, 3, 4)), None, None, None, None, 0.0, 1, True),
            {"scale": 0.5},
            "bias, causal from top-left, scale",
        ),
        Sample((*_blhe(rng, dtype), None, None, None, None, None, 0.0, 2, False), {}, "causal from bottom-right"),
    ]


@samples("_cudnn_attention_forward")
def _cudnn_kernel(op, rng, dtype=np.float64):
    return [
        Sample((*_qkv(rng, dtype), rng.normal(size=(1, 1, 3, 4)), None, None, 3, 4, True), {}, "bias"),
        Sample((*_qkv(rng, dtype), None, None, None, 3, 4, True, 0.0, True), {}, "causal top-left"),
    ]


# -- parity with torch ------------------------------------------------------------------------


def _torch_attention(lse_layout):
    """The CUDA/privateuse1 attention ops as torch ops: softmax(scale Q K^T + bias, causal top-left) V and
    each row's logsumexp, laid out as the op returns it (`lse_layout(aten, lse, a)`), so that a bias is
    differentiated too (the CPU fused op treats its mask as constant)."""

    def call(aten, a):
        q, k, v, bias = a["query"], a["key"], a["value"], a.get("attn_bias")
        s = aten.matmul(q, k.transpose(-2, -1)) * (a["scale"] if a.get("scale") is not None else q.shape[-1] ** -0.5)
        if a.get("is_causal"):
            import torch

            s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -float("inf"))
        if bias is not None:
            s = s + bias
        lse = aten.logsumexp(s, [-1])
        return [
            aten.matmul(aten.exp(s - lse.unsqueeze(-1)), v),
            lse_layout(aten, lse, a).detach(),
        ]  # logsumexp: not differentiable

    return call


def _efficient_lse(aten, lse, a):
    """Rows padded with zeros to a multiple of 32; none without compute_log_sumexp."""
    L = lse.shape[-1]
    return aten.constant_pad_nd(lse, [0, (-(-L // 32) * 32 if a["compute_log_sumexp"] else 0) - L])


torch_equivalent(
    Equivalent(_torch_attention(_efficient_lse), f"{CUDA_ONLY}: attention in torch ops"),
    "_scaled_dot_product_efficient_attention",
)
torch_equivalent(
    Equivalent(_torch_attention(lambda aten, lse, a: lse), f"{CUDA_ONLY}: attention in torch ops"),
    "_scaled_dot_product_flash_attention",
)
torch_equivalent(
    Equivalent(
        _torch_attention(lambda aten, lse, a: lse.unsqueeze(-1)),
        f"{CUDA_ONLY}: attention in torch ops, logsumexp (B, H, L, 1)",
    ),
    "_scaled_dot_product_cudnn_attention",
)
torch_equivalent(
    Equivalent(
        _torch_attention(lambda aten, lse, a: lse),
        "torch has no CPU kernel for the privateuse1 hook: attention in torch ops",
    ),
    "_scaled_dot_product_fused_attention_overrideable",
)


def _torch_kernel_attention(inputs, keep, bias_name, lse_layout):
    """A CUDA kernel's own entry point as torch ops, in its layout: `inputs(a)` gives (q, k, v)
    as (B, H, L, E) and `keep(torch, L, S, a)` the visible keys (L x S bool) or None."""

    def call(aten, a):
        import torch

        q, k, v = inputs(a)
        s = aten.matmul(q, k.transpose(-2, -1)) * (a["scale"] if a.get("scale") is not None else q.shape[-1] ** -0.5)
        visible = keep(torch, s.shape[-2], s.shape[-1], a)
        if visible is not None:
            s = s.masked_fill(~visible, -float("inf"))
        if a.get(bias_name) is not None:
            s = s + a[bias_name]
        lse = aten.logsumexp(s, [-1])
        out = aten.matmul(aten.exp(s - lse.unsqueeze(-1)), v)
        return [out if inputs is _bhle else out.transpose(1, 2), lse_layout(aten, lse, a).detach()]

    return call


def _bhle(a):
    return a["query"], a["key"], a["value"]


def _from_blhe(a):
    return tuple(a[n].transpose(1, 2) for n in ("query", "key", "value"))


def _band(torch, L, S, left, right, bottom_right):
    d = torch.arange(S)[None, :] - torch.arange(L)[:, None] - (S - L if bottom_right else 0)
    keep = torch.ones(L, S, dtype=torch.bool)
    if right >= 0:
        keep &= d <= right
    if left >= 0:
        keep &= d >= -left
    return None if left < 0 and right < 0 else keep


def _flash_keep(torch, L, S, a):
    left = a.get("window_size_left") if a.get("window_size_left") is not None else -1
    right = 0 if a["is_causal"] else (a.get("window_size_right") if a.get("window_size_right") is not None else -1)
    return _band(torch, L, S, left, right, bottom_right=True)


def _efficient_keep(torch, L, S, a):
    kind = a["custom_mask_type"]
    return _band(torch, L, S, -1, 0, bottom_right=kind == 2) if kind else None


torch_equivalent(
    Equivalent(
        _torch_kernel_attention(_from_blhe, _flash_keep, "no bias", lambda aten, lse, a: lse),
        f"{CUDA_ONLY}: attention in torch ops, (B, L, H, E) layout, causal and windows bottom-right",
    ),
    "_flash_attention_forward",
)
torch_equivalent(
    Equivalent(
        _torch_kernel_attention(_from_blhe, _efficient_keep, "bias", _efficient_lse),
        f"{CUDA_ONLY}: attention in torch ops, (B, M, H, K) layout",
    ),
    "_efficient_attention_forward",
)
torch_equivalent(
    Equivalent(
        _torch_kernel_attention(
            _bhle,
            lambda torch, L, S, a: _band(torch, L, S, -1, 0, False) if a.get("is_causal") else None,
            "attn_bias",
            lambda aten, lse, a: lse.unsqueeze(-1),
        ),
        f"{CUDA_ONLY}: attention in torch ops, logsumexp (B, H, L, 1)",
    ),
    "_cudnn_attention_forward",
)
