"""ATen function schemas, the `name:` of a derivatives.yaml entry.

`FunctionSchema.parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")`
runs a small tokenizer and a recursive-descent parser over the grammar torchgen reads:

    schema   := NAME ['.' NAME] '(' [arg (',' arg)*] ')' '->' returns
    arg      := '*' | type NAME ['=' literal]
    returns  := ret | '(' [ret (',' ret)*] ')'
    ret      := type [NAME]
    type     := BASE ['(' alias ')'] ['?'] ['[' [INT] ']' ['?']]
    alias    := NAME ('|' NAME)* ['!'] ['->' ('*' | NAME ('|' NAME)*)]
    literal  := scalar | '[' [scalar (',' scalar)*] ']'

Like torchgen's `FunctionSchema.parse`, every parse ends by checking the round trip:
the result prints back to the input's tokens, so `str(FunctionSchema.parse(t)) == t`
for canonically written `t`; other input differs from its print only in whitespace.
"""

from __future__ import annotations

__all__ = ["BASE_TYPES", "LEGACY_TYPES", "Type", "Argument", "Return", "FunctionSchema"]

import dataclasses
import re
import string
from typing import Any, NoReturn

from .errors import Location, SchemaError

# Base type names of ATen schemas, from torchgen's BaseTy and the JIT schema types
# that older spec files still use (Dimname, ConstQuantizerPtr, Any; 1.0's TensorOptions).
BASE_TYPES = frozenset(
    {
        "Tensor",
        "Scalar",
        "int",
        "SymInt",
        "float",
        "bool",
        "str",
        "complex",
        "ScalarType",
        "Layout",
        "Device",
        "DeviceIndex",
        "MemoryFormat",
        "QScheme",
        "Generator",
        "Dimname",
        "Storage",
        "Stream",
        "SymBool",
        "DimVector",
        "GraphModule",
        "ConstQuantizerPtr",
        "Any",
        "TensorOptions",
    }
)

# C++ type names of PyTorch 0.4 to 1.1 schemas (`abs(Tensor self)`, no return type), as the
# schema types they stand for; `FunctionSchema.parse_legacy` reads them. Data only: each is
# replaced as a whole word in type position before the schema grammar runs.
LEGACY_TYPES: dict[str, str] = {
    "int64_t": "int",
    "double": "float",
    "IntList": "int[]",
    "IntArrayRef": "int[]",
    "TensorList": "Tensor[]",
    "SparseTensorRef": "Tensor",
    "SparseTensor": "Tensor",
    "Generator*": "Generator?",
}
# `std::array<bool,3> output_mask` is `bool[3] output_mask`.
_LEGACY_ARRAY = re.compile(r"std::array<\s*bool\s*,\s*(\d+)\s*>")

# Words with a fixed meaning in defaults; `Mean` and `Sum` are at::Reduction values.
_WORD_VALUES: dict[str, Any] = {"True": True, "False": False, "None": None, "Mean": 1, "Sum": 2}
_REDUCTION_NONE = 0  # at::Reduction::None, what `int reduction=None` means

_DIGITS = frozenset(string.digits)
_WORD_START = frozenset(string.ascii_letters + "_")
_WORD_CHARS = _WORD_START | _DIGITS
_PUNCT = frozenset("()[],*?!|=.-")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


@dataclasses.dataclass(frozen=True)
class Type:
    """The type of an argument or return, e.g. `int[2]`, `Tensor?[]`, `Tensor(a!)`."""

    base: str  # base type name: 'Tensor', 'int', 'SymInt', 'ScalarType', ...
    optional: bool = False  # a trailing '?': the whole value may be None ('Tensor?', 'int[1]?')
    is_list: bool = False  # written with '[...]'
    size: int | None = None  # fixed list length, 2 in 'int[2]'; None for '[]' or a non-list
    elem_optional: bool = False  # '?' before the brackets: each element may be None ('Tensor?[]')
    alias: str | None = None  # alias annotation inside 'Tensor(...)': 'a!', 'a', 'a -> *'

    def __post_init__(self) -> None:
        if not self.is_list and (self.size is not None or self.elem_optional):
            raise SchemaError(f"type {self.base!r}: a list size or element '?' needs a list type")
        if self.alias is not None and self.base != "Tensor":
            raise SchemaError(f"alias annotations are only allowed on Tensor, not {self.base!r}")

    @property
    def is_write(self) -> bool:
        """Whether the alias annotation marks the tensor as written to ('a!')."""
        # '!' can only follow the alias set before any '->', so a plain search is exact.
        return self.alias is not None and "!" in self.alias

    @staticmethod
    def parse(text: str, location: Location | None = None) -> Type:
        """Parse one type such as `Tensor?[]` or `int[2]`."""
        parser = _Parser(text, location)
        result = parser.type()
        parser.end("after the type")
        parser.check_round_trip(result)
        return result

    def __str__(self) -> str:
        out = self.base
        if self.alias is not None:
            out += f"({self.alias})"
        if self.is_list:
            out += "?" if self.elem_optional else ""
            out += f"[{'' if self.size is None else self.size}]"
        return out + ("?" if self.optional else "")


