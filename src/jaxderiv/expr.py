"""Frozen syntax-tree nodes for derivative formulas, and a printer that round-trips."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Union, cast

# Every node carries `col`, the 1-based column of its first character in the formula
# text. It is excluded from equality so that `parse(to_source(tree)) == tree`.


def _col():
    return dataclasses.field(default=0, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Num:
    """A numeric literal. `text` is kept as written (`0.5f`, `1e-12`, `0.`)."""

    text: str
    value: Union[int, float]
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Bool:
    value: bool
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Str:
    """A string literal; `value` is the unescaped content."""

    value: str
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Name:
    """An identifier, possibly `::`-qualified: `grad`, `at::where`, `GradMode::is_enabled`."""

    name: str
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Template:
    """A name with template arguments: `std::get<0>`, `std::tuple<Tensor, Tensor>`."""

    base: Name
    args: tuple["Node", ...]
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Attr:
    """Member access `obj.name` (or `obj->name`); a method call is `Call(Attr(...), args)`."""

    obj: "Node"
    name: str
    arrow: bool = False
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Call:
    func: "Node"
    args: tuple["Node", ...]
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Index:
    obj: "Node"
    index: "Node"
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Unary:
    """Prefix operator: one of `-`, `+`, `!`, `~`, `*` (dereference), `&`."""

    op: str
    operand: "Node"
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Binary:
    """Infix operator with C++ precedence: `* / % + - << >> < <= > >= == != & ^ | && ||`."""

    op: str
    left: "Node"
    right: "Node"
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Ternary:
    cond: "Node"
    then: "Node"
    other: "Node"
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class BraceList:
    """`{a, b}`, or with a type in front, `c10::complex<double>{0.0, 1.0}`."""

    items: tuple["Node", ...]
    type: "Node | None" = None
    col: int = _col()


@dataclasses.dataclass(frozen=True)
class Lambda:
    """`[captures](type name, ...) { return body; }`. `params` holds (type text, name) pairs."""

    captures: str
    params: tuple[tuple[str, str], ...]
    body: "Node"
    col: int = _col()


Node = Union[Num, Bool, Str, Name, Template, Attr, Call, Index, Unary, Binary, Ternary, BraceList, Lambda]


# --- C++ syntax shared by the parser (grammar.py) and the printer below -------------

# Operator precedence as rows of the C++ operator chart (cppreference numbering):
# a lower row binds tighter. Every binary row groups left to right.
ATOM_ROW = 1  # names, literals, parenthesised expressions, brace lists, lambdas
POSTFIX_ROW = 2  # a(b)  a[b]  a.b  a->b
PREFIX_ROW = 3  # -a  +a  !a  ~a  *a  &a
PREFIX_OPS = ("-", "+", "!", "~", "*", "&")
BINARY_ROWS = {
    "*": 5, "/": 5, "%": 5,
    "+": 6, "-": 6,
    "<<": 7, ">>": 7,
    "<": 9, "<=": 9, ">": 9, ">=": 9,
    "==": 10, "!=": 10,
    "&": 11,
    "^": 12,
    "|": 13,
    "&&": 14,
    "||": 15,
}  # fmt: skip
TERNARY_ROW = 16  # a ? b : c, grouping right to left

# Characters a string literal must spell with a backslash, and the letter after it.
STRING_ESCAPES = {
    "\\": "\\", '"': '"', "\n": "n", "\t": "t", "\r": "r", "\0": "0",
    "\a": "a", "\b": "b", "\f": "f", "\v": "v",
}  # fmt: skip


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of `node`, in source order."""
    match node:
        case Template():
            return (node.base, *node.args)
        case Attr():
            return (node.obj,)
        case Call():
            return (node.func, *node.args)
        case Index():
            return (node.obj, node.index)
        case Unary():
            return (node.operand,)
        case Binary():
            return (node.left, node.right)
        case Ternary():
            return (node.cond, node.then, node.other)
        case BraceList():
            return node.items if node.type is None else (node.type, *node.items)
        case Lambda():
            return (node.body,)
    return ()


