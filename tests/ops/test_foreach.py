"""`_foreach_*` entries of torch 2.13's file: formulas written for element `i` of Tensor lists.

Values and gradients against torch's own `_foreach_*` kernels, the checker on every entry, and
checks that a formula reading the wrong element is caught. Parity (tests/check/test_parity.py) also
compares each entry with torch through the same formulas.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, load_spec
from jaxderiv.check import check_all
from jaxderiv.check.mutate import entry_yaml

torch = pytest.importorskip("torch")
aten = torch.ops.aten

SPEC = load_spec(from_torch=True)
FOREACH = sorted(e.name for e in SPEC if e.name.startswith("_foreach_"))
CLAMPING = [
    "_foreach_minimum.Scalar",
    "_foreach_minimum.ScalarList",
    "_foreach_maximum.Scalar",
    "_foreach_maximum.ScalarList",
]


@pytest.fixture(scope="module")
def registry():
    return Registry(SPEC)


def test_every_foreach_entry_passes_the_checker():
    """vjp, jvp and vjp_vjp of each element's formula; the clamping jvps are torch's spec bug."""
    report = check_all(SPEC, ops=FOREACH, modes=("vjp", "jvp", "vjp_vjp"))
    bad = [
        (r.op, r.mode, r.status)
        for r in report.rows
        if r.status != "passed" and not (r.op in CLAMPING and r.mode == "jvp")
    ]
    assert len(FOREACH) == 10 and not bad
    assert {(r.op, r.status) for r in report.rows if r.mode == "jvp" and r.op in CLAMPING} == {
        (n, "known_failure") for n in CLAMPING
    }


def _lists(rng, shapes=((2, 3), (3,), ())):
    return [rng.uniform(0.5, 2.0, size=s) for s in shapes]


def test_vjp_matches_torch_element_by_element(registry):
    """jax.vjp of _foreach_pow.List with a cotangent per element equals torch.autograd.grad."""
    rng = np.random.default_rng(0)
    base, expo, cts = _lists(rng), _lists(rng), _lists(rng)
    op = registry.op("_foreach_pow.List")
    out, vjp = jax.vjp(lambda b, e: op(b, e), [jnp.asarray(x) for x in base], [jnp.asarray(x) for x in expo])
    gb, ge = vjp([jnp.asarray(c) for c in cts])
    tb = [torch.tensor(x, requires_grad=True) for x in base]
    te = [torch.tensor(x, requires_grad=True) for x in expo]
    tout = aten._foreach_pow.List(tb, te)
    tg = torch.autograd.grad(tout, tb + te, [torch.tensor(c) for c in cts])
    for ours, theirs in zip(list(out) + list(gb) + list(ge), list(tout) + list(tg)):
        np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-12)


def test_clamped_tangent_is_torch_2_13s(registry):
    """The spec's result formula gives the scalar as the tangent of clamped elements, and so
    does torch.func.jvp: jaxderiv evaluates the file as written (the checker flags it)."""
    x, t = np.array([0.1, 0.5, -1.0]), np.ones(3)
    op = registry.op("_foreach_minimum.Scalar")
    _, ours = jax.jvp(lambda a: op([a], 0.3)[0], (jnp.asarray(x),), (jnp.asarray(t),))
    _, theirs = torch.func.jvp(lambda a: torch._foreach_minimum([a], 0.3)[0], (torch.tensor(x),), (torch.tensor(t),))
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy())
    np.testing.assert_allclose(np.asarray(ours), [1.0, 0.3, 1.0])


@pytest.mark.parametrize(
    "name, key, wrong",
    [
        ("_foreach_pow.ScalarList", "self", "pow_backward(grads[i], self[i], exponent[0])"),
        ("_foreach_div.List", "other", "div_tensor_other_backward(grads[i], other[i], other[i])"),
        ("_foreach_norm.Scalar", "result", "norm_jvp(self_p, self_t, 2, result[i])"),
    ],
)
def test_a_formula_reading_the_wrong_element_fails(tmp_path, name, key, wrong):
    path = tmp_path / "wrong.yaml"
    path.write_text(entry_yaml(SPEC[name], {key: wrong}))
    rows = check_all(str(path), ops=[name], modes=["jvp" if key == "result" else "vjp"]).rows
    assert [r.status for r in rows] == ["failed"], rows[0].reason


def test_lists_of_different_lengths_are_refused(registry):
    with pytest.raises(ValueError, match="same number of tensors"):
        registry.op("_foreach_div.List")([jnp.ones(2)], [jnp.ones(2), jnp.ones(2)])
