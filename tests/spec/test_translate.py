"""Tests for jaxderiv.translate: C++ semantics of formulas, and errors found before evaluation."""

from __future__ import annotations

import ast
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import helpers
from jaxderiv.errors import JaxderivError, TranslationError
from jaxderiv.grammar import parse_formula
from jaxderiv.namespace import HELPERS
from jaxderiv.translate import names_called, translate

helpers.load()

SRC = Path(__file__).resolve().parents[2] / "src" / "jaxderiv"


def ev(text: str, **env):
    """Translate `text` over the variables of `env`, then evaluate it there."""
    return translate(parse_formula(text), env.keys())(env)


def translation_error(text: str, variables=("x", "grad")) -> TranslationError:
    with pytest.raises(TranslationError) as info:
        translate(parse_formula(text), variables)
    return info.value


# -- arithmetic ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("7 / 2", 3),
        ("-7 / 2", -3),
        ("7 / -2", -3),
        ("-7 / -2", 3),
        ("6 / 3", 2),
        ("7 % 3", 1),
        ("-7 % 3", -1),
        ("7 % -3", 1),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),
    ],
)
def test_integer_arithmetic_is_cpp(text, expected):
    value = ev(text)
    assert value == expected and type(value) is int


def test_integer_division_of_variables_truncates():
    assert ev("a / b", a=-9, b=4) == -2  # Python's -9 // 4 would be -3
    assert ev("a / b", a=np.int64(-9), b=4) == -2
    assert ev("a % b", a=-9, b=4) == -1  # Python's -9 % 4 would be 3


@pytest.mark.parametrize(
    "text, expected", [("7.0 / 2", 3.5), ("7 / 2.0", 3.5), ("-7. / 2", -3.5), ("1e1 / 4", 2.5), ("0.5f * 3", 1.5)]
)
def test_floating_division_is_true_division(text, expected):
    assert ev(text) == pytest.approx(expected)


def test_tensor_division_is_true_division_even_for_integers():
    out = ev("x / 2", x=jnp.array([7, -7]))
    np.testing.assert_allclose(out, [3.5, -3.5])


def test_tensor_operators_broadcast():
    out = ev("x * y + 1", x=jnp.ones((2, 3)), y=jnp.arange(3.0))
    np.testing.assert_allclose(out, np.ones((2, 3)) * np.arange(3.0) + 1)


@pytest.mark.parametrize("text", ["2 * xs", "xs * 2", "xs + xs", "xs - 1"])
def test_arithmetic_on_a_tensor_list_is_an_error(text):
    """Python would repeat or join the list (`2 * [a, b]` is four tensors); C++ has no such operator."""
    with pytest.raises(JaxderivError, match="list of 2 values"):
        ev(text, xs=[jnp.ones(2), jnp.ones(2)])


# -- control flow ----------------------------------------------------------------------------


def test_ternary_takes_one_branch():
    assert ev("c ? 1 : 2", c=True) == 1
    assert ev("c ? 1 : 2", c=False) == 2
    assert ev("c ? 1 : 2", c=0) == 2
    # the untaken branch is not evaluated (10 / 0 would raise)
    assert ev("n != 0 ? 10 / n : -1", n=0) == -1
    assert ev("n == 0 ? -1 : 10 / n", n=0) == -1
    # right associative
    assert ev("a ? 1 : b ? 2 : 3", a=False, b=True) == 2


def test_logical_operators_short_circuit():
    assert ev("n > 0 && 10 / n > 1", n=0) is False
    assert ev("n == 0 || 10 / n > 1", n=0) is True
    assert ev("n > 0 && 10 / n > 1", n=2) is True
    assert ev("true && false") is False
    assert ev("false || true") is True
    # an undefined Tensor is false, and the right side is not evaluated
    assert ev("t.defined() && t.dim() > 0", t=None) is False


def test_right_side_is_evaluated_when_needed():
    with pytest.raises(TranslationError, match="ZeroDivisionError"):
        ev("n == 0 && 10 / n > 1", n=0)


def test_not_operator():
    assert ev("!c", c=False) is True
    assert ev("!t.defined()", t=None) is True


# -- templates, brace lists, lambdas ------------------------------------------------------------


def test_std_get():
    assert ev("std::get<1>(t)", t=(10, 20, 30)) == 20
    assert ev("std::get<0>(t)", t=(10, 20, 30)) == 10
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(ev("std::get<1>(std::make_tuple(x, x * 2))", x=x), x * 2)


