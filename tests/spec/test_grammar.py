"""Tests of the formula grammar (tokenizer, Pratt parser) and of the printer's round trip."""

from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxderiv.errors import FormulaError
from jaxderiv.expr import (
    Attr,
    Binary,
    Bool,
    BraceList,
    Call,
    Index,
    Lambda,
    Name,
    Num,
    Str,
    Template,
    Ternary,
    Unary,
    iter_nodes,
    to_source,
)
from jaxderiv.grammar import MAX_DEPTH, MAX_LENGTH, parse_formula

FORMULAS = pathlib.Path(__file__).resolve().parents[2] / "formulas"
NOT_FORMULAS = {"name", "output_differentiability", "non_differentiable", "dispatch"}
NOT_PARSED = {"auto_element_wise", "auto_linear"}  # markers, not expressions

a, b, c, d, e, x = (Name(n) for n in "abcdex")


def call(func, *args):
    return Call(Name(func) if isinstance(func, str) else func, tuple(args))


def method(obj, name, *args):
    return Call(Attr(obj, name), tuple(args))


# --- precedence and associativity ----------------------------------------------


@pytest.mark.parametrize(
    "text, tree",
    [
        ("a + b * c", Binary("+", a, Binary("*", b, c))),
        ("a * b + c", Binary("+", Binary("*", a, b), c)),
        ("-a * b", Binary("*", Unary("-", a), b)),
        ("a - b - c", Binary("-", Binary("-", a, b), c)),
        ("a / b / c", Binary("/", Binary("/", a, b), c)),
        ("a - (b - c)", Binary("-", a, Binary("-", b, c))),
        ("a ? b : c ? d : e", Ternary(a, b, Ternary(c, d, e))),
        ("a ? b ? c : d : e", Ternary(a, Ternary(b, c, d), e)),
        ("!a && b || c", Binary("||", Binary("&&", Unary("!", a), b), c)),
        ("a || b && c", Binary("||", a, Binary("&&", b, c))),
        ("a | b ^ c & d", Binary("|", a, Binary("^", b, Binary("&", c, d)))),
        ("a == b < c", Binary("==", a, Binary("<", b, c))),
        ("a < b << c", Binary("<", a, Binary("<<", b, c))),
        ("a << b + c", Binary("<<", a, Binary("+", b, c))),
        ("a >> b", Binary(">>", a, b)),
        ("a % b * c", Binary("*", Binary("%", a, b), c)),
        ("a + b ? c : d", Ternary(Binary("+", a, b), c, d)),
        ("-a.b()", Unary("-", method(a, "b"))),
        ("!*a", Unary("!", Unary("*", a))),
        ("- -a", Unary("-", Unary("-", a))),
        ("a - -b", Binary("-", a, Unary("-", b))),
    ],
)
def test_precedence(text, tree):
    assert parse_formula(text) == tree


@pytest.mark.parametrize(
    "text, tree",
    [
        ("self < min", Binary("<", Name("self"), Name("min"))),
        ("a < b ? x : e", Ternary(Binary("<", a, b), x, e)),
        ("a < b > c", Binary(">", Binary("<", a, b), c)),
        ("a < b && c > d", Binary("&&", Binary("<", a, b), Binary(">", c, d))),
        ("a < b >> c", Binary("<", a, Binary(">>", b, c))),
        ("where(self < min, grad, x)", call("where", Binary("<", Name("self"), Name("min")), Name("grad"), x)),
        ("a<b>(c)", call(Template(a, (b,)), c)),
        ("a < b < c > (d)", Binary("<", a, call(Template(b, (c,)), d))),
        ("a < b * c > (d)", Binary(">", Binary("<", a, Binary("*", b, c)), d)),
        ("std::get<0>(t) < 1", Binary("<", call(Template(Name("std::get"), (Num("0", 0),)), Name("t")), Num("1", 1))),
    ],
)
def test_less_than_or_template(text, tree):
    assert parse_formula(text) == tree


