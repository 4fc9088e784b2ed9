"""torch 2.13's elementwise, loss, shape and indexing entries that the seed files lack, built from
torch's own derivatives.yaml and compared with torch 2.13 itself.

sinc, special_ndtri, mish, huber_loss, aminmax, the pixel and channel shuffles, masked_fill with
a Tensor value, the scatters of views (slice, select, diagonal, as_strided) and the `_unsafe_`
indexing ops: forward values, vjp (jax.vjp with a random cotangent against torch.autograd.grad)
and jvp (jax.jvp against torch.func.jvp), on edge inputs where PyTorch picks a subgradient
(sinc at 0, huber at |x - y| == delta, aminmax's ties), 0-d inputs, negative dims and integer
dtypes. Each gradient comes from torch's formula text, so a changed formula must show here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from torch_oracle import random_like, to_numpy

from jaxderiv import Registry, check_all, load_spec
from jaxderiv.spec import torch_spec_file

torch = pytest.importorskip("torch")
aten = torch.ops.aten


@pytest.fixture(scope="module")
def registry():
    return Registry(load_spec(from_torch=True))


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the entry, as torch.ops.aten spells it
    args: Callable[[np.random.Generator], tuple]  # positional arguments, in schema order
    diff: tuple[int, ...] = (0,)  # positions of the differentiable tensors
    kwargs: dict = dataclasses.field(default_factory=dict)
    label: str = ""
    forward_ad: bool = True  # torch.func.jvp supports the op; else the Jacobian of torch's backward is the oracle

    @property
    def id(self) -> str:
        return self.name + (f"[{self.label}]" if self.label else "")

    def torch_op(self):
        base, _, overload = self.name.partition(".")
        return getattr(getattr(aten, base), overload or "default")


def _t(v):
    """Arrays (also inside Tensor?[] lists) as torch tensors; anything else as it is."""
    if isinstance(v, list):
        return [_t(e) for e in v]
    if isinstance(v, (np.ndarray, np.generic)):
        return torch.from_numpy(np.array(v))
    return v


def _n(*shape):
    return lambda rng: (rng.normal(size=shape),)


def _i(*values):
    return np.asarray(values, np.int64)


_TIES = np.array([[1.0, 3.0, 3.0, -2.0], [-2.0, 0.5, -2.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
# scatter_reduce: repeated targets, ties with self's own element (amax/amin split them), a
# single zero and two zeros in one target (prod's special paths)
_SELF = np.array([[1.0, 2.0, -1.0, 0.5], [0.0, 3.0, 1.0, 2.0], [2.0, -1.0, 4.0, 1.5]])
_SCATTER = _i([0, 0, 2], [1, 3, 3], [2, 2, 2])
_SRC = np.array([[1.0, 0.0, -1.0], [3.0, 2.0, 0.7], [0.0, 4.0, 0.0]])
_SOURCE = np.array([[1.0, 0.0, 3.0, 0.5], [2.0, 3.0, 1.0, 2.0], [0.0, 1.0, 0.0, -1.0]])
_KEEP = np.array([[True], [True], [False]])
_MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


def _huber(delta, at=None):
    """(self, target) with self - target on the kinks (0, +-delta) when `at` is given."""

    def args(rng):
        y = rng.normal(size=(2, 3))
        d = rng.uniform(-2, 2, size=(2, 3)) if at is None else np.resize(np.asarray(at), (2, 3))
        return y + d, y

    return args


CASES = [
    Case("sinc", _n(2, 3)),
    Case("sinc", lambda rng: (np.array([0.0, -0.0, 1.0, -2.0, 0.5]),), label="zero and integers"),
    Case("sinc", lambda rng: (rng.normal(size=4) + 1j * rng.normal(size=4),), label="complex"),
    Case("sinc", lambda rng: (np.array(0.3),), label="0-d"),
    Case("special_ndtri", lambda rng: (rng.uniform(0.02, 0.98, size=(2, 3)),)),
    Case("special_ndtri", lambda rng: (np.array([0.5, 1e-6, 1 - 1e-6]),), label="tails"),
    Case("mish", _n(2, 3)),
    Case("mish", lambda rng: (np.array([0.0, -30.0, 25.0, 3.0]),), label="zero and saturation"),
    *[
        Case("huber_loss", lambda rng, r=r, d=d: (*_huber(d)(rng), r, d), diff=(0, 1), label=f"reduction={r} delta={d}")
        for r in (0, 1, 2)
        for d in (1.0, 0.4)
    ],
    Case("huber_loss", lambda rng: (*_huber(0.5, [0.0, 0.5, -0.5])(rng), 0, 0.5), diff=(0, 1), label="kinks"),
    Case(
        "huber_loss_backward",
        lambda rng: (rng.normal(size=(2, 3)), *_huber(0.7)(rng), 0, 0.7),
        diff=(0, 1, 2),
        label="none",
        forward_ad=False,
    ),
    Case(
        "huber_loss_backward",
        lambda rng: (rng.normal(size=()), *_huber(0.7)(rng), 1, 0.7),
        diff=(0, 1, 2),
        label="mean",
        forward_ad=False,
    ),
    Case("aminmax", lambda rng: (_TIES,), label="ties, all"),
    Case("aminmax", lambda rng: (_TIES,), kwargs={"dim": 1}, label="ties, dim=1"),
    Case("aminmax", lambda rng: (_TIES,), kwargs={"dim": -2, "keepdim": True}, label="ties, dim=-2 keepdim"),
    Case("aminmax", lambda rng: (_TIES,), kwargs={"keepdim": True}, label="ties, all keepdim"),
    Case("aminmax", lambda rng: (np.array(1.5),), kwargs={"dim": 0}, label="0-d"),
    Case("pixel_shuffle", lambda rng: (rng.normal(size=(2, 8, 2, 3)), 2)),
    Case("pixel_shuffle", lambda rng: (rng.normal(size=(9, 1, 2)), 3), label="3-d"),
    Case("pixel_unshuffle", lambda rng: (rng.normal(size=(2, 2, 4, 6)), 2)),
    Case("pixel_unshuffle", lambda rng: (rng.normal(size=(1, 1, 3, 6, 3)), 3), label="5-d"),
    Case("channel_shuffle", lambda rng: (rng.normal(size=(2, 6, 3)), 3)),
    Case("channel_shuffle", lambda rng: (rng.normal(size=(1, 8, 2, 2)), 2), label="4-d"),
    Case("masked_fill.Tensor", lambda rng: (rng.normal(size=(3, 4)), _MASK, np.array(0.7)), diff=(0, 2)),
    Case(
        "masked_fill.Tensor",
        lambda rng: (rng.normal(size=(3, 4)), _MASK[0], np.array(-1.5)),
        diff=(0, 2),
        label="broadcast mask",
    ),
    Case("slice_scatter", lambda rng: (rng.normal(size=(4, 5)), rng.normal(size=(4, 2)), 1, 1, 4, 2), diff=(0, 1)),
    Case(
        "slice_scatter",
        lambda rng: (rng.normal(size=(4, 5)), rng.normal(size=(2, 5)), -2, -3, None, 2),
        diff=(0, 1),
        label="negative",
    ),
    Case("select_scatter", lambda rng: (rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4)), -2, -1), diff=(0, 1)),
    Case("select_scatter", lambda rng: (rng.normal(size=3), np.array(2.0), 0, 1), diff=(0, 1), label="0-d src"),
    Case("diagonal_scatter", lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=3), 1, 0, 1), diff=(0, 1)),
    Case(
        "diagonal_scatter",
        lambda rng: (rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 1)), -1, 0, -1),
        diff=(0, 1),
        label="negative",
    ),
    Case(
        "as_strided_scatter",
        lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=(2, 2)), (2, 2), (1, 4), 1),
        diff=(0, 1),
    ),
    *[
        Case(
            "scatter_reduce.two",
            lambda rng, r=r, inc=inc: (_SELF, 1, _SCATTER, _SRC, r),
            diff=(0, 3),
            kwargs={"include_self": inc},
            label=f"{r} include_self={inc}",
        )
        for r in ("sum", "prod", "mean", "amax", "amin")
        for inc in (True, False)
    ],
    Case(
        "scatter_reduce.two",
        lambda rng: (_SELF, -2, _SCATTER.T.copy() % 3, _SRC.T.copy(), "prod"),
        diff=(0, 3),
        label="prod, two zeros, dim=-2",
    ),
    *[
        Case(
            "index_reduce",
            lambda rng, r=r, inc=inc: (_SELF, -1, _i(0, 2, 0, 3), _SOURCE, r),
            diff=(0, 3),
            kwargs={"include_self": inc},
            label=f"{r} include_self={inc}",
            forward_ad=False,
        )
        for r in ("prod", "mean", "amax", "amin")
        for inc in (True, False)
    ],
    *[
        Case(
            "segment_reduce",
            lambda rng, r=r: (np.array([1.0, 2.0, 0.0, 2.0, -1.0, 3.0]), r),
            kwargs={"lengths": _i(2, 0, 4)},
            label=f"{r}, ties and an empty segment",
            forward_ad=False,
        )
        for r in ("sum", "prod", "max", "min")
    ],
    Case(
        "segment_reduce",
        lambda rng: (rng.normal(size=(2, 5, 3)), "mean"),
        kwargs={"offsets": _i([0, 2, 5], [0, 1, 5]), "axis": 1},
        label="mean, offsets, axis=1",
        forward_ad=False,
    ),
    Case(
        "segment_reduce",
        lambda rng: (rng.normal(size=5), "prod"),
        kwargs={"lengths": _i(4, 1), "initial": 1.5},
        label="prod, initial",
        forward_ad=False,
    ),
    Case("_unsafe_index.Tensor", lambda rng: (rng.normal(size=(3, 4, 5)), [None, _i(3, 1, 3), _i(0, -1, 0)])),
    Case(
        "_unsafe_index_put",
        lambda rng: (rng.normal(size=(3, 4)), [_i(2, 0, 2, 2)], rng.normal(size=(4, 4)), True),
        diff=(0, 2),
        label="accumulate",
    ),
    Case(
        "_unsafe_index_put",
        lambda rng: (rng.normal(size=(3, 4)), [None, _i(3, 1)], rng.normal(size=(3, 2)), False),
        diff=(0, 2),
    ),
    Case(
        "_unsafe_masked_index",
        lambda rng: (rng.normal(size=(3, 4)), _KEEP, [_i(0, 2, 5)], 0.5),
        label="index out of range where masked",
    ),
    Case(
        "_unsafe_masked_index_put_accumulate",
        lambda rng: (rng.normal(size=(3, 4)), _KEEP, [_i(0, 2, 5)], rng.normal(size=(3, 4))),
        diff=(0, 3),
    ),
    Case(
        "_unsafe_masked_index_put_accumulate",
        lambda rng: (
            rng.normal(size=(3, 4)),
            _MASK[:2],
            [None, _i([0, 3, 3, 1], [2, 2, 0, 1])],
            rng.normal(size=(3, 2, 4)),
        ),
        diff=(0, 3),
        label="repeated indices",
    ),
]


def _params(cases):
    return [pytest.param(c, id=c.id) for c in cases]


def _ours(registry, case, args):
    op = registry.op(case.name)

    def fn(*xs):
        full = list(args)
        for i, x in zip(case.diff, xs):
            full[i] = x
        return op(*full, **case.kwargs)

    return fn, [jnp.asarray(args[i]) for i in case.diff]


def _theirs(case, args):
    txs = [_t(np.asarray(args[i])).requires_grad_(True) for i in case.diff]

    def fn(*xs):
        full = [_t(a) for a in args]
        for i, x in zip(case.diff, xs):
            full[i] = x
        return case.torch_op()(*full, **{k: _t(v) for k, v in case.kwargs.items()})

    return fn, txs


def _tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@pytest.mark.parametrize("case", _params(CASES))
def test_values_match_torch(registry, case):
    args = case.args(np.random.default_rng(0))
    fn, xs = _ours(registry, case, args)
    tfn, txs = _theirs(case, args)
    for o, t in zip(_tuple(fn(*xs)), _tuple(tfn(*txs)), strict=True):
        assert np.asarray(o).shape == tuple(t.shape)
        np.testing.assert_allclose(np.asarray(o), to_numpy(t), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", _params(CASES))
def test_vjp_matches_torch_autograd(registry, case):
    rng = np.random.default_rng(1)
    args = case.args(rng)
    fn, xs = _ours(registry, case, args)
    out, vjp = jax.vjp(fn, *xs)
    cts = [random_like(rng, o) for o in _tuple(out)]
    ours = vjp(
        tuple(jnp.asarray(c, o.dtype) for c, o in zip(cts, _tuple(out)))
        if isinstance(out, tuple)
        else jnp.asarray(cts[0], out.dtype)
    )
    tfn, txs = _theirs(case, args)
    touts = _tuple(tfn(*txs))
    theirs = torch.autograd.grad(touts, txs, [_t(np.conj(c)).to(t.dtype) for c, t in zip(cts, touts)])
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(o), np.conj(to_numpy(t)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", _params(CASES))
def test_jvp_matches_torch(registry, case):
    rng = np.random.default_rng(2)
    args = case.args(rng)
    fn, xs = _ours(registry, case, args)
    ts = [random_like(rng, x) for x in xs]
    _, ours = jax.jvp(fn, tuple(xs), tuple(jnp.asarray(t) for t in ts))
    tfn, txs = _theirs(case, args)
    primals, tangents = tuple(x.detach() for x in txs), tuple(_t(t) for t in ts)
    if case.forward_ad:
        _, theirs = torch.func.jvp(tfn, primals, tangents)
    else:  # the Jacobian from torch's backward formula, applied to the tangents
        jac = torch.autograd.functional.jacobian(tfn, primals)
        theirs = sum(torch.tensordot(j, t, dims=t.dim()) for j, t in zip(jac, tangents))
    for o, t in zip(_tuple(ours), _tuple(theirs), strict=True):
        np.testing.assert_allclose(np.asarray(o), to_numpy(t), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, dtype", [("sinc", np.int64), ("special_ndtri", np.int32), ("sinc", np.bool_)])
def test_integer_inputs_promote_as_torch(registry, name, dtype):
    """Integer and bool inputs compute in float32, as ATen's floating ops do."""
    x = np.array([0, 1, 0, 2]).astype(dtype) if name == "sinc" else np.array([0, 1]).astype(dtype)
    ours = registry.op(name)(jnp.asarray(x))
    theirs = getattr(aten, name)(torch.from_numpy(x))
    assert np.asarray(ours).dtype == to_numpy(theirs).dtype
    np.testing.assert_allclose(np.asarray(ours), to_numpy(theirs), rtol=1e-6)


