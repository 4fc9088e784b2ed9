"""torch 2.13's own entries for where, squeeze over several dims, chunk, diag_embed, fills,
rounding with decimals, stable sort, ldexp, entr, log_ndtr, copies and backward ops, against
torch 2.13: values, reverse and forward derivatives (the spec's formulas, translated), edge
inputs (ties, zeros, NaN, empty and 0-d tensors, negative dims, integer dtypes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxderiv import Registry, load_spec

torch = pytest.importorskip("torch")
aten = torch.ops.aten

REG = Registry(load_spec(from_torch=True))
OPS = (
    "where.self",
    "squeeze.dims",
    "squeeze_.dims",
    "chunk",
    "diag_embed",
    "fill.Scalar",
    "fill.Tensor",
    "index_fill.int_Scalar",
    "index_fill.int_Tensor",
    "round.decimals",
    "sort.stable",
    "ldexp.Tensor",
    "special_entr",
    "special_log_ndtr",
    "narrow_copy",
    "_reshape_copy",
    "_reshape_alias",
    "select_backward",
    "slice_backward",
    "masked_scatter_backward",
    "any.dims",
    "all.dims",
    "_is_all_true",
    "_is_any_true",
    "view.dtype",
    "lift",
    "lift_fresh",
)


def _t(x):
    return torch.tensor(np.asarray(x))


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _close(a, b, tol=None):
    a, b = np.asarray(a), _np(b)
    tol = tol or (1e-6 if a.dtype in (np.float32, np.complex64) else 1e-12)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _first(y):
    return y[0] if isinstance(y, tuple) else y


def check(name, torch_fn, args, diff=(0,), kwargs=None, seed=0, grad_tol=None):
    """Values, vjp and jvp of `name` (torch's spec) against torch on the arguments `diff`."""
    kwargs = kwargs or {}
    op = REG.op(name)
    rng = np.random.default_rng(seed)
    ours = op(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    targs = [_t(a).requires_grad_(i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    theirs = torch_fn(*targs, **kwargs)
    if isinstance(theirs, (tuple, list)):
        for o, t in zip(ours, theirs):
            _close(o, t)
    else:
        _close(ours, theirs)
    if not diff:
        return

    def f(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return _first(op(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in full], **kwargs))

    primals = [jnp.asarray(args[i]) for i in diff]
    y, pullback = jax.vjp(f, *primals)
    ct = rng.standard_normal(y.shape).astype(y.dtype)
    grads = torch.autograd.grad(_first(theirs), [targs[i] for i in diff], _t(ct), allow_unused=True)
    for g, tg in zip(pullback(jnp.asarray(ct)), grads):
        _close(g, torch.zeros_like(targs[diff[0]]) if tg is None else tg, grad_tol)
    tangents = [rng.standard_normal(np.shape(args[i])).astype(np.asarray(args[i]).dtype) for i in diff]
    _, jy = jax.jvp(f, primals, [jnp.asarray(t) for t in tangents])

    def tf(*xs):
        full = list(targs)
        for i, x in zip(diff, xs):
            full[i] = x
        return _first(torch_fn(*full, **kwargs))

    _, tj = torch.func.jvp(tf, tuple(_t(args[i]) for i in diff), tuple(_t(t) for t in tangents))
    _close(jy, tj, grad_tol)


def test_every_op_builds_and_is_implemented():
    for name in OPS:
        assert REG.op(name) is not None, name


# -- where, squeeze, chunk, diag_embed ------------------------------------------------------------


def test_where_self_broadcasts_and_promotes():
    rng = np.random.default_rng(1)
    cond = rng.random((3, 1)) < 0.5
    check("where.self", aten.where.self, [cond, rng.standard_normal((3, 4)), rng.standard_normal((4,))], diff=(1, 2))
    x = np.arange(4, dtype=np.int32)
    check("where.self", aten.where.self, [np.array([True, False, True, False]), x, np.ones(4)], diff=())


@pytest.mark.parametrize(
    "shape,dims",
    [((2, 1, 3, 1), [1, -1]), ((1, 2, 1), [0, 1]), ((2, 3), []), ((), [0]), ((), [-1]), ((1, 0, 1), [0, 2])],
)
def test_squeeze_dims(shape, dims):
    x = np.random.default_rng(2).standard_normal(shape)
    check("squeeze.dims", aten.squeeze.dims, [x, dims])
    check("squeeze_.dims", lambda s, d: aten.squeeze.dims(s, d), [x, dims])


def test_squeeze_dims_rejects_a_repeated_dim():
    with pytest.raises(RuntimeError, match="multiple times"):
        REG.op("squeeze.dims")(jnp.ones((1, 2)), [0, -2])


@pytest.mark.parametrize(
    "shape,chunks,dim", [((5, 3), 3, 0), ((6, 2), 4, 0), ((2, 7), 3, -1), ((0, 3), 2, 0), ((2, 3), 5, 1)]
)
def test_chunk_pieces_match_torch_and_its_backward_is_not_implemented(shape, chunks, dim):
    x = np.random.default_rng(3).standard_normal(shape)
    ours, theirs = REG.op("chunk")(jnp.asarray(x), chunks, dim), aten.chunk(_t(x), chunks, dim)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        _close(o, t)
    with pytest.raises(Exception, match="chunk"):
        jax.grad(lambda a: REG.op("chunk")(a, chunks, dim)[0].sum())(jnp.asarray(x))


@pytest.mark.parametrize(
    "shape,offset,d1,d2", [((2, 3), 0, -2, -1), ((3,), 1, 0, 1), ((2, 3), -2, 2, 0), ((2, 2, 3), 1, 1, 3)]
)
def test_diag_embed(shape, offset, d1, d2):
    check("diag_embed", aten.diag_embed, [np.random.default_rng(4).standard_normal(shape), offset, d1, d2])


# -- fills ----------------------------------------------------------------------------------------


def test_fill_scalar_and_tensor():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3))
    check("fill.Scalar", aten.fill.Scalar, [x, 1.5])
    check("fill.Tensor", aten.fill.Tensor, [x, np.array(-0.7)], diff=(0, 1))
    check("fill.Scalar", aten.fill.Scalar, [np.arange(3), 2.9], diff=())  # int self keeps its dtype
    check("fill.Tensor", aten.fill.Tensor, [np.zeros((0, 2)), np.array(2.0)], diff=(0, 1))


def test_index_fill_repeated_index_counts_once_for_value():
    rng = np.random.default_rng(6)
    x, idx = rng.standard_normal((4, 3)), np.array([1, 3, 1])
    check("index_fill.int_Scalar", aten.index_fill.int_Scalar, [x, 0, idx, 0.5])
    check(
        "index_fill.int_Tensor", aten.index_fill.int_Tensor, [x, -1, np.array([2, 0, 2]), np.array(1.25)], diff=(0, 3)
    )
    check("index_fill.int_Scalar", aten.index_fill.int_Scalar, [np.arange(6).reshape(2, 3), 1, idx[:1], 7], diff=())
    check(
        "index_fill.int_Tensor",
        aten.index_fill.int_Tensor,
        [np.array(3.0), 0, np.array([0]), np.array(1.25)],
        diff=(0, 3),
    )


# -- rounding, sorting ----------------------------------------------------------------------------


@pytest.mark.parametrize("decimals", [2, 1, 0, -1, -2])
def test_round_decimals_ties_and_zero_gradient(decimals):
    x = np.array([1.25, 2.5, -0.35, 125.0, 250.0, -350.0, 0.125, np.nan, np.inf], np.float32)
    check("round.decimals", aten.round.decimals, [x], kwargs={"decimals": decimals})
    check("round.decimals", aten.round.decimals, [x.astype(np.float64)], kwargs={"decimals": decimals})


def test_round_decimals_rejects_integers_like_aten():
    with pytest.raises(NotImplementedError):
        aten.round.decimals(torch.arange(3), decimals=1)
    with pytest.raises(TypeError):
        REG.op("round.decimals")(jnp.arange(3), decimals=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stable": True},
        {"stable": None, "dim": 0, "descending": True},
        {"stable": False, "dim": -1, "descending": True},
    ],
)
def test_sort_stable_ties_and_nan(kwargs):
    x = np.array([[2.0, 1.0, 2.0, np.nan, 1.0], [0.5, 0.5, -1.0, 3.0, 0.5]])
    check("sort.stable", aten.sort.stable, [x], kwargs=kwargs)
    check("sort.stable", aten.sort.stable, [np.array(1.5)], kwargs={"stable": True})
    check(
        "sort.stable",
        aten.sort.stable,
        [np.array([3, 1, 3, 2], np.int32)],
        diff=(),
        kwargs=kwargs if "dim" not in kwargs else {"stable": True},
    )


# -- ldexp, entr, log_ndtr ------------------------------------------------------------------------


def test_ldexp():
    rng = np.random.default_rng(7)
    check("ldexp.Tensor", aten.ldexp.Tensor, [rng.standard_normal((2, 3)), rng.standard_normal((3,))], diff=(0, 1))
    check("ldexp.Tensor", aten.ldexp.Tensor, [rng.standard_normal((2, 3)), np.array([1, -2, 0])], diff=(0,))
    check("ldexp.Tensor", aten.ldexp.Tensor, [np.array([1, 2]), np.array([3, -1])], diff=())  # int: float32


def test_special_entr_at_zero_negative_and_nan():
    check("special_entr", aten.special_entr, [np.array([0.0, -1.0, np.nan, np.inf])], diff=())
    check("special_entr", aten.special_entr, [np.array([0.1, 0.5, 1.0, 2.5])])
    check("special_entr", aten.special_entr, [np.array([0, 1, 2])], diff=())


def test_special_log_ndtr_far_tails():
    # the formula's exp(-(result + x**2 / 2)) magnifies result's last-bit error 450-fold at -30
    check("special_log_ndtr", aten.special_log_ndtr, [np.array([-30.0, -5.0, -0.5, 0.0, 2.0, 9.0])], grad_tol=1e-9)
    check("special_log_ndtr", aten.special_log_ndtr, [np.array([-1, 0, 3])], diff=())


# -- copies and backward ops ----------------------------------------------------------------------


def test_narrow_copy_and_reshapes():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 3))
    check("narrow_copy", aten.narrow_copy, [x, 0, 1, 3])
    check("narrow_copy", aten.narrow_copy, [x, -1, -3, 2])
    # the formula's end, start + length, is 0 when a negative start reaches the last element:
    # torch's own backward fails there too, so values only
    check("narrow_copy", aten.narrow_copy, [x, -1, -2, 2], diff=())
    check("narrow_copy", aten.narrow_copy, [x, 0, 5, 0])
    with pytest.raises(IndexError):
        REG.op("narrow_copy")(jnp.asarray(x), 0, 3, 3)
    check("_reshape_copy", aten._reshape_copy, [x, [3, -1]])
    check("_reshape_copy", aten._reshape_copy, [np.array(2.0), [1, 1]])
    check("_reshape_alias", aten._reshape_alias, [x, [3, 5], [5, 1]])
    check("lift", aten.lift, [x])
    check("lift_fresh", aten.lift_fresh, [x])