# --- every construct --------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [("2", 2), ("0", 0), ("010", 8), ("0.", 0.0), (".5", 0.5), ("1e-12", 1e-12), ("0.5f", 0.5)]
    + [("1.0e+3", 1000.0), ("2.0f", 2.0)],
)
def test_numbers_keep_their_text(text, value):
    node = parse_formula(text)
    assert node == Num(text, value) and type(node.value) is type(value)


def test_negative_literal_is_unary_minus():
    assert parse_formula("-1") == Unary("-", Num("1", 1))


def test_bools_strings_and_names():
    assert parse_formula("true") == Bool(True)
    assert parse_formula("false") == Bool(False)
    assert parse_formula('"inplace version of acosh"') == Str("inplace version of acosh")
    assert parse_formula(r'"a\"b\\c\n\t\0"') == Str('a"b\\c\n\t\0')
    names = ["grad", "at::where", "std::get", "c10::complex", "GradMode::is_enabled", "at::Reduction::Mean", "::foo"]
    for name in names:
        assert parse_formula(name) == Name(name)
    assert parse_formula("at :: where") == Name("at::where")


def test_calls_members_and_indexing():
    assert parse_formula("f(a, b)") == call("f", a, b)
    assert parse_formula("f()") == call("f")
    assert parse_formula("x.sgn()") == method(x, "sgn")
    assert parse_formula("x.sizes") == Attr(x, "sizes")
    nested_sizes = Attr(call("impl", Name("self")), "get_nested_sizes", arrow=True)
    assert parse_formula("impl(self)->get_nested_sizes()") == Call(nested_sizes, ())
    assert parse_formula("grads[0]") == Index(Name("grads"), Num("0", 0))
    assert parse_formula("grads[0].conj()[1]") == Index(method(Index(Name("grads"), Num("0", 0)), "conj"), Num("1", 1))
    assert parse_formula("*dtype") == Unary("*", Name("dtype"))
    assert parse_formula("&x") == Unary("&", x)
    assert parse_formula("~a + +b") == Binary("+", Unary("~", a), Unary("+", b))


def test_brace_lists():
    assert parse_formula("{}") == BraceList(())
    assert parse_formula("{a, b}") == BraceList((a, b))
    assert parse_formula("f({a, {b}})") == call("f", BraceList((a, BraceList((b,)))))
    assert parse_formula("Type{a}") == BraceList((a,), Name("Type"))
    complex_double = Template(Name("c10::complex"), (Name("double"),))
    zero_one = (Num("0.0", 0.0), Num("1.0", 1.0))
    assert parse_formula("c10::complex<double>{0.0, 1.0}") == BraceList(zero_one, complex_double)
    vector = Template(Name("std::vector"), (Name("int64_t"),))
    assert parse_formula("std::vector<int64_t>{1,2}") == BraceList((Num("1", 1), Num("2", 2)), vector)


@pytest.mark.parametrize(
    "text, func",
    [
        ("std::get<0>(t)", Template(Name("std::get"), (Num("0", 0),))),
        ("std::tuple<Tensor, Tensor>(t)", Template(Name("std::tuple"), (Name("Tensor"), Name("Tensor")))),
        ("static_cast<int64_t>(t)", Template(Name("static_cast"), (Name("int64_t"),))),
        ("at::ArrayRef<int64_t>(t)", Template(Name("at::ArrayRef"), (Name("int64_t"),))),
        ("std::optional<c10::SymInt>(t)", Template(Name("std::optional"), (Name("c10::SymInt"),))),
        ("static_cast<unsigned long long>(t)", Template(Name("static_cast"), (Name("unsigned long long"),))),
        ("f<const at::Tensor &, T*>(t)", Template(Name("f"), (Name("const at::Tensor&"), Name("T*")))),
        ("f<>(t)", Template(Name("f"), ())),
        (
            "std::vector<std::tuple<int, int>>(t)",
            Template(Name("std::vector"), (Template(Name("std::tuple"), (Name("int"), Name("int"))),)),
        ),
        ("std::numeric_limits<double>::max(t)", Name("std::numeric_limits<double>::max")),
    ],
)
def test_templates(text, func):
    assert parse_formula(text) == call(func, Name("t"))


