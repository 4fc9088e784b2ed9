"""An entry's formulas compiled against its schema: what reverse and forward mode evaluate.

`compile_entry` runs once per op when it is built: every formula of the normalized entry
(normalize.py) becomes a closure (translate.py) over the variables its mode may read, and the
facts both modes need (which outputs carry gradients, which inputs are differentiable) are
decided from the entry and its schema. The result is a frozen `EntryRules`; `application.py`
evaluates it for one call, and `op.py` binds a call's arguments to it.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from .errors import JaxderivError, Location, TranslationError
from .expr import Index, Name, Num, iter_nodes
from .grammar import parse_formula
from .normalize import Derivative, Kind, derivative, normalize
from .schema import Argument, FunctionSchema
from .spec import Entry, Formula
from .translate import Compiled, real_only_inputs, translate

__all__ = ["EntryRules", "compile_entry", "compile_formula", "is_tensor_arg"]

# How a forward formula is evaluated: a closure; for auto_element_wise its terms as
# (input, closure); for auto_linear None (the op itself runs on the tangents).
ForwardFn = Compiled | tuple[tuple[str, Compiled], ...] | None


def is_tensor_arg(a: Argument) -> bool:
    """A Tensor or Tensor[] argument: where arrays, and so derivatives, sit."""
    return a.is_tensor or a.is_tensor_list


def compile_formula(
    formula: Derivative | Formula | str,
    variables: Sequence[str],
    location: Location | None = None,
    calls=None,
    version: tuple[int, ...] | None = None,
) -> Compiled:
    """Translate one formula, with errors located at its file, line, entry and key: a record's
    tree (normalize.py; a spec Formula is normalized alone), or text, parsed first.
    `calls`, `version`: see `translate`."""
    if isinstance(formula, str):
        try:
            tree = parse_formula(formula)
        except JaxderivError as e:
            raise e.located(location or Location()) from None
        return _translate_at(tree, variables, location, calls, version)
    d = formula if isinstance(formula, Derivative) else derivative(formula)
    return _translate_at(d.tree if d.tree is not None else d.require_parsed(), variables, d.location, calls, version)


def _translate_at(tree, variables: Sequence[str], location: Location | None, calls, version) -> Compiled:
    """`translate`, its errors located at `location`."""
    try:
        return translate(tree, variables, location, calls, version)
    except JaxderivError as e:
        raise e.located(location or Location()) from None


def _check_grads_indices(d: Derivative, n_out: int) -> None:
    """Reject `grads[i]` past the last output when the op is built, not when a gradient is asked."""
    for node in iter_nodes(d.require_parsed()):
        if (
            isinstance(node, Index)
            and node.obj == Name("grads")
            and isinstance(node.index, Num)
            and not 0 <= node.index.value < n_out
        ):
            raise TranslationError(
                f"grads[{node.index.text}] names no output: the op has {n_out} output(s)", d.location, column=node.col
            )


def _reads_any(d: Derivative, names: set[str]) -> bool:
    """Whether the formula's tree reads a variable of `names` (`grads`, `grad_R`)."""
    return d.parsed is not None and any(isinstance(node, Name) and node.name in names for node in iter_nodes(d.parsed))


def output_variable(schema: FunctionSchema, name: str) -> str:
    """An output named like an argument (eig's `eigenvectors`) is `<name>_return` in formulas."""
    return name + "_return" if any(a.name == name for a in schema.arguments) else name


@dataclasses.dataclass(frozen=True)
class EntryRules:
    """The compiled formulas of one entry for one schema, and what both modes decide from them."""

    backward: tuple[tuple[Derivative, Compiled], ...]  # one per backward formula, in file order
    forward: Mapping[tuple[str, ...], tuple[Derivative, ForwardFn]]  # output names -> its result formula
    # per output: a bool, or a compiled condition on the arguments (`output_differentiability`)
    output_conditions: tuple[Any, ...]
    # PyTorch: a multi-output entry whose formulas read only `grad` differentiates output 0 only
    grad_only: bool
    foreach: bool  # `_foreach_*`: formulas state element i's derivative
    non_differentiable: frozenset[str]
    differentiable_inputs: tuple[str, ...]
    # (why, variables whose complex values the formulas get wrong), for a pre-complex release's entry
    real_only: tuple[str, frozenset[str]] | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "forward", MappingProxyType(dict(self.forward)))

    def forward_for(self, schema: FunctionSchema, i: int) -> tuple[str, ...] | None:
        """The output names of the result formula that gives output i's tangent, if any."""
        if self.foreach:
            return next(iter(self.forward), None)
        for names in self.forward:
            if any(output_index(schema, n) == i for n in names):
                return names
        return None