def test_select_and_slice_backward():
    rng = np.random.default_rng(9)
    check("select_backward", aten.select_backward, [rng.standard_normal((3, 4)), [2, 3, 4], 0, -1])
    check("select_backward", aten.select_backward, [np.array(1.5), [3], 0, 2])
    check("slice_backward", aten.slice_backward, [rng.standard_normal((2, 2)), [2, 6], -1, -5, 10, 3])
    check("slice_backward", aten.slice_backward, [np.zeros((0, 3)), [2, 3], 0, 2, 1, 1])


def test_masked_scatter_backward():
    rng = np.random.default_rng(10)
    mask = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]])
    check("masked_scatter_backward", aten.masked_scatter_backward, [rng.standard_normal((3, 4)), mask, [3, 4]])
    check("masked_scatter_backward", aten.masked_scatter_backward, [rng.standard_normal((3, 4)), mask[0], [3, 4]])
    check("masked_scatter_backward", aten.masked_scatter_backward, [rng.standard_normal((3, 4)), mask, [12]], diff=())


# -- boolean reductions and dtype views -------------------------------------------------------------


@pytest.mark.parametrize("dim,keepdim", [(None, False), ([1], True), ([-1, 0], False), ([], False), (None, True)])
def test_any_all_dims(dim, keepdim):
    x = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    for name, fn in (("any.dims", aten.any.dims), ("all.dims", aten.all.dims)):
        check(name, fn, [x, dim, keepdim], diff=())
        check(name, fn, [x.astype(np.uint8), dim, keepdim], diff=())
        check(name, fn, [np.zeros((0, 3), bool), dim, keepdim], diff=())


