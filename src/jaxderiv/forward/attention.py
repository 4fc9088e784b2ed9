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
import numpy as np

from ..records import CUDA_ONLY, Equivalent, Sample, samples, torch_equivalent
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


def _padded_lse(lse, compute_log_sumexp):
    """The efficient kernels' logsumexp: rows padded to a multiple of 32 (zeros beyond them), or
    none (shape (B, H, 0)) without compute_log_sumexp."""
    rows = lse.shape[-1]
    width = (-(-rows // 32) * 32) if compute_log_sumexp else 0
    return jnp.pad(lse, [(0, 0)] * (lse.ndim - 1) + [(0, width - rows)]) if width else lse[..., :0]


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
    return (out, _padded_lse(lse, compute_log_sumexp), *_seed_offset())


def _flash_like(query, key, value, attn_bias, is_causal, scale, lse_shape):
    """(output, logsumexp reshaped to `lse_shape(logsumexp)`, cum_seq_q, cum_seq_k, max_q, max_k)."""
    out, lse = attention(query, key, value, attn_bias, is_causal, scale)
    L, S = jnp.shape(query)[-2], jnp.shape(key)[-2]
    empty = jnp.zeros((0,), jnp.int32)
    return out, jnp.reshape(lse, lse_shape(lse)), empty, empty, L, S


@impl("_scaled_dot_product_flash_attention")
def _scaled_dot_product_flash_attention(
    query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, scale=None
):
    """rng_state (2,) and unused () zeros in uint64 (uint32 without x64), as the meta kernel."""
    _no_dropout("_scaled_dot_product_flash_attention", dropout_p)
    head = _flash_like(query, key, value, None, is_causal, scale, lambda l: l.shape)
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
    _no_dropout("_scaled_dot_product_cudnn_attention", dropout_p)
    head = _flash_like(query, key, value, attn_bias, is_causal, scale, lambda l: (*l.shape, 1))
    return (*head, *_seed_offset(), jnp.zeros((0,), compute_dtype(query)))


@impl("_scaled_dot_product_fused_attention_overrideable")
def _scaled_dot_product_fused_attention_overrideable(
    query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False, return_debug_mask=False, scale=None
):
    _no_dropout("_scaled_dot_product_fused_attention_overrideable", dropout_p)
    head = _flash_like(query, key, value, attn_bias, is_causal, scale, lambda l: l.shape)
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
    lse = _padded_lse(lse, compute_log_sumexp)
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


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker samples of the fused scaled-dot-product attention ops.
#
# Attention is smooth in query, key, value and an additive mask, so no input needs to avoid a
# kink; samples use L != S, causal (top-left, with no fully hidden row), 0/-inf and additive
# broadcast masks (torch's CPU op takes no boolean mask, so parity runs use the 0/-inf form
# torch converts one to; tests/ops/test_attention.py covers boolean masks), and an explicit scale.
# dropout_p is 0: the schemas carry no random key.
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
