"""`export_inference`: an imported model's eval-mode forward as a `jax.export` artifact.

The artifact is StableHLO with the weights inside and a symbolic batch size: serialize it to
bytes, and any process with jax alone (no torch, no jaxderiv) deserializes and runs it at any
batch size. The torch graph must allow that batch size too: it must have been exported with
a dynamic batch dimension (`from_module`'s `dynamic_shapes`).
"""

from __future__ import annotations

from typing import Any, Sequence, cast

import jax
import jax.numpy as jnp
import numpy as np
import torch

from ._model import ImportedModel
from .resolve import NodeKind

__all__ = ["export_inference"]


def _spec_like(x) -> tuple[tuple[int, ...], Any]:
    if isinstance(x, torch.Tensor):
        return tuple(x.shape), jax.dtypes.canonicalize_dtype(np.dtype(str(x.dtype).removeprefix("torch.")))
    x = jnp.asarray(x)
    return tuple(x.shape), x.dtype


def _user_placeholders(model: ImportedModel) -> list[tuple[str, tuple]]:
    """(name, shape) of each tensor user input of the torch graph, in order; SymInts where dynamic."""
    ep = model.exported
    user = set(ep.graph_signature.user_inputs)
    out = []
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in user and isinstance(node.meta.get("val"), torch.Tensor):
            out.append((node.name, tuple(node.meta["val"].shape)))
    return out


def export_inference(
    model: ImportedModel,
    *example_inputs,
    batch_axis: int | Sequence[int | None] | None = 0,
    params: dict | None = None,
    buffers: dict | None = None,
    platforms: Sequence[str] | None = None,
) -> jax.export.Exported:
    """The model's forward with fixed weights as a `jax.export.Exported`, batch size symbolic.

    example_inputs (positional only) give each input's dtype and other sizes (arrays or torch tensors);
    batch_axis: the axis of every input that becomes the symbol `batch` (None: all static),
    or one entry per input. params/buffers: the weights to embed (default: the model's).
    platforms: where it may run (default: this backend; e.g. `("cpu", "cuda")`).

    The graph must be an eval-mode one (`module.eval()` before the import: no dropout, no
    BatchNorm updates) imported with a dynamic batch dimension; either missing raises, naming
    the node or input. Outputs keep the model's structure (a dict for a transformers output).

    >>> exported = jt.export_inference(jt.from_module(net.eval(), x), x)
    >>> Path("model.jax").write_bytes(exported.serialize())
    >>> # anywhere, with jax alone:
    >>> jax.export.deserialize(Path("model.jax").read_bytes()).call(np.ones((7, 3), np.float32))
    """
    random = [f"{s.name} ({s.op})" for s in model.program.steps if s.kind is NodeKind.RANDOM]
    writes = [t for _, role, t in model.program.outputs if role == "buffer"]
    if random or writes:
        raise ValueError(
            "export_inference needs an eval-mode graph, this one "
            + (f"draws random numbers at {', '.join(random[:3])}" if random else f"updates buffers {writes[:3]}")
            + ": call module.eval() before importing it"
        )
    axes: list[int | None] = (
        list(batch_axis)
        if isinstance(batch_axis, (list, tuple))
        else [cast(int | None, batch_axis)] * len(example_inputs)
    )
    if len(axes) != len(example_inputs):
        raise ValueError(f"batch_axis has {len(axes)} entries for {len(example_inputs)} inputs")
    (batch,) = jax.export.symbolic_shape("batch")
    graph_inputs = _user_placeholders(model)
    specs = []
    for i, (x, axis) in enumerate(zip(example_inputs, axes)):
        static_shape, dtype = _spec_like(x)
        shape: tuple[Any, ...] = static_shape
        if axis is not None:
            name, graph_shape = graph_inputs[i] if i < len(graph_inputs) else (f"input {i}", ())
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"input {i} ({name}) has shape {list(shape)}: it has no axis {axis}")
            axis %= len(shape)
            if graph_shape and not isinstance(graph_shape[axis], torch.SymInt):
                raise ValueError(
                    f"input {i} ({name}) was exported with a static size {graph_shape[axis]} on axis {axis}: "
                    "import the module with a dynamic batch, from_module(..., dynamic_shapes=...)"
                )
            shape = shape[:axis] + (batch,) + shape[axis + 1 :]
        specs.append(jax.ShapeDtypeStruct(shape, dtype))
    weights, state = model.params if params is None else params, model.buffers if buffers is None else buffers

    def forward(*inputs):
        return model.apply(weights, state, *inputs)[0]

    return jax.export.export(jax.jit(forward), platforms=platforms)(*specs)