def test_brace_lists():
    x = jnp.ones((4, 5))
    assert ev("{1, 2, x.size(0)}", x=x) == (1, 2, 4)
    assert ev("{}") == ()
    assert ev("{x.size(1)}", x=x) == (5,)
    assert ev("c10::complex<double>{0.0, 1.0}") == 1j


def test_lambda_is_a_value_and_captures():
    neg = ev("[](int64_t i){return -i;}")
    assert neg(3) == -3 and neg(-4) == 4
    scale = ev("[&](int64_t i) { return i * k; }", k=5)
    assert scale(3) == 15


def test_lambda_passed_to_a_helper(monkeypatch):
    monkeypatch.setitem(HELPERS, "_test_fmap", lambda items, fn: tuple(fn(i) for i in items))
    assert ev("_test_fmap(dims, [](int64_t i){return -i;})", dims=(1, 2, 3)) == (-1, -2, -3)
    assert ev("_test_fmap({1, 2}, [&](int64_t i) { return i + k; })", k=10) == (11, 12)


# -- tensor methods and ATen values -------------------------------------------------------------


def test_sizes_and_size():
    x = jnp.zeros((2, 3, 4))
    assert ev("x.sizes()", x=x) == (2, 3, 4)
    assert ev("x.size(-1)", x=x) == 4
    assert ev("x.size(0)", x=x) == 2
    assert ev("x.size(-2)", x=x) == 3
    assert ev("x.dim()", x=x) == 3
    assert ev("x.numel()", x=x) == 24


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64, jnp.complex64])
def test_scalar_type_and_options(dtype):
    grad = jnp.ones(3, dtype)
    assert ev("grad.scalar_type()", grad=grad) == np.dtype(dtype)
    z = ev("at::scalar_tensor(0., grad.options())", grad=grad)
    assert z.dtype == np.dtype(dtype) and z.shape == () and z == 0
    assert ev("grad.scalar_type() == at::kDouble", grad=grad) is (np.dtype(dtype) == np.float64)
    assert ev("isComplexType(grad.scalar_type())", grad=grad) is (np.dtype(dtype).kind == "c")


def test_scalar_tensor_without_options_follows_the_value():
    assert ev("at::scalar_tensor(2.)").dtype == np.float64  # x64 is on in the tests


def test_optional_dereference():
    assert ev("*o", o=5) == 5
    assert ev("o.has_value() ? *o : 0", o=None) == 0
    assert ev("o.has_value() ? *o : 0", o=7) == 7


def test_undefined_tensor():
    assert ev("Tensor()") is None
    assert ev("Tensor().defined()") is False
    x = jnp.arange(2.0)
    np.testing.assert_array_equal(ev("c ? x : Tensor()", c=True, x=x), x)
    assert ev("c ? x : Tensor()", c=False, x=x) is None


def test_using_an_undefined_tensor_fails_at_its_column():
    with pytest.raises(TranslationError) as info:
        ev("x + -Tensor()", x=jnp.ones(2))
    assert info.value.column == 5
    assert "undefined" in str(info.value)


def test_constants():
    assert ev("M_PI") == pytest.approx(np.pi)
    assert ev("at::Reduction::Mean") == 1
    assert ev("c10::nullopt") is None


# -- errors at translation time -----------------------------------------------------------------


def test_unknown_helper_names_it_with_column():
    err = translation_error("grad * not_a_real_helper(x)")
    assert "not_a_real_helper" in str(err) and "helper" in str(err)
    assert err.column == len("grad * ") + 1
    assert f"column {err.column}" in str(err)


def test_unknown_method_names_it_with_column():
    err = translation_error("grad * x.frobnicate(2)")
    assert "frobnicate" in str(err) and "method" in str(err)
    assert err.column == len("grad * ") + 1


def test_unknown_variable_names_it_with_column():
    err = translation_error("grad + undefined_var * 2")
    assert "undefined_var" in str(err)
    assert err.column == len("grad + ") + 1
    # the message lists the variables the formula does have
    assert "grad" in err.message and "x" in err.message


def test_unknown_template_names_it():
    err = translation_error("grad * std::frobnicate<1>(x)")
    assert "std::frobnicate" in str(err) and err.column == len("grad * ") + 1


