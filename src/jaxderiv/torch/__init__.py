"""Import torch models: every ATen node of a torch.export graph runs the jaxderiv op of
that overload, so gradients are the installed torch's derivatives.yaml formulas.

Needs the `jaxderiv[torch]` extra; the rest of jaxderiv never imports torch.
"""

from ._compare import Comparison, NodeDifference, compare
from ._model import ImportedModel, export, from_exported, from_module, unsupported
from ._program import UnsupportedGraphError, UnsupportedNode

__all__ = [
    "Comparison",
    "NodeDifference",
    "compare",
    "ImportedModel",
    "UnsupportedGraphError",
    "UnsupportedNode",
    "export",
    "from_exported",
    "from_module",
    "unsupported",
]