def test_second_order_through_huber_matches_torch(registry):
    """The Hessian-vector product reaches huber_loss_backward's own entry (double backward)."""
    rng = np.random.default_rng(3)
    x, y = _huber(0.6)(rng)
    v = rng.normal(size=x.shape)
    op = registry.op("huber_loss")
    ours = jax.jvp(jax.grad(lambda a: op(a, jnp.asarray(y), 1, 0.6)), (jnp.asarray(x),), (jnp.asarray(v),))[1]
    tx = torch.from_numpy(x).requires_grad_(True)
    (g,) = torch.autograd.grad(aten.huber_loss(tx, torch.from_numpy(y), 1, 0.6), tx, create_graph=True)
    (theirs,) = torch.autograd.grad(g, tx, torch.from_numpy(v))
    np.testing.assert_allclose(np.asarray(ours), to_numpy(theirs), rtol=1e-9, atol=1e-12)


def test_aminmax_under_jit_and_vmap(registry):
    """Ties split the gradient evenly under jit and vmap too."""
    op = registry.op("aminmax")
    grad = jax.jit(jax.vmap(jax.grad(lambda r: sum(jnp.sum(o) for o in op(r)))))(jnp.asarray(_TIES))
    expected = np.array([[0, 0.5, 0.5, 1], [0.5, 0, 0.5, 1], [0.5, 0.5, 0.5, 0.5]])
    t = torch.from_numpy(_TIES).requires_grad_(True)
    mn, mx = aten.aminmax(t, dim=1)
    (theirs,) = torch.autograd.grad((mn.sum() + mx.sum()), t)
    np.testing.assert_allclose(np.asarray(grad), to_numpy(theirs))
    np.testing.assert_allclose(np.asarray(grad), expected)