@dataclasses.dataclass(frozen=True)
class Argument:
    """One argument: `Scalar alpha=1`."""

    name: str  # the argument's name, as formulas refer to it ('self', 'other')
    type: Type  # its type, including any alias annotation
    default: str | None = None  # the default's canonical text ('1', '[]', '"mean"'), None if none
    kwarg_only: bool = False  # written after the '*' marker

    @property
    def is_tensor(self) -> bool:
        """`Tensor` or `Tensor?`, not a list."""
        return self.type.base == "Tensor" and not self.type.is_list

    @property
    def is_tensor_list(self) -> bool:
        """`Tensor[]` or `Tensor?[]`."""
        return self.type.base == "Tensor" and self.type.is_list

    @property
    def is_inplace_target(self) -> bool:
        """Whether the op writes to this argument (`Tensor(a!) self`)."""
        return self.type.is_write

    def default_value(self) -> Any:
        """The default as a Python value; SchemaError if there is none or it is malformed.

        Lists become tuples; a single value for a sized list is repeated (`int[2] padding=0`
        is `(0, 0)`); `float` arguments get floats; `Mean`/`Sum` are at::Reduction's 1/2,
        and `None` for a plain `int` is at::Reduction::None, 0; other words stay strings.
        """
        if self.default is None:
            raise SchemaError(f"argument {self.name!r} has no default")
        parser = _Parser(self.default, None)
        _, value = parser.literal()
        parser.end("after the default value")
        return _typed_default(value, self.type, self.default)

    def __str__(self) -> str:
        default = "" if self.default is None else f"={self.default}"
        return f"{self.type} {self.name}{default}"


@dataclasses.dataclass(frozen=True)
class Return:
    """One return: `Tensor`, `Tensor(a!)`, or named as in `Tensor values`."""

    type: Type  # the returned type, including any alias annotation
    name: str | None = None  # the name, if the schema gives one; formulas may use it

    def __str__(self) -> str:
        return str(self.type) if self.name is None else f"{self.type} {self.name}"


