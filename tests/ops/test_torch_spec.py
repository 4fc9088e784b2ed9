"""The installed torch's own derivatives.yaml (torch 2.13) as the spec, against torch 2.13 itself.

torch 2.13's file spells several formulas differently from the shipped seed files: a rounding
`.div(other, "trunc")`, `*_jvp` helpers in its `result:` formulas, `sgn_backward`'s arguments
in the other order, new schemas of elu_backward, gelu_backward and softplus_backward, `_symint`
helpers. These tests build the entries both files share from torch's file, and compare
jaxderiv's gradients (jax.vjp with a random cotangent, jax.jvp with random tangents) with
torch.autograd and torch.func.jvp on the same inputs: same formulas, so they must agree.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from torch_oracle import random_like, to_numpy, to_torch

from jaxderiv import Registry, load_spec
from jaxderiv.spectools.coverage import coverage
from jaxderiv.spec import shipped_spec_files, torch_spec_file

torch = pytest.importorskip("torch")
aten = torch.ops.aten


@pytest.fixture(scope="module")
def registry():
    return Registry(load_spec(from_torch=True))


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the entry, as torch.ops.aten spells it
    args: Callable[[np.random.Generator], tuple]  # positional arguments, in torch's schema order
    diff: tuple[int, ...] = (0,)  # positions of the differentiable tensors
    kwargs: dict = dataclasses.field(default_factory=dict)  # keyword-only arguments
    output: int | None = None  # the differentiable output of a tuple-returning op
    jvp: bool = True  # the entry has a `result:` formula (or auto_*) to compare in forward mode
    vjp: bool = True  # False where torch's formula is not_implemented (values are still compared)
    label: str = ""
    # Why torch.func.jvp cannot be the forward-mode oracle, if it cannot: the jvp is then
    # compared with torch's double-backward jvp (its backward formula transposed), and
    # torch.func.jvp's disagreement is asserted, so that a fixed torch shows up here.
    forward_ad_differs: str = ""
    tangents: Callable[[list], list] = lambda ts: (
        ts
    )  # restrict random tangents where the op reads only part of an input

    @property
    def id(self) -> str:
        return self.name + (f"[{self.label}]" if self.label else "")

    def torch_op(self):
        base, _, overload = self.name.partition(".")
        return getattr(getattr(aten, base), overload or "default")


def _n(*shape):
    return lambda rng: rng.normal(size=shape)


def _away_from_integers(rng, shape, lo, hi):
    """Values whose ratios to 1.3 are not near an integer (fmod and remainder jump there)."""
    x = rng.uniform(lo, hi, size=shape)
    frac = np.abs(x / 1.3 - np.round(x / 1.3))
    return np.where(frac < 0.1, x + 0.3, x)


def _spd_factor(rng, n=3, upper=False):
    """A well-conditioned triangular factor: positive diagonal, small off-diagonal entries."""
    f = np.tril(0.3 * rng.normal(size=(n, n)), -1) + np.diag(rng.uniform(1.0, 2.0, size=n))
    return f.T if upper else f


def _ties(rng):
    """A matrix with a repeated maximum in each row (amax/amin split the tangent among ties)."""
    x = rng.normal(size=(3, 4))
    x[:, 1] = x.max(axis=1)
    x[:, 3] = x[:, 1]
    return x


def _clamp_args(rng):
    """self touching min and max exactly at some positions: the kinks."""
    lo, hi = -0.5 * np.ones(6), 0.7 * np.ones(6)
    x = np.concatenate([[-0.5, 0.7, -2.0, 2.0], rng.uniform(-0.4, 0.6, 2)])
    return x, lo, hi


CASES = [
    # the tensor method `.div(other, rounding_mode)`
    Case("fmod.Tensor", lambda rng: (_away_from_integers(rng, (6,), -4, 4), np.full(6, 1.3)), diff=(0, 1)),
    Case("remainder.Tensor", lambda rng: (_away_from_integers(rng, (6,), -4, 4), np.full(6, 1.3)), diff=(0, 1)),
    # clamp_jvp, at the bounds too
    Case("clamp.Tensor", _clamp_args, diff=(0, 1, 2), label="at the bounds"),
    # a lone bound: at a tie torch 2.13's clamp_jvp takes the bound's tangent, its backward self's
    Case("clamp.Tensor", lambda rng: _clamp_args(rng)[:2] + (None,), diff=(0, 1), label="lone min at the bound"),
    # sgn_backward(self, grad, result): the argument order of later files
    Case("sgn", lambda rng: (rng.normal(size=5) + 1j * rng.normal(size=5),), label="complex"),
    # _to_copy_backward: back to self's dtype
    Case(
        "_to_copy",
        lambda rng: (rng.normal(size=4),),
        kwargs={"dtype": np.dtype(np.float32)},
        label="to float32",
        jvp=False,
    ),
    # elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)
    Case("elu", lambda rng: (rng.uniform(-2, 2, 6), 1.3, 0.8, 1.7)),
    Case("celu", lambda rng: (rng.uniform(-2, 2, 6), 1.5)),
    Case(
        "elu_backward",
        lambda rng: (rng.normal(size=6), 1.3, 0.8, 1.7, False, rng.uniform(-2, 2, 6)),
        diff=(0, 5),
        label="from self",
    ),
    Case(
        "elu_backward",
        lambda rng: (rng.normal(size=6), 1.3, 0.8, 1.7, True, rng.uniform(-1, 2, 6)),
        diff=(0, 5),
        label="from result",
    ),
    # gelu(approximate) and gelu_backward(approximate), gelu_double_backward
    Case("gelu", lambda rng: (rng.uniform(-3, 3, 6),), label="none"),
    Case("gelu", lambda rng: (rng.uniform(-3, 3, 6),), kwargs={"approximate": "tanh"}, label="tanh"),
    Case("gelu_backward", lambda rng: (rng.normal(size=6), rng.uniform(-3, 3, 6)), diff=(0, 1), label="none"),
    Case(
        "gelu_backward",
        lambda rng: (rng.normal(size=6), rng.uniform(-3, 3, 6)),
        diff=(0, 1),
        kwargs={"approximate": "tanh"},
        label="tanh",
    ),
    # softplus_backward(grad, self, beta, threshold): no output argument
    Case("softplus", lambda rng: (rng.uniform(-4, 4, 6), 2.0, 3.0)),
    Case("softplus_backward", lambda rng: (rng.normal(size=6), rng.uniform(-4, 4, 6), 2.0, 3.0), diff=(0, 1)),
    # reductions: mean_backward, amaxamin_jvp, logsumexp_jvp, logcumsumexp_jvp, norm_jvp
    Case("mean.dim", lambda rng: (rng.normal(size=(3, 4)), [1], False)),
    Case("amax", lambda rng: (_ties(rng), [1], False), label="ties"),
    Case("amin", lambda rng: (-_ties(rng), [1], True), label="ties"),
    Case("logsumexp", lambda rng: (rng.normal(size=(3, 4)), [1], False)),
    Case("logcumsumexp", lambda rng: (rng.normal(size=(3, 4)), 1)),
    Case(
        "norm.Scalar",
        lambda rng: (rng.normal(size=(3, 4)), 3.0),
        label="p=3",
        forward_ad_differs="torch 2.13's norm_jvp(self_p, self_t, p, result) sums with keepdim over all dims: a [1, 1] tangent for a 0-d result, which torch rejects",
    ),
    Case("norm.ScalarOpt_dim", lambda rng: (rng.normal(size=(3, 4)), 1.5, [1], False), label="p=1.5"),
    Case("norm.ScalarOpt_dim", lambda rng: (rng.normal(size=(3, 4)), float("inf"), [0], True), label="p=inf"),
    Case("dist", lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 2.0), diff=(0, 1)),
    # mm_mat1_backward(grad, mat2, sizes, strides, layout, alpha)
    Case("mm", lambda rng: (rng.normal(size=(2, 3)), rng.normal(size=(3, 4))), diff=(0, 1)),
    Case(
        "addmm",
        lambda rng: (rng.normal(size=(2, 4)), rng.normal(size=(2, 3)), rng.normal(size=(3, 4))),
        diff=(0, 1, 2),
        kwargs={"beta": 0.5, "alpha": 2.0},
    ),
    # losses: apply_loss_reduction in the result formulas
    Case("mse_loss", lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 1), diff=(0, 1)),
    Case("smooth_l1_loss", lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 2, 0.5), diff=(0, 1)),
    Case(
        "binary_cross_entropy_with_logits",
        lambda rng: (rng.normal(size=(3, 4)), rng.uniform(0, 1, (3, 4)), None, None, 1),
        diff=(0, 1),
    ),
    # softmax family: logsumexp_jvp with {dim}
    Case("_log_softmax", lambda rng: (rng.normal(size=(3, 4)), 1, False)),
    Case("_softmax", lambda rng: (rng.normal(size=(3, 4)), 1, False)),
    Case("glu", lambda rng: (rng.normal(size=(3, 4)), 1)),
    # pooling: the jvp gathers with `.flatten(-2)` and `.view_as(result1)`
    Case("max_pool2d_with_indices", lambda rng: (rng.normal(size=(1, 2, 4, 4)), [2, 2], [2, 2]), output=0),
    # shapes: slice_backward_wrapper, stack_tensors_backward / stack_jvp are list-valued (below)
    Case("slice.Tensor", lambda rng: (rng.normal(size=(4, 5)), 1, 1, 4, 2)),
    # linear algebra jvps
    Case("cholesky_solve", lambda rng: (rng.normal(size=(3, 2)), _spd_factor(rng)), diff=(0, 1), label="lower"),
    Case(
        "cholesky_inverse",
        lambda rng: (_spd_factor(rng, upper=True), True),
        label="upper",
        forward_ad_differs="torch 2.13's cholesky_inverse_jvp disagrees with torch's own finite differences and backward; jaxderiv's helper is the derivative",
        tangents=lambda ts: [np.triu(ts[0])],
    ),  # the factor's triangle is all the op reads
    # batch_norm_jvp, in training
    # layer norm in torch's schema (normalized_shape): layer_norm_jvp, and its backward through the native_layer_norm_backward entry
    # layer norm in torch's schema (normalized_shape): layer_norm_jvp, native_layer_norm_backward_symint
    Case(
        "native_layer_norm",
        lambda rng: (rng.normal(size=(2, 3, 4)), [3, 4], rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), 1e-5),
        diff=(0, 2, 3),
        output=0,
    ),
    Case(
        "native_group_norm",
        lambda rng: (rng.normal(size=(2, 4, 3)), rng.normal(size=4), rng.normal(size=4), 2, 4, 3, 2, 1e-5),
        diff=(0, 1, 2),
        output=0,
    ),
    # renorm_jvp, glu_backward_jvp, the binary cross entropy's target helpers, nansum's dims
    Case("renorm", lambda rng: (rng.normal(size=(3, 4)), 2.0, 0, 1.0)),
    Case("glu_backward", lambda rng: (rng.normal(size=(3, 2)), rng.normal(size=(3, 4)), 1), diff=(0, 1)),
    Case(
        "binary_cross_entropy",
        lambda rng: (rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0, 1, (3, 4)), None, 1),
        diff=(0, 1),
    ),
    Case(
        "binary_cross_entropy_backward",
        lambda rng: (rng.normal(size=()), rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0, 1, (3, 4)), None, 1),
        diff=(0, 1, 2),
    ),
    Case("nansum", lambda rng: (np.where(rng.uniform(size=(3, 4)) < 0.3, np.nan, rng.normal(size=(3, 4))), [1], False)),
    # embedding_dense_double_backward_symint (with padding_idx), the bag's dense backward in torch's schema
    Case(
        "embedding_dense_backward",
        lambda rng: (rng.normal(size=(2, 3, 4)), np.array([[0, 2, 1], [2, 4, 1]]), 5, 1, False),
        label="padding_idx=1",
    ),
    Case(
        "_embedding_bag_dense_backward",
        lambda rng: (
            rng.normal(size=(2, 3)),
            np.array([0, 2, 1, 3, 2]),
            np.array([0, 0, 1, 1, 1]),
            np.array([2, 3]),
            np.zeros(2, np.int64),
            5,
            False,
            1,
            None,
            -1,
        ),
        label="mean",
        vjp=False,
        jvp=False,
    ),
    # the convolutions' convolution_backward_symint
    Case(
        "slow_conv_dilated2d",
        lambda rng: (
            rng.normal(size=(1, 2, 5, 5)),
            rng.normal(size=(3, 2, 2, 2)),
            [2, 2],
            rng.normal(size=3),
            [1, 1],
            [0, 0],
            [2, 2],
        ),
        diff=(0, 1, 3),
        jvp=False,
    ),
]


def _ours(registry, case, args):
    op = registry.op(case.name)

    def fn(*xs):
        full = list(args)
        for i, x in zip(case.diff, xs):
            full[i] = x
        out = op(*full, **case.kwargs)
        return out if case.output is None else out[case.output]

    return fn, [jnp.asarray(args[i]) for i in case.diff]


def _theirs(case, args):
    txs = [to_torch(np.asarray(args[i])).requires_grad_(True) for i in case.diff]

    def fn(*xs):
        full = [to_torch(np.asarray(a)) if isinstance(a, np.ndarray) else a for a in args]
        for i, x in zip(case.diff, xs):
            full[i] = x
        out = case.torch_op()(*full, **{k: to_torch(v) for k, v in case.kwargs.items()})
        return out if case.output is None else out[case.output]

    return fn, txs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_entry_builds_from_torch_spec(registry, case):
    """Every formula of the entry translates from torch's own file (no missing helper)."""
    op = registry.op(case.name)
    assert op.entry.location.file == str(torch_spec_file())
    assert op.formulas["vjp"] != "none"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_match_torch(registry, case):
    """The forward implementations take torch's schemas (elu_backward's is_result, gelu's
    approximate, layer norm's normalized_shape) and compute what torch.ops.aten does."""
    args = case.args(np.random.default_rng(3))
    ours = registry.op(case.name)(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args], **case.kwargs)
    theirs = case.torch_op()(*[to_torch(a) for a in args], **{k: to_torch(v) for k, v in case.kwargs.items()})
    ours, theirs = (ours, theirs) if isinstance(theirs, tuple) else ((ours,), (theirs,))
    for o, t in zip(ours, theirs, strict=True):
        if case.name == "max_pool2d_with_indices" or t.dtype.is_floating_point or t.dtype.is_complex:
            np.testing.assert_allclose(np.asarray(o), to_numpy(t), rtol=1e-6, atol=1e-9)
            assert np.asarray(o).shape == tuple(t.shape)


