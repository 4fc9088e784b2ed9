"""Forward implementations of ATen's fused scaled-dot-product attention ops.

All of them compute softmax(scale * Q K^T + mask) V over (B, H, L, E) queries and (B, H, S, E)
keys/values, with logsumexp of each row's scores: the saved value their backward formulas
read. `is_causal` is top-left aligned, as ATen's kernels are (row i sees keys j <= i, also
when L != S). A fully masked row gives output 0 and logsumexp 0, as the CPU kernel does.
Half-precision inputs are computed in float32, and logsumexp is returned in float32.

Dropout: these schemas carry no Generator, so there is no key to draw the mask from (see
forward/random.py for ops that take one); dropout_p > 0 raises a ValueError. The rng/seed
outputs (philox seed and offset, rng_state) are zeros with the shapes and dtypes of torch's
meta kernels; `debug_attn_mask` is an empty array. cum_seq_q/k, undefined tensors in ATen for
dense inputs, are empty int32 arrays here (a JAX function cannot return None beside arrays).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from . import impl


def _no_dropout(name, dropout_p):
    if dropout_p:
        raise ValueError(
            f"{name}: dropout_p={dropout_p} > 0 needs a random key, and this ATen schema has no Generator "
            "argument to carry one; apply dropout separately (native_dropout with an explicit jax.random key)"
        )


def compute_dtype(query):
    """float32 for half-precision inputs (what ATen accumulates in), else query's dtype."""
    dtype = jnp.result_type(query)
    return jnp.float32 if jnp.finfo(dtype).bits < 32 else dtype


def softmax_scale(query, scale):
    return 1.0 / math.sqrt(jnp.shape(query)[-1]) if scale is None else scale


def scores(query, key, attn_mask, is_causal, scale):
    """scale * Q K^T plus the additive mask (-inf where a boolean mask or causality hides a key)."""
    dtype = compute_dtype(query)
    s = jnp.einsum("...le,...se->...ls", query.astype(dtype), key.astype(dtype)) * softmax_scale(query, scale)
    L, S = s.shape[-2], s.shape[-1]
    if is_causal:
        s = jnp.where(jnp.tril(jnp.ones((L, S), bool)), s, -jnp.inf)
    if attn_mask is not None:
        mask = jnp.asarray(attn_mask)
        s = jnp.where(mask, s, -jnp.inf) if mask.dtype == jnp.bool_ else s + mask.astype(dtype)
    return s


def attention(query, key, value, attn_mask, is_causal, scale):
    """(output in query's dtype, logsumexp (B, H, L) in the compute dtype)."""
    s = scores(query, key, attn_mask, is_causal, scale)
    m = jnp.max(s, axis=-1, keepdims=True)
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    e = jnp.exp(s - m)
    total = jnp.sum(e, axis=-1, keepdims=True)
    safe = jnp.where(total > 0, total, 1.0)
    out = jnp.einsum("...ls,...se->...le", e / safe, value.astype(s.dtype))
    lse = jnp.where(total > 0, m + jnp.log(safe), 0.0)[..., 0]
    return out.astype(jnp.result_type(query)), lse


def _seed_offset():
    return jnp.zeros((), jnp.int64), jnp.zeros((), jnp.int64)


@impl("_scaled_dot_product_flash_attention_for_cpu")
def _scaled_dot_product_flash_attention_for_cpu(
    query, key, value, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None
):
    _no_dropout("_scaled_dot_product_flash_attention_for_cpu", dropout_p)
    return attention(query, key, value, attn_mask, is_causal, scale)


@impl("_scaled_dot_product_efficient_attention")
def _scaled_dot_product_efficient_attention(
    query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, scale=None
):
    """logsumexp padded to a multiple of 32 rows (ATen's kernel layout; zeros beyond L), or
    shape (B, H, 0) without compute_log_sumexp."""
    _no_dropout("_scaled_dot_product_efficient_attention", dropout_p)
    out, lse = attention(query, key, value, attn_bias, is_causal, scale)
    L = lse.shape[-1]
    width = (-(-L // 32) * 32) if compute_log_sumexp else 0
    lse = jnp.pad(lse, [(0, 0)] * (lse.ndim - 1) + [(0, width - L)]) if width else lse[..., :0]
    return (out, lse, *_seed_offset())


def _flash_like(name, query, key, value, attn_bias, dropout_p, is_causal, scale, lse_shape):
    _no_dropout(name, dropout_p)
    out, lse = attention(query, key, value, attn_bias, is_causal, scale)
    L, S = jnp.shape(query)[-2], jnp.shape(key)[-2]
    empty = jnp.zeros((0,), jnp.int32)
    return out, jnp.reshape(lse, lse_shape(lse)), empty, empty, L, S


@impl("_scaled_dot_product_flash_attention")
def _scaled_dot_product_flash_attention(
    query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, scale=None
):
    """rng_state (2,) and unused () zeros in uint64 (uint32 without x64), as the meta kernel."""
    head = _flash_like(
        "_scaled_dot_product_flash_attention", query, key, value, None, dropout_p, is_causal, scale, lambda l: l.shape
    )
    return (*head, jnp.zeros((2,), jnp.uint64), jnp.zeros((), jnp.uint64), jnp.zeros((0,), compute_dtype(query)))


@impl("_scaled_dot_product_cudnn_attention")
def _scaled_dot_product_cudnn_attention(
    query,
    key,
    value,
    attn_bias,
    compute_log_sumexp,
    dropout_p=0.0,
    is_causal=False,
    return_debug_mask=False,
    scale=None,
):
    """logsumexp (B, H, L, 1), as cuDNN's meta kernel."""
    head = _flash_like(
        "_scaled_dot_product_cudnn_attention",
        query,
        key,
        value,
        attn_bias,
        dropout_p,
        is_causal,
        scale,
        lambda l: (*l.shape, 1),
    )
    return (*head, *_seed_offset(), jnp.zeros((0,), compute_dtype(query)))


@impl("_scaled_dot_product_fused_attention_overrideable")
def _scaled_dot_product_fused_attention_overrideable(
    query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False, return_debug_mask=False, scale=None
):
    head = _flash_like(
        "_scaled_dot_product_fused_attention_overrideable",
        query,
        key,
        value,
        attn_bias,
        dropout_p,
        is_causal,
        scale,
        lambda l: l.shape,
    )
    return (*head, *_seed_offset(), jnp.zeros((0,), compute_dtype(query)))
