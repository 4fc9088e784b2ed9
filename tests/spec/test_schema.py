"""Tests for jaxderiv.schema: every schema in the spec files round-trips, and each form parses."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxderiv.errors import Location, SchemaError
from jaxderiv.schema import BASE_TYPES, Argument, FunctionSchema, Return, Type, tokenize

FORMULAS = Path(__file__).resolve().parents[2] / "formulas"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the packaged native_functions.yaml is big


# -- the spec files


def _v1_7_names() -> list[str]:
    # The file opens with a line that is only the word `derivatives.yaml`; the rest is YAML.
    text = (FORMULAS / "derivatives_v1_7.yaml").read_text()
    first, rest = text.split("\n", 1)
    assert first.strip() == "derivatives.yaml"
    return [entry["name"] for entry in yaml.safe_load(rest)]


def _v1_10_flat_names() -> list[str]:
    prefix = "- name: "
    lines = (FORMULAS / "derivatives_v1_10_flat.yaml").read_text().splitlines()
    return [line[len(prefix) :] for line in lines if line.startswith(prefix)]


def _torchgen_file(*parts: str) -> Path:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torchgen is not installed")
    path = Path(next(iter(spec.submodule_search_locations)), "packaged", *parts)
    if not path.exists():
        pytest.skip(f"torchgen has no {path}")
    return path


def _torch_derivatives_names() -> list[str]:
    path = _torchgen_file("autograd", "derivatives.yaml")
    return [entry["name"] for entry in yaml.load(path.read_text(), Loader=_LOADER)]


def _native_functions_funcs() -> list[str]:
    path = _torchgen_file("ATen", "native", "native_functions.yaml")
    return [entry["func"] for entry in yaml.load(path.read_text(), Loader=_LOADER)]


CORPORA = {
    "derivatives_v1_7": _v1_7_names,
    "derivatives_v1_10_flat": _v1_10_flat_names,
    "torch_derivatives": _torch_derivatives_names,
    "native_functions": _native_functions_funcs,
}
# The local files are fixed; the counts guard against a loader that silently reads nothing.
EXPECTED_COUNTS = {"derivatives_v1_7": 486, "derivatives_v1_10_flat": 199}


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_schema_round_trips(corpus):
    names = CORPORA[corpus]()
    assert len(names) == EXPECTED_COUNTS.get(corpus, len(names)) and names
    failures = []
    for text in names:
        try:
            printed = str(FunctionSchema.parse(text))
        except SchemaError as e:
            failures.append(f"{text}: {e}")
            continue
        if printed != text:
            failures.append(f"{text}: prints as {printed}")
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_default_has_a_value(corpus):
    for text in CORPORA[corpus]():
        for arg in FunctionSchema.parse(text).arguments:
            if arg.default is not None:
                arg.default_value()  # raises SchemaError if it cannot


@pytest.mark.parametrize("corpus", ["torch_derivatives", "native_functions"])
def test_agrees_with_torchgen(corpus):
    model = pytest.importorskip("torchgen.model")
    for text in CORPORA[corpus]():
        ours, theirs = FunctionSchema.parse(text), model.FunctionSchema.parse(text)
        assert ours.full_name == str(theirs.name)
        assert [str(a) for a in ours.positional] == [str(a) for a in theirs.arguments.flat_positional]
        kwarg_only = list(theirs.arguments.flat_kwarg_only) + list(theirs.arguments.out)
        assert [str(a) for a in ours.kwarg_only] == [str(a) for a in kwarg_only]
        assert [str(r) for r in ours.returns] == [str(r) for r in theirs.returns]
        assert [r.name for r in ours.returns] == [r.name for r in theirs.returns]
        if not ours.name.startswith("__"):  # torchgen counts `__iand__` as in-place; we do not
            assert ours.is_inplace == theirs.name.name.inplace
        for arg in ours.arguments:
            assert arg.is_inplace_target == (arg.name in {a.name for a in theirs.arguments.flat_all if a.is_write})


# -- names and properties


def test_add_tensor():
    s = FunctionSchema.parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert (s.name, s.overload_name, s.full_name) == ("add", "Tensor", "add.Tensor")
    assert [a.name for a in s.positional] == ["self", "other"]
    assert [a.name for a in s.kwarg_only] == ["alpha"]
    assert s.arguments[2] == Argument("alpha", Type("Scalar"), "1", kwarg_only=True)
    assert s.returns == (Return(Type("Tensor")),)
    assert not s.returns_tuple and not s.is_inplace


def test_no_overload_and_underscored_names():
    assert FunctionSchema.parse("abs(Tensor self) -> Tensor").full_name == "abs"
    s = FunctionSchema.parse("_foreach_add.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]")
    assert (s.name, s.overload_name, s.full_name) == ("_foreach_add", "Scalar", "_foreach_add.Scalar")
    assert s.arguments[0].is_tensor_list and not s.arguments[0].is_tensor


@pytest.mark.parametrize(
    "text, inplace",
    [
        ("acosh_(Tensor(a!) self) -> Tensor(a!)", True),
        ("_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()", True),
        ("acosh(Tensor self) -> Tensor", False),
        ("__and__.Tensor(Tensor self, Tensor other) -> Tensor", False),
        ("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", False),
    ],
)
def test_is_inplace(text, inplace):
    assert FunctionSchema.parse(text).is_inplace is inplace


def test_kwarg_only_arguments():
    s = FunctionSchema.parse(
        "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"
    )
    assert [a.name for a in s.positional] == ["self"]
    kwargs = ["dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format"]
    assert [a.name for a in s.kwarg_only] == kwargs
    assert all(a.kwarg_only for a in s.kwarg_only)
    only_kw = FunctionSchema.parse("f(*, Tensor(a!) out) -> Tensor(a!)")
    assert only_kw.positional == () and only_kw.kwarg_only[0].is_inplace_target
    assert str(only_kw) == "f(*, Tensor(a!) out) -> Tensor(a!)"
    assert FunctionSchema.parse("f() -> Tensor").arguments == ()


# -- types


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Tensor", Type("Tensor")),
        ("Tensor?", Type("Tensor", optional=True)),
        ("Tensor[]", Type("Tensor", is_list=True)),
        ("Tensor?[]", Type("Tensor", is_list=True, elem_optional=True)),
        ("int[2]", Type("int", is_list=True, size=2)),
        ("int[1]?", Type("int", optional=True, is_list=True, size=1)),
        ("int[]?", Type("int", optional=True, is_list=True)),
        ("SymInt[]", Type("SymInt", is_list=True)),
        ("SymInt[1]", Type("SymInt", is_list=True, size=1)),
        ("bool[3]", Type("bool", is_list=True, size=3)),
        ("float[]?", Type("float", optional=True, is_list=True)),
        ("Scalar?", Type("Scalar", optional=True)),
        ("str?", Type("str", optional=True)),
        ("ScalarType?", Type("ScalarType", optional=True)),
        ("MemoryFormat", Type("MemoryFormat")),
        ("Generator?", Type("Generator", optional=True)),
        ("Dimname[]", Type("Dimname", is_list=True)),
        ("Tensor(a!)", Type("Tensor", alias="a!")),
        ("Tensor(a)", Type("Tensor", alias="a")),
        ("Tensor(a -> *)", Type("Tensor", alias="a -> *")),
        ("Tensor(a)[]", Type("Tensor", is_list=True, alias="a")),
        ("Tensor(a!)[]", Type("Tensor", is_list=True, alias="a!")),
        ("Tensor(a!)?", Type("Tensor", optional=True, alias="a!")),
        ("Tensor(a|b)", Type("Tensor", alias="a|b")),
    ],
)
def test_type_forms(text, expected):
    assert Type.parse(text) == expected
    assert str(expected) == text


def test_alias_writability():
    assert Type.parse("Tensor(a!)").is_write and Type.parse("Tensor(b!)[]").is_write
    assert not Type.parse("Tensor(a)").is_write and not Type.parse("Tensor(a -> *)").is_write
    assert not Type.parse("Tensor").is_write


def test_every_base_type_parses():
    for base in BASE_TYPES:
        assert Type.parse(base) == Type(base)


def test_argument_kinds():
    s = FunctionSchema.parse(
        "f(Tensor a, Tensor? b, Tensor[] c, Tensor?[] d, Tensor(a!) e, Tensor(b!)[] g, int h) -> Tensor"
    )
    a, b, c, d, e, g, h = s.arguments
    assert a.is_tensor and b.is_tensor and e.is_tensor
    assert not (c.is_tensor or d.is_tensor or h.is_tensor)
    assert c.is_tensor_list and d.is_tensor_list and g.is_tensor_list and not a.is_tensor_list
    assert e.is_inplace_target and g.is_inplace_target and not a.is_inplace_target


# -- returns


def test_tuple_returns_with_names():
    s = FunctionSchema.parse(
        "linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)"
    )
    assert s.returns_tuple
    assert s.returns == (Return(Type("Tensor"), "L"), Return(Type("Tensor"), "info"))


def test_unnamed_and_aliased_returns():
    s = FunctionSchema.parse("max_pool2d_with_indices(Tensor self, int[2] kernel_size) -> (Tensor, Tensor)")
    assert [r.name for r in s.returns] == [None, None]
    s = FunctionSchema.parse(
        "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) "
        "-> (Tensor(a!) values, Tensor(b!) indices)"
    )
    assert [(r.type.alias, r.name) for r in s.returns] == [("a!", "values"), ("b!", "indices")]
    s = FunctionSchema.parse("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
    assert s.arguments[0].type.alias == "a -> *"
    assert s.returns == (Return(Type("Tensor", is_list=True, alias="a")),)


def test_empty_and_parenthesised_single_returns():
    s = FunctionSchema.parse("_foreach_zero_(Tensor(a!)[] self) -> ()")
    assert s.returns == () and s.returns_tuple
    assert str(s).endswith("-> ()")
    one = FunctionSchema.parse("f(Tensor self) -> (Tensor out)")
    assert one.returns_tuple and one.returns == (Return(Type("Tensor"), "out"),)
    assert str(one) == "f(Tensor self) -> (Tensor out)"
    assert FunctionSchema.parse("f(Tensor self) -> int").returns == (Return(Type("int")),)


# -- defaults


def _default(decl: str):
    arg = FunctionSchema.parse(f"f({decl}) -> Tensor").arguments[0]
    return arg.default, arg.default_value()


@pytest.mark.parametrize(
    "decl, text, value",
    [
        ("Scalar alpha=1", "1", 1),
        ("Scalar? min=None", "None", None),
        ("bool keepdim=False", "False", False),
        ("bool upper=True", "True", True),
        ("float eps=1e-05", "1e-05", 1e-05),
        ("float p=2", "2", 2.0),
        ("float negative_slope=0.01", "0.01", 0.01),
        ("SymInt ignore_index=-100", "-100", -100),
        ("int dim=-1", "-1", -1),
        ("int[1]? dim=None", "None", None),
        ("int[]? dim=None", "None", None),
        ("SymInt[1] dim=[]", "[]", ()),
        ("int[2] stride=[]", "[]", ()),
        ("int[2] padding=0", "0", (0, 0)),
        ("int[3] dilation=1", "1", (1, 1, 1)),
        ("int[1] dim=[0,1]", "[0,1]", (0, 1)),
        ("int[] dims=[-2,-1]", "[-2,-1]", (-2, -1)),
        ('str reduce="mean"', '"mean"', "mean"),
        ("str p='fro'", "'fro'", "fro"),
        ('str s=""', '""', ""),
        ("str? reduce=None", "None", None),
        ("int reduction=Mean", "Mean", 1),
        ("int reduction=Sum", "Sum", 2),
        ("int reduction=None", "None", 0),
        ("MemoryFormat? memory_format=contiguous_format", "contiguous_format", "contiguous_format"),
        ("ScalarType dtype=long", "long", "long"),
        ("ScalarType dtype=float", "float", "float"),
        ("Generator? generator=None", "None", None),
        ("Tensor? weight=None", "None", None),
        ("float[]? scale_factors=None", "None", None),
    ],
)
def test_default_values(decl, text, value):
    got_text, got_value = _default(decl)
    assert got_text == text
    assert got_value == value and type(got_value) is type(value)


def test_string_default_escapes():
    s = FunctionSchema.parse("""f(str a="\\"'\\\\", str b='"\\'\\\\') -> Tensor""")
    assert [a.default_value() for a in s.arguments] == ["\"'\\", "\"'\\"]


