"""A CI slice of the OpInfo replay (`jaxderiv.check.opinfo`, the comparison core's second source
of samples): PyTorch's own OpInfo samples for 15 common ops, every ATen call they make replayed
through torch 2.13's registry and compared with torch in forward value/dtype, vjp and jvp
(float64 and complex128); in-place and `_copy` overloads through their functional entries;
complex cholesky along Hermitian directions."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxderiv.check.torch_compare import to_numpy  # noqa: E402
from jaxderiv.check.opdb import record  # noqa: E402
from jaxderiv.forward import implementation  # noqa: E402
from jaxderiv.torch.resolve import torch_registry  # noqa: E402
from torch_models import edited_torch_spec  # noqa: E402

opinfo = pytest.importorskip("jaxderiv.check.opinfo")

OPINFOS = [
    "abs",
    "exp",
    "sin",
    "tanh",
    "add",
    "mul",
    "div",
    "sum",
    "mean",
    "softmax",
    "matmul",
    "cat",
    "transpose",
    "where",
    "clamp",
]

# Mismatches measured on torch 2.13.0 CPU (jaxderiv's torch registry), declared with their
# reason and measured error: op -> (mode, count, max error, reason). None were measured: every
# recorded call of these OpInfos agrees in forward and vjp within rtol 1e-7 / atol 1e-9.
# the ATen overloads these OpInfos' samples call (measured), each of which must be compared
EXPECTED_OPS = {
    "abs",
    "add.Tensor",
    "mul.Tensor",
    "clamp.Tensor",
    "div.Tensor",
    "div.Tensor_mode",
    "exp",
    "dot",
    "mv",
    "unsqueeze",
    "mm",
    "view",
    "_unsafe_view",
    "transpose.int",
    "expand",
    "bmm",
    "squeeze.dim",
    "_softmax",
    "_to_copy",
    "sin",
    "tanh",
    "cat",
    "where.self",
    "mean",
    "mean.dim",
    "sum",
    "sum.dim_IntList",
}


# ... of which torch has no forward-mode formula for these (measured): their jvp is not applicable
NO_TORCH_JVP: set[str] = set()


@pytest.fixture(scope="module")
def result():
    jax.config.update("jax_enable_x64", True)
    return opinfo.replay("torch", OPINFOS)


def test_slice_covers_the_expected_calls(result):
    assert (
        result.opinfos == 18
    )  # div, softmax have variants: div.{no_rounding_mode,trunc_rounding,floor_rounding}, softmax.with_dtype
    assert not result.sample_errors
    assert set(result.rows) >= EXPECTED_OPS
    assert result.totals["distinct_calls"] > 250
    assert not any(k.startswith("harness error") for k in result.skipped), result.skipped
    assert not result.missing, result.missing


def test_no_crashes(result):
    crashes = {r.op: r.messages for r in result.rows.values() if r.crashes}
    assert not crashes


def test_every_call_agrees_except_the_declared(result):
    """Differences are declared in op records (`parity_differs`) and counted apart; this slice's
    ops have none, so every call agrees in forward and vjp."""
    assert not result.declared
    for r in result.rows.values():
        assert r.forward_agree == r.calls, (r.op, r.messages)
        assert r.vjp_agree == r.vjp_compared, (r.op, r.messages)
    # the derivative comparison really ran, on real and complex calls
    assert result.totals["vjp_compared"] > 250


def test_every_jvp_agrees_or_torch_has_no_forward_mode(result):
    for r in result.rows.values():
        assert r.jvp_mismatch == 0, (r.op, r.messages)
        assert r.jvp_agree == r.jvp_compared, (r.op, r.messages)
    assert {r.op for r in result.rows.values() if r.jvp_na} == NO_TORCH_JVP, result.jvp_not_applicable
    assert result.totals["jvp_compared"] > 250


def test_a_sabotaged_formula_is_reported_as_a_vjp_mismatch(tmp_path):
    """Backward formula doubled: every vjp differs, forward and jvp (the `result:` formula) do not."""
    doubled_abs = edited_torch_spec(
        tmp_path,
        "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn()\n",
        "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn() * 2\n",
    )
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay(doubled_abs, ["abs"])
    row = r.rows["abs"]
    assert row.calls > 0 and row.crashes == 0
    assert row.forward_agree == row.calls  # the forward is untouched
    assert row.vjp_mismatch == row.vjp_compared > 0 and row.vjp_agree == 0
    assert row.vjp_max_error > 0.1
    assert row.jvp_agree == row.jvp_compared > 0  # the result: formula is untouched


def test_a_sabotaged_forward_formula_is_reported_as_a_jvp_mismatch(tmp_path):
    """`result:` formula doubled: every jvp differs, the vjp (its own formula) does not."""
    line = "  result: handle_r_to_c(result.scalar_type(), self_t.conj() * self_p.sgn())\n"
    doubled = edited_torch_spec(
        tmp_path,
        "  self: grad * self.sgn()\n" + line,
        "  self: grad * self.sgn()\n" + line.replace("self_p.sgn())", "self_p.sgn() * 2)"),
    )
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay(doubled, ["abs"])
    row = r.rows["abs"]
    assert row.calls > 0 and row.crashes == 0
    assert row.forward_agree == row.calls and row.vjp_agree == row.vjp_compared > 0
    assert row.jvp_mismatch == row.jvp_compared > 0 and row.jvp_agree == 0
    assert row.jvp_max_error > 0.1


def test_in_place_and_copy_overloads_run_as_their_functional_entries():
    """`add_.Tensor`, `div_.Tensor` (a Python scalar is wrapped), `clamp_min_`, `mul_` with a wider operand (the result keeps
    self's dtype), `diagonal_copy`, `expand_copy`: not in derivatives.yaml, replayed through
    `add.Tensor`, ..., `diagonal`, `expand` and compared in all three modes; `copy_` as
    `expand` then `_to_copy`."""
    import collections

    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    rec = opinfo.Recorder()
    with torch.no_grad(), rec:
        x.clone().add_(x.flip(0), alpha=2)
        x.clone().div_(3.0)
        x.clone().clamp_min_(0.1)
        x.float().mul_(x)
        torch.diagonal_copy(x)
        torch.expand_copy(x[:1], (3, 4))
        x.clone().copy_(x)
    r = opinfo.Replay(rows={}, missing=collections.defaultdict(set), registry="torch")
    with jax.enable_x64(True):
        opinfo._compare_calls(torch_registry(), rec.calls, "manual", r, {}, 0)
    routed = {
        "add_.Tensor": "add.Tensor",
        "div_.Tensor": "div.Tensor",
        "clamp_min_": "clamp_min",
        "mul_.Tensor": "mul.Tensor",
        "diagonal_copy": "diagonal",
        "expand_copy": "expand",
    }
    assert {k: r.rows[k].via for k in routed} == routed
    for name in routed:
        row = r.rows[name]
        assert row.calls == row.forward_agree == row.vjp_agree == row.jvp_agree == 1, (name, row.messages)
    assert r.calls_routed == len(routed)
    # VariableTypeManual's, no derivatives.yaml entry: run as expand then _to_copy (a `forward.variant`)
    assert not r.missing
    row = r.rows["copy_"]
    assert row.calls == row.forward_agree == row.vjp_agree == row.jvp_agree == 1, row.messages


def test_complex_cholesky_is_compared_along_hermitian_directions(tmp_path):
    """torch 2.13's cholesky_backward keeps an anti-Hermitian part L⁻ᴴ (i/2 Im diag(Lᴴ gL)) L⁻¹
    that jaxderiv's (the 1.10 helper, symmetrized) lacks; it pairs to zero with every Hermitian
    input direction. Compared by Hermitian parts every call agrees; a doubled formula is still caught."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["cholesky"], dtypes=(torch.complex128,), samples=2)
    row = r.rows["cholesky"]
    assert row.calls > 0 and row.vjp_agree == row.vjp_compared > 0 and row.forward_agree == row.calls
    assert row.jvp_na == row.calls  # torch has no forward-mode formula for cholesky (linalg_cholesky_ex has)
    wrong = edited_torch_spec(
        tmp_path,
        "  self: cholesky_backward(grad, upper, result)\n",
        "  self: cholesky_backward(grad, upper, result) * 2\n",
    )
    r = opinfo.replay(wrong, ["cholesky"], dtypes=(torch.complex128,), samples=2)
    assert r.rows["cholesky"].vjp_mismatch == r.rows["cholesky"].vjp_compared > 0


def test_masked_scatter_broadcasts_self_with_the_mask():
    """Found by a larger replay: the functional masked_scatter broadcasts self and mask together
    (a (5,) self with a (5, 5) mask); the forward broadcast the mask to self's shape and crashed."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["masked_scatter"])
    row = r.rows["masked_scatter"]
    assert row.calls > 0 and row.crashes == 0, row.messages
    assert (
        row.forward_agree == row.calls
        and row.vjp_agree == row.vjp_compared > 0
        and row.jvp_agree == row.jvp_compared > 0
    )


def test_an_entry_without_a_forward_is_missing_not_an_aborted_opinfo():
    """Found by a larger replay (OpInfo `to_sparse`): `_to_sparse` has an entry but no forward
    (its result is sparse), and its formula's `.sym_blocksize()` does not translate. Looking the
    overload up built the op, raised TranslationError and dropped the OpInfo's other calls; it is
    now listed as missing, and the rest of the sample is compared."""
    jax.config.update("jax_enable_x64", True)
    assert opinfo._implemented(torch_registry(), "_to_sparse") == (None, None)
    r = opinfo.replay("torch", ["to_sparse"], dtypes=(torch.float64,), samples=2)
    assert "to_sparse" not in r.sample_errors, r.sample_errors
    assert "_to_sparse" in r.missing
    # listed with its record's reason, and counted as declared in the summary
    (row,) = [line for line in r.markdown().splitlines() if line.startswith("| `_to_sparse` |")]
    assert row.endswith(f"| {record('_to_sparse').not_applicable} |") and "sparse COO tensor" in row
    assert "of them declared with no JAX meaning" in r.summary()


def test_torchs_storage_less_zero_tangent_is_compared():
    """Found by a larger replay: on a real input torch's forward-mode tangent of slogdet's sign
    is an `_efficientzerotensor`, which `.numpy()` refuses; the call was counted as jvp not
    applicable (and a zero gradient as a harness error). The comparison's `to_numpy` materializes it."""
    jax.config.update("jax_enable_x64", True)
    z = torch._efficientzerotensor((2, 3), dtype=torch.float64)
    assert (to_numpy(z) == 0).all() and to_numpy(z).shape == (2, 3)
    r = opinfo.replay("torch", ["linalg.slogdet"], dtypes=(torch.float64,), samples=2)
    row = r.rows["_linalg_slogdet"]
    assert row.calls > 0 and row.jvp_na == 0 and row.jvp_agree == row.jvp_compared == row.calls, row.messages


CONSTANT_OPINFOS = ["new_ones", "full_like", "arange", "argmax", "new_empty", "scalar_tensor", "eye", "equal", "item"]
# ranges, queries, histograms, arithmetic ATen gives no derivative, layout; nanmean calls detach
CONSTANT_OPINFOS += ["linspace", "linspace.tensor_overload", "logspace", "logspace.tensor_overload", "floor_divide"]
CONSTANT_OPINFOS += ["heaviside", "isinf", "isposinf", "isneginf", "isin", "bucketize", "allclose", "empty_permuted"]
CONSTANT_OPINFOS += ["histogram", "histogramdd", "_chunk_cat", "nanmean", "hash_tensor"]
# and the overloads they call that have no entry (linalg.inv's _linalg_check_errors too)
CONSTANT_OVERLOADS = {"eye", "eye.m", "equal", "_local_scalar_dense", "_linalg_check_errors"}
CONSTANT_OVERLOADS |= {"linspace", "linspace.Tensor_Tensor", "linspace.Tensor_Scalar", "linspace.Scalar_Tensor"}
CONSTANT_OVERLOADS |= {"logspace", "logspace.Tensor_Tensor", "logspace.Tensor_Scalar", "logspace.Scalar_Tensor"}
CONSTANT_OVERLOADS |= {"floor_divide", "heaviside", "isinf", "isposinf", "isneginf", "isin.Tensor_Tensor"}
CONSTANT_OVERLOADS |= {"bucketize.Tensor", "allclose", "empty_permuted", "histogram.bin_ct", "histogram.bins_tensor"}
CONSTANT_OVERLOADS |= {"_histogramdd_bin_edges", "_histogramdd_from_bin_cts", "_histogramdd_from_bin_tensors"}
CONSTANT_OVERLOADS |= {"_chunk_cat", "detach"}


@pytest.fixture(scope="module")
def constants():
    jax.config.update("jax_enable_x64", True)
    return opinfo.replay("torch", [*CONSTANT_OPINFOS, "linalg.inv"], samples=4)


def test_gradient_free_overloads_with_no_entry_are_compared_forward_only(constants):
    """Constructors, argmax, linspace, isin, histogram, ...: no derivatives.yaml entry, run as
    exported graphs run them (a forward with its inputs held constant); their values and dtypes
    agree with torch, uninitialized constructors' (empty_permuted's too) shapes and dtypes."""
    rows = {n: r for n, r in constants.rows.items() if r.via == "no gradient"}
    assert {"new_ones", "full_like", "arange.start_step", "argmax", "new_empty", "scalar_tensor"} <= set(rows)
    for r in rows.values():
        assert r.calls > 0 and r.forward_agree == r.calls and r.vjp_compared == r.jvp_compared == 0, (r.op, r.messages)
    assert constants.calls_constant >= sum(r.calls for r in rows.values())
    assert not {"new_ones", "full_like", "argmax", "new_empty", "scalar_tensor"} & set(constants.missing)
    assert CONSTANT_OVERLOADS <= set(rows) and not CONSTANT_OVERLOADS & set(constants.missing)
    # hash_tensor has an entry, its result declared not differentiable: the forward (uint64) only
    row = constants.rows["hash_tensor"]
    assert row.via == "" and row.calls > 0 and row.forward_agree == row.calls and row.vjp_compared == 0, row.messages
    assert not constants.missing, constants.missing


def test_a_failed_factorization_raises_as_aten_does_where_the_values_are_known():
    check = implementation("_linalg_check_errors")
    assert check(jnp.zeros(3, jnp.int32), "linalg.inv", is_matrix=False) is None
    with pytest.raises(ValueError, match=r"linalg.inv: the factorization failed \(batch element 1\): info = 2"):
        check(jnp.asarray([0, 2, 0], jnp.int32), "linalg.inv", is_matrix=False)
    assert jax.jit(lambda info: check(info, "linalg.inv", is_matrix=False))(jnp.ones(3, jnp.int32)) is None


def test_a_wrong_constructor_is_reported_as_a_forward_mismatch(monkeypatch):
    """A `full_like` that fills with 0, and a `new_empty` of the wrong dtype, both differ."""
    real = opinfo.resolve
    wrong = {
        "full_like": lambda fn: lambda self, fill_value, *a, **k: fn(self, 0, *a, **k),
        "new_empty": lambda fn: lambda *a, **k: fn(*a, **k).astype("int8"),
    }

    def resolve(name, registry):
        found = real(name, registry)
        return dataclasses.replace(found, fn=wrong[name](found.fn)) if name in wrong else found

    monkeypatch.setattr(opinfo, "resolve", resolve)
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["full_like", "new_empty"], dtypes=(torch.float64,), samples=3)
    assert r.rows["full_like"].forward_mismatch > 0 and r.rows["new_empty"].forward_mismatch > 0