@dataclasses.dataclass(frozen=True)
class FunctionSchema:
    """A parsed ATen schema: name, overload, arguments and returns."""

    name: str  # base operator name: 'add', 'acosh_', '_foreach_add'
    overload_name: str  # the part after the dot: 'Tensor' in 'add.Tensor'; '' if none
    arguments: tuple[Argument, ...]  # in schema order; positional ones come first
    returns: tuple[Return, ...]  # in schema order; () for '-> ()'
    returns_tuple: bool = False  # the returns were written in parentheses
    # Written in the old form without `-> returns` (PyTorch before 1.2, `parse_legacy`): the
    # returns are not in the text, one Tensor is assumed (spec.py infers them from the formulas).
    legacy: bool = False

    def __post_init__(self) -> None:
        if not self.returns_tuple and len(self.returns) != 1:
            raise SchemaError(f"{self.full_name}: {len(self.returns)} returns must be written in parentheses")
        kinds = [a.kwarg_only for a in self.arguments]
        if kinds != sorted(kinds):
            raise SchemaError(f"{self.full_name}: keyword-only arguments must follow all positional ones")

    @property
    def full_name(self) -> str:
        """`add.Tensor`, or just `abs` when there is no overload."""
        return f"{self.name}.{self.overload_name}" if self.overload_name else self.name

    @property
    def is_inplace(self) -> bool:
        """Whether the base name marks an in-place op (`acosh_`); dunders like `__and__` do not."""
        dunder = self.name.startswith("__") and self.name.endswith("__")
        return self.name.endswith("_") and not dunder

    @property
    def positional(self) -> tuple[Argument, ...]:
        """The arguments before the `*` marker."""
        return tuple(a for a in self.arguments if not a.kwarg_only)

    @property
    def kwarg_only(self) -> tuple[Argument, ...]:
        """The arguments after the `*` marker."""
        return tuple(a for a in self.arguments if a.kwarg_only)

    @staticmethod
    def parse(text: str, location: Location | None = None) -> FunctionSchema:
        """Parse a schema; SchemaError names the column and what was expected there."""
        parser = _Parser(text, location)
        result = parser.schema()
        parser.check_round_trip(result)
        return result

    @staticmethod
    def parse_legacy(text: str, location: Location | None = None) -> FunctionSchema:
        """Parse a schema of PyTorch 0.4 to 1.1: C++ argument types (`int64_t`, `IntList`,
        `std::array<bool,3>`, LEGACY_TYPES) and no `-> returns`; the modern form is read too.
        Without written returns the result has `legacy=True` and one Tensor return. It prints
        in the modern form, which parses back to it."""
        parser = _Parser(_modern_types(text), location, legacy=True)
        result = parser.schema()
        printed = str(result)
        if FunctionSchema.parse(printed) != dataclasses.replace(result, legacy=False):
            raise SchemaError(f"{text!r} does not round-trip: it prints as {printed!r}", location)
        return result

    def __str__(self) -> str:
        args = []
        for i, arg in enumerate(self.arguments):
            if arg.kwarg_only and (i == 0 or not self.arguments[i - 1].kwarg_only):
                args.append("*")
            args.append(str(arg))
        if self.returns_tuple:
            returns = "(" + ", ".join(map(str, self.returns)) + ")"
        else:
            returns = str(self.returns[0])
        return f"{self.full_name}({', '.join(args)}) -> {returns}"


def _modern_types(text: str) -> str:
    """`text` with the legacy C++ type names of its arguments written as schema types."""
    text = _LEGACY_ARRAY.sub(r"bool[\1]", text)
    open_ = text.find("(")
    if open_ < 0:
        return text
    head, body = text[: open_ + 1], text[open_ + 1 :]

    def one(m: re.Match) -> str:
        lead, word, star = m.group(1), m.group(2), m.group(3)
        key = word + "*" if star else word
        return lead + LEGACY_TYPES[key] if key in LEGACY_TYPES else m.group(0)

    # A type sits at the start of the argument list or after a comma (or after `*,`).
    return head + re.sub(r"((?:^|,)\s*)([A-Za-z_]\w*)\s*(\*)?(?=[\s\[?])", one, body)


def _typed_default(value: Any, type_: Type, text: str) -> Any:
    """Adjust a parsed default literal to the argument's type."""
    if value is None:
        # A plain int cannot be None, so `int reduction=None` names at::Reduction::None.
        plain_int = type_.base in ("int", "SymInt") and not type_.optional and not type_.is_list
        return _REDUCTION_NONE if plain_int else None
    if type_.is_list and not isinstance(value, tuple):
        if type_.size is None:
            raise SchemaError(f"default {text!r} is a single value, but {type_} has no list size to repeat it to")
        value = (value,) * type_.size
    if type_.base == "float":
        # `float p=2` means 2.0; ATen writes float defaults without a point when they are whole.
        if isinstance(value, tuple):
            return tuple(_as_float(v) for v in value)
        return _as_float(value)
    return value


def _as_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


@dataclasses.dataclass(frozen=True)
class _Token:
    kind: str  # 'word', 'number', 'string', 'punct', or 'end' after the last token
    text: str  # exactly as written, quotes included for strings
    pos: int  # 0-based offset into the text


def tokenize(text: str, location: Location | None) -> list[_Token]:
    """Split schema text into tokens, dropping whitespace."""
    tokens = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        start = i
        if c.isspace():
            i += 1
            continue
        if c in _WORD_START:
            while i < n and text[i] in _WORD_CHARS:
                i += 1
            kind = "word"
        elif c in _DIGITS:
            i = _scan_number(text, i, location)
            kind = "number"
        elif c in "\"'":
            i = _scan_string(text, i, location)
            kind = "string"
        elif text.startswith("->", i):
            i += 2
            kind = "punct"
        elif c in _PUNCT:
            i += 1
            kind = "punct"
        else:
            raise SchemaError(f"unexpected character {c!r}", location, i + 1)
        tokens.append(_Token(kind, text[start:i], start))
    tokens.append(_Token("end", "", n))
    return tokens