def test_other_words_stay_text():
    # Words other than True/False/None/Mean/Sum are enum-like names, returned as written.
    assert _default("Layout layout=strided") == ("strided", "strided")


def test_default_value_errors():
    with pytest.raises(SchemaError, match="has no default"):
        Argument("x", Type("int")).default_value()
    with pytest.raises(SchemaError, match="column 3: expected end of input after the default value, found .2."):
        Argument("x", Type("int"), "1 2").default_value()
    with pytest.raises(SchemaError, match="no list size"):
        Argument("x", Type("int", is_list=True), "3").default_value()
    with pytest.raises(SchemaError, match="unterminated string"):
        Argument("x", Type("str"), '"abc').default_value()


def test_float_defaults_are_exact():
    assert math.isclose(_default("float eps=1e-15")[1], 1e-15)


# -- whitespace and construction


@pytest.mark.parametrize(
    "text",
    [
        "add.Tensor( Tensor self ,Tensor other , * , Scalar alpha = 1 )->Tensor",
        "  add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)  ->  Tensor\n",
        "add . Tensor(Tensor\tself, Tensor other, *, Scalar alpha=1) -> Tensor",
    ],
)
def test_whitespace_is_normalised(text):
    canonical = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert str(FunctionSchema.parse(text)) == canonical