# -- outputs defined up to a factor per column (the op records' `Gauge`) ----------------------
def _eigh_call(dtype):
    """A recorded `_linalg_eigh` call on a Hermitian matrix with well-separated eigenvalues."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 4, dtype=dtype, generator=g)
    rec = opinfo.Recorder()
    with torch.no_grad(), rec:
        torch.linalg.eigh(a + a.mH)
    (call,) = [c for c in rec.calls if c.name == "_linalg_eigh"]
    return call


def _eigenvectors_times(op, factor):
    """The op with its eigenvectors' columns multiplied by `factor` (a wrong or another valid choice)."""

    def run(*args, **kwargs):
        w, v = op(*args, **kwargs)
        return w, v * jnp.asarray(factor, v.dtype)

    run.differentiable_inputs = op.differentiable_inputs
    return run


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eigenvectors_are_compared_up_to_a_unit_factor_per_column(dtype):
    """Another valid choice of eigenvectors (columns times -1, complex: a phase) agrees in every
    mode once aligned by the record's gauge, and is a mismatch without it; columns times 2 (not a
    unit factor) stay a mismatch in every mode."""
    jax.config.update("jax_enable_x64", True)
    call = _eigh_call(getattr(torch, dtype))
    registry = torch_registry()
    op, _ = opinfo._implemented(registry, "_linalg_eigh")
    gauge = record("_linalg_eigh").gauge
    assert gauge is not None and gauge.columns == (1,)
    unit = [-1.0, 1.0, -1.0, 1.0] if dtype == "float64" else [1j, -1.0, (0.6 + 0.8j), -1j]
    flipped = _eigenvectors_times(op, unit)
    assert dataclasses.astuple(opinfo.compare_call(op, call, gauge=gauge))[:2] == ("agree", "agree")
    o = opinfo.compare_call(flipped, call, gauge=gauge)
    assert (o.forward, o.vjp, o.jvp) == ("agree", "agree", "agree"), o.message
    o = opinfo.compare_call(flipped, call, gauge=None)
    # complex: torch refuses the unprojected cotangent (its loss depends on the phases): not compared
    assert (o.forward, o.vjp, o.jvp) == ("mismatch", "mismatch" if dtype == "float64" else "skip", "mismatch")
    o = opinfo.compare_call(_eigenvectors_times(op, [2.0, 1.0, 1.0, 1.0]), call, gauge=gauge)
    assert (o.forward, o.vjp, o.jvp) == ("mismatch", "mismatch", "mismatch"), o.message


