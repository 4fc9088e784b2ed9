"""The shape, indexing and padding family against PyTorch 2.13: values, vjp, jvp, jit, vmap.

Inputs include what the checker avoids: duplicate indices in accumulating ops (index_put
with accumulate, index_add, scatter_add, put with accumulate, take, gather), empty cat inputs,
bool masks. For complex inputs jax_vjp(ct) == conj(torch_grad(conj(ct))).

torch's own entries (the spec torch 2.13 ships) for squeeze over several dims, chunk,
diag_embed, narrow_copy, the reshape copies, select and slice backward: values, vjp and jvp
on empty and 0-d tensors and negative dims.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxderiv
from jaxderiv.check.mutate import entry_yaml
from jaxderiv.records import values_with
from jaxderiv.spec import torch_spec_file

torch = pytest.importorskip("torch")
from torch_oracle import assert_close, check_against_torch, to_numpy, to_torch  # noqa: E402

aten = torch.ops.aten

F64, C128 = np.float64, np.complex128


class X:
    """A random float input of this shape (differentiated)."""

    def __init__(self, *shape):
        self.shape = shape


def _i(*v):
    return np.asarray(v, np.int64)


MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]])
# (op, arguments in schema order, keyword arguments)
CASES = [
    ("t", (X(2, 3),), {}),
    ("transpose.int", (X(2, 3, 4), 0, -1), {}),
    ("transpose_", (X(2, 3), 1, 0), {}),
    ("permute", (X(2, 3, 4), (2, -3, 1)), {}),
    ("unsqueeze", (X(2, 3), -1), {}),
    ("squeeze", (X(2, 1, 3, 1),), {}),
    ("squeeze.dim", (X(2, 1, 3), -2), {}),
    ("squeeze_.dim", (X(2, 1, 3), 0), {}),
    ("expand", (X(3, 1), (2, -1, 4)), {}),
    ("view", (X(2, 3), (3, -1)), {}),
    ("_unsafe_view", (X(2, 3), (6,)), {}),
    ("select.int", (X(2, 3, 4), -2, -1), {}),
    ("slice.Tensor", (X(4, 5), 1, -4, 2**63 - 1, 2), {}),
    ("split.Tensor", (X(5, 3), 2, 0), {}),
    ("unsafe_split.Tensor", (X(2, 7), 3, -1), {}),
    ("split_with_sizes", (X(2, 6), (1, 0, 5), -1), {}),
    ("unbind.int", (X(2, 3), -1), {}),
    ("stack", ([X(2, 3), X(2, 3)], -1), {}),
    ("cat", ([X(2, 3), X(0), X(1, 3)], 0), {}),
    ("cat", ([X(2, 3), X(2, 2)], -1), {}),
    ("flip", (X(2, 3, 4), (0, -1)), {}),
    ("roll", (X(2, 3), (2,), ()), {}),
    ("roll", (X(2, 3, 4), (1, -2), (0, 2)), {}),
    ("rot90", (X(2, 3, 4), 3, (2, 0)), {}),
    ("repeat", (X(2, 3), (2, 1, 3)), {}),
    ("diag", (X(3), -1), {}),
    ("diag", (X(3, 4), 1), {}),
    ("diagonal", (X(2, 3, 4), 1, -1, 0), {}),
    ("diagonal_backward", (X(3, 2), (3, 3, 4), -1, 0, 2), {}),
    ("tril", (X(3, 4), -1), {}),
    ("triu", (X(2, 3, 4), 1), {}),
    ("unfold", (X(2, 7), 1, 3, 2), {}),
    ("unfold_backward", (X(2, 3, 3), (2, 7), 1, 3, 2), {}),
    ("as_strided", (X(3, 4), (3, 3), (2, 1), 1), {}),
    ("gather", (X(3, 4), 1, _i([0, 0, 3], [2, 2, 2], [1, 0, 1])), {}),
    ("scatter_.src", (X(3, 4), 1, _i([0, 3], [2, 1], [1, 2]), X(3, 2)), {}),
    ("scatter_.value", (X(3, 4), 0, _i([0, 2, 2, 1]), 0.5), {}),
    ("scatter_add_", (X(3, 4), 0, _i([0, 2, 2, 1], [0, 0, 0, 2]), X(2, 4)), {}),
    ("index.Tensor", (X(3, 4, 5), [None, _i(3, 1, 3), _i(0, -1, 0)]), {}),
    ("index.Tensor", (X(3, 4, 5), [_i([2], [0]), None, _i(1, 4, 3)]), {}),
    ("index.Tensor", (X(3, 4), [MASK]), {}),
    ("index_add_", (X(4, 3), 0, _i(1, 3, 1), X(3, 3)), {}),
    ("index_add_.alpha", (X(3, 4), -1, _i(2, 2), X(3, 2)), {"alpha": 2.0}),
    ("index_copy_", (X(4, 3), 0, _i(3, 1), X(2, 3)), {}),
    ("index_fill_.int_Scalar", (X(4, 3), 0, _i(1, 3, 1), 0.5), {}),
    ("index_fill_.int_Tensor", (X(4, 3), 1, _i(2, 0, 2), X()), {}),
    ("index_put_", (X(3, 4), [_i(2, 0, 2, 2)], X(4, 4), True), {}),
    ("index_put_", (X(3, 4), [None, _i(3, 1)], X(2), False), {}),
    ("_index_put_impl_", (X(3, 4), [MASK], X(6), True, False), {}),
    ("index_select", (X(4, 3), 0, _i(1, 3, 1, 0, 1)), {}),
    ("masked_fill_.Scalar", (X(3, 4), MASK[0], -1.0), {}),
    ("masked_fill_.Tensor", (X(3, 4), MASK, X()), {}),
    ("masked_scatter_", (X(3, 4), MASK, X(3, 5)), {}),
    ("masked_select", (X(4), MASK), {}),
    ("take", (X(3, 4), _i([0, 11, -1], [5, 5, 2])), {}),
    ("put_", (X(3, 4), _i([1, 1, 9], [4, 1, 0]), X(2, 3), True), {}),
    ("put_", (X(3, 4), _i(0, 7, -1), X(3), False), {}),
    ("constant_pad_nd", (X(2, 3, 4), (1, 0, -1, 2), 0.5), {}),
    ("reflection_pad1d", (X(2, 3, 5), (1, 3)), {}),
    ("reflection_pad2d", (X(2, 4, 5), (1, 2, 3, 0)), {}),
    ("replication_pad1d", (X(2, 5), (2, 1)), {}),
    ("replication_pad2d", (X(2, 4, 5), (1, 2, 3, 0)), {}),
    ("replication_pad3d", (X(1, 2, 3, 4), (1, 0, 2, 1, 1, 2)), {}),
    ("reflection_pad2d_backward", (X(2, 7, 8), X(2, 4, 5), (1, 2, 3, 0)), {}),
    ("replication_pad3d_backward", (X(1, 5, 6, 5), X(1, 2, 3, 4), (1, 0, 2, 1, 1, 2)), {}),
]
COMPLEX = {
    "permute",
    "cat",
    "index.Tensor",
    "index_put_",
    "gather",
    "scatter_add_",
    "masked_select",
    "as_strided",
    "constant_pad_nd",
    "unfold",
}


def _torch_op(name):
    base, _, overload = name.partition(".")
    overload = "" if name == "index_add_.alpha" else overload  # torch 2.13 folded alpha into the default
    return getattr(getattr(aten, base), overload or "default")


def _materialize(args, rng, dtype):
    """numpy arguments, and the (position, list index) of each differentiated array."""
    out, paths = [], []
    for i, a in enumerate(args):
        if isinstance(a, X):
            v = rng.uniform(-2, 2, a.shape) + (1j * rng.uniform(-2, 2, a.shape) if dtype == C128 else 0)
            out.append(np.asarray(v, dtype))
            paths.append((i, None))
        elif isinstance(a, list):
            out.append([])
            for j, e in enumerate(a):
                if isinstance(e, X):
                    v = rng.uniform(-2, 2, e.shape) + (1j * rng.uniform(-2, 2, e.shape) if dtype == C128 else 0)
                    out[-1].append(np.asarray(v, dtype))
                    paths.append((i, j))
                else:
                    out[-1].append(e)
        else:
            out.append(a)
    return out, paths


def _convert(args, to):
    return [
        [None if e is None else to(e) for e in a]
        if isinstance(a, list)
        else (to(a) if isinstance(a, np.ndarray) else a)
        for a in args
    ]


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _call_torch(name, args, kwargs):
    if name.partition(".")[0].endswith("_"):  # in place: on a copy of self, leaves stay leaves
        args = [args[0].clone(), *args[1:]]
    return _torch_op(name)(*args, **kwargs)


def _run(name, args, kwargs, dtype):
    rng = np.random.default_rng(0)
    values, paths = _materialize(args, rng, dtype)
    op = jaxderiv.op(name)
    jargs = _convert(values, jnp.asarray)
    xs = [jargs[i] if j is None else jargs[i][j] for i, j in paths]
    ours = _as_list(op(*jargs, **kwargs))
    targs = _convert(values, torch.from_numpy)
    txs = [targs[i] if j is None else targs[i][j] for i, j in paths]
    for t in txs:
        t.requires_grad_(True)
    theirs = _as_list(_call_torch(name, targs, kwargs))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), t.detach().numpy(), rtol=1e-12, atol=1e-12)
        assert np.asarray(o).dtype == t.detach().numpy().dtype
    cts = [
        (rng.normal(size=o.shape) + (1j * rng.normal(size=o.shape) if jnp.iscomplexobj(o) else 0)).astype(o.dtype)
        for o in ours
    ]
    _, pullback = jax.vjp(lambda *xs: _as_list(op(*values_with(jargs, paths, xs), **kwargs)), *xs)
    grads = pullback([jnp.asarray(c) for c in cts])
    expected = torch.autograd.grad(theirs, txs, [torch.from_numpy(np.conj(c)) for c in cts], allow_unused=True)
    for g, e, x in zip(grads, expected, txs):
        e = (
            np.zeros(x.shape, values[0].dtype if isinstance(values[0], np.ndarray) else dtype)
            if e is None
            else np.conj(e.numpy())
        )
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_values_and_vjp_match_torch(name, args, kwargs):
    _run(name, args, kwargs, F64)


@pytest.mark.parametrize(
    "name,args,kwargs", [c for c in CASES if c[0] in COMPLEX], ids=lambda v: v if isinstance(v, str) else ""
)
def test_complex_vjp_matches_torch(name, args, kwargs):
    _run(name, args, kwargs, C128)


JVP = [
    c
    for c in CASES
    if c[0]
    in (
        "cat",
        "index_put_",
        "masked_fill_.Tensor",
        "index_add_.alpha",
        "index_fill_.int_Tensor",
        "masked_scatter_",
        "diagonal_backward",
        "gather",
    )
]


@pytest.mark.parametrize("name,args,kwargs", JVP, ids=lambda v: v if isinstance(v, str) else "")
def test_jvp_matches_torch(name, args, kwargs):
    rng = np.random.default_rng(1)
    values, paths = _materialize(args, rng, F64)
    tangents = [rng.normal(size=np.shape(values[i] if j is None else values[i][j])) for i, j in paths]
    op = jaxderiv.op(name)
    jargs = _convert(values, jnp.asarray)
    xs = [jargs[i] if j is None else jargs[i][j] for i, j in paths]
    _, ours = jax.jvp(
        lambda *xs: _as_list(op(*values_with(jargs, paths, xs), **kwargs)),
        tuple(xs),
        tuple(jnp.asarray(t) for t in tangents),
    )
    targs = _convert(values, torch.from_numpy)
    txs = tuple(targs[i] if j is None else targs[i][j] for i, j in paths)
    fn = lambda *xs: tuple(_as_list(_call_torch(name, values_with(targs, paths, xs), kwargs)))  # noqa: E731
    _, theirs = torch.func.jvp(fn, txs, tuple(torch.from_numpy(t) for t in tangents))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), t.numpy(), rtol=1e-12, atol=1e-12)


def test_index_put_accumulates_duplicates():
    out = jaxderiv.op("index_put_")(jnp.zeros(3), [jnp.array([1, 1, 2])], jnp.array([1.0, 2.0, 4.0]), True)
    np.testing.assert_array_equal(out, [0.0, 3.0, 4.0])


@pytest.mark.parametrize(
    "name,args",
    [
        ("masked_select", (jnp.ones(3), jnp.array([True, False, True]))),
        ("nonzero", (jnp.array([1.0, 0.0, 2.0]),)),
        ("index.Tensor", (jnp.ones(3), [jnp.array([True, False, True])])),
    ],
)
def test_data_dependent_shapes_raise_under_jit(name, args):
    op = jaxderiv.op(name)
    assert op(*args).shape[0] == 2  # eager: fine
    with pytest.raises(jax.errors.ConcretizationTypeError, match="depends on the values"):
        jax.jit(lambda *a: op(*a))(*args)


def test_nonzero_and_one_hot_match_torch():
    x = np.array([[0.0, 1.5], [2.0, 0.0]])
    np.testing.assert_array_equal(jaxderiv.op("nonzero")(jnp.asarray(x)), aten.nonzero(torch.from_numpy(x)).numpy())
    i = np.array([0, 2, 1])
    np.testing.assert_array_equal(jaxderiv.op("one_hot")(jnp.asarray(i)), aten.one_hot(torch.from_numpy(i)).numpy())
    np.testing.assert_array_equal(
        jaxderiv.op("one_hot")(jnp.asarray(i), 4), aten.one_hot(torch.from_numpy(i), 4).numpy()
    )


@pytest.mark.parametrize(
    "name,args",
    [
        ("permute", (jnp.arange(24.0).reshape(2, 3, 4), (2, 0, 1))),
        ("cat", ([jnp.ones((2, 3)), jnp.arange(3.0).reshape(1, 3)], 0)),
        ("gather", (jnp.arange(12.0).reshape(3, 4), 1, jnp.array([[0, 0], [3, 1], [2, 2]]))),
        ("index_put_", (jnp.arange(12.0).reshape(3, 4), [jnp.array([2, 0, 2])], jnp.ones((3, 4)), True)),
        ("reflection_pad1d", (jnp.arange(10.0).reshape(2, 5), (2, 1))),
    ],
)
def test_jit_and_vmap_of_grad(name, args):
    """grad under jit equals eager; vmap over a leading batch equals a loop."""
    op = jaxderiv.op(name)
    first = args[0][0] if isinstance(args[0], list) else args[0]

    def loss(x):
        a = ([x, *args[0][1:]], *args[1:]) if isinstance(args[0], list) else (x, *args[1:])
        return jnp.sum(jnp.sin(op(*a)))

    g = jax.grad(loss)(first)
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(first), g, rtol=1e-12)
    batch = jnp.stack([first, 2 * first])
    np.testing.assert_allclose(jax.vmap(jax.grad(loss))(batch), jnp.stack([g, jax.grad(loss)(2 * first)]), rtol=1e-12)


def test_masked_fill_refuses_a_non_boolean_mask_as_torch_does():
    x, mask = np.ones(3), np.array([1.0, 0.0, 1.0])
    with pytest.raises(RuntimeError, match="boolean masks"):
        torch.ops.aten.masked_fill.Scalar(torch.from_numpy(x), torch.from_numpy(mask), 0.5)
    with pytest.raises(TypeError, match="boolean masks"):
        jaxderiv.op("masked_fill_.Scalar")(jnp.asarray(x), jnp.asarray(mask), 0.5)


# -- torch's own entries -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_registry():
    """The registry of the spec torch 2.13 ships (its packaged derivatives.yaml)."""
    return jaxderiv.Registry(jaxderiv.load_spec(from_torch=True))


# the entries of torch's spec tested here and in test_binary, test_unary, test_indexing,
# test_reductions and test_special
TORCH_OPS = (
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


def test_every_op_builds_and_is_implemented(torch_registry):
    for name in TORCH_OPS:
        assert torch_registry.op(name) is not None, name


# -- squeeze over several dims, chunk, diag_embed ----------------------------------------------------


@pytest.mark.parametrize(
    "shape,dims",
    [((2, 1, 3, 1), [1, -1]), ((1, 2, 1), [0, 1]), ((2, 3), []), ((), [0]), ((), [-1]), ((1, 0, 1), [0, 2])],
)
def test_squeeze_dims(torch_registry, shape, dims):
    x = np.random.default_rng(2).standard_normal(shape)
    check_against_torch(torch_registry.op("squeeze.dims"), aten.squeeze.dims, [x, dims])
    check_against_torch(torch_registry.op("squeeze_.dims"), lambda s, d: aten.squeeze.dims(s, d), [x, dims])


def test_squeeze_dims_rejects_a_repeated_dim(torch_registry):
    with pytest.raises(RuntimeError, match="multiple times"):
        torch_registry.op("squeeze.dims")(jnp.ones((1, 2)), [0, -2])


@pytest.mark.parametrize(
    "shape,chunks,dim", [((5, 3), 3, 0), ((6, 2), 4, 0), ((2, 7), 3, -1), ((0, 3), 2, 0), ((2, 3), 5, 1)]
)
def test_chunk_pieces_match_torch_and_its_backward_is_not_implemented(torch_registry, shape, chunks, dim):
    x = np.random.default_rng(3).standard_normal(shape)
    ours, theirs = torch_registry.op("chunk")(jnp.asarray(x), chunks, dim), aten.chunk(to_torch(x), chunks, dim)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_close(o, t)
    with pytest.raises(Exception, match="chunk"):
        jax.grad(lambda a: torch_registry.op("chunk")(a, chunks, dim)[0].sum())(jnp.asarray(x))


@pytest.mark.parametrize(
    "shape,offset,d1,d2", [((2, 3), 0, -2, -1), ((3,), 1, 0, 1), ((2, 3), -2, 2, 0), ((2, 2, 3), 1, 1, 3)]
)
def test_diag_embed(torch_registry, shape, offset, d1, d2):
    check_against_torch(
        torch_registry.op("diag_embed"),
        aten.diag_embed,
        [np.random.default_rng(4).standard_normal(shape), offset, d1, d2],
    )


# -- copies and backward ops -------------------------------------------------------------------------


def test_narrow_copy_and_reshapes(torch_registry):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 3))
    check_against_torch(torch_registry.op("narrow_copy"), aten.narrow_copy, [x, 0, 1, 3])
    check_against_torch(torch_registry.op("narrow_copy"), aten.narrow_copy, [x, -1, -3, 2])
    # the formula's end, start + length, is 0 when a negative start reaches the last element:
    # torch's own backward fails there too, so values only
    check_against_torch(torch_registry.op("narrow_copy"), aten.narrow_copy, [x, -1, -2, 2], diff=())
    check_against_torch(torch_registry.op("narrow_copy"), aten.narrow_copy, [x, 0, 5, 0])
    with pytest.raises(IndexError):
        torch_registry.op("narrow_copy")(jnp.asarray(x), 0, 3, 3)
    check_against_torch(torch_registry.op("_reshape_copy"), aten._reshape_copy, [x, [3, -1]])
    check_against_torch(torch_registry.op("_reshape_copy"), aten._reshape_copy, [np.array(2.0), [1, 1]])
    check_against_torch(torch_registry.op("_reshape_alias"), aten._reshape_alias, [x, [3, 5], [5, 1]])
    check_against_torch(torch_registry.op("lift"), aten.lift, [x])
    check_against_torch(torch_registry.op("lift_fresh"), aten.lift_fresh, [x])


def test_select_and_slice_backward(torch_registry):
    rng = np.random.default_rng(9)
    check_against_torch(
        torch_registry.op("select_backward"), aten.select_backward, [rng.standard_normal((3, 4)), [2, 3, 4], 0, -1]
    )
    check_against_torch(torch_registry.op("select_backward"), aten.select_backward, [np.array(1.5), [3], 0, 2])
    check_against_torch(
        torch_registry.op("slice_backward"), aten.slice_backward, [rng.standard_normal((2, 2)), [2, 6], -1, -5, 10, 3]
    )
    check_against_torch(
        torch_registry.op("slice_backward"), aten.slice_backward, [np.zeros((0, 3)), [2, 3], 0, 2, 1, 1]
    )


# ==================================================================================================
# torch's own entries for as_strided_scatter, stack, pixel_shuffle and slice_scatter
# (torch_registry above: the spec torch 2.13 ships). The op database and tests/check/test_parity.py
# compare every entry of this family with torch (values, dtypes, vjp, jvp) on its record's samples
# (forward/shapes.py); these tests add single-op checks: as_strided_scatter's formula for
# `self` as torch states it, stack's list-valued backward and tangent, and wrong formulas that the
# checker catches.
# ==================================================================================================


def test_as_strided_scatter_follows_torchs_formula_for_self(torch_registry):
    """torch 2.13's formula for `self` gives it the gradient at the positions src overwrote;
    jaxderiv evaluates that formula as written (the checker declares it a spec bug)."""
    op = torch_registry.op("as_strided_scatter")
    g = jnp.arange(1.0, 5.0)
    _, vjp = jax.vjp(lambda s, src: op(s, src, (2,), (1,), 1), jnp.zeros(4), jnp.zeros(2))
    gs, gsrc = vjp(g)
    np.testing.assert_array_equal(np.asarray(gs), [0.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(np.asarray(gsrc), [2.0, 3.0])


def test_stack_from_torch_spec(torch_registry):
    """stack_tensors_backward and stack_jvp: a list of inputs, one gradient and tangent each."""
    rng = np.random.default_rng(2)
    xs = [rng.normal(size=(2, 3)) for _ in range(3)]
    ts = [rng.normal(size=(2, 3)) for _ in range(3)]
    op = torch_registry.op("stack")
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


@pytest.mark.parametrize(
    "name, key, wrong",
    [
        ("pixel_shuffle", "self", "pixel_unshuffle(grad.flip({-1}), upscale_factor)"),
        ("slice_scatter", "src", "grad.slice_symint(dim, start, end, step) * 2"),
    ],
)
def test_a_wrong_formula_is_caught(write_spec, name, key, wrong):
    """The same entry with one formula changed: the checker fails it, where torch's passes."""
    right = jaxderiv.check_all(str(torch_spec_file()), ops=[name], modes=("vjp",))
    assert {r.status for r in right} == {"passed"}, right.summary()
    wrong_entry = entry_yaml(jaxderiv.load_spec(from_torch=True)[name], {key: wrong})
    report = jaxderiv.check_all(write_spec(wrong_entry), ops=[name], modes=("vjp",))
    assert "failed" in {r.status for r in report}, report.summary()