@pytest.mark.parametrize("case", [c for c in CASES if c.vjp], ids=lambda c: c.id)
def test_vjp_matches_torch_autograd(registry, case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    fn, xs = _ours(registry, case, args)
    out, vjp = jax.vjp(fn, *xs)
    ct = random_like(rng, out)
    ours = vjp(jnp.asarray(ct, out.dtype))
    tfn, txs = _theirs(case, args)
    theirs = torch.autograd.grad(tfn(*txs), txs, to_torch(np.conj(ct)).to(getattr(torch, str(out.dtype))))
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(o), np.conj(to_numpy(t)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("case", [c for c in CASES if c.jvp], ids=lambda c: c.id)
def test_jvp_matches_torch_forward_ad(registry, case):
    rng = np.random.default_rng(1)
    args = case.args(rng)
    fn, xs = _ours(registry, case, args)
    ts = case.tangents([random_like(rng, x) for x in xs])
    _, ours = jax.jvp(fn, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    tfn, txs = _theirs(case, args)
    primals, tangents = tuple(x.detach() for x in txs), tuple(to_torch(t) for t in ts)
    if case.forward_ad_differs:
        _, theirs = torch.autograd.functional.jvp(tfn, primals, tangents)
        try:
            _, forward_ad = torch.func.jvp(tfn, primals, tangents)
        except RuntimeError:
            pass
        else:
            assert not np.allclose(np.asarray(ours), to_numpy(forward_ad), rtol=1e-6, atol=1e-9), (
                case.forward_ad_differs
            )
    else:
        _, theirs = torch.func.jvp(tfn, primals, tangents)
    np.testing.assert_allclose(np.asarray(ours), to_numpy(theirs), rtol=1e-6, atol=1e-9)


def test_stack_from_torch_spec(registry):
    """stack_tensors_backward and stack_jvp: a list of inputs, one gradient and tangent each."""
    rng = np.random.default_rng(2)
    xs = [rng.normal(size=(2, 3)) for _ in range(3)]
    ts = [rng.normal(size=(2, 3)) for _ in range(3)]
    op = registry.op("stack")
    out, vjp = jax.vjp(lambda *a: op(list(a), 1), *map(jnp.asarray, xs))
    ct = rng.normal(size=out.shape)
    txs = [to_torch(x).requires_grad_(True) for x in xs]
    theirs = torch.autograd.grad(aten.stack.default(txs, 1), txs, to_torch(ct))
    for o, t in zip(vjp(jnp.asarray(ct)), theirs, strict=True):
        np.testing.assert_allclose(np.asarray(o), to_numpy(t), rtol=1e-12)
    _, ours_t = jax.jvp(lambda *a: op(list(a), 1), tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, ts)))
    _, theirs_t = torch.func.jvp(
        lambda *a: aten.stack.default(list(a), 1), tuple(map(to_torch, xs)), tuple(map(to_torch, ts))
    )
    np.testing.assert_allclose(np.asarray(ours_t), to_numpy(theirs_t), rtol=1e-12)


def test_coverage_of_torch_spec_ranks_what_is_missing():
    """The coverage report of torch's file counts the entries shared with the seed files and
    ranks what still keeps entries from translating, most entries first."""
    (fc,) = coverage(str(torch_spec_file())).files
    seed = {e.name for p in shipped_spec_files() for e in load_spec(p)}
    shared = [e.name for e in load_spec(from_torch=True) if e.name in seed]
    assert fc.entries_translated > 470
    counts = [n for _, n in fc.missing.most_common()]
    assert counts == sorted(counts, reverse=True) and counts
    assert fc.seed_entries == len(shared)
    assert fc.seed_entries_translated == fc.seed_entries - len(fc.seed_untranslated)
    assert not {c.name for c in CASES} & set(fc.seed_untranslated)