def test_is_all_true_is_any_true():
    for x in (np.array([True, False]), np.ones((2, 2), bool), np.zeros((0,), bool), np.array(False)):
        check("_is_all_true", aten._is_all_true, [x], diff=())
        check("_is_any_true", aten._is_any_true, [x], diff=())
    with pytest.raises(TypeError):
        REG.op("_is_all_true")(jnp.ones(2))


@pytest.mark.parametrize(
    "src,dst",
    [
        (np.float32, torch.int32),
        (np.float32, torch.float16),
        (np.float64, torch.complex128),
        (np.complex64, torch.float32),
        (np.uint8, torch.bool),
        (np.bool_, torch.int16),
        (np.float32, torch.uint8),
        (np.int16, torch.int64),
    ],
)
def test_view_dtype_reads_the_bytes(src, dst):
    x = (np.random.default_rng(11).standard_normal((2, 4)) * 3).astype(src)
    ours = REG.op("view.dtype")(jnp.asarray(x), np.dtype(str(dst).removeprefix("torch.").replace("bool", "bool_")))
    _close(ours, _t(x).view(dst))


# -- a wrong formula is caught ----------------------------------------------------------------------


def _mutant(write_spec, entry: str, name: str):
    return Registry(load_spec(write_spec(entry))).op(name)