@pytest.mark.parametrize(
    "text, name, column",
    [
        ("handle_r_to_c(x)", "handle_r_to_c", 1),  # two required
        ("grad + maybe_multiply(x, 1, 2)", "maybe_multiply", 8),
        ("at::scalar_tensor()", "at::scalar_tensor", 1),
        ("grad * x.size(1, 2, 3)", ".size()", 8),  # the column of the call's object
        ("grad * x.sizes(0)", ".sizes()", 8),
    ],
)
def test_wrong_arity_names_the_callee_with_column(text, name, column):
    err = translation_error(text)
    assert name in str(err)
    assert "argument" in err.message
    assert err.column == column
    assert f"column {column}" in str(err)


def test_errors_come_before_any_evaluation():
    # The faulty call sits in a branch that would never run; translation still refuses it,
    # and nothing is evaluated (no env is ever given).
    for text in (
        "false ? no_such_helper(x) : x",
        "x.defined() ? x : x.no_such_method()",
        "true || no_such_var",
        "handle_r_to_c(x) * 0",
    ):
        with pytest.raises(TranslationError):
            translate(parse_formula(text), ["x"])


def test_translation_error_is_a_jaxderiv_error():
    assert issubclass(TranslationError, JaxderivError)


def test_names_called():
    tree = parse_formula("grad * handle_r_to_c(x.scalar_type(), std::get<0>(t)) + at::where(c, x, y).conj()")
    assert names_called(tree) == {"handle_r_to_c", ".scalar_type", "std::get<>", "at::where", ".conj"}


# -- no dynamic code ------------------------------------------------------------------------------


def test_no_eval_exec_or_compile_in_the_package():
    offenders = []
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 10
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("eval", "exec", "compile", "__import__"):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: {f.id}(")
            if (
                isinstance(f, ast.Attribute)
                and f.attr in ("eval", "exec")
                and isinstance(f.value, ast.Name)
                and f.value.id == "builtins"
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: builtins.{f.attr}(")
            if (
                isinstance(f, ast.Name)
                and f.id == "getattr"
                and any(isinstance(a, ast.Constant) and a.value in ("eval", "exec", "compile") for a in node.args)
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: getattr(..., {f.id!r})")
    assert offenders == []


def test_scan_would_see_an_eval_call():
    # the scan above is not vacuous: it recognises the forms it looks for
    tree = ast.parse("x = eval('1')\ny = re.compile('a')\nexec(s)")
    found = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert sorted(found) == ["eval", "exec"]


def test_a_call_fitting_no_overload_of_a_helper_names_the_count(registry_from_text):
    """svd_backward has two C++ overloads (7 and 6 arguments); 5 arguments fit neither."""
    reg = registry_from_text("""
        - name: svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)
          self: svd_backward(grads, self, some, compute_uv, U)
        """)
    with pytest.raises(
        TranslationError, match="helper 'svd_backward' takes 6 or 7 arguments, but the formula passes 5"
    ):
        reg.op("svd")


def test_one_resolver_picks_a_helper_by_argument_count_and_release():
    """namespace.resolve: the variant that takes the call's arguments, with the meaning of the
    spec file's release; qualifiers and `_symint` dropped; the newest meaning without a release."""
    from jaxderiv.namespace import HELPERS, resolve

    old, new = (v.fn for v in sorted(HELPERS["softmax_double_backward"].variants, key=lambda v: v.since or ()))
    assert resolve("softmax_double_backward", 4, (1, 7)) is old
    assert resolve("at::softmax_double_backward", 4, (1, 11)) is new
    assert resolve("softmax_double_backward", 4, None) is new
    mm = {resolve("mm_mat1_backward", n, (2, 13)) for n in (4, 5, 6)}
    assert len(mm) == 3  # 1.7's (grad, mat2, mat1, alpha), 1.10's strided form, 2.x's with the layout
    assert resolve("mm_mat1_backward_symint", 6) is resolve("mm_mat1_backward", 6)
    assert resolve("no_such_helper", 1) is None
    with pytest.raises(TypeError, match="takes 4 or 5 or 6 arguments"):
        resolve("mm_mat1_backward", 3)


def test_no_helper_takes_any_number_of_arguments():
    """Every variant states its parameters (no *args), so a formula's argument count is checked;
    only C++'s variadic constructors (a brace list's TensorList, std::make_tuple) take any number."""
    import inspect

    from jaxderiv.helpers.core import VARIADIC
    from jaxderiv.namespace import HELPERS, METHODS, Helper

    variadic = [
        f"{name} ({v.fn.__qualname__})"
        for name, h in HELPERS.items()
        if isinstance(h, Helper) and name not in VARIADIC
        for v in h.variants
        if any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(v.fn).parameters.values())
    ] + [
        f".{name}"
        for name, fn in METHODS.items()
        if any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values())
    ]
    assert variadic == []