def _scan_number(text: str, i: int, location: Location | None) -> int:
    """The end of the number starting at `i`: digits, an optional fraction and exponent."""
    start, n = i, len(text)

    def digits(j: int) -> int:
        while j < n and text[j] in _DIGITS:
            j += 1
        return j

    i = digits(i)
    if i < n and text[i] == ".":
        i = digits(i + 1)
    if i < n and text[i] in "eE":
        j = i + 1
        if j < n and text[j] in "+-":
            j += 1
        if j == n or text[j] not in _DIGITS:
            message = f"malformed number {text[start:j]!r}: expected digits after the exponent"
            raise SchemaError(message, location, start + 1)
        i = digits(j)
    if i < n and text[i] in _WORD_CHARS:
        while i < n and text[i] in _WORD_CHARS:
            i += 1
        raise SchemaError(f"malformed number {text[start:i]!r}", location, start + 1)
    return i


def _scan_string(text: str, i: int, location: Location | None) -> int:
    """The end of the quoted string starting at `i`; backslash escapes the next character."""
    quote, j = text[i], i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == quote:
            return j + 1
        else:
            j += 1
    raise SchemaError(f"unterminated string literal, expected a closing {quote}", location, i + 1)


def _describe(tok: _Token) -> str:
    return "end of input" if tok.kind == "end" else repr(tok.text)


