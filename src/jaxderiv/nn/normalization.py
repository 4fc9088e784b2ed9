"""BatchNorm1d/2d, LayerNorm and GroupNorm: torch.nn's normalization layers.

Batch norm keeps its running statistics as NNX BatchStat variables and updates them in training
mode as torch does: running = (1 - momentum) * running + momentum * batch statistic, with the
unbiased batch variance for running_var, and a cumulative average when momentum is None.
`use_running_average` (set by `model.train()` / `model.eval()`, as for flax's own BatchNorm)
chooses between the two modes.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx
from jax import lax

from . import functional as F
from .dtypes import promote, value


def _affine(shape, enabled, param_dtype):
    if not enabled:
        return nnx.data(None), nnx.data(None)
    return nnx.Param(jnp.ones(shape, param_dtype)), nnx.Param(jnp.zeros(shape, param_dtype))


class _BatchNorm(nnx.Module):
    dims: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        use_running_average: bool = False,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs | None = None,
    ):
        self.weight, self.bias = _affine((num_features,), affine, param_dtype)
        if track_running_stats:
            # None (below) without running statistics
            self.running_mean: nnx.BatchStat | None = nnx.BatchStat(jnp.zeros((num_features,), param_dtype))
            self.running_var: nnx.BatchStat | None = nnx.BatchStat(jnp.ones((num_features,), param_dtype))
            self.num_batches_tracked: nnx.BatchStat | None = nnx.BatchStat(jnp.zeros((), jnp.int32))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = nnx.data(None)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        self.use_running_average = use_running_average
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, x, use_running_average: bool | None = None):
        if x.ndim not in self.dims:
            raise ValueError(
                f"{type(self).__name__} expects an input of {' or '.join(map(str, self.dims))} dims, got shape {x.shape}"
            )
        use_running = self.use_running_average if use_running_average is None else use_running_average
        training = not use_running or not self.track_running_stats
        x, w, b, rm, rv = promote(
            x, value(self.weight), value(self.bias), value(self.running_mean), value(self.running_var), dtype=self.dtype
        )
        if training and self.track_running_stats:
            self._update_running_stats(x)
        return F.batch_norm(x, rm, rv, w, b, training, 0.0 if self.momentum is None else self.momentum, self.eps)

    def _update_running_stats(self, x):
        x = lax.stop_gradient(x)
        axes = tuple(i for i in range(x.ndim) if i != 1)
        n = math.prod(x.shape[i] for i in axes)
        mean = jnp.mean(x, axis=axes)
        var = jnp.var(x, axis=axes) * (n / max(n - 1, 1))
        count = self.num_batches_tracked[...] + 1
        self.num_batches_tracked[...] = count
        factor = 1.0 / count if self.momentum is None else self.momentum
        for stat, batch in ((self.running_mean, mean), (self.running_var, var)):
            old = stat[...]
            stat[...] = ((1 - factor) * old + factor * batch).astype(old.dtype)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L), like torch.nn.BatchNorm1d.

    >>> bn = BatchNorm1d(3)
    >>> bn(jnp.arange(12.0).reshape(4, 3)).shape, bn.num_batches_tracked[...]
    ((4, 3), Array(1, dtype=int32))

    Attributes:
      weight, bias: Params [C] (ones, zeros) or None; running_mean, running_var: BatchStats [C];
      num_batches_tracked: BatchStat []; use_running_average: eval mode when True.
    """

    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W), like torch.nn.BatchNorm2d; attributes as BatchNorm1d's."""

    dims = (4,)


class LayerNorm(nnx.Module):
    """Normalization over the trailing normalized_shape dims, like torch.nn.LayerNorm.

    >>> LayerNorm(4)(jnp.ones((2, 4))).shape
    (2, 4)

    Attributes:
      weight, bias: Params of normalized_shape (ones, zeros), or None.
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs | None = None,
    ):
        shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
        self.weight, self.bias = _affine(shape, elementwise_affine, param_dtype)
        if not bias:
            self.bias = nnx.data(None)
        self.normalized_shape, self.eps = shape, eps
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, x):
        x, w, b = promote(x, value(self.weight), value(self.bias), dtype=self.dtype)
        return F.layer_norm(x, self.normalized_shape, w, b, self.eps)


class GroupNorm(nnx.Module):
    """Normalization over groups of channels of (N, C, ...), like torch.nn.GroupNorm.

    >>> GroupNorm(2, 4)(jnp.ones((1, 4, 3))).shape
    (1, 4, 3)

    Attributes:
      weight, bias: Params [num_channels] (ones, zeros), or None.
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs | None = None,
    ):
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.weight, self.bias = _affine((num_channels,), affine, param_dtype)
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, x):
        x, w, b = promote(x, value(self.weight), value(self.bias), dtype=self.dtype)
        return F.group_norm(x, self.num_groups, w, b, self.eps)