def test_as_strided_scatter_follows_torchs_formula_for_self(registry):
    """torch 2.13's formula for `self` gives it the gradient at the positions src overwrote;
    jaxderiv evaluates that formula as written (the checker declares it a spec bug)."""
    op = registry.op("as_strided_scatter")
    g = jnp.arange(1.0, 5.0)
    _, vjp = jax.vjp(lambda s, src: op(s, src, (2,), (1,), 1), jnp.zeros(4), jnp.zeros(2))
    gs, gsrc = vjp(g)
    np.testing.assert_array_equal(np.asarray(gs), [0.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(np.asarray(gsrc), [2.0, 3.0])


def _entry(name):
    return next(e for e in load_spec(from_torch=True) if e.name == name)


@pytest.mark.parametrize(
    "name, key, wrong",
    [
        ("sinc", "self", "grad * self.cos()"),
        ("mish", "self", "infinitely_differentiable_mish_backward(grad, self) * 2"),
        ("huber_loss", "self", "huber_loss_backward(grad, self, target, reduction, 1.0)"),
        ("pixel_shuffle", "self", "pixel_unshuffle(grad.flip({-1}), upscale_factor)"),
        ("slice_scatter", "src", "grad.slice_symint(dim, start, end, step) * 2"),
    ],
)
def test_a_wrong_formula_is_caught(write_spec, name, key, wrong):
    """The same entry with one formula changed: the checker fails it, where torch's passes."""
    entry = _entry(name)
    lines = [f"- name: {entry.schema}"]
    for f in entry.backward:
        lines.append(f'  {", ".join(f.names)}: "{wrong if key in f.names else f.text}"')
    right = check_all(str(torch_spec_file()), ops=[name], modes=("vjp",))
    assert {r.status for r in right} == {"passed"}, right.summary()
    report = check_all(write_spec("\n".join(lines) + "\n"), ops=[name], modes=("vjp",))
    assert "failed" in {r.status for r in report}, report.summary()
