"""torch state dicts (name -> NumPy array, torch's keys) into and out of jaxderiv.nn modules.

Layers name their variables as torch names its parameters and buffers (`weight`, `bias`,
`running_mean`...), and `nnx.Sequential` children are found by index, as torch.nn.Sequential's,
so a key such as "features.0.weight" is the variable's path with `layers` left out.
"""

from __future__ import annotations

from typing import Mapping

import jax.numpy as jnp
import numpy as np
from flax import nnx


def _variables(module: nnx.Module) -> dict[str, nnx.Variable]:
    """Each Param and BatchStat of module by its torch key: the path, less nnx.Sequential's `layers` level."""
    graph = list(nnx.iter_graph(module))
    sequential = {tuple(path) for path, node in graph if isinstance(node, nnx.Sequential)}
    out: dict[str, nnx.Variable] = {}
    for path, var in graph:
        if isinstance(var, (nnx.Param, nnx.BatchStat)):
            out[
                ".".join(str(p) for i, p in enumerate(path) if not (p == "layers" and tuple(path[:i]) in sequential))
            ] = var
    return out


def load_torch_state_dict(module: nnx.Module, state_dict: Mapping[str, np.ndarray], strict: bool = True) -> nnx.Module:
    """Set module's variables from a torch state dict of NumPy arrays (`{k: v.numpy() for k, v in m.state_dict().items()}`).

    Values are cast to each variable's dtype and copied: `.numpy()` shares memory with the torch
    tensor, and a zero-copy JAX array over it would change when torch updates its parameters in
    place (an optimizer step), even inside a computation JAX has already dispatched. Shapes must
    agree. With strict, keys missing on either side raise, naming them, as torch's load_state_dict
    does. Returns module.
    """
    own = _variables(module)
    missing = sorted(set(own) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(own))
    if strict and (missing or unexpected):
        raise KeyError(f"state dict does not match the module: missing keys {missing}, unexpected keys {unexpected}")
    for key, array in state_dict.items():
        if key not in own:
            continue
        var = own[key]
        array = np.asarray(array)
        if tuple(array.shape) != tuple(var.shape):
            raise ValueError(f"{key}: the state dict has shape {tuple(array.shape)}, the module {tuple(var.shape)}")
        var[...] = jnp.array(array, var.dtype, copy=True)
    return module


def torch_state_dict(module: nnx.Module) -> dict[str, np.ndarray]:
    """The module's variables as a torch state dict of NumPy arrays (for `torch_module.load_state_dict`)."""
    return {k: np.asarray(v[...]) for k, v in _variables(module).items()}
