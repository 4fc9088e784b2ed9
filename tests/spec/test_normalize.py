"""Tests for jaxderiv.normalize: each formula's kind resolved from its tree, auto_element_wise
rewritten into a written tree, and later stages reading those records, not the formula text."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv.check.refusals import states_not_implemented
from jaxderiv.errors import FormulaError
from jaxderiv.expr import to_source
from jaxderiv.grammar import parse_formula
from jaxderiv.normalize import Kind, derivative, normalize

_KINDS = """
    - name: sin(Tensor self) -> Tensor
      self: grad * self.cos().conj()
      result: auto_element_wise
    - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
      self: grad
      other: not_implemented("add other")
      result: auto_linear
    - name: atan2(Tensor self, Tensor other) -> Tensor
      self, other: not_implemented_list ("atan2")
      result: non_differentiable
    - name: cos(Tensor self) -> Tensor
      self: not_implemented("cos") * 0
      result: auto_linear_scale(self_t)
    - name: tan(Tensor self) -> Tensor
      self: grad * (
"""


def test_each_form_gets_its_kind_from_the_tree(spec_from_text):
    spec = spec_from_text(_KINDS)

    def kinds(name):
        d = normalize(spec[name])
        return [(x.key, x.kind) for x in d.backward + d.forward]

    assert kinds("sin") == [("self", Kind.WRITTEN), ("result", Kind.AUTO_ELEMENT_WISE)]
    assert kinds("add.Tensor") == [
        ("self", Kind.WRITTEN),
        ("other", Kind.NOT_IMPLEMENTED),
        ("result", Kind.AUTO_LINEAR),
    ]
    # A space before the parenthesis is the same call; a text that only starts like a marker is written.
    assert kinds("atan2") == [("self, other", Kind.NOT_IMPLEMENTED), ("result", Kind.NON_DIFFERENTIABLE)]
    assert kinds("cos") == [("self", Kind.WRITTEN), ("result", Kind.WRITTEN)]
    # A text that does not parse is written; its error is kept, to be raised where it is compiled.
    (bad,) = normalize(spec["tan"]).backward
    assert bad.kind is Kind.WRITTEN and bad.parsed is None and isinstance(bad.error, FormulaError)
    with pytest.raises(FormulaError, match=r"spec_1\.yaml:\d+, entry 'tan', key 'self'"):
        bad.require_parsed()


def test_records_keep_the_text_the_location_and_the_parsed_tree(spec_from_text):
    spec = spec_from_text(_KINDS)
    entry = spec["sin"]
    d = normalize(entry)
    back, fwd = d.backward[0], d.forward[0]
    assert back.formula is entry.backward[0] and back.text == "grad * self.cos().conj()"
    assert (back.location.line, back.location.key) == (2, "self") and (fwd.location.line, fwd.location.key) == (
        3,
        "result",
    )
    assert back.parsed == parse_formula(back.text) and back.tree is back.parsed
    assert fwd.text == "auto_element_wise" and fwd.parsed == parse_formula("auto_element_wise")
    assert d.formula_for("self") is back and d.formula_for("other") is None
    assert normalize(entry) is d  # resolved once


@pytest.mark.parametrize(
    "spec_text, expected",
    [
        # one input: torchgen's rewrite
        (
            """
         - name: sin(Tensor self) -> Tensor
           self: grad * self.cos().conj()
           result: auto_element_wise
         """,
            "(self_t.conj() * self_p.cos().conj()).conj()",
        ),
        # several inputs: the sum of each input's term
        (
            """
         - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
           self: grad * other.conj()
           other: grad * self.conj()
           result: auto_element_wise
         """,
            "(self_t.conj() * other_p.conj()).conj() + (other_t.conj() * self_p.conj()).conj()",
        ),
        # one formula for two inputs: each term takes its input's gradient, with that input's mask
        (
            """
         - name: atan2(Tensor self, Tensor other) -> Tensor
           self, other: atan2_backward(grad, self, other, grad_input_mask)
           result: auto_element_wise
         """,
            (
                "atan2_backward(self_t.conj(), self_p, other_p, {true, false})[0].conj()"
                " + atan2_backward(other_t.conj(), self_p, other_p, {false, true})[1].conj()"
            ),
        ),
        # a lambda's parameter is not the input it spells; a called name is not a variable
        (
            """
         - name: exp(Tensor self) -> Tensor
           self: ([](Tensor self) { return self * 2; })(grad) * exp(self)
           result: auto_element_wise
         """,
            "([](Tensor self) { return self * 2; }(self_t.conj()) * exp(self_p)).conj()",
        ),
    ],
)
def test_auto_element_wise_is_rewritten_into_a_formula(spec_from_text, spec_text, expected):
    spec = spec_from_text(spec_text)
    (d,) = normalize(next(iter(spec))).forward
    assert d.kind is Kind.AUTO_ELEMENT_WISE
    assert to_source(d.tree) == expected
    assert parse_formula(expected) == d.tree  # the printed text is the tree
    assert d.tree == (
        d.terms[0].tree if len(d.terms) == 1 else parse_formula(" + ".join(f"({to_source(t.tree)})" for t in d.terms))
    )


_SIN = """
    - name: sin(Tensor self) -> Tensor
      self: {backward}
      result: {result}
"""


def _jvp(registry, name, x, t):
    return jax.jvp(registry.op(name), (x,), (t,))[1]


def test_auto_element_wise_jvp_is_the_written_rewrite(registry_from_text):
    """The marker's jvp is the jvp of its rewritten tree written out, and follows the backward
    formula: editing that formula in the YAML changes the jvp (complex values: the conjugations count)."""
    x = jnp.array([0.3 + 0.2j, -1.1 + 0.5j])
    t = jnp.array([1.0 - 0.5j, 0.25 + 2.0j])
    backward = "grad * self.cos().conj()"
    auto = registry_from_text(_SIN.format(backward=backward, result="auto_element_wise"))
    rewritten = to_source(normalize(auto.spec["sin"]).forward[0].tree)
    written = registry_from_text(_SIN.format(backward=backward, result=rewritten))
    assert auto.op("sin").formulas["jvp"].startswith("auto_element_wise")
    assert written.op("sin").formulas["jvp"].startswith("result formula")
    np.testing.assert_allclose(_jvp(auto, "sin", x, t), _jvp(written, "sin", x, t), rtol=1e-14)
    np.testing.assert_allclose(_jvp(auto, "sin", x, t), jnp.cos(x) * t, rtol=1e-14)

    edited = registry_from_text(_SIN.format(backward="grad * (2 * self.cos()).conj()", result="auto_element_wise"))
    np.testing.assert_allclose(_jvp(edited, "sin", x, t), 2 * jnp.cos(x) * t, rtol=1e-14)


def test_a_marker_is_read_from_the_tree_not_the_text(registry_from_text):
    """A comment after the marker leaves the tree a bare name: a text comparison would miss it."""
    reg = registry_from_text(
        _SIN.format(backward="grad * self.cos().conj()", result="auto_element_wise /* torchgen's marker */")
    )
    assert reg.op("sin").formulas["jvp"].startswith("auto_element_wise")
    x = jnp.array([0.3, -1.2])
    np.testing.assert_allclose(_jvp(reg, "sin", x, jnp.ones(2)), jnp.cos(x), rtol=1e-14)


def test_auto_element_wise_of_two_inputs_sums_their_terms(registry_from_text):
    reg = registry_from_text("""
        - name: atan2(Tensor self, Tensor other) -> Tensor
          self, other: atan2_backward(grad, self, other, grad_input_mask)
          result: auto_element_wise
    """)
    x, y = jnp.array([0.3, -1.2, 2.0]), jnp.array([1.5, 0.7, -0.4])
    tx, ty = jnp.array([1.0, -2.0, 0.5]), jnp.array([0.3, 0.1, -1.0])
    got = jax.jvp(reg.op("atan2"), (x, y), (tx, ty))[1]
    np.testing.assert_allclose(got, jax.jvp(jnp.arctan2, (x, y), (tx, ty))[1], rtol=1e-13)
    only_x = jax.jvp(lambda a: reg.op("atan2")(a, y), (x,), (tx,))[1]  # `other` has no tangent: its term is skipped
    np.testing.assert_allclose(only_x, jax.jvp(lambda a: jnp.arctan2(a, y), (x,), (tx,))[1], rtol=1e-13)


def test_grads_is_found_in_the_tree_not_the_text(registry_from_text):
    """A multi-output entry whose formulas read only `grad` differentiates output 0 only. The
    word `grads` in a comment is not a read of `grads`; a read of `grad_max` is."""
    text = """
        - name: aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)
          self: {formula}
    """
    x = jnp.array([0.5, -1.0, 2.0])
    only_grad = registry_from_text(text.format(formula="grad * 0 /* no grads read */"))
    assert only_grad.op("aminmax").output_differentiable(x) == (True, False)
    reads_max = registry_from_text(text.format(formula="grad * 0 + grad_max * 0"))
    assert reads_max.op("aminmax").output_differentiable(x) == (True, True)


def test_the_refusal_predicate_reads_the_kind(spec_from_text):
    spec = spec_from_text(_KINDS)
    add, atan2, cos = spec["add.Tensor"], spec["atan2"], spec["cos"]
    assert states_not_implemented(add.formula_for("other")) and states_not_implemented(
        normalize(add).formula_for("other")
    )
    assert states_not_implemented(atan2.formula_for("self"))  # `not_implemented_list (...)`, with a space
    assert not states_not_implemented(cos.formula_for("self"))  # `not_implemented(...) * 0` is an expression
    assert not states_not_implemented(add.formula_for("self")) and not states_not_implemented(None)
    assert derivative(add.formula_for("other")) is normalize(add).formula_for("other")


def test_every_shipped_auto_element_wise_rewrite_prints_and_round_trips():
    from jaxderiv.spec import load_seed_spec, load_spec, newest_spec_file

    seen = 0
    for spec in (load_seed_spec(), load_spec(newest_spec_file())):
        for entry in spec:
            for d in normalize(entry).forward:
                if d.kind is Kind.AUTO_ELEMENT_WISE:
                    seen += 1
                    assert d.terms and parse_formula(to_source(d.tree)) == d.tree, entry.name
                    assert "grad" not in {n.name for n in _names(d.tree)}, entry.name
    assert seen > 100


def _names(tree):
    from jaxderiv.expr import Name, iter_nodes

    return [n for n in iter_nodes(tree) if isinstance(n, Name)]