def test_spacing_inside_types_and_defaults():
    s = FunctionSchema.parse("f(Tensor ( a -> * ) self, int [ 2 ] k = [ 0 , - 1 ]) -> Tensor( a ) [ ]")
    assert str(s) == "f(Tensor(a -> *) self, int[2] k=[0,-1]) -> Tensor(a)[]"
    assert s.arguments[1].default_value() == (0, -1)


def test_non_canonical_tokens_fail_the_round_trip():
    with pytest.raises(SchemaError, match="does not round-trip"):
        FunctionSchema.parse("f(int[02] k) -> Tensor")


def test_printed_dataclasses():
    arg = Argument("padding", Type("int", is_list=True, size=2), "0")
    assert str(arg) == "int[2] padding=0"
    assert str(Return(Type("Tensor", alias="a!"), "out")) == "Tensor(a!) out"
    s = FunctionSchema("f", "", (Argument("self", Type("Tensor")), dataclasses.replace(arg, kwarg_only=True)), (), True)
    assert str(s) == "f(Tensor self, *, int[2] padding=0) -> ()"


def test_dataclasses_are_frozen_and_checked():
    t = Type("Tensor")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.optional = True  # type: ignore[misc]
    with pytest.raises(SchemaError):
        Type("int", size=2)  # a size needs a list
    with pytest.raises(SchemaError):
        Type("int", alias="a")
    with pytest.raises(SchemaError, match="parentheses"):
        FunctionSchema("f", "", (), (Return(t), Return(t)))
    with pytest.raises(SchemaError, match="keyword-only"):
        FunctionSchema("f", "", (Argument("a", t, kwarg_only=True), Argument("b", t)), (Return(t),))


