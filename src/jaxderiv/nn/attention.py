"""MultiheadAttention: torch.nn.MultiheadAttention's parameters and math on jaxderiv ops."""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from . import functional as F
from .dtypes import promote, value
from .initializers import uniform


def _aten():
    from .. import aten

    return aten


class MultiheadAttention(nnx.Module):
    """torch.nn.MultiheadAttention (same embedding size for query, key and value; no dropout).

    Attributes:
      in_proj_weight: Param [3E, E], xavier_uniform as torch's; in_proj_bias: Param [3E], zeros.
      out_proj: a Linear(E, E) (its bias zeros, as torch's).
    Calling returns (output, weights): weights averaged over heads, or per head with
    average_attn_weights=False, or None with need_weights=False. key_padding_mask: bool [N, S],
    True where a key is ignored. attn_mask is not supported yet.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        bias: bool = True,
        batch_first: bool = False,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        from .linear import Linear

        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        bound = math.sqrt(6 / (embed_dim + 3 * embed_dim))  # xavier_uniform over the [3E, E] matrix
        self.in_proj_weight = nnx.Param(uniform(rngs.params(), (3 * embed_dim, embed_dim), bound, param_dtype))
        self.in_proj_bias = nnx.Param(jnp.zeros((3 * embed_dim,), param_dtype)) if bias else nnx.data(None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        if bias:
            assert self.out_proj.bias is not None  # Linear(bias=True) has one
            self.out_proj.bias[...] = jnp.zeros((embed_dim,), param_dtype)
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(
        self, query, key, value_, key_padding_mask=None, need_weights: bool = True, average_attn_weights: bool = True
    ):
        aten = _aten()
        if self.batch_first:  # (N, L, E) -> (L, N, E)
            query, key, value_ = (jnp.swapaxes(t, 0, 1) for t in (query, key, value_))
        w, b = value(self.in_proj_weight), value(self.in_proj_bias)
        query, key, value_, w, b = promote(query, key, value_, w, b, dtype=self.dtype)
        e, h = self.embed_dim, self.num_heads
        d = e // h
        q, k, v = (
            F.linear(t, w[i * e : (i + 1) * e], None if b is None else b[i * e : (i + 1) * e])
            for i, t in enumerate((query, key, value_))
        )
        length, n = q.shape[0], q.shape[1]
        source = k.shape[0]

        def heads(t, steps):  # (steps, N, E) -> (N * heads, steps, d)
            return jnp.swapaxes(jnp.reshape(t, (steps, n * h, d)), 0, 1)

        q, k, v = heads(q, length), heads(k, source), heads(v, source)
        scores = aten.bmm.default(aten.mul.Scalar(q, 1 / math.sqrt(d)), jnp.swapaxes(k, 1, 2))  # (N*h, L, S)
        if key_padding_mask is not None:
            masked = jnp.repeat(jnp.asarray(key_padding_mask, bool), h, axis=0)[:, None, :]
            scores = aten.masked_fill_.Scalar(
                scores, jnp.broadcast_to(masked, scores.shape), -jnp.inf
            )  # out of place in JAX
        weights = aten._softmax.default(scores, -1, False)
        out = aten.bmm.default(weights, v)  # (N*h, L, d)
        out = jnp.reshape(jnp.swapaxes(out, 0, 1), (length, n, e))
        out = self.out_proj(out)
        if self.batch_first:
            out = jnp.swapaxes(out, 0, 1)
        if not need_weights:
            return out, None
        weights = jnp.reshape(weights, (n, h, length, source))
        return out, (aten.mean.dim(weights, [1], False) if average_attn_weights else weights)