def test_spectral_opinfos_agree_in_every_mode_up_to_the_gauge():
    """linalg.eigh, linalg.eig and svd_lowrank's samples: eigenvectors and singular vectors agree
    with torch's after aligning their factors, complex cotangents included (projected onto the
    factor-independent ones torch accepts)."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["linalg.eigh", "linalg.eig", "svd_lowrank"], samples=3)
    for name in ("_linalg_eigh", "linalg_eig", "_linalg_svd"):
        row = r.rows[name]
        assert row.crashes == 0 and row.forward_agree == row.calls > 0, (name, row.messages)
        assert row.vjp_agree == row.vjp_compared > 0 and row.jvp_agree == row.jvp_compared > 0, (name, row.messages)


def test_declared_differences_are_counted_apart_by_their_records_reason():
    """torch 2.13's own triangular_solve_jvp is wrong (the record's `parity_differs`, measured
    against finite differences): under torch's file each jvp mismatch is "declared" with that
    reason, forward and vjp agree."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["triangular_solve"], dtypes=(torch.float64,), samples=3)
    row = r.rows["triangular_solve"]
    reason = record("triangular_solve").difference.reason
    assert row.jvp_declared > 0 and row.jvp_mismatch == 0 and row.vjp_agree == row.vjp_compared > 0
    assert r.declared == {("triangular_solve", "jvp", reason): row.jvp_declared}
    assert row.forward_agree == row.calls


