"""Normalization: each loaded formula becomes a frozen record of its resolved kind and its trees.

PyTorch's torchgen resolves an entry's formulas once, when it loads derivatives.yaml
(`create_differentiability_info`, `postprocess_forward_derivatives`): a marker such as
`auto_element_wise` is rewritten there into an ordinary formula, and later stages never look
at the text again. This module is that stage for jaxderiv, on syntax trees instead of regular
expressions. Layers, each importing only those before it:

    spec (text) -> grammar (trees) -> normalize (kinds, rewrites) -> translate -> rules/op -> registry

`normalize(entry)` gives an entry's records; `derivative(formula)` one formula's, as far as
it can be resolved without its entry. Both are cached: each formula is parsed once.
"""

from __future__ import annotations

import dataclasses
import enum
import functools

from .errors import FormulaError, Location
from .expr import Attr, Binary, Bool, BraceList, Call, Index, Lambda, Name, Node, Num, Template, Ternary, Unary
from .grammar import parse_formula
from .spec import Entry, Formula

__all__ = ["Kind", "Derivative", "ElementWiseTerm", "Derivatives", "derivative", "normalize"]


class Kind(enum.Enum):
    """What a formula states, read from its parsed tree."""

    WRITTEN = "written"  # an expression to evaluate (also a text that does not parse: compiling reports it)
    AUTO_ELEMENT_WISE = "auto_element_wise"  # `result:` only: the backward formula, conjugated (see normalize)
    AUTO_LINEAR = "auto_linear"  # `result:` only: the op itself applied to the tangents
    NOT_IMPLEMENTED = "not_implemented"  # `not_implemented(...)` or `not_implemented_list(...)`: refused
    NON_DIFFERENTIABLE = "non_differentiable"  # the bare marker (an input's is moved to Entry.non_differentiable)


# The marker a tree that is one bare name states.
_MARKERS = {
    "auto_element_wise": Kind.AUTO_ELEMENT_WISE,
    "auto_linear": Kind.AUTO_LINEAR,
    "non_differentiable": Kind.NON_DIFFERENTIABLE,
}
# The calls that state a derivative is not implemented (the second for formulas of several inputs).
_REFUSALS = frozenset({"not_implemented", "not_implemented_list"})


def _kind(tree: Node) -> Kind:
    """The kind of a parsed formula: only its root decides (`not_implemented(...) + x` is written)."""
    if isinstance(tree, Name) and tree.name in _MARKERS:
        return _MARKERS[tree.name]
    if isinstance(tree, Call) and isinstance(tree.func, Name) and tree.func.name in _REFUSALS:
        return Kind.NOT_IMPLEMENTED
    return Kind.WRITTEN


@dataclasses.dataclass(frozen=True)
class ElementWiseTerm:
    """One input's share of an `auto_element_wise` tangent: a written formula of its own."""

    input: str  # the Tensor input whose tangent (`<input>_t`) the term reads
    tree: Node  # conj(backward formula with grad := <input>_t.conj(), each input x := x_p)
    source: Derivative  # the backward formula it is rewritten from: errors name its line


@dataclasses.dataclass(frozen=True)
class Derivative:
    """One `key: formula` line of an entry, resolved: the kind it states and the trees to use."""

    formula: Formula  # the line as loaded: its names, original text and location (torchgen keeps both)
    kind: Kind  # resolved from the parsed tree, once
    parsed: Node | None  # the tree of the text as written; None when the text does not parse
    error: FormulaError | None  # why the text does not parse (column only; `located` adds the line), else None
    # What a mode evaluates: `parsed` for every kind but auto_element_wise, whose rewritten tree
    # this is (the sum of `terms`); None for auto_linear (the op itself runs) and unparsed text.
    tree: Node | None
    terms: tuple[ElementWiseTerm, ...] = ()  # auto_element_wise only: the summands of `tree`, per input

    @property
    def names(self) -> tuple[str, ...]:
        """The inputs (backward) or outputs (forward) the key names."""
        return self.formula.names

    @property
    def key(self) -> str:
        return self.formula.key

    @property
    def text(self) -> str:
        """The formula as written: for messages and reports, never to decide anything."""
        return self.formula.text

    @property
    def location(self) -> Location:
        return self.formula.location

    def require_parsed(self) -> Node:
        """The parsed tree, or the parse error raised, located at the formula's line."""
        if self.parsed is None:
            assert self.error is not None  # set exactly when the text does not parse
            raise self.error.located(self.location)
        return self.parsed


@dataclasses.dataclass(frozen=True)
class Derivatives:
    """An entry's formulas, normalized, in the entry's order."""

    entry: Entry  # the entry as loaded
    backward: tuple[Derivative, ...]  # keyed by inputs: gradients
    forward: tuple[Derivative, ...]  # keyed by outputs: `result:` tangents

    def formula_for(self, name: str) -> Derivative | None:
        """The backward formula whose key names input `name`, or None."""
        for d in self.backward:
            if name in d.names:
                return d
        return None


