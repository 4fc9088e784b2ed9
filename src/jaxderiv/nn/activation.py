"""ReLU, GELU, SiLU, Sigmoid, Tanh, LogSoftmax, Softmax and Flatten as modules, so that nnx.Sequential
counts layers as torch.nn.Sequential does (their state-dict keys then agree)."""

from __future__ import annotations

from flax import nnx

from . import functional as F


class _Pointwise(nnx.Module):
    fn = staticmethod(lambda x: x)

    def __call__(self, x):
        return type(self).fn(x)


class ReLU(_Pointwise):
    """max(x, 0); its gradient at 0 is 0, as torch's. `ReLU()(jnp.array([-1.0, 2.0]))` is [0., 2.]."""

    fn = staticmethod(F.relu)


class GELU(_Pointwise):
    """x * Phi(x), the exact (erf) form."""

    fn = staticmethod(F.gelu)


class SiLU(_Pointwise):
    """x * sigmoid(x)."""

    fn = staticmethod(F.silu)


class Sigmoid(_Pointwise):
    """torch.nn.Sigmoid."""

    fn = staticmethod(F.sigmoid)


class Tanh(_Pointwise):
    """torch.nn.Tanh."""

    fn = staticmethod(F.tanh)


class LogSoftmax(nnx.Module):
    """log_softmax over `dim`."""

    def __init__(self, dim: int):
        self.dim = dim

    def __call__(self, x):
        return F.log_softmax(x, self.dim)


class Softmax(nnx.Module):
    """softmax over `dim`."""

    def __init__(self, dim: int):
        self.dim = dim

    def __call__(self, x):
        return F.softmax(x, self.dim)


class Flatten(nnx.Module):
    """Dims start_dim..end_dim merged into one, like torch.nn.Flatten (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def __call__(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)