# -- errors


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("abs(Tensor self) Tensor", 18, "expected '->' after the argument list, found 'Tensor'"),
        ("abs(Tensor self)", 17, "expected '->' after the argument list, found end of input"),
        ("abs(Tensor self -> Tensor", 17, "expected ',' or ')' after argument 'self', found '->'"),
        ("abs(Tensor self)) -> Tensor", 17, "expected '->' after the argument list, found ')'"),
        ("abs Tensor self) -> Tensor", 5, "expected '(' after the function name, found 'Tensor'"),
        ("abs(Tensor self) -> (Tensor, Tensor", 36, "expected ',' or ')' in the returns, found end of input"),
        ("abs(Tensor self) -> Tensor)", 27, "expected end of input after the returns, found ')'"),
        ("abs(Tensor(a! self) -> Tensor", 15, "expected ')' to close the alias annotation, found 'self'"),
        ("abs(Tensr self) -> Tensor", 5, "unknown type 'Tensr'"),
        ("abs(Tensor self, int(a) k) -> Tensor", 21, "alias annotations are only allowed on Tensor, not 'int'"),
        ("abs(Tensor self, int[2.5] k) -> Tensor", 22, "expected a whole number as the list size, found '2.5'"),
        ("abs(Tensor self, int[][] k) -> Tensor", 23, "nested lists are not supported"),
        ("abs(Tensor self, int[2 k) -> Tensor", 24, "expected ']' to close the list type, found 'k'"),
        ("abs(Tensor self, Tensor) -> Tensor", 24, "expected an argument name after the type 'Tensor', found ')'"),
        ("abs(Tensor self, ) -> Tensor", 18, "expected a type, found ')'"),
        ("abs(Tensor self, int k=) -> Tensor", 24, "expected a default value"),
        ("abs(Tensor self, int k=(1)) -> Tensor", 24, "expected a default value"),
        ("abs(Tensor self, int k=1 2) -> Tensor", 26, "expected ',' or ')' after argument 'k', found '2'"),
        ("abs(Tensor self, float eps=1e-) -> Tensor", 28, "malformed number '1e-'"),
        ("abs(Tensor self, int x=12abc) -> Tensor", 24, "malformed number '12abc'"),
        ('abs(Tensor self, str s="mean) -> Tensor', 24, "unterminated string literal"),
        ('abs(Tensor self, str s="a\\qb") -> Tensor', 26, "unknown escape '\\q'"),
        ("abs(Tensor self, int[2] k=[0,1) -> Tensor", 31, "expected ',' or ']' in the list default, found ')'"),
        ("abs(Tensor self, int[] k=0) -> Tensor", 26, "no list size to repeat it to"),
        ("abs(Tensor self, *, *, int k) -> Tensor", 21, "'*' may appear only once"),
        ("abs(Tensor self, *) -> Tensor", 19, "expected ',' after '*'"),
        ("abs(Tensor self, Tensor self) -> Tensor", 25, "duplicate argument name 'self'"),
        ("abs(Tensor(a -> ) self) -> Tensor", 17, "expected an alias name or '*' after '->', found ')'"),
        ("abs.(Tensor self) -> Tensor", 5, "expected an overload name after '.', found '('"),
        ("abs(Tensor self) -> Tensor # note", 28, "unexpected character '#'"),
        ("", 1, "expected a function name, found end of input"),
    ],
)
def test_error_messages_name_the_column(text, column, message):
    with pytest.raises(SchemaError) as info:
        FunctionSchema.parse(text)
    assert info.value.column == column
    assert message in info.value.message
    assert str(info.value).startswith(f"column {column}: ")


