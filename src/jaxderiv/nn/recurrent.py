"""RNN, LSTM and GRU: torch.nn's multi-layer recurrent layers on aten._cudnn_rnn.

The op takes torch's flat weight list (weight_ih, weight_hh, bias_ih, bias_hh per layer and
direction) and its gradient is the spec's `_cudnn_rnn_backward` formula, so the layers give
PyTorch's gradients, parameter names and initialization.
"""

from __future__ import annotations

import functools
import math

import jax.numpy as jnp
from flax import nnx

from .dtypes import promote
from .initializers import uniform

# cuDNN's mode numbers, and how many gate blocks each stacks in weight_ih / weight_hh.
_MODES = {"RNN_RELU": (0, 1), "RNN_TANH": (1, 1), "LSTM": (2, 4), "GRU": (3, 3)}


def _aten():
    from .. import aten

    return aten


class _Recurrent(nnx.Module):
    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if dropout:
            raise NotImplementedError("dropout between layers is not supported; use dropout=0")
        self.mode, gates = _MODES[mode]
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        self.dtype, self.param_dtype = dtype, param_dtype
        bound = 1 / math.sqrt(hidden_size)  # torch: every parameter uniform(-1/sqrt(H), 1/sqrt(H))
        names = []
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                fan = input_size if layer == 0 else hidden_size * directions
                shapes: dict[str, tuple[int, ...]] = {
                    "weight_ih": (gates * hidden_size, fan),
                    "weight_hh": (gates * hidden_size, hidden_size),
                }
                if bias:
                    shapes |= {"bias_ih": (gates * hidden_size,), "bias_hh": (gates * hidden_size,)}
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, nnx.Param(uniform(rngs.params(), shape, bound, param_dtype)))
                    names.append(kind + suffix)
        self._names = tuple(names)  # torch's flat-weights order

    def __call__(self, x, hx=None):
        """x: (T, N, input_size), or (N, T, ...) with batch_first, or unbatched (T, input_size).
        Returns (output, h_n), and (output, (h_n, c_n)) for LSTM, as torch does."""
        unbatched = x.ndim == 2
        if unbatched:
            x = x[:, None] if not self.batch_first else x[None]
            hx = None if hx is None else (tuple(h[:, None] for h in hx) if isinstance(hx, tuple) else hx[:, None])
        weights = [getattr(self, n)[...] for n in self._names]
        x, *weights = promote(x, *weights, dtype=self.dtype)
        n = x.shape[0] if self.batch_first else x.shape[1]
        layers = self.num_layers * (2 if self.bidirectional else 1)
        zeros = jnp.zeros((layers, n, self.hidden_size), x.dtype)
        h0, c0 = (hx if isinstance(hx, tuple) else (hx, None)) if hx is not None else (zeros, zeros)
        c0 = c0 if self.mode == 2 else None
        out = _aten()._cudnn_rnn.default(
            x,
            weights,
            4 if self.bias else 2,
            None,
            jnp.asarray(h0, x.dtype),
            None if c0 is None else jnp.asarray(c0, x.dtype),
            self.mode,
            self.hidden_size,
            0,  # proj_size
            self.num_layers,
            self.batch_first,
            0.0,
            True,
            self.bidirectional,
            (),
            None,
        )
        output, hy, cy = out[0], out[1], out[2]
        if unbatched:
            output = output[:, 0] if not self.batch_first else output[0]
            hy, cy = hy[:, 0], (cy[:, 0] if self.mode == 2 else cy)
        return (output, (hy, cy)) if self.mode == 2 else (output, hy)


class RNN(_Recurrent):
    """torch.nn.RNN: h' = tanh (or relu) of W_ih x + b_ih + W_hh h + b_hh, per layer and direction.
    LSTM's arguments, with `nonlinearity` ("tanh" or "relu") after num_layers."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh", *args, **kw):
        mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}[nonlinearity]
        super().__init__(mode, input_size, hidden_size, num_layers, *args, **kw)


class LSTM(_Recurrent):
    """torch.nn.LSTM (gates i, f, g, o stacked in weight_ih / weight_hh as torch stacks them)."""

    __init__ = functools.partialmethod(_Recurrent.__init__, "LSTM")


class GRU(_Recurrent):
    """torch.nn.GRU (gates r, z, n stacked as torch stacks them)."""

    __init__ = functools.partialmethod(_Recurrent.__init__, "GRU")