@functools.lru_cache(maxsize=16384)
def derivative(formula: Formula) -> Derivative:
    """One formula's record, as far as it resolves alone: kind and parsed tree. An
    `auto_element_wise` formula's tree needs its entry's backward formulas: `normalize` builds it."""
    try:
        parsed = parse_formula(formula.text)
    except FormulaError as e:
        return Derivative(formula, Kind.WRITTEN, None, e.with_traceback(None), None)  # kept, not its parser's frames
    kind = _kind(parsed)
    tree = None if kind in (Kind.AUTO_ELEMENT_WISE, Kind.AUTO_LINEAR) else parsed
    return Derivative(formula, kind, parsed, None, tree)


@functools.lru_cache(maxsize=4096)
def normalize(entry: Entry) -> Derivatives:
    """The entry's formulas as records, `auto_element_wise` rewritten into a written tree."""
    backward = tuple(derivative(f) for f in entry.backward)
    forward = tuple(derivative(f) for f in entry.forward)
    if any(d.kind is Kind.AUTO_ELEMENT_WISE for d in forward):
        terms = _element_wise_terms(entry, backward)
        tree = _sum(tuple(t.tree for t in terms))
        forward = tuple(
            dataclasses.replace(d, tree=tree, terms=terms) if d.kind is Kind.AUTO_ELEMENT_WISE else d for d in forward
        )
    return Derivatives(entry, backward, forward)


# -- auto_element_wise --------------------------------------------------------------------------
#
# For an elementwise op y = f(x) the Jacobian is diagonal, J = diag(f'(x)), hence symmetric:
# the Jacobian-vector product J·v = Jᵀ·v = (vᵀJ)ᵀ is the vector-Jacobian product's own linear
# map. A backward formula B states that map in PyTorch's conjugate convention,
# B(grad) = conj(J)ᵀ·grad = conj(f'(x)) * grad, so
#     J·v = f'(x) * v = conj(conj(f'(x)) * conj(v)) = conj(B(conj(v))):
# the backward formula with `grad` replaced by the conjugated tangent, the whole conjugated.
# torchgen writes exactly this: `grad` -> `<input>_t.conj()`, each differentiable input
# `x` -> `x_p` (the same value in a result formula), then `(...).conj()`. torchgen allows one
# differentiable input; with several, J·v sums each input's diagonal block, so the tree is the
# sum of the per-input terms (op.py evaluates only the terms of inputs that carry a tangent).


def _element_wise_terms(entry: Entry, backward: tuple[Derivative, ...]) -> tuple[ElementWiseTerm, ...]:
    """One term per Tensor input keyed by a backward formula, in the formulas' order."""
    tensors = {a.name for a in entry.schema.arguments if a.is_tensor or a.is_tensor_list}
    # torchgen's args_with_derivatives: the inputs a formula is given for, read as primals `x_p`.
    primals = {
        n: Name(f"{n}_p") for d in backward for n in d.names if n in tensors and n not in entry.non_differentiable
    }
    terms = []
    for d in backward:
        if d.parsed is None:
            continue  # the op is not built: compiling the backward formula raises its parse error
        for k, name in enumerate(d.names):
            if name not in tensors:
                continue
            grad = Call(Attr(Name(f"{name}_t"), "conj"), ())
            # What the backward formula reads of the gradient, for this input alone.
            given: dict[str, Node] = {
                "grad": grad,
                "grads": BraceList((grad,)),
                "grad_input_mask": BraceList(tuple(Bool(n == name) for n in d.names)),
            }
            body = _substitute(d.parsed, {**primals, **given})
            if len(d.names) > 1:
                body = Index(body, Num(str(k), k))  # this input's gradient of the formula's tuple
            terms.append(ElementWiseTerm(name, Call(Attr(body, "conj"), ()), d))
    return tuple(terms)


def _sum(trees: tuple[Node, ...]) -> Node | None:
    """`a + b + ...` (left to right), the one tree itself, or None for none."""
    total = None
    for t in trees:
        total = t if total is None else Binary("+", total, t)
    return total


def _substitute(node: Node, values: dict[str, Node]) -> Node:
    """`node` with each variable named in `values` replaced by its tree. Names in function or
    type position (`f(...)`, `std::get<0>`, `c10::complex<double>{...}`) are not variables,
    and a lambda's parameters hide the outer names they spell."""

    def sub(n: Node) -> Node:
        return _substitute(n, values)

    match node:
        case Name():
            return values.get(node.name, node)
        case Attr():
            return dataclasses.replace(node, obj=sub(node.obj))
        case Call():
            func = node.func if isinstance(node.func, (Name, Template)) else sub(node.func)
            return dataclasses.replace(node, func=func, args=tuple(map(sub, node.args)))
        case Index():
            return dataclasses.replace(node, obj=sub(node.obj), index=sub(node.index))
        case Unary():
            return dataclasses.replace(node, operand=sub(node.operand))
        case Binary():
            return dataclasses.replace(node, left=sub(node.left), right=sub(node.right))
        case Ternary():
            return dataclasses.replace(node, cond=sub(node.cond), then=sub(node.then), other=sub(node.other))
        case BraceList():
            return dataclasses.replace(node, items=tuple(map(sub, node.items)))
        case Lambda():
            hidden = {name for _, name in node.params}
            return dataclasses.replace(
                node, body=_substitute(node.body, {k: v for k, v in values.items() if k not in hidden})
            )
    return node  # literals and templates hold no variables
