"""Linear and Embedding: torch.nn's layers with torch's parameter layout and initialization."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from . import functional as F
from .dtypes import promote, value
from .initializers import bias_uniform, kaiming_uniform


class Linear(nnx.Module):
    """y = x W^T + b, like torch.nn.Linear.

    >>> layer = Linear(3, 4, rngs=nnx.Rngs(0))
    >>> layer.weight.shape, layer(jnp.ones((2, 3))).shape
    ((4, 3), (2, 4))

    Attributes:
      weight: Param [out_features, in_features], kaiming_uniform(a=sqrt(5)) as torch's.
      bias: Param [out_features] or None, uniform(±1/sqrt(in_features)).
      dtype: the computation dtype (None: promoted from the input and the parameters).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        shape = (out_features, in_features)
        self.weight = nnx.Param(kaiming_uniform(rngs.params(), shape, param_dtype))
        self.bias = (
            nnx.Param(bias_uniform(rngs.params(), (out_features,), shape, param_dtype)) if bias else nnx.data(None)
        )
        self.in_features, self.out_features = in_features, out_features
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, x):
        x, w, b = promote(x, value(self.weight), value(self.bias), dtype=self.dtype)
        return F.linear(x, w, b)


class Embedding(nnx.Module):
    """A lookup table of num_embeddings rows, like torch.nn.Embedding.

    >>> emb = Embedding(10, 3, padding_idx=0, rngs=nnx.Rngs(0))
    >>> emb(jnp.array([[0, 4]])).shape
    (1, 2, 3)

    Attributes:
      weight: Param [num_embeddings, embedding_dim], normal(0, 1); the padding_idx row is zero
        and gets no gradient.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        scale_grad_by_freq: bool = False,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        w = jax.random.normal(rngs.params(), (num_embeddings, embedding_dim), param_dtype)
        if padding_idx is not None:
            padding_idx = padding_idx % num_embeddings
            w = w.at[padding_idx].set(0)
        self.weight = nnx.Param(w)
        self.padding_idx, self.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, indices):
        (w,) = promote(value(self.weight), dtype=self.dtype)
        return F.embedding(indices, w, self.padding_idx, self.scale_grad_by_freq)
