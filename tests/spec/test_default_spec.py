"""The default spec and registry follow today's torch: torch 2.14.1's file, with the seed files'
entries for the ops it no longer has; the seeds stay loadable as their own spec."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv import load_seed_spec, load_spec
from jaxderiv.spec import newest_spec_file, shipped_spec_files

DEFAULT, SEEDS, NEWEST = load_spec(), load_seed_spec(), load_spec(newest_spec_file())


def _file(entry) -> str:
    return os.path.abspath(entry.location.file)


def test_every_entry_of_the_newest_file_wins_and_the_seeds_fill_in_the_rest():
    newest = os.path.abspath(newest_spec_file())
    seeds = {os.path.abspath(p) for p in shipped_spec_files()}
    assert {e.name for e in DEFAULT} == {e.name for e in NEWEST} | {e.name for e in SEEDS}
    for e in DEFAULT:
        if e.name in NEWEST:
            assert _file(e) == newest, e.name
        else:
            assert _file(e) in seeds and _file(e) == _file(SEEDS[e.name]), e.name
    # ops the newest release no longer lists keep their seed entry: the default loses no op
    assert _file(DEFAULT["cholesky"]) in seeds and _file(DEFAULT["_bmm"]) in seeds
    assert DEFAULT.version.release == (2, 14, 1) and SEEDS.version.release == (1, 10)


def test_default_registry_is_built_on_the_default_spec_and_the_seed_registry_apart():
    assert jaxderiv.default_registry().spec.version.release == (2, 14, 1)
    assert jaxderiv.seed_registry().spec.version.release == (1, 10)
    assert set(jaxderiv.default_registry().names()) == {e.name for e in DEFAULT}


def test_todays_schemas_bind():
    """native_layer_norm takes normalized_shape (1.7: M, N), gelu takes approximate=."""
    assert [a.name for a in DEFAULT["native_layer_norm"].schema.arguments] == [
        "input",
        "normalized_shape",
        "weight",
        "bias",
        "eps",
    ]
    assert [a.name for a in SEEDS["native_layer_norm"].schema.arguments] == ["input", "weight", "bias", "M", "N", "eps"]
    x = jnp.linspace(-2.0, 2.0, 12).reshape(3, 4)
    out, mean, rstd = jaxderiv.aten.native_layer_norm.default(x, [4], None, None, 1e-5)
    assert out.shape == (3, 4) and mean.shape == rstd.shape == (3, 1)
    tanh = jaxderiv.aten.gelu.default(x, approximate="tanh")
    exact = jaxderiv.aten.gelu.default(x)
    assert not np.allclose(np.asarray(tanh), np.asarray(exact), rtol=0, atol=1e-6)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_default_gradients_are_torch_2_13s_where_the_seeds_differ(torch):
    """xlogy's gradient at (0, 0): the seed (1.10) formula masks it to 0, today's gives NaN, as torch."""
    with jax.enable_x64(True):
        x = jnp.array([0.0, 0.5, 2.0])
        ours = jax.grad(lambda a: jaxderiv.aten.xlogy.Tensor(a, a).sum())(x)
        seeds = jax.grad(lambda a: jaxderiv.seed_registry().aten.xlogy.Tensor(a, a).sum())(x)
        t = torch.tensor(np.asarray(x), requires_grad=True)
        (want,) = torch.autograd.grad(torch.xlogy(t, t).sum(), t)
    np.testing.assert_allclose(np.asarray(ours), want.numpy(), rtol=1e-12, equal_nan=True)
    assert np.isnan(np.asarray(ours)[0]) and not np.isnan(np.asarray(seeds)[0])


def test_layer_norm_of_the_default_registry_matches_torch(torch):
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
        ct = rng.normal(size=(2, 3, 4))

        def f(x, w, b):
            return jaxderiv.aten.native_layer_norm.default(x, [3, 4], w, b, 1e-5)[0]

        out, vjp = jax.vjp(f, *(jnp.asarray(v) for v in (x, w, b)))
        grads = vjp(jnp.asarray(ct))
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    tout = torch.nn.functional.layer_norm(tx, [3, 4], tw, tb, 1e-5)
    tgrads = torch.autograd.grad(tout, (tx, tw, tb), torch.tensor(ct))
    np.testing.assert_allclose(np.asarray(out), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-10, atol=1e-12)


def test_parity_judges_each_default_entry_by_the_file_it_comes_from():
    from jaxderiv.check.parity import judged_by_content

    judged = judged_by_content(DEFAULT)
    assert judged["native_layer_norm"] == "newest" and judged["cholesky"] is False
    assert set(judged_by_content(SEEDS).values()) == {False}


def test_parity_judges_an_entry_by_its_text_not_its_files_name(tmp_path):
    """A copy of torch 2.14.1's file under a neutral name is judged as that file; an entry whose
    formula the copy edits is judged by nobody (its differences were never measured)."""
    from jaxderiv.check.parity import judged_by_content
    from jaxderiv.spec import newest_spec_file

    text = newest_spec_file().read_text()
    copy = tmp_path / "derivatives.yaml"
    copy.write_text(text)
    judged = judged_by_content(load_spec(copy))
    assert judged["clamp_min"] == "newest" and set(judged.values()) == {"newest"}
    original = "- name: clamp_min(Tensor self, Scalar min) -> Tensor\n  self: "
    assert original in text
    copy.write_text(text.replace(original, original + "2 * ", 1))
    edited = judged_by_content(load_spec(copy))
    assert edited["clamp_min"] is None and edited["clamp_max"] == "newest"


def test_every_newest_entry_the_seeds_also_have_translates():
    """Taking the newest file's entry never loses an op the seeds had: each entry the two share
    (with a forward) builds into rules. Before `_pdist_backward_backward` existed, the default
    spec had to keep the seeds' `_pdist_backward`, or pdist's own first derivative failed."""
    from jaxderiv.forward import implementation
    from jaxderiv.spectools.coverage import coverage

    (fc,) = coverage(str(newest_spec_file())).files
    untranslated = {name for name, _ in fc.errors} | {
        e.name for e in NEWEST if any(n in fc.missing for n in _missing_names(e))
    }
    assert not {n for n in untranslated if n in SEEDS and implementation(n) is not None}
    assert "_mps_convolution" in untranslated  # the check can fail: an entry whose helper (MPS's) is missing


def _missing_names(entry) -> set[str]:
    from jaxderiv.grammar import parse_formula
    from jaxderiv.translate import unresolved_names

    return {n for f in entry.backward + entry.forward for n in unresolved_names(parse_formula(f.text), (2, 14, 1))}


def test_pdist_and_cdist_first_derivatives_run_in_the_default_registry():
    with jax.enable_x64(True):
        x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3) ** 3
        g = jax.grad(lambda x: jaxderiv.aten._pdist_forward.default(x, 2.0).sum())(x)
        h = jax.grad(lambda x: jaxderiv.aten._cdist_forward.default(x, x[:2], 2.0, None).sum())(x)
    assert np.all(np.isfinite(np.asarray(g))) and np.all(np.isfinite(np.asarray(h)))


def _changed_since_torch_2_13() -> list[str]:
    """torch 2.14.1's entries with a forward whose formulas torch 2.13's file writes otherwise (or lacks)."""
    from jaxderiv.forward import implementation

    torch_file = pytest.importorskip("torchgen") and load_spec(from_torch=True)

    def texts(e):
        return tuple((f.key, f.text) for f in e.backward + e.forward)

    return [
        e.name
        for e in NEWEST
        if (e.name not in torch_file or texts(torch_file[e.name]) != texts(e)) and implementation(e.name) is not None
    ]


def test_torch_2_14_1s_own_formulas_pass_the_checker():
    """The CI slice of `python -m jaxderiv check --spec formulas/derivatives_v2_14_1.yaml`: the
    entries 2.14.1 writes otherwise than torch 2.13 (clamp, min/max with tensor bounds, erf,
    log2, group norm, ...; torch 2.13's file is checked in full elsewhere), first and second order."""
    changed = _changed_since_torch_2_13()
    assert {"maximum", "clamp_min.Tensor", "native_group_norm", "erf", "_pdist_backward"} <= set(changed)
    assert len(changed) >= 15
    report = jaxderiv.check_all(NEWEST, ops=changed, modes=("vjp", "jvp", "vjp_vjp"))
    assert not [r for r in report if r.status in ("failed", "error")], report.summary()
    assert sum(r.status == "passed" for r in report) >= 2 * len(changed)


def _declared_for_torch_2_14_1() -> dict[str, tuple[str, ...]]:
    """The differences the op records declare with `newest_spec=True`, by entry."""
    from jaxderiv.check import opdb

    return {
        n: r.difference.columns
        for n, r in opdb.database().items()
        if r.difference is not None and r.difference.newest_spec
    }


def test_torch_2_14_1s_changes_are_the_declared_differences(torch):
    """Parity of the default registry with torch 2.13 on these entries differs exactly where
    their records say torch 2.14.1 changed the formula (`newest_spec=True`: new kink conventions,
    a derivative torch 2.13 did not have), and nowhere else; torch 2.13's own file agrees."""
    from jaxderiv.check import parity as P

    judged = P.judged_by_content(DEFAULT)
    declared_for_newest = _declared_for_torch_2_14_1()
    assert {"clamp_min", "fmax", "_pdist_backward"} <= set(declared_for_newest)
    for name, columns in declared_for_newest.items():
        assert judged[name] == "newest"
        row = P.compare(jaxderiv.default_registry(), name)
        declared = P.known_difference(name, judged)
        assert declared is not None and row.differs == declared.columns == columns, (name, row.note)
        assert P.known_difference(name, True) is None and P.known_difference(name, False) is None
    torch_row = P.compare(jaxderiv.Registry(load_spec(from_torch=True)), "fmax")
    assert torch_row.ok, torch_row.note
