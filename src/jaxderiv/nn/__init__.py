"""Flax NNX layers mirroring torch.nn, computed with jaxderiv's ATen ops: PyTorch's gradients in a Flax model.

Parameters have torch's layout and default initialization, so torch state dicts load as they are.
Needs the optional `flax` extra (`pip install jaxderiv[flax]`).
"""

from . import functional
from .attention import MultiheadAttention
from .activation import GELU, Flatten, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout
from .linear import Embedding, Linear
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .recurrent import GRU, LSTM, RNN
from .state_dict import load_torch_state_dict, torch_state_dict

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "GRU",
    "GroupNorm",
    "LSTM",
    "LayerNorm",
    "Linear",
    "LogSoftmax",
    "MaxPool2d",
    "MultiheadAttention",
    "RNN",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
    "load_torch_state_dict",
    "torch_state_dict",
]
