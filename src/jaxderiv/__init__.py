"""jaxderiv: PyTorch's derivatives.yaml as JAX rules.

`jaxderiv.check` is the verification subpackage (`jaxderiv.check.opdb`, `.parity`, ...); the
checks themselves are `check_all` (a spec) and `check_op` (one op).
"""

from .check import Report, Row, check_all
from .check import check as check_op
from .check.function import check_function
from .errors import FormulaError, JaxderivError, NotImplementedDerivative, SchemaError, SpecError, TranslationError
from .expr import to_source
from .grammar import parse_formula
from .op import Op
from .registry import Registry, default_registry, op, seed_registry
from .schema import FunctionSchema
from .spec import Entry, Formula, Spec, load_seed_spec, load_spec
from .literal import jvp_op, vjp_op

__version__ = "0.1.0"

__all__ = [
    "Entry",
    "Formula",
    "FormulaError",
    "FunctionSchema",
    "JaxderivError",
    "NotImplementedDerivative",
    "Op",
    "Registry",
    "Report",
    "Row",
    "SchemaError",
    "Spec",
    "SpecError",
    "TranslationError",
    "aten",
    "check_all",
    "check_op",
    "check_function",
    "default_registry",
    "jvp_op",
    "load_seed_spec",
    "load_spec",
    "op",
    "parse_formula",
    "seed_registry",
    "to_source",
    "vjp_op",
]


def __getattr__(name):
    # `jaxderiv.aten` builds the default registry on first use, not at import.
    if name == "aten":
        return default_registry().aten
    raise AttributeError(f"module 'jaxderiv' has no attribute {name!r}")