def test_wrong_formulas_differ_from_torch(write_spec):
    """A swapped where branch, ldexp without its ln 2, entr with a flipped sign: each differs."""
    rng = np.random.default_rng(12)
    cond, a, b = rng.random(5) < 0.5, rng.standard_normal(5), rng.standard_normal(5)
    bad_where = _mutant(
        write_spec,
        """
        - name: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
          condition: non_differentiable
          self: where(condition, 0, grad)
          other: where(condition, grad, 0)
        """,
        "where.self",
    )
    g = jax.grad(lambda x: bad_where(jnp.asarray(cond), x, jnp.asarray(b)).sum())(jnp.asarray(a))
    ta = _t(a).requires_grad_()
    (tg,) = torch.autograd.grad(aten.where.self(_t(cond), ta, _t(b)).sum(), [ta])
    assert not np.allclose(g, _np(tg))

    bad_ldexp = _mutant(
        write_spec,
        """
        - name: ldexp.Tensor(Tensor self, Tensor other) -> Tensor
          self: grad * at::pow(2, other).conj()
          other: grad * result.conj()
        """,
        "ldexp.Tensor",
    )
    g = jax.grad(lambda y: bad_ldexp(jnp.asarray(a), y).sum())(jnp.asarray(b))
    tb = _t(b).requires_grad_()
    (tg,) = torch.autograd.grad(aten.ldexp.Tensor(_t(a), tb).sum(), [tb])
    assert not np.allclose(g, _np(tg))

    x = np.array([0.2, 0.7, 1.5])
    bad_entr = _mutant(
        write_spec,
        """
        - name: special_entr(Tensor self) -> Tensor
          self: grad * (1 + self.log())
        """,
        "special_entr",
    )
    g = jax.grad(lambda v: bad_entr(v).sum())(jnp.asarray(x))
    tx = _t(x).requires_grad_()
    (tg,) = torch.autograd.grad(aten.special_entr(tx).sum(), [tx])
    assert not np.allclose(g, _np(tg))
    # the translated torch formula itself agrees
    good = jax.grad(lambda v: REG.op("special_entr")(v).sum())(jnp.asarray(x))
    _close(good, tg)