def test_a_replay_in_two_processes_counts_what_one_process_counts():
    """`--jobs 2` spreads the OpInfos over spawned processes and merges their replays: the same
    distinct calls, agreements, declared differences and missing overloads as one process."""
    jax.config.update("jax_enable_x64", True)
    names = ["abs", "add", "cat", "triangular_solve", "new_ones"]
    one = opinfo.replay("torch", names, samples=2)
    two = opinfo.replay("torch", names, samples=2, jobs=2)
    assert two.totals == one.totals and two.totals["distinct_calls"] > 0
    assert two.declared == one.declared and sum(one.declared.values()) > 0
    assert {n: (r.calls, r.opinfos) for n, r in two.rows.items()} == {
        n: (r.calls, r.opinfos) for n, r in one.rows.items()
    }
    assert (two.calls_recorded, two.calls_replayed, two.opinfos, two.missing) == (
        one.calls_recorded,
        one.calls_replayed,
        one.opinfos,
        one.missing,
    )


def test_random_overloads_are_compared_in_distribution():
    """normal, uniform, bernoulli, multinomial, randn and randint_like draws: shapes, dtypes and a Kolmogorov-Smirnov
    test of about 4000 values of each side agree; draws scaled by 1.5 are a forward mismatch."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["normal", "uniform", "bernoulli", "multinomial", "randn", "randint_like"], samples=2)
    random_rows = {n: row for n, row in r.rows.items() if row.via == "random"}
    # samplers with an entry, and constructors with none (their forwards take the key as generator)
    assert {"normal.Tensor_Tensor", "uniform_", "bernoulli", "multinomial", "randn", "randint_like"} <= set(random_rows)
    assert not r.missing
    for row in random_rows.values():
        assert row.calls > 0 and row.forward_agree == row.calls, (row.op, row.messages)
    rec = opinfo.Recorder()
    with torch.no_grad(), rec:
        torch.empty(40, 50, dtype=torch.float64).normal_(0.5, 2.0)
    (call,) = [c for c in rec.calls if c.name == "normal_"]
    op, _ = opinfo._implemented(torch_registry(), "normal_")
    assert opinfo._compare_random(op, call, seed=0).forward == "agree"
    scaled = opinfo._compare_random(lambda *a, **k: op(*a, **k) * 1.5, call, seed=0)
    assert scaled.forward == "mismatch" and "Kolmogorov-Smirnov" in scaled.message


FOUND_BY_THE_FULL_RUN = [
    "prod",  # 0-size inputs: prod_backward sliced an empty dim
    "gather",  # an empty index of more dims than self: ATen checks no shapes
    "masked_fill",  # the functional form broadcasts self with the mask
    "unique",  # unique_dim along a 0-size dim (and ATen's error along another)
    "unique_consecutive",  # dim=0 of a 1-d tensor takes the flat path; -1 does not
    "nn.functional.group_norm",  # an empty batch: reshape(-1) was ambiguous
    "nn.functional.nll_loss",  # total_weight of one unbatched sample with reduction='none'
    "masked.amax",  # NaN inputs: ATen's bool product keeps NaN * False = NaN
    "masked.norm",  # NaN inputs: sgn(NaN) = 0 in the norm's backward
    "nn.functional.fractional_max_pool2d",  # samples outside [0, 1): C++ truncates toward zero
    "nn.functional.fractional_max_pool3d",  # an empty batch in the result: formula's .flatten()
]


@pytest.mark.parametrize("name", FOUND_BY_THE_FULL_RUN)
def test_what_the_full_run_found_agrees_now(name):
    """Every sample of each OpInfo whose calls crashed or mismatched in the first all-samples run
    (default registry): 0 crashes, and every call agrees in all three modes. One test an OpInfo,
    so that pytest-xdist spreads them over the cores."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("default", [name])
    assert r.totals["crashes"] == 0, {x.op: x.messages for x in r.rows.values() if x.crashes}
    bad = {x.op: x.messages for x in r.rows.values() if x.forward_mismatch + x.vjp_mismatch + x.jvp_mismatch}
    assert not bad and not r.declared, bad
    assert r.totals["distinct_calls"] > 0


