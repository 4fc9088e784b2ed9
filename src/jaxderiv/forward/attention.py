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

The CUDA kernels' own entry points take more: `_flash_attention_forward` (flash-attention's
(B, L, H, E) layout, causal bottom-right aligned as flash-attention 2 aligns it, sliding
windows), `_efficient_attention_forward` ((B, M, H, K), `custom_mask_type` 0 none, 1 causal
top-left, 2 causal bottom-right) and `_cudnn_attention_forward` ((B, H, L, E), causal
top-left). Their variable-length form (packed sequences given by cum_seq_q/k or
cu_seqlens_q/k), paged KV caches, ALiBi slopes and per-batch key lengths raise a ValueError:
only dense batches are implemented.
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


def visible(L, S, is_causal, bottom_right=False, window=(-1, -1)):
    """Which keys each query row sees (L x S bool), or None for all: row i sees key j when
    -left <= j - i - offset <= right, offset S - L when aligned bottom-right (else 0), a
    negative bound meaning none, causality meaning right = 0."""
    left, right = window
    if is_causal:
        right = 0
    if left < 0 and right < 0:
        return None
    offset = S - L if bottom_right else 0
    d = jnp.arange(S)[None, :] - jnp.arange(L)[:, None] - offset
    keep = jnp.ones((L, S), bool)
    if right >= 0:
        keep = keep & (d <= right)
    if left >= 0:
        keep = keep & (d >= -left)
    return keep


def scores(query, key, attn_mask, is_causal, scale, bottom_right=False, window=(-1, -1)):
    """scale * Q K^T plus the additive mask (-inf where a boolean mask, causality or a sliding
    window hides a key; see `visible`)."""
    dtype = compute_dtype(query)
    s = jnp.einsum("...le,...se->...ls", query.astype(dtype), key.astype(dtype)) * softmax_scale(query, scale)
    keep = visible(s.shape[-2], s.shape[-1], is_causal, bottom_right, window)
    if keep is not None:
        s = jnp.where(keep, s, -jnp.inf)
    if attn_mask is not None:
        mask = jnp.asarray(attn_mask)
        s = jnp.where(mask, s, -jnp.inf) if mask.dtype == jnp.bool_ else s + mask.astype(dtype)
    return s


def attention(query, key, value, attn_mask, is_causal, scale, bottom_right=False, window=(-1, -1)):
    """(output in query's dtype, logsumexp (B, H, L) in the compute dtype)."""
    s = scores(query, key, attn_mask, is_causal, scale, bottom_right, window)
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


# -- the CUDA kernels' own entry points ---------------------------------------------------------


def dense_only(name, **packed):
    """Refuse the variable-length and paged forms, whose arguments are given (not None/empty)."""
    given = [k for k, v in packed.items() if v is not None and jnp.size(v) > 0]
    if given:
        raise ValueError(
            f"{name}: {', '.join(given)} given: variable-length (packed) batches, paged KV caches, ALiBi slopes "
            "and per-batch key lengths are not implemented; pass dense (batch, ...) tensors"
        )


def swap_heads(x):
    """(B, L, H, E) <-> (B, H, L, E): the kernels' layout and the one `attention` takes; None kept."""
    return None if x is None else jnp.swapaxes(x, -3, -2)


def flash_window(is_causal, window_size_left, window_size_right):
    """flash-attention's (left, right) window: -1 where none; causal means right = 0."""
    left = -1 if window_size_left is None else window_size_left
    right = -1 if window_size_right is None else window_size_right
    return left, (0 if is_causal else right)


@impl("_flash_attention_forward")
def _flash_attention_forward(
    query,
    key,
    value,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    return_debug_mask,
    scale=None,
    window_size_left=None,
    window_size_right=None,
    seqused_k=None,
    alibi_slopes=None,
    block_table=None,
    num_splits=None,
):
    """(output (B, L, H, E), softmax_logsumexp (B, H, L) float32, rng_state, unused, debug mask);
    causal and windows aligned bottom-right (row i's diagonal at key i + S - L); `num_splits` is
    a performance knob only."""
    _no_dropout("_flash_attention_forward", dropout_p)
    dense_only(
        "_flash_attention_forward",
        cum_seq_q=cum_seq_q,
        cum_seq_k=cum_seq_k,
        seqused_k=seqused_k,
        alibi_slopes=alibi_slopes,
        block_table=block_table,
    )
    window = flash_window(is_causal, window_size_left, window_size_right)
    out, lse = attention(
        swap_heads(query), swap_heads(key), swap_heads(value), None, False, scale, bottom_right=True, window=window
    )
    debug = jnp.zeros((0,), compute_dtype(query))
    return swap_heads(out), lse, jnp.zeros((2,), jnp.uint64), jnp.zeros((), jnp.uint64), debug


_EFFICIENT_MASKS = {0: (False, False), 1: (True, False), 2: (True, True)}  # (causal, bottom-right)


def efficient_mask(custom_mask_type):
    try:
        return _EFFICIENT_MASKS[custom_mask_type]
    except KeyError:
        raise ValueError(
            f"custom_mask_type={custom_mask_type}: 0 (none), 1 (causal from top-left) or 2 (causal from bottom-right)"
        ) from None


@impl("_efficient_attention_forward")
def _efficient_attention_forward(
    query,
    key,
    value,
    bias,
    cu_seqlens_q,
    cu_seqlens_k,
    max_seqlen_q,
    max_seqlen_k,
    dropout_p,
    custom_mask_type,
    compute_log_sumexp=False,
    scale=None,
    seqlen_k=None,
    window_size=None,
):
    """(output (B, M, H, K), logsumexp (B, H, M padded to a multiple of 32; 0 columns without
    compute_log_sumexp), philox seed, offset, M, N) for (B, M, H, K) queries; a bias is (B, H, M, N)
    or broadcasts to it."""
    _no_dropout("_efficient_attention_forward", dropout_p)
    dense_only(
        "_efficient_attention_forward",
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        seqlen_k=seqlen_k,
        window_size=window_size,
    )
    causal, bottom_right = efficient_mask(custom_mask_type)
    out, lse = attention(
        swap_heads(query), swap_heads(key), swap_heads(value), bias, causal, scale, bottom_right=bottom_right
    )
    M = lse.shape[-1]
    width = -(-M // 32) * 32 if compute_log_sumexp else 0
    lse = jnp.pad(lse, [(0, 0)] * (lse.ndim - 1) + [(0, width - M)]) if width else lse[..., :0]
    return (swap_heads(out), lse, *_seed_offset(), jnp.shape(query)[-3], jnp.shape(key)[-3])


@impl("_cudnn_attention_forward")
def _cudnn_attention_forward(
    query,
    key,
    value,
    attn_bias,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    compute_log_sumexp,
    dropout_p=0.0,
    is_causal=False,
    return_debug_mask=False,
    scale=None,
    seqused_k=None,
    block_table=None,
):
    """`_scaled_dot_product_cudnn_attention`'s outputs for a dense batch (the same kernel)."""
    dense_only(
        "_cudnn_attention_forward",
        cum_seq_q=cum_seq_q,
        cum_seq_k=cum_seq_k,
        seqused_k=seqused_k,
        block_table=block_table,
    )
    return _scaled_dot_product_cudnn_attention(
        query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, scale
    )
