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