def test_a_full_svds_complement_is_compared_through_its_span():
    """With full_matrices, Vh's rows past the singular values are any orthonormal basis of the
    null space: another basis of it agrees (the record's `counted_by`), a basis of another space
    does not, and without `counted_by` the other basis is a mismatch."""
    jax.config.update("jax_enable_x64", True)
    a = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    rec = opinfo.Recorder()
    with torch.no_grad(), rec:
        torch.linalg.svd(a, full_matrices=True)
    (call,) = [c for c in rec.calls if c.name == "_linalg_svd"]
    op, _ = opinfo._implemented(torch_registry(), "_linalg_svd")
    gauge = record("_linalg_svd").gauge
    c, s_ = 0.6, 0.8

    def complement(mix):
        def run(*args, **kwargs):
            u, s, vh = op(*args, **kwargs)
            return u, s, vh.at[3:, :].set(jnp.asarray(mix) @ vh[3:, :] if mix is not None else vh[:2, :])

        run.differentiable_inputs = op.differentiable_inputs
        return run

    rotated = complement([[c, -s_], [s_, c]])
    assert opinfo.compare_call(rotated, call, gauge=gauge).forward == "agree"
    assert opinfo.compare_call(rotated, call, gauge=dataclasses.replace(gauge, counted_by=None)).forward == "mismatch"
    assert opinfo.compare_call(complement(None), call, gauge=gauge).forward == "mismatch"