def test_lambdas():
    assert parse_formula("[](int64_t i){return -i;}") == Lambda("", (("int64_t", "i"),), Unary("-", Name("i")))
    assert parse_formula("[&](const Tensor& t) { return t.conj(); }") == Lambda(
        "&", (("const Tensor&", "t"),), method(Name("t"), "conj")
    )
    assert parse_formula("[=, &a, this]() { return 1 }") == Lambda("=, &a, this", (), Num("1", 1))
    fmap = parse_formula("fmap(reverse_list_symint(shifts), [](c10::SymInt i){return -i;})")
    assert fmap.args[1] == Lambda("", (("c10::SymInt", "i"),), Unary("-", Name("i")))


def test_comments_are_skipped():
    tree = parse_formula("grad.to(self.options(), /*non_blocking*/false, /*copy*/false)")
    assert tree == method(Name("grad"), "to", method(Name("self"), "options"), Bool(False), Bool(False))
    assert parse_formula("a + // the rest of the line\n b") == Binary("+", a, b)
    assert parse_formula("a /* x * y */ * b") == Binary("*", a, b)


def test_columns():
    tree = parse_formula("grad * f(x.y, -b)")
    assert tree.col == 1 and tree.right.col == 8
    assert [n.col for n in tree.right.args] == [10, 15]
    assert tree.right.args[1].operand.col == 16


def test_iter_nodes_is_pre_order():
    tree = parse_formula("f(a + b, -c)")
    assert list(iter_nodes(tree)) == [tree, Name("f"), Binary("+", a, b), a, b, Unary("-", c), c]


def test_to_source_inserts_only_needed_parentheses():
    assert to_source(parse_formula("(a + b) * (c)")) == "(a + b) * c"
    assert to_source(parse_formula("((a)) - (b - c)")) == "a - (b - c)"
    assert to_source(parse_formula("(-a).f()")) == "(-a).f()"
    assert to_source(parse_formula("(a ? b : c) ? d : e")) == "(a ? b : c) ? d : e"
    assert to_source(parse_formula("- (-a)")) == "- -a"
    assert to_source(parse_formula("(1).f()")) == "(1).f()"
    # Without the parentheses around `a < b` this would read back as `a<b>(c < d)`.
    assert to_source(parse_formula("(a < b) > (c < d)")) == "(a < b) > (c < d)"


# --- errors and limits -------------------------------------------------------------


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("", 1, "expected an expression, found end of formula"),
        ("   ", 4, "expected an expression, found end of formula"),
        ("f(a, (b", 8, "expected ')' to close '(' opened at column 6, found end of formula"),
        ("f(a, b", 7, "expected ',' or ')' to close '(' opened at column 2, found end of formula"),
        ("f(a))", 5, "expected an operator or end of formula, found ')'"),
        ("a b", 3, "expected an operator or end of formula, found name 'b'"),
        ("{a, b", 6, "expected ',' or '}' to close '{' opened at column 1"),
        ("x[0", 4, "expected ']' to close '[' opened at column 2"),
        ("a ? b", 6, "expected ':' to complete '?' at column 3"),
        ("a +", 4, "expected an expression, found end of formula"),
        ("a + * ", 7, "expected an expression"),
        ("f(,)", 3, "expected an expression, found ','"),
        ("x.", 3, "expected a member name after '.'"),
        ("x->1", 4, "expected a member name after '->', found number 1"),
        ("a::", 4, "expected a name after '::'"),
        ("a @ b", 3, "found character '@'"),
        ("$x", 1, "found character '$'"),
        ("#x", 1, "found character '#'"),
        ("x + `y`", 5, "found character '`'"),
        ("x + é", 5, "non-ASCII character 'é' (U+00E9)"),
        ("x +\x07", 4, "control character U+0007"),
        ('f("abc)', 3, "expected '\"' to close the string, found end of formula"),
        ('"a\\qb"', 3, "found '\\q'"),
        ('"é"', 2, "expected a printable ASCII character in the string"),
        ("a /* b", 3, "expected '*/' to close the comment"),
        ("1.2.3", 1, "malformed number '1.2.3'"),
        ("08", 1, "malformed number '08'"),
        ("2x", 1, "malformed number '2x'"),
        ("a > > b", 5, "expected an expression, found '>'"),
        ("&&a", 1, "expected an expression, found '&&'"),
        ("a; b", 2, "found ';'"),
        ("[](int i){ i; }", 12, "expected 'return' in the lambda's body, found name 'i'"),
        ("[](int){return 1;}", 7, "expected a parameter name, found ')'"),
        ("[](+ i){return 1;}", 4, "expected a parameter type, found '+'"),
        ("[a b](){return 1;}", 4, "expected ']' to close '[' opened at column 1"),
        ("[](){return 1;", 15, "expected '}' to close '{' opened at column 5"),
    ],
)
def test_errors_say_what_and_where(text, column, message):
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    assert info.value.column == column
    assert message in info.value.message