def with_children(node: Node, kids: Sequence[Node]) -> Node:
    """`node` with its direct sub-nodes (in `children` order) replaced by `kids`."""
    match node:
        case Template():
            return dataclasses.replace(
                node, base=cast(Name, kids[0]), args=tuple(kids[1:])
            )  # its base: the Name it had
        case Attr():
            return dataclasses.replace(node, obj=kids[0])
        case Call():
            return dataclasses.replace(node, func=kids[0], args=tuple(kids[1:]))
        case Index():
            return dataclasses.replace(node, obj=kids[0], index=kids[1])
        case Unary():
            return dataclasses.replace(node, operand=kids[0])
        case Binary():
            return dataclasses.replace(node, left=kids[0], right=kids[1])
        case Ternary():
            return dataclasses.replace(node, cond=kids[0], then=kids[1], other=kids[2])
        case BraceList():
            if node.type is None:
                return dataclasses.replace(node, items=tuple(kids))
            return dataclasses.replace(node, type=kids[0], items=tuple(kids[1:]))
        case Lambda():
            return dataclasses.replace(node, body=kids[0])
    return node


def iter_nodes(node: Node) -> Iterator[Node]:
    """Yield `node` and all its descendants, pre-order (iterative, so any depth works)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def to_source(node: Node) -> str:
    """C++ text for `node` that parses back to an equal tree."""
    return _emit(node)[0]


def _emit(node: Node) -> tuple[str, int]:
    """`node`'s text and the chart row of its outermost operator."""
    match node:
        case Num():
            return node.text, ATOM_ROW
        case Bool():
            return ("true" if node.value else "false"), ATOM_ROW
        case Str():
            body = "".join("\\" + STRING_ESCAPES[ch] if ch in STRING_ESCAPES else ch for ch in node.value)
            return f'"{body}"', ATOM_ROW
        case Name():
            return node.name, ATOM_ROW
        case Template():
            return f"{node.base.name}<{_join(node.args)}>", ATOM_ROW
        case Attr():
            obj = _operand(node.obj, POSTFIX_ROW)
            if isinstance(node.obj, Num) and not node.arrow:
                obj = f"({obj})"  # `1.real` would lex as the number `1.` and a name
            return f"{obj}{'->' if node.arrow else '.'}{node.name}", POSTFIX_ROW
        case Call():
            return f"{_operand(node.func, POSTFIX_ROW)}({_join(node.args)})", POSTFIX_ROW
        case Index():
            return f"{_operand(node.obj, POSTFIX_ROW)}[{to_source(node.index)}]", POSTFIX_ROW
        case Unary():
            operand = _operand(node.operand, PREFIX_ROW)
            gap = " " if operand.startswith(node.op) else ""  # `- -x`, not the token `--`
            return f"{node.op}{gap}{operand}", PREFIX_ROW
        case Binary():
            row = BINARY_ROWS[node.op]
            left, right = _operand(node.left, row), _operand(node.right, row - 1)
            if node.op in (">", ">>") and right.startswith(("(", "{", "::")) and _ends_in_word(left):
                # Else `(a < b) > (c < d)` would print as `a < b > (c < d)`, which reads
                # back as the template call `a<b>(c < d)`.
                left = f"({left})"
            return f"{left} {node.op} {right}", row
        case Ternary():
            cond = _operand(node.cond, TERNARY_ROW - 1)
            return f"{cond} ? {to_source(node.then)} : {to_source(node.other)}", TERNARY_ROW
        case BraceList():
            prefix = "" if node.type is None else to_source(node.type)
            return f"{prefix}{{{_join(node.items)}}}", ATOM_ROW
        case Lambda():
            params = ", ".join(f"{type_text} {name}" for type_text, name in node.params)
            return f"[{node.captures}]({params}) {{ return {to_source(node.body)}; }}", ATOM_ROW
    raise TypeError(f"not a formula node: {node!r}")


def _operand(node: Node, loosest: int) -> str:
    """`node`'s text, parenthesised if its operator is looser than row `loosest`."""
    text, row = _emit(node)
    return f"({text})" if row > loosest else text


def _join(nodes: tuple[Node, ...]) -> str:
    texts = []
    for node in nodes:  # a loop, not a generator, so deep trees use fewer stack frames
        texts.append(_emit(node)[0])
    return ", ".join(texts)


def _ends_in_word(text: str) -> bool:
    return text[-1].isalnum() or text[-1] == "_"
