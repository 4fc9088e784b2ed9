"""Backward helpers of the fused scaled-dot-product attention ops (flash-attention's equations).

With S = scale Q K^T + mask, P = exp(S - logsumexp(S)) and O = P V, the gradients given dO are
    dV = P^T dO,  dP = dO V^T,  D = rowsum(dO * O),  dS = P * (dP - D),
    dQ = scale dS K,  dK = scale dS^T Q,  d(attn_bias) = dS summed to the bias's shape.
Entries a mask or causality hides have P = 0. The kernels read the saved logsumexp; here it is
recomputed from S (the same value), because the spec declares that output non-differentiable,
so a second derivative through the saved one would miss its dependence on Q and K. dropout_p > 0 cannot occur (the forwards
refuse it; see forward/attention.py), so it raises here too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..forward.attention import (
    compute_dtype,
    dense_only,
    efficient_mask,
    flash_window,
    scores,
    softmax_scale,
    swap_heads,
)
from ..namespace import helper


def _sum_to(x, shape):
    """x summed over the axes broadcasting expanded to reach it from `shape`."""
    lead = x.ndim - len(shape)
    x = jnp.sum(x, axis=tuple(range(lead))) if lead else x
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return jnp.reshape(jnp.sum(x, axis=axes, keepdims=True) if axes else x, shape)


def attention_backward(
    grad,
    query,
    key,
    value,
    output,
    logsumexp,
    dropout_p,
    is_causal,
    attn_mask,
    scale,
    want_mask=False,
    bottom_right=False,
    window=(-1, -1),
):
    """(dQ, dK, dV, d(mask) or None): the equations above (`bottom_right`, `window`: see
    forward/attention.py's `visible`)."""
    if dropout_p:
        raise ValueError(
            f"attention backward with dropout_p={dropout_p} > 0 is not supported (no random key to replay the mask)"
        )
    if grad is None:
        return None, None, None, None
    dtype = compute_dtype(query)
    s = scores(query, key, attn_mask, is_causal, scale, bottom_right, window)
    hidden = jnp.isneginf(s)
    m = jnp.max(jnp.where(hidden, -jnp.inf, s), axis=-1, keepdims=True)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))  # a shift for stability; P does not depend on it
    e = jnp.where(hidden, 0.0, jnp.exp(jnp.where(hidden, 0.0, s - m)))
    total = jnp.sum(e, axis=-1, keepdims=True)
    p = e / jnp.where(total > 0, total, 1.0)
    do = grad.astype(dtype)
    dv = jnp.einsum("...ls,...le->...se", p, do)
    dp = jnp.einsum("...le,...se->...ls", do, value.astype(dtype))
    d = jnp.sum(do * output.astype(dtype), axis=-1, keepdims=True)
    ds = p * (dp - d)
    c = softmax_scale(query, scale)
    dq = c * jnp.einsum("...ls,...se->...le", ds, key.astype(dtype))
    dk = c * jnp.einsum("...ls,...le->...se", ds, query.astype(dtype))
    dmask = None
    if want_mask and attn_mask is not None and jnp.issubdtype(jnp.result_type(attn_mask), jnp.floating):
        dmask = _sum_to(ds, jnp.shape(attn_mask)).astype(jnp.result_type(attn_mask))
    return dq.astype(query.dtype), dk.astype(key.dtype), dv.astype(value.dtype), dmask


def _wants_mask(grad_input_mask):
    """Whether the 4th gradient (the attention bias's) is asked for."""
    return len(grad_input_mask) > 3 and bool(grad_input_mask[3])


@helper("_scaled_dot_product_flash_attention_for_cpu_backward")
def _scaled_dot_product_flash_attention_for_cpu_backward(
    grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask=None, scale=None
):
    return attention_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask, scale)[:3]