def test_error_carries_location():
    where = Location(file="derivatives.yaml", line=12)
    with pytest.raises(SchemaError) as info:
        FunctionSchema.parse("abs(Tensor self)", where)
    assert info.value.location == where
    assert str(info.value).startswith("derivatives.yaml:12, column 17: expected '->'")


def test_type_parse_errors():
    with pytest.raises(SchemaError, match="column 5: expected end of input after the type, found 'x'"):
        Type.parse("int x")
    with pytest.raises(SchemaError, match="column 1: unknown type 'Foo'"):
        Type.parse("Foo[]")


# -- properties


_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


@st.composite
def _types(draw):
    base = draw(st.sampled_from(sorted(BASE_TYPES)))
    alias = None
    if base == "Tensor":
        alias = draw(st.sampled_from([None, "a", "a!", "b!", "a -> *", "a|b"]))
    if not draw(st.booleans()):
        return Type(base, optional=draw(st.booleans()), alias=alias)
    size = draw(st.none() | st.integers(1, 8))
    return Type(base, draw(st.booleans()), True, size, draw(st.booleans()), alias)


_SCALAR_DEFAULTS = ["0", "-1", "1e-05", "0.5", "True", "None", "Mean", '"mean"', "'fro'", "contiguous_format"]
_LIST_DEFAULTS = ["[]", "[0,1]", "[-2,-1]", "None"]


@st.composite
def _schemas(draw):
    names = draw(st.lists(_IDENT, min_size=0, max_size=6, unique=True))
    n_positional = draw(st.integers(0, len(names)))
    arguments = []
    for i, name in enumerate(names):
        type_ = draw(_types())
        pool = _LIST_DEFAULTS if type_.is_list and type_.size is None else _SCALAR_DEFAULTS + _LIST_DEFAULTS
        default = draw(st.none() | st.sampled_from(pool))
        arguments.append(Argument(name, type_, default, i >= n_positional))
    returns = tuple(draw(st.lists(st.builds(Return, _types(), st.none() | _IDENT), max_size=3)))
    as_tuple = len(returns) != 1 or draw(st.booleans())
    return FunctionSchema(draw(_IDENT), draw(st.just("") | _IDENT), tuple(arguments), returns, as_tuple)


@settings(max_examples=300, deadline=None)
@given(_schemas())
def test_print_then_parse_is_identity(schema):
    text = str(schema)
    assert FunctionSchema.parse(text) == schema
    for arg in schema.arguments:
        if arg.default is not None:
            arg.default_value()


@settings(max_examples=200, deadline=None)
@given(_schemas(), st.data())
def test_whitespace_between_tokens_is_ignored(schema, data):
    tokens = tokenize(str(schema), None)
    pieces = []
    for tok, following in zip(tokens, tokens[1:]):
        pieces.append(tok.text)
        # Two adjacent words or numbers need some whitespace to stay two tokens.
        glued = {tok.kind, following.kind} <= {"word", "number"}
        pieces.append(data.draw(st.sampled_from([" ", "  ", "\t", "\n"] + ([] if glued else [""]))))
    assert FunctionSchema.parse("".join(pieces)) == schema
