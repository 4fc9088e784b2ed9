"""Parser fuzzing: over 10,000 generated and mutated formulas, the only exception is a located FormulaError.

Sources: the shipped spec files' formulas with random edits (the inputs most like real ones),
random token streams, random unicode text, deep nesting, huge literals and over-long text.
Every successful parse must also print back to the same tree.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxderiv.errors import FormulaError
from jaxderiv.expr import iter_nodes, to_source
from jaxderiv.grammar import MAX_DEPTH, MAX_LENGTH, parse_formula
from jaxderiv.spec import entries_with_formulas, load_spec, shipped_spec_files

EXAMPLES = 2500  # per test; five tests make 12,500 formulas
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

FORMULAS = sorted({f.text for path in shipped_spec_files() for f in entries_with_formulas(load_spec(path))})
TOKENS = [
    "grad", "self", "result", "at::where", "std::get", "c10::complex", "int64_t", "const", "auto", "return",
    "true", "false", "0", "1", "0.5f", "1e-12", "1e999", "9" * 400, ".5", "0x1F", "08", "1..2", '"mean"', '"',
    "::", "<", ">", ">>", "<<", "(", ")", "[", "]", "{", "}", ",", "?", ":", ";", ".", "->", "-", "+", "*", "/",
    "%", "&", "&&", "|", "||", "^", "!", "~", "=", "==", "/*", "*/", "//", "\n", "\t", "\\", "'", "@", "#", "$",
    "`", "é", "λ", "∂", "\u200b", "\x00", "\ud7ff", "🙂",
]  # fmt: skip


def _parses_or_located_error(text: str) -> None:
    """The contract: a tree that round-trips, or a FormulaError with a column inside the text."""
    try:
        tree = parse_formula(text)
    except FormulaError as err:
        assert err.column is not None and 1 <= err.column <= min(len(text), MAX_LENGTH) + 1, (text, err.column)
        assert str(err.column) in str(err) and err.message
        return
    assert parse_formula(to_source(tree)) == tree
    assert sum(1 for _ in iter_nodes(tree)) <= len(text)  # every node comes from at least one character


@st.composite
def _edited_formula(draw):
    """A shipped formula with 1-4 edits: a character or token deleted, inserted, replaced or a slice doubled."""
    text = draw(st.sampled_from(FORMULAS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 8)))
        edit = draw(st.sampled_from(["delete", "insert", "replace", "double"]))
        piece = draw(st.sampled_from(TOKENS) | st.characters())
        if edit == "delete":
            text = text[:i] + text[j:]
        elif edit == "insert":
            text = text[:i] + piece + text[i:]
        elif edit == "replace":
            text = text[:i] + piece + text[j:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


@FUZZ
@given(_edited_formula())
def test_edited_spec_formulas(text):
    _parses_or_located_error(text)


@FUZZ
@given(
    st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join)
    | st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
)
def test_random_token_streams(text):
    _parses_or_located_error(text)


@FUZZ
@given(st.text(max_size=120))
def test_random_unicode_text(text):
    _parses_or_located_error(text)


@st.composite
def _nested(draw):
    """Brackets, prefix operators, calls, templates and operator chains nested to around MAX_DEPTH, balanced or not."""
    depth = draw(st.integers(0, 2 * MAX_DEPTH))
    opener, closer = draw(
        st.sampled_from(
            [
                ("(", ")"),
                ("[", "]"),
                ("{", "}"),
                ("f(", ")"),
                ("-", ""),
                ("!", ""),
                ("std::get<", ">"),
                ("a + ", ""),
                ("a ? b : ", ""),
            ]
        )
    )
    closing = depth + draw(st.integers(-2, 2)) if closer else 0  # sometimes unbalanced
    return opener * depth + draw(st.sampled_from(["x", "1", "", "(", "]"])) + closer * max(closing, 0)


@FUZZ
@given(_nested())
def test_deep_nesting_is_bounded(text):
    _parses_or_located_error(text)


@FUZZ
@given(
    st.integers(0, 5000),
    st.sampled_from(["9", "x", "grad * ", '"a', "(", "0.5f + "]),
    st.sampled_from(["", ")", '"', "1"]),
)
def test_huge_literals_and_long_text(n, unit, tail):
    """Long repeats, past MAX_LENGTH when unit * n is long enough: rejected, never slow or crashing."""
    text = unit * (n if len(unit) * n <= MAX_LENGTH else MAX_LENGTH // len(unit) + 1) + tail
    _parses_or_located_error(text)
