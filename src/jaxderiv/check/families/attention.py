"""Checker samples of the fused scaled-dot-product attention ops.

Attention is smooth in query, key, value and an additive mask, so no input needs to avoid a
kink; samples use L != S, causal (top-left, with no fully hidden row), 0/-inf and additive
broadcast masks (torch's CPU op takes no boolean mask, so parity runs use the 0/-inf form
torch converts one to; tests/test_attention.py covers boolean masks), and an explicit scale.
dropout_p is 0: the schemas carry no random key.
"""

from __future__ import annotations

import numpy as np

from ..samples import Sample, samples


def _qkv(rng, dtype, L=3, S=4, E=4):
    return (rng.normal(size=(1, 2, L, E)).astype(dtype), rng.normal(size=(1, 2, S, E)).astype(dtype),
            rng.normal(size=(1, 2, S, E)).astype(dtype))


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
        Sample(_qkv(rng, dtype), {"attn_mask": np.where(_bool_mask(), 0.0, -np.inf)}, "0/-inf mask (a boolean one, as torch converts it)"),
        Sample((*_qkv(rng, dtype, L=4, S=2, E=3), 0.0, True), {"scale": 0.7}, "causal L=4 S=2, scale=0.7"),
    ]


@samples("_scaled_dot_product_efficient_attention")
def _efficient(op, rng, dtype=np.float64):
    return [
        Sample((*_qkv(rng, dtype), None, True), {}, "no bias"),
        Sample((*_qkv(rng, dtype), rng.normal(size=(1, 2, 3, 4)), True, 0.0, True), {"scale": 0.5}, "bias, causal, scale=0.5"),
    ]


@samples("_scaled_dot_product_flash_attention")
def _flash(op, rng, dtype=np.float64):
    return [Sample(_qkv(rng, dtype), {}, "L=3 S=4"), Sample((*_qkv(rng, dtype), 0.0, True), {"scale": 0.5}, "causal, scale=0.5")]


@samples("_scaled_dot_product_cudnn_attention")
def _cudnn(op, rng, dtype=np.float64):
    return [Sample((*_qkv(rng, dtype), rng.normal(size=(1, 1, 3, 4)), True), {}, "bias (not differentiated by the spec)")]


@samples("_scaled_dot_product_fused_attention_overrideable")
def _overrideable(op, rng, dtype=np.float64):
    return [Sample((*_qkv(rng, dtype), rng.normal(size=(1, 2, 3, 4))), {}, "bias"),
            Sample((*_qkv(rng, dtype), None, 0.0, True), {}, "causal, no bias")]