@helper("_scaled_dot_product_efficient_attention_backward")
def _scaled_dot_product_efficient_attention_backward(
    grad,
    query,
    key,
    value,
    attn_bias,
    output,
    log_sumexp,
    philox_seed,
    philox_offset,
    dropout_p,
    grad_input_mask,
    is_causal=False,
    scale=None,
):
    want = _wants_mask(grad_input_mask)
    return attention_backward(grad, query, key, value, output, log_sumexp, dropout_p, is_causal, attn_bias, scale, want)


@helper("_scaled_dot_product_flash_attention_backward")
def _scaled_dot_product_flash_attention_backward(
    grad,
    query,
    key,
    value,
    output,
    logsumexp,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    philox_seed,
    philox_offset,
    scale=None,
):
    return attention_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal, None, scale)[:3]


@helper("_scaled_dot_product_cudnn_attention_backward", "_cudnn_attention_backward")
def _scaled_dot_product_cudnn_attention_backward(
    grad,
    query,
    key,
    value,
    output,
    logsumexp,
    philox_seed,
    philox_offset,
    attn_bias,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    scale=None,
):
    """Also `_cudnn_attention_backward` (the same arguments): cum_seq_q/k of a packed batch are refused."""
    dense_only("_cudnn_attention_backward", cum_seq_q=cum_seq_q, cum_seq_k=cum_seq_k)
    return attention_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_bias, scale)[:3]


@helper("_scaled_dot_product_fused_attention_overrideable_backward")
def _scaled_dot_product_fused_attention_overrideable_backward(
    grad,
    query,
    key,
    value,
    attn_bias,
    grad_input_mask,
    output,
    logsumexp,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    philox_seed,
    philox_offset,
    scale=None,
):
    want = _wants_mask(grad_input_mask)
    return attention_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_bias, scale, want)


# -- the CUDA kernels' own entry points ((B, L, H, E) layouts) ---------------------------------


def _kernel_layout_backward(grad, query, key, value, output, *arguments, **options):
    """attention_backward(grad, query, key, value, output, *arguments, **options) of tensors in the
    kernels' (B, L, H, E) layout: (dQ, dK, dV) in that layout too, and d(mask)."""
    q, k, v, o, g = (swap_heads(x) for x in (query, key, value, output, grad))
    dq, dk, dv, dmask = attention_backward(g, q, k, v, o, *arguments, **options)
    return swap_heads(dq), swap_heads(dk), swap_heads(dv), dmask


@helper("_flash_attention_backward")
def _flash_attention_backward(
    grad,
    query,
    key,
    value,
    output,
    logsumexp,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    philox_seed,
    philox_offset,
    scale=None,
    window_size_left=None,
    window_size_right=None,
):
    """(dQ, dK, dV) in flash-attention's (B, L, H, E) layout; causal and windows bottom-right."""
    dense_only("_flash_attention_backward", cum_seq_q=cum_seq_q, cum_seq_k=cum_seq_k)
    window = flash_window(is_causal, window_size_left, window_size_right)
    return _kernel_layout_backward(
        grad, query, key, value, output, logsumexp, dropout_p, False, None, scale, bottom_right=True, window=window
    )[:3]


@helper("_efficient_attention_backward")
def _efficient_attention_backward(
    grad,
    query,
    key,
    value,
    bias,
    output,
    cu_seqlens_q,
    cu_seqlens_k,
    max_seqlen_q,
    max_seqlen_k,
    logsumexp,
    dropout_p,
    philox_seed,
    philox_offset,
    custom_mask_type,
    bias_requires_grad,
    scale=None,
):
    """(dQ, dK, dV in (B, M, H, K), d(bias) when `bias_requires_grad`)."""
    dense_only("_efficient_attention_backward", cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k)
    causal, bottom_right = efficient_mask(custom_mask_type)
    want = bool(bias_requires_grad)
    return _kernel_layout_backward(
        grad, query, key, value, output, logsumexp, dropout_p, causal, bias, scale, want, bottom_right
    )
