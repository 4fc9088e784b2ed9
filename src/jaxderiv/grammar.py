"""Parse derivative formulas, a subset of C++ expressions, into `expr` nodes.

The tokenizer is one regular expression. The parser is recursive descent for
names, literals and brackets, with a Pratt loop for binary operators whose
binding comes from the C++ precedence chart in `expr.BINARY_ROWS`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Collection
from typing import Callable, NamedTuple, TypeVar

from .errors import FormulaError
from .expr import (
    BINARY_ROWS,
    PREFIX_OPS,
    STRING_ESCAPES,
    TERNARY_ROW,
    Binary,
    Bool,
    BraceList,
    Attr,
    Call,
    Index,
    Lambda,
    Name,
    Node,
    Num,
    Str,
    Template,
    Ternary,
    Unary,
    children,
    to_source,
)

__all__ = ["MAX_LENGTH", "MAX_DEPTH", "parse_formula"]

T = TypeVar("T")  # what one item of a comma-separated list parses to

MAX_LENGTH = 20000  # characters in one formula
MAX_DEPTH = 200  # levels of brackets, operators and template arguments

# One alternative per token kind, tried in order; INVALID catches any character
# the others reject, so nothing is ever skipped. `>>` is deliberately absent:
# it is read as two `>` so that nested template argument lists close one at a time.
_TOKEN_RE = re.compile(
    r"""
    (?P<SPACE>\s+)
  | (?P<COMMENT>/\*.*?\*/|//[^\n]*)
  | (?P<OPEN_COMMENT>/\*)
  | (?P<FLOAT>(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]?(?![\w.]))
  | (?P<INT>(?:0[0-7]*|[1-9]\d*)(?![\w.]))
  | (?P<BAD_NUMBER>\.?\d[\w.]*)
  | (?P<STRING>"(?:[^"\\\n]|\\.)*")
  | (?P<OPEN_STRING>")
  | (?P<NAME>[A-Za-z_]\w*)
  | (?P<OP>::|->|<<|<=|>=|==|!=|&&|\|\||[-+*/%<>=!~&^|?:.,;()\[\]{}])
  | (?P<INVALID>.)
    """,
    re.VERBOSE | re.ASCII | re.DOTALL,
)

# Tokens that may sit between a template's `<` and `>` (besides names and integers).
_TEMPLATE_ARG_OPS = frozenset({"::", ",", "*", "&", "&&"})
_CV_QUALIFIERS = frozenset({"const", "volatile"})
# Keywords that combine into one builtin type: `unsigned long long`, `long double`.
_BUILTIN_TYPE_WORDS = frozenset(
    {"unsigned", "signed", "short", "long", "int", "char", "float", "double", "bool", "void"}
)

_UNESCAPES = {letter: char for char, letter in STRING_ESCAPES.items()} | {"'": "'", "?": "?"}


class _Token(NamedTuple):
    kind: str  # a group name of _TOKEN_RE, or END
    text: str
    col: int  # 1-based


def parse_formula(text: str) -> Node:
    """Parse one formula; raise FormulaError (with the column) if it is not in the grammar."""
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"expected at most {MAX_LENGTH} characters, found {len(text)}", column=MAX_LENGTH + 1)
    return _Parser(text).parse()


def _tokenize(text: str) -> list[_Token]:
    tokens = []
    for match in _TOKEN_RE.finditer(text):
        kind, lexeme, col = match.lastgroup, match.group(), match.start() + 1
        assert kind is not None  # every alternative of _TOKEN_RE is a named group
        if kind in ("SPACE", "COMMENT"):
            continue
        if kind == "OPEN_COMMENT":
            raise FormulaError("expected '*/' to close the comment, found end of formula", column=col)
        if kind == "OPEN_STRING":
            end = "end of line" if "\n" in text[col:] else "end of formula"
            raise FormulaError(f"expected '\"' to close the string, found {end}", column=col)
        if kind == "BAD_NUMBER":
            raise FormulaError(f"expected a number, found malformed number {lexeme!r}", column=col)
        if kind == "INVALID":
            found = _describe_char(lexeme)
            raise FormulaError(f"expected a name, number, string or operator, found {found}", column=col)
        tokens.append(_Token(kind, lexeme, col))
    tokens.append(_Token("END", "", len(text) + 1))
    return tokens


def _match_angles(tokens: list[_Token]) -> dict[int, int]:
    """Map the index of each `<` to the `>` that balances it with only
    template-argument tokens in between; no other `<` can open a template."""
    closers: dict[int, int] = {}
    open_angles: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.kind == "OP" and tok.text == "<":
            open_angles.append(i)
        elif tok.kind == "OP" and tok.text == ">":
            if open_angles:
                closers[open_angles.pop()] = i
        elif not (tok.kind in ("NAME", "INT") or (tok.kind == "OP" and tok.text in _TEMPLATE_ARG_OPS)):
            open_angles.clear()  # the run of template-argument tokens ends here
    return closers


class _Parser:
    """One formula's tokens and a cursor over them."""

    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.closers = _match_angles(self.tokens)
        self.pos = 0
        self.depth = -1  # the outermost expression is level 0

    def parse(self) -> Node:
        tree = self.expr()
        if self.peek().text == ";" and self.peek(1).kind == "END":
            self.advance()  # C++ statement habit: `grad * 2;` is the formula `grad * 2`
        if self.peek().kind != "END":
            raise self.error("expected an operator or end of formula")
        _check_tree_depth(tree)
        return tree

    # --- cursor ---------------------------------------------------------------

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        tok = self.peek()
        self.pos += 1
        return tok

    def at(self, *ops: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == "OP" and tok.text in ops

    def at_word(self, words: Collection[str]) -> bool:
        tok = self.peek()
        return tok.kind == "NAME" and tok.text in words

    def accept(self, op: str) -> bool:
        if self.at(op):
            self.pos += 1
            return True
        return False

    def expect(self, op: str, purpose: str = "") -> _Token:
        if not self.at(op):
            raise self.error(f"expected '{op}'{purpose}")
        return self.advance()

    def error(self, expected: str) -> FormulaError:
        """`expected`, completed with what the cursor is on, at its column."""
        tok = self.peek()
        return FormulaError(f"{expected}, found {_describe(tok)}", column=tok.col)

    @contextlib.contextmanager
    def nested(self, tok: _Token):
        """One level deeper; refuse to go past MAX_DEPTH (Python's stack is finite)."""
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise FormulaError(f"expected at most {MAX_DEPTH} levels of nesting, found more", column=tok.col)
            yield
        finally:
            self.depth -= 1

    # --- expressions ----------------------------------------------------------

    def expr(self, loosest: int = TERNARY_ROW) -> Node:
        """An expression whose binary operators all sit in chart rows up to `loosest`.

        This is the Pratt loop: an operator joins the expression if its row is
        within `loosest`, and its right operand may only hold tighter operators.
        """
        start = self.peek()
        with self.nested(start):
            # Prefix operators are gathered by a loop rather than by recursion, and
            # `postfix` is called from here: every frame spared per nesting level
            # keeps MAX_DEPTH further from Python's recursion limit.
            prefixes = []
            with contextlib.ExitStack() as levels:
                while self.at(*PREFIX_OPS):
                    prefixes.append(self.advance())
                    levels.enter_context(self.nested(prefixes[-1]))
                operand_col = self.peek().col
                left = self.postfix(self.primary(), operand_col)
            for tok in reversed(prefixes):
                left = Unary(tok.text, left, col=tok.col)
            while True:
                if loosest >= TERNARY_ROW and self.at("?"):
                    question = self.advance()
                    then = self.expr()  # C++ reads the middle as if parenthesised
                    self.expect(":", f" to complete '?' at column {question.col}")
                    other = self.expr(TERNARY_ROW)  # right associative
                    left = Ternary(left, then, other, col=start.col)
                    continue
                op, width = self.binary_operator()
                row = BINARY_ROWS.get(op)
                if row is None or row > loosest:
                    return left
                self.pos += width
                right = self.expr(row - 1)  # left associative: the right side binds tighter
                left = Binary(op, left, right, col=start.col)

    def binary_operator(self) -> tuple[str, int]:
        """The operator under the cursor and how many tokens spell it."""
        tok, after = self.peek(), self.peek(1)
        if tok.kind != "OP":
            return "", 0
        if tok.text == ">" and self.at(">", ahead=1) and after.col == tok.col + 1:
            return ">>", 2
        return tok.text, 1

    def postfix(self, node: Node, start: int) -> Node:
        """Calls, indexing and member access after `node`, left to right."""
        while True:
            tok = self.peek()
            if self.accept("("):
                node = Call(node, self.items(")", tok), col=start)
            elif self.accept("["):
                index = self.expr()
                self.expect("]", f" to close '[' opened at column {tok.col}")
                node = Index(node, index, col=start)
            elif self.at(".", "->"):
                self.advance()
                if self.peek().kind != "NAME":
                    raise self.error(f"expected a member name after '{tok.text}'")
                node = Attr(node, self.advance().text, tok.text == "->", col=start)
            else:
                return node

    def separated(self, closer: str, parse: Callable[[], T]) -> list[T]:
        """What `parse` reads, separated by commas, up to (not past) `closer`."""
        out = []
        if not self.at(closer):
            out.append(parse())
            while self.accept(","):
                out.append(parse())
        return out

    def items(self, closer: str, opener: _Token) -> tuple[Node, ...]:
        """Comma-separated expressions up to `closer`; `opener` is already consumed."""
        items = self.separated(closer, self.expr)
        if not self.at(closer):
            raise self.error(f"expected ',' or '{closer}' to close '{opener.text}' opened at column {opener.col}")
        self.advance()
        return tuple(items)

    def primary(self) -> Node:
        tok = self.peek()
        if tok.kind in ("INT", "FLOAT"):
            return _number(self.advance())
        if tok.kind == "STRING":
            self.advance()
            return Str(_unescape(tok), col=tok.col)
        if tok.kind == "NAME" and tok.text in ("true", "false"):
            self.advance()
            return Bool(tok.text == "true", col=tok.col)
        if tok.kind == "NAME" or self.at("::"):
            node = self.name_path(in_type=False)
            if node is None:
                raise self.error("expected a name after '::'")
            if self.at("{"):  # typed brace initialisation, `c10::complex<double>{0.0, 1.0}`
                return BraceList(self.items("}", self.advance()), node, col=tok.col)
            return node
        if self.accept("("):
            inner = self.expr()
            self.expect(")", f" to close '(' opened at column {tok.col}")
            return inner
        if self.accept("{"):
            return BraceList(self.items("}", tok), col=tok.col)
        if self.at("["):
            return self.lambda_()
        raise self.error("expected an expression")

    # --- names, templates and types --------------------------------------------

    def qualified_name(self) -> str | None:
        """`a::b::c` or `::a` as one string; None, with the cursor on the culprit, if a name is missing."""
        text = self.advance().text if self.at("::") else ""
        while True:
            if self.peek().kind != "NAME":
                return None
            text += self.advance().text
            if not self.at("::"):
                return text
            text += self.advance().text

    def name_path(self, in_type: bool) -> Name | Template | None:
        """A qualified name, possibly with template arguments: `at::where`,
        `std::get<0>`, `std::numeric_limits<double>::max` (folded into one Name).

        In a type every `<` opens template arguments; in an expression only a
        `<` whose list is valid and is followed by `(`, `{` or `::` does, and
        any other `<` is left for the caller as less-than. None if malformed.
        """
        col = self.peek().col
        text = self.qualified_name()
        while text is not None and self.at("<"):
            args = self.template_args() if in_type else self.template_args_in_expr()
            if args is None:
                return None if in_type else Name(text, col=col)
            if not self.at("::"):
                return Template(Name(text, col=col), args, col=col)
            scope = f"{text}<{', '.join(map(to_source, args))}>"
            rest = self.qualified_name()
            text = None if rest is None else scope + rest
        return None if text is None else Name(text, col=col)

    def template_args_in_expr(self) -> tuple[Node, ...] | None:
        """Template arguments if the `<` under the cursor opens them, else None (cursor unmoved)."""
        close = self.closers.get(self.pos)
        if close is None or not self.at("(", "{", "::", ahead=close + 1 - self.pos):
            return None
        start = self.pos
        args = self.template_args()
        if args is None:
            self.pos = start
        return args

    def template_args(self) -> tuple[Node, ...] | None:
        """`<T, 0, const U&>` from the cursor, or None if that is not a valid list."""
        opener = self.advance()
        args: list[Node] = []
        with self.nested(opener):
            if self.accept(">"):
                return ()
            while True:
                if self.peek().kind == "INT":
                    args.append(_number(self.advance()))
                else:
                    arg = self.type_name()
                    if arg is None:
                        return None
                    args.append(arg)
                if self.accept(">"):
                    return tuple(args)
                if not self.accept(","):
                    return None

    def type_name(self) -> Name | Template | None:
        """A type: `int64_t`, `unsigned long`, `std::vector<T>`, `const at::Tensor&`.

        A plain name or template comes back as Name or Template; one with
        qualifiers, `*` or `&` as a Name holding its canonical spelling.
        None, with the cursor on the culprit, if there is no type here.
        """
        col = self.peek().col
        words = []
        while self.at_word(_CV_QUALIFIERS):
            words.append(self.advance().text)
        base: Name | Template | None
        if self.at_word(_BUILTIN_TYPE_WORDS):
            builtin = []
            while self.at_word(_BUILTIN_TYPE_WORDS):
                builtin.append(self.advance().text)
            base = Name(" ".join(builtin), col=col)
        else:
            base = self.name_path(in_type=True)
            if base is None:
                return None
        words.append(to_source(base))
        while self.at("*", "&", "&&") or self.at_word(_CV_QUALIFIERS):
            words.append(self.advance().text)
        return base if len(words) == 1 else Name(_spell_type(words), col=col)

    # --- lambdas ----------------------------------------------------------------

    def lambda_(self) -> Lambda:
        """`[captures](type name, ...) { return expr; }`"""
        opener = self.advance()
        captures = self.separated("]", self.capture)
        self.expect("]", f" to close '[' opened at column {opener.col}")
        paren = self.expect("(", " to start the lambda's parameters")
        params = self.separated(")", self.parameter)
        self.expect(")", f" to close '(' opened at column {paren.col}")
        brace = self.expect("{", " to start the lambda's body")
        if not self.at_word(("return",)):
            raise self.error("expected 'return' in the lambda's body")
        self.advance()
        body = self.expr()
        self.accept(";")
        self.expect("}", f" to close '{{' opened at column {brace.col}")
        return Lambda(", ".join(captures), tuple(params), body, col=opener.col)

    def capture(self) -> str:
        """One lambda capture: `&`, `=`, `name`, `&name`, `this` or `*this`."""
        if self.accept("="):
            return "="
        if self.accept("&"):
            return "&" + self.advance().text if self.peek().kind == "NAME" else "&"
        if self.accept("*"):
            if not self.at_word(("this",)):
                raise self.error("expected 'this' after '*' in a lambda capture")
            return "*" + self.advance().text
        if self.peek().kind != "NAME":
            raise self.error("expected a lambda capture")
        return self.advance().text

    def parameter(self) -> tuple[str, str]:
        """One lambda parameter as (type text, name)."""
        param_type = self.type_name()
        if param_type is None:
            raise self.error("expected a parameter type")
        if self.peek().kind != "NAME":
            raise self.error("expected a parameter name")
        return to_source(param_type), self.advance().text


def _check_tree_depth(tree: Node) -> None:
    """Refuse trees deeper than MAX_DEPTH, such as a long chain of `+`, which the
    parser builds in a loop but which the printer and translator walk recursively."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FormulaError(f"expected at most {MAX_DEPTH} levels of nesting, found more", column=node.col)
        stack.extend((child, depth + 1) for child in children(node))


def _number(tok: _Token) -> Num:
    if tok.kind == "FLOAT":
        return Num(tok.text, float(tok.text.rstrip("fF")), col=tok.col)
    if len(tok.text) > 40:  # past any C++ integer type, and past Python's int-parsing digit limit
        raise FormulaError(f"expected an integer literal of at most 40 digits, found {len(tok.text)}", column=tok.col)
    return Num(tok.text, int(tok.text, 8 if tok.text.startswith("0") else 10), col=tok.col)  # C++: 0 starts octal


def _spell_type(words: list[str]) -> str:
    """Canonical spelling of a type's words: `const at::Tensor&`, `T* const`."""
    text = words[0]
    for word in words[1:]:
        text += word if word in ("*", "&", "&&") else " " + word
    return text


def _unescape(tok: _Token) -> str:
    """The value of a string literal token."""
    out = []
    body = tok.text[1:-1]
    i = 0
    while i < len(body):
        col = tok.col + 1 + i
        char = body[i]
        if char == "\\":
            letter = body[i + 1]  # the token pattern guarantees one follows
            if letter not in _UNESCAPES:
                raise FormulaError(f"expected an escape such as \\n or \\\", found '\\{letter}'", column=col)
            out.append(_UNESCAPES[letter])
            i += 2
        elif " " <= char <= "~":
            out.append(char)
            i += 1
        else:
            found = _describe_char(char)
            raise FormulaError(f"expected a printable ASCII character in the string, found {found}", column=col)
    return "".join(out)


def _describe(tok: _Token) -> str:
    if tok.kind == "END":
        return "end of formula"
    if tok.kind == "NAME":
        return f"name '{tok.text}'"
    if tok.kind in ("INT", "FLOAT"):
        return f"number {tok.text}"
    if tok.kind == "STRING":
        return f"string {tok.text}"
    return f"'{tok.text}'"


def _describe_char(char: str) -> str:
    if " " <= char <= "~":
        return f"character {char!r}"
    if ord(char) < 128:
        return f"control character U+{ord(char):04X}"
    return f"non-ASCII character {char!r} (U+{ord(char):04X})"