def output_index(schema: FunctionSchema, name: str) -> int:
    """The position of output `name` (`result`, `result1`, or the schema's return name)."""
    if name == "result":
        return 0
    if name.startswith("result") and name[6:].isdigit():
        return int(name[6:])
    return [r.name for r in schema.returns].index(name)


def backward_variables(schema: FunctionSchema) -> list[str]:
    """The names a backward formula may read."""
    n_out = len(schema.returns)
    args = [a.name for a in schema.arguments]
    outs = [output_variable(schema, r.name) for r in schema.returns if r.name]
    results = ["result"] + [f"result{i}" for i in range(n_out)]
    # Newer files name an output's gradient by the output: `grad_solution` for `solution`.
    grad_names = [f"grad_{r.name}" for r in schema.returns if r.name]
    loop = ["i"] if schema.name.startswith("_foreach_") else []
    return args + outs + results + grad_names + ["grad", "grads", "grad_input_mask", "retain_variables"] + loop


def forward_variables(schema: FunctionSchema) -> list[str]:
    """The names a `result:` formula may read: primals and tangents of every Tensor argument."""
    n_out = len(schema.returns)
    args = [a.name for a in schema.arguments]
    outs = [output_variable(schema, r.name) for r in schema.returns if r.name]
    results = ["result"] + [f"result{i}" for i in range(n_out)]
    tensors = [a.name for a in schema.arguments if is_tensor_arg(a)]
    # `_foreach_*` entries: `i` indexes the lists, and `self_p`/`self_t` are element i's.
    loop = ["i"] if schema.name.startswith("_foreach_") else []
    return (
        args
        + outs
        + results
        + [f"{t}_p" for t in tensors]
        + [f"{t}_t" for t in tensors]
        + [f"{t}_t_raw" for t in tensors]
        + [f"original_{t}_p" for t in tensors]
        + [f"original_{t}_t" for t in tensors]
        + loop
    )


def compile_entry(entry: Entry, calls: Callable | None = None) -> EntryRules:
    """Compile every formula of `entry` (errors located at file:line); `calls`: see `translate`."""
    if entry.dispatch not in (None, "Default"):
        # Without a `Default:` block the formulas are for that key's tensors (nested, CUDA) only;
        # a dense tensor's autograd takes the op's decomposition, which the entry does not state.
        raise TranslationError(
            f"its formulas are for dispatch key {entry.dispatch} only (no 'Default:' block): "
            "the entry states no derivative for a dense tensor",
            entry.location,
        )
    schema = entry.schema
    derivatives = normalize(entry)
    n_out = len(schema.returns)
    release = entry.version.release if entry.version is not None else None
    bwd_vars, fwd_vars = backward_variables(schema), forward_variables(schema)
    backward = tuple((d, compile_formula(d, bwd_vars, calls=calls, version=release)) for d in derivatives.backward)
    for d in derivatives.backward:
        _check_grads_indices(d, n_out)
    forward: dict[tuple[str, ...], tuple[Derivative, ForwardFn]] = {}
    for d in derivatives.forward:
        fn: ForwardFn
        if d.kind is Kind.AUTO_ELEMENT_WISE:
            fn = tuple((t.input, _translate_at(t.tree, fwd_vars, t.source.location, calls, release)) for t in d.terms)
        elif d.kind is Kind.AUTO_LINEAR:
            fn = None
        else:
            fn = compile_formula(d, fwd_vars, calls=calls, version=release)
        forward[d.names] = (d, fn)
    args = [a.name for a in schema.arguments]
    conditions = tuple(
        compile_formula(c, args, dataclasses.replace(entry.location, key="output_differentiability"))
        if isinstance(c, str)
        else c
        for c in (entry.output_differentiability or ())
    )
    # `grads` or a later output's `grad_<name>` (linalg_qr's grad_R) reads the other outputs.
    others = {"grads"} | {f"grad_{r.name}" for r in schema.returns[1:] if r.name}
    grad_only = (
        n_out > 1
        and entry.output_differentiability is None
        and not any(_reads_any(d, others) for d in derivatives.backward)
    )
    # An entry with result formulas but no backward formula at all gets reverse mode by
    # transposing them: every Tensor input is then differentiable (an unused tangent is zero).
    transposed = not entry.backward and bool(entry.forward)
    non_differentiable = frozenset(entry.non_differentiable)
    differentiable = tuple(
        a.name
        for a in schema.arguments
        if is_tensor_arg(a)
        and a.name not in non_differentiable
        and (transposed or entry.formula_for(a.name) is not None)
    )
    return EntryRules(
        backward=backward,
        forward=forward,
        output_conditions=conditions,
        grad_only=grad_only,
        foreach=schema.name.startswith("_foreach_"),
        non_differentiable=non_differentiable,
        differentiable_inputs=differentiable,
        real_only=real_only_inputs(entry),
    )