def test_rrelu_is_compared_on_torchs_draw():
    """rrelu_with_noise writes its slopes into `noise`, which jaxderiv's op reads instead (JAX
    cannot write into an argument; the backward formula reads it there): given torch's draw,
    the training-mode values agree exactly."""
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["nn.functional.rrelu"])
    row = r.rows["rrelu_with_noise"]
    assert row.calls > 0 and row.forward_agree == row.calls, row.messages


def test_float32_samples_agree_at_float32_tolerances():
    """The float32 subset: forward values compared in float32 at torch.testing's float32
    tolerances, derivatives on the same calls widened to float64 (as for every dtype)."""
    r = opinfo.replay(
        "torch",
        ["exp", "tanh", "mul", "sum", "softmax", "matmul", "nn.functional.gelu", "nn.functional.layer_norm"],
        dtypes=(torch.float32,),
        samples=3,
    )
    assert not r.missing and not r.declared and r.totals["crashes"] == 0
    assert r.totals["distinct_calls"] >= 20 and r.totals["vjp_compared"] >= 20
    for row in r.rows.values():
        assert row.forward_agree == row.calls and row.vjp_agree == row.vjp_compared, (row.op, row.messages)
        assert row.jvp_agree == row.jvp_compared, (row.op, row.messages)


def test_a_float32_forward_less_accurate_than_torchs_is_a_mismatch(monkeypatch):
    """Low-precision outputs outside torch.testing's tolerance agree only when as close to torch's
    float64 result as torch's own float32 one: an exp off by 1e-4 relative is still reported."""
    op = torch_registry().op("exp")
    real = op.impl
    monkeypatch.setattr(op, "impl", lambda x: real(x) * (1 + 1e-4))
    jax.config.update("jax_enable_x64", True)
    r = opinfo.replay("torch", ["exp"], dtypes=(torch.float32,), samples=3)
    assert r.rows["exp"].forward_mismatch > 0
