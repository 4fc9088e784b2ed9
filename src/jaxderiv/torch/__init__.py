"""Import torch models: every ATen node of a torch.export graph runs the jaxderiv op of
that overload, so gradients are the installed torch's derivatives.yaml formulas.

Needs the `jaxderiv[torch]` extra; the rest of jaxderiv never imports torch.
"""

from ._compare import Comparison, NodeDifference, compare
from ._model import ImportedModel, export, from_exported, from_module, unsupported
from ._program import UnsupportedGraphError, UnsupportedNode
from ._export import DataDependentBranchError
from ._shapes import InputShapes, ShapeError
from ._checkpoint import load_safetensors, restore_checkpoint, save_checkpoint, save_safetensors
from ._serving import export_inference
from ._sharding import ShardedState, ShardingPlan, data_parallel, fsdp, shard, tensor_parallel, torch_plan

__all__ = [
    "ImportedNNX",
    "export_inference",
    "load_safetensors",
    "restore_checkpoint",
    "save_checkpoint",
    "save_safetensors",
    "to_nnx",
    "Comparison",
    "NodeDifference",
    "compare",
    "ImportedModel",
    "UnsupportedGraphError",
    "UnsupportedNode",
    "DataDependentBranchError",
    "InputShapes",
    "ShapeError",
    "export",
    "from_exported",
    "from_module",
    "unsupported",
    "ShardedState",
    "ShardingPlan",
    "data_parallel",
    "fsdp",
    "shard",
    "tensor_parallel",
    "torch_plan",
]


def __getattr__(name: str):
    """`to_nnx` and `ImportedNNX` import flax on first use (the `flax` extra)."""
    if name in ("to_nnx", "ImportedNNX"):
        from . import _nnx

        return getattr(_nnx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