class _Parser:
    """Recursive descent over the tokens of one piece of schema text."""

    def __init__(self, text: str, location: Location | None, legacy: bool = False):
        self.text = text
        self.legacy = legacy  # the old form: the returns may be absent
        self.location = location
        self.tokens = tokenize(text, location)
        self.i = 0

    # -- token helpers

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        tok = self.peek()
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    def at(self, punct: str) -> bool:
        tok = self.peek()
        return tok.kind == "punct" and tok.text == punct

    def accept(self, punct: str) -> bool:
        if self.at(punct):
            self.advance()
            return True
        return False

    def fail(self, expected: str, tok: _Token | None = None) -> NoReturn:
        tok = tok or self.peek()
        raise SchemaError(f"{expected}, found {_describe(tok)}", self.location, tok.pos + 1)

    def error(self, message: str, tok: _Token) -> NoReturn:
        raise SchemaError(message, self.location, tok.pos + 1)

    def expect(self, punct: str, context: str) -> None:
        if not self.accept(punct):
            self.fail(f"expected {punct!r} {context}")

    def word(self, what: str) -> _Token:
        if self.peek().kind != "word":
            self.fail(f"expected {what}")
        return self.advance()

    def end(self, context: str) -> None:
        if self.peek().kind != "end":
            self.fail(f"expected end of input {context}")

    def check_round_trip(self, result: object) -> None:
        """Fail unless `result` prints back to the parsed tokens (whitespace aside)."""
        printed = str(result)
        if [t.text for t in tokenize(printed, None)] != [t.text for t in self.tokens]:
            raise SchemaError(f"{self.text!r} does not round-trip: it prints as {printed!r}", self.location)

    # -- grammar

    def schema(self) -> FunctionSchema:
        name = self.word("a function name").text
        overload = self.word("an overload name after '.'").text if self.accept(".") else ""
        self.expect("(", "after the function name")
        arguments = self.arguments()
        if self.legacy and self.peek().kind == "end":
            return FunctionSchema(name, overload, arguments, (Return(Type("Tensor")),), False, legacy=True)
        self.expect("->", "after the argument list")
        returns, as_tuple = self.returns()
        self.end("after the returns")
        return FunctionSchema(name, overload, arguments, returns, as_tuple)

    def arguments(self) -> tuple[Argument, ...]:
        """The arguments after '(', through the closing ')'."""
        args: list[Argument] = []
        if self.accept(")"):
            return ()
        kwarg_only = False
        while True:
            star = self.peek()
            if self.accept("*"):
                if kwarg_only:
                    self.error("'*' may appear only once in an argument list", star)
                kwarg_only = True
                self.expect(",", "after '*', which must be followed by keyword-only arguments")
                continue
            arg, name = self.argument(kwarg_only)
            if any(a.name == arg.name for a in args):
                self.error(f"duplicate argument name {arg.name!r}", name)
            args.append(arg)
            if self.accept(")"):
                return tuple(args)
            if not self.accept(","):
                self.fail(f"expected ',' or ')' after argument {arg.name!r}")

    def argument(self, kwarg_only: bool) -> tuple[Argument, _Token]:
        """`type name[=default]`, and the name's token for error columns."""
        type_ = self.type()
        name = self.word(f"an argument name after the type {str(type_)!r}")
        default = None
        if self.accept("="):
            start = self.peek()
            default, value = self.literal()
            try:
                # Reject defaults that default_value() could not evaluate, with a column.
                _typed_default(value, type_, default)
            except SchemaError as e:
                self.error(e.message, start)
        return Argument(name.text, type_, default, kwarg_only), name

    def returns(self) -> tuple[tuple[Return, ...], bool]:
        """The returns after '->', and whether they were parenthesised."""
        if not self.accept("("):
            return (self.return_(),), False
        rets: list[Return] = []
        if self.accept(")"):
            return (), True
        while True:
            rets.append(self.return_())
            if self.accept(")"):
                return tuple(rets), True
            if not self.accept(","):
                self.fail("expected ',' or ')' in the returns")

    def return_(self) -> Return:
        type_ = self.type()
        name = self.advance().text if self.peek().kind == "word" else None
        return Return(type_, name)

    def type(self) -> Type:
        base = self.word("a type")
        if base.text not in BASE_TYPES:
            self.error(f"unknown type {base.text!r}", base)
        alias = None
        if self.at("("):
            if base.text != "Tensor":
                self.error(f"alias annotations are only allowed on Tensor, not {base.text!r}", self.peek())
            alias = self.alias()
        question = self.accept("?")
        if not self.accept("["):
            type_ = Type(base.text, optional=question, alias=alias)
        else:
            size = None
            if self.peek().kind == "number":
                size_tok = self.advance()
                if not size_tok.text.isdigit():
                    self.error(f"expected a whole number as the list size, found {size_tok.text!r}", size_tok)
                size = int(size_tok.text)
            self.expect("]", "to close the list type")
            type_ = Type(base.text, self.accept("?"), True, size, question, alias)
        if self.at("[") or self.at("?"):
            self.fail(f"expected a name after the type {str(type_)!r} (nested lists are not supported)")
        return type_

    def alias(self) -> str:
        """`(a!)`, `(a)`, `(a -> *)`, `(a|b)` as canonical text without the parentheses."""
        self.expect("(", "to open the alias annotation")
        text = self.alias_set("an alias name")
        if self.accept("!"):
            text += "!"
        if self.accept("->"):
            text += " -> " + ("*" if self.accept("*") else self.alias_set("an alias name or '*' after '->'"))
        self.expect(")", "to close the alias annotation")
        return text

    def alias_set(self, what: str) -> str:
        names = [self.word(what).text]
        while self.accept("|"):
            names.append(self.word("an alias name after '|'").text)
        return "|".join(names)

    def literal(self) -> tuple[str, Any]:
        """A default value: its canonical text and its Python value."""
        if not self.accept("["):
            return self.scalar()
        items: list[tuple[str, Any]] = []
        if not self.accept("]"):
            while True:
                items.append(self.scalar())
                if self.accept("]"):
                    break
                if not self.accept(","):
                    self.fail("expected ',' or ']' in the list default")
        return "[" + ",".join(t for t, _ in items) + "]", tuple(v for _, v in items)

    def scalar(self) -> tuple[str, Any]:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "-" and self.peek(1).kind == "number":
            self.advance()
            text, value = self.scalar()
            return "-" + text, -value
        if tok.kind == "number":
            self.advance()
            is_int = all(c in _DIGITS for c in tok.text)
            return tok.text, int(tok.text) if is_int else float(tok.text)
        if tok.kind == "string":
            self.advance()
            return tok.text, self.unescape(tok)
        if tok.kind == "word":
            self.advance()
            return tok.text, _WORD_VALUES.get(tok.text, tok.text)
        self.fail("expected a default value (a number, string, word or list)")

    def unescape(self, tok: _Token) -> str:
        body, out, i = tok.text[1:-1], [], 0
        while i < len(body):
            if body[i] == "\\":
                # The scanner only closes a string on an unescaped quote, so body[i + 1] exists.
                if body[i + 1] not in _ESCAPES:
                    raise SchemaError(f"unknown escape '\\{body[i + 1]}' in string", self.location, tok.pos + i + 2)
                out.append(_ESCAPES[body[i + 1]])
                i += 2
            else:
                out.append(body[i])
                i += 1
        return "".join(out)