def test_length_limit():
    assert parse_formula("x" * MAX_LENGTH) == Name("x" * MAX_LENGTH)
    with pytest.raises(FormulaError, match=f"at most {MAX_LENGTH} characters") as info:
        parse_formula("x" * (MAX_LENGTH + 1))
    assert info.value.column == MAX_LENGTH + 1


NESTINGS = {
    "parentheses": lambda n: "(" * n + "x" + ")" * n,
    "calls": lambda n: "f(" * n + "x" + ")" * n,
    "indexing": lambda n: "a[" * n + "x" + "]" * n,
    "unary": lambda n: "-" * n + "x",
    "braces": lambda n: "{" * n + "x" + "}" * n,
    "typed braces": lambda n: "T{" * n + "x" + "}" * n,
    "lambdas": lambda n: "[](int i){return " * n + "x" + "}" * n,
    "ternaries": lambda n: "a ? b : " * n + "x",
    "operator chain": lambda n: "x" + " + x" * n,
    "method chain": lambda n: "x" + ".f()" * (n // 2) + ".g" * (n % 2),
    "templates": lambda n: "f" + "<g" * (n - 2) + "<int" + ">" * (n - 1) + "(x)",  # Call and Template add a level
}


@pytest.mark.parametrize("kind", NESTINGS)
def test_depth_limit(kind):
    deepest = parse_formula(NESTINGS[kind](MAX_DEPTH))
    assert parse_formula(to_source(deepest)) == deepest
    with pytest.raises(FormulaError, match=f"at most {MAX_DEPTH} levels of nesting") as info:
        parse_formula(NESTINGS[kind](MAX_DEPTH + 1))
    assert info.value.column is not None


def test_huge_nesting_is_a_formula_error_not_recursion_error():
    for make in NESTINGS.values():
        with pytest.raises(FormulaError):
            parse_formula(make(MAX_LENGTH // 20))


# --- every formula of the spec files -------------------------------------------------


def _entry_formulas(entries):
    """Formula strings of parsed derivatives.yaml entries, `dispatch:` blocks included."""
    formulas = []
    for entry in entries:
        for key, value in entry.items():
            if key == "dispatch":
                formulas += [f for block in value.values() for k, f in block.items() if k not in NOT_FORMULAS]
            elif key not in NOT_FORMULAS:
                formulas.append(value)
    return [f.strip() for f in formulas if f.strip() not in NOT_PARSED]


def _v1_7_formulas():
    _, canonical_yaml = (FORMULAS / "derivatives_v1_7.yaml").read_text().split("\n", 1)  # line 1 is a title
    return _entry_formulas(yaml.safe_load(canonical_yaml))


def _v1_10_flat_formulas():
    """`key: value` lines; the file lost its indentation, so it is not read as YAML."""
    formulas = []
    for line in (FORMULAS / "derivatives_v1_10_flat.yaml").read_text().splitlines():
        match = re.fullmatch(r"(?:- )?(\w+(?:\s*,\s*\w+)*):\s*(.*)", line.strip())
        if line.startswith("#") or not match or match[1] in NOT_FORMULAS or not match[2]:
            continue
        value = match[2].strip()
        if value[0] in "\"'":  # a YAML-quoted scalar: the formula is inside the quotes
            value = yaml.safe_load(value)
        if value not in NOT_PARSED:
            formulas.append(value)
    return formulas


def _torch_formulas():
    spec = importlib.util.find_spec("torchgen")
    if spec is None:
        pytest.skip("torchgen is not installed")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "packaged" / "autograd" / "derivatives.yaml"
    return _entry_formulas(yaml.safe_load(path.read_text()))


@pytest.mark.parametrize("load", [_v1_7_formulas, _v1_10_flat_formulas, _torch_formulas])
def test_every_spec_formula_parses_and_round_trips(load):
    formulas = load()
    assert len(formulas) > 300  # the extraction found the file's formulas
    failures = []
    for text in formulas:
        try:
            tree = parse_formula(text)
            if parse_formula(to_source(tree)) != tree:
                failures.append((text, f"round trip gave {to_source(tree)!r}"))
        except FormulaError as err:
            failures.append((text, str(err)))
    assert failures == []


# --- fuzzing ---------------------------------------------------------------------

TOKENS = ["a", "b1", "std::get", "const", "int", "return", "true", "0", "1.5f", ".5", '"s"', "::", "<", ">", ">>",
          "(", ")", "[", "]", "{", "}", ",", "?", ":", ";", ".", "->", "-", "+", "*", "&", "&&", "!", "/*", "*/",
          "//", "\n", "@", "é", '"', "\\", "'"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(st.sampled_from(TOKENS), max_size=30).map(" ".join)))
def test_random_text_only_raises_formula_error(text):
    try:
        tree = parse_formula(text)
    except FormulaError as err:
        assert err.column is not None and 1 <= err.column <= len(text) + 1
    else:
        assert parse_formula(to_source(tree)) == tree


def _trees():
    """Random trees of the shapes the parser produces."""
    names = st.sampled_from(["a", "b", "x_t", "at::where", "::f", "std::get"]).map(Name)
    ints = st.integers(0, 999).map(lambda v: Num(str(v), v))
    floats = st.sampled_from(["0.5", "1e-12", "0.", ".5", "2.0f"]).map(lambda t: Num(t, float(t.rstrip("f"))))
    strings = st.text(st.sampled_from(list('ab "\\\n\t\0')), max_size=5).map(Str)
    leaves = names | ints | floats | strings | st.booleans().map(Bool)
    template_args = st.lists(names | ints | st.sampled_from(["const Tensor&", "unsigned long"]).map(Name), max_size=2)
    templates = st.builds(Template, names, template_args.map(tuple))

    def extend(inner):
        args = st.lists(inner, max_size=2).map(tuple)
        return st.one_of(
            st.builds(Unary, st.sampled_from(["-", "+", "!", "~", "*", "&"]), inner),
            st.builds(
                Binary,
                st.sampled_from(
                    ["*", "/", "%", "+", "-", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&", "^", "|", "&&", "||"]
                ),
                inner,
                inner,
            ),  # fmt: skip
            st.builds(Ternary, inner, inner, inner),
            st.builds(Call, inner | templates, args),
            st.builds(Attr, inner, st.sampled_from(["sgn", "size"]), st.booleans()),
            st.builds(Index, inner, inner),
            st.builds(BraceList, args, st.none() | names | templates),
            st.builds(Lambda, st.sampled_from(["", "&", "=, &a"]), st.just((("const Tensor&", "t"),)), inner),
        )

    return st.recursive(leaves, extend, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_trees())
def test_printed_trees_parse_back_equal(tree):
    assert parse_formula(to_source(tree)) == tree
