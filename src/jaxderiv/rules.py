"""The one mechanism that gives an op both modes, each from its own formula.

An op is a `jax.custom_jvp` whose JVP rule returns its tangent through a linear
primitive, `linear_p`, taking (tangents..., primals..., outputs...):

- evaluating `linear_p` runs the op's *tangent* map (forward mode, the `result:` formula);
- transposing it runs the op's *cotangent* map (reverse mode, the backward formula). Inside
  the transpose, the tangents that are undefined primals are exactly the inputs whose
  gradient is wanted: PyTorch's `grad_input_mask`;
- batching re-binds it with one more leading batch dimension and vmaps both maps, so
  `grad(vmap(f))` still runs the backward formula. Primal operands the batch does not touch
  stay unbatched (in_axes None): a formula's reads of the primals run once, not per batch
  element, and stay concrete where a formula needs their values (a mask's count);
- its own JVP differentiates the tangent map, which is ordinary JAX code, for higher order.

Everything specific to derivatives.yaml lives in the callables of `LinearRule`; this module
knows only JAX. Both maps work in JAX's conventions (the caller converts PyTorch's
conjugate-Wirtinger formulas).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core as jax_core
from jax.custom_derivatives import SymbolicZero
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

__all__ = ["LinearRule", "differentiable_call", "linear_p"]

# tangent_map(xs, ys, ts) -> output tangents, one per differentiable output; ts[i] is None
#   where input i has a zero tangent.
# cotangent_map(xs, ys, cts, mask) -> input cotangents, one per input (None = zero); cts[j]
#   is None where output j's cotangent is zero; mask[i] is True iff input i's is wanted.
TangentMap = Callable[[list, list, list], Sequence]
CotangentMap = Callable[[list, list, list, tuple], Sequence]


@dataclasses.dataclass(frozen=True, eq=False)
class LinearRule:
    """Both linear maps of one op application (hashed by identity: a primitive parameter)."""

    name: str  # the op's name, shown in jaxprs
    n_inputs: int  # number of array inputs (xs)
    out_differentiable: tuple[bool, ...]  # which outputs (ys) carry tangents
    tangent_map: TangentMap
    cotangent_map: CotangentMap

    def __repr__(self) -> str:  # keeps printed jaxprs short
        return self.name


linear_p = Primitive("jaxderiv_linear")
linear_p.multiple_results = True


def _split(operands, rule: LinearRule, has_tangent: tuple[bool, ...]):
    n_t = sum(has_tangent)
    given = iter(operands[:n_t])
    ts = [next(given) if h else None for h in has_tangent]
    xs = list(operands[n_t : n_t + rule.n_inputs])
    ys = list(operands[n_t + rule.n_inputs :])
    return ts, xs, ys


# One batching level per jax.vmap the primitive is under, innermost first: (size, which
# operands carry that batch axis). Tangent operands are always batched (broadcast where the
# batch does not touch them, so that JAX transposes the broadcast); primal operands keep
# their own shapes where unbatched.
Levels = tuple[tuple[int, tuple[bool, ...]], ...]


def _batched(fn: Callable, levels: Levels, axes: Callable[[tuple[bool, ...]], tuple]) -> Callable:
    """fn under one jax.vmap per level; axes(flags) gives that level's in_axes."""
    for _, flags in levels:
        fn = jax.vmap(fn, in_axes=axes(flags))
    return fn


def _in_axes(flags: Sequence[bool]) -> list:
    return [0 if b else None for b in flags]


def _evaluate(*operands, rule: LinearRule, has_tangent, levels: Levels):
    def tangent(*ops):
        ts, xs, ys = _split(ops, rule, has_tangent)
        outs = rule.tangent_map(xs, ys, ts)
        diff_ys = [y for y, d in zip(ys, rule.out_differentiable) if d]
        return [_vary_like(shaped_like(t, y), y) for t, y in zip(outs, diff_ys)]

    return _batched(tangent, levels, lambda flags: tuple(_in_axes(flags)))(*operands)


def shaped_like(value, target):
    """A formula's value brought to the shape and dtype of the array it stands for.

    Like PyTorch's engine (validate_outputs): a gradient of a broadcast input is summed back
    to the input's shape, a complex gradient of a real input loses its imaginary part, and
    the dtype becomes the input's.
    """
    if value is None:
        return jnp.zeros(jnp.shape(target), jnp.result_type(target))
    value = jnp.asarray(value)
    if jnp.iscomplexobj(value) and not jnp.iscomplexobj(target):
        value = jnp.real(value)
    return jnp.broadcast_to(sum_to(value, jnp.shape(target)), jnp.shape(target)).astype(jnp.result_type(target))


def sum_to(value, shape: tuple[int, ...]):
    """Sum `value` over the dimensions broadcasting added to `shape` (ATen's at::sum_to)."""
    lead = jnp.ndim(value) - len(shape)
    if lead < 0:
        return value
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and jnp.shape(value)[lead + i] != 1
    )
    if axes:
        value = jnp.sum(value, axis=axes, keepdims=False)
        # put back the size-1 dimensions that were summed inside `shape`
        value = value.reshape(shape) if value.size == int(np.prod(shape)) else value
    return value


def _abstract_eval(*avals, rule: LinearRule, has_tangent, levels: Levels):
    _, _, ys = _split(avals, rule, has_tangent)
    first_y = sum(has_tangent) + rule.n_inputs
    sizes = tuple(size for size, _ in reversed(levels))  # the outermost batch axis leads
    out = []
    for j, (y, d) in enumerate(zip(ys, rule.out_differentiable)):
        if not d:
            continue
        unbatched = y.update(shape=y.shape[sum(flags[first_y + j] for _, flags in levels) :])
        # tangent types of the outputs: under shard_map they keep the mesh axes they vary over
        t = unbatched.to_tangent_aval()
        out.append(t.update(shape=sizes + t.shape))
    return out


def _varying(x) -> frozenset:
    aval = jax_core.typeof(x)
    mat = getattr(aval, "mat", None)
    return mat.varying if mat is not None else frozenset()


def _vary_like(value, target):
    """`value` marked as varying over the mesh axes `target` varies over (inside shard_map)."""
    missing = _varying(target) - _varying(value)
    return jax_core.pvary(value, tuple(missing)) if missing else value


def _transpose(cts, *operands, rule: LinearRule, has_tangent, levels: Levels):
    ts, xs, ys = _split(operands, rule, has_tangent)
    wanted = tuple(t is not None and ad.is_undefined_primal(t) for t in ts)
    cts = [None if type(c) is ad.Zero else c for c in cts]
    n_t = sum(has_tangent)
    if not any(wanted) or all(c is None for c in cts):
        return [None] * len(operands)

    # vmap only over arrays: absent cotangents stay None inside the map.
    present = [i for i, c in enumerate(cts) if c is not None]

    def cotangent(xs, ys, given):
        full = [None] * len(cts)
        for i, c in zip(present, given):
            full[i] = c
        grads = rule.cotangent_map(xs, ys, full, wanted)
        return [
            _vary_like(shaped_like(g, x), x) if w else jnp.zeros((), jnp.float32) for g, x, w in zip(grads, xs, wanted)
        ]

    def axes(flags):
        return (_in_axes(flags[n_t : n_t + rule.n_inputs]), _in_axes(flags[n_t + rule.n_inputs :]), 0)

    grads = _batched(cotangent, levels, axes)(xs, ys, [cts[i] for i in present])
    out = [g if w else None for g, w, h in zip(grads, wanted, has_tangent) if h]
    return out + [None] * (len(operands) - n_t)


def _batch(args, dims, *, rule: LinearRule, has_tangent, levels: Levels):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    n_t = sum(has_tangent)
    flags = tuple(d is not None or i < n_t for i, d in enumerate(dims))
    moved = [
        jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *jnp.shape(a))) if f else a
        for a, d, f in zip(args, dims, flags)
    ]
    out = linear_p.bind(*moved, rule=rule, has_tangent=has_tangent, levels=levels + ((size, flags),))
    return out, [0] * len(out)


def _jvp(primals, tangents, **params):
    # The tangent map is linear in the tangents but not in the primals; its derivative in
    # the primals is that of the formula's own JAX code.
    out = linear_p.bind(*primals, **params)
    tangents = tuple(ad.instantiate_zeros(t) for t in tangents)
    _, out_dot = jax.jvp(lambda *ops: _evaluate(*ops, **params), tuple(primals), tangents)
    return out, out_dot


linear_p.def_impl(_evaluate)
linear_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(linear_p, mlir.lower_fun(_evaluate, multiple_results=True))
ad.primitive_transposes[linear_p] = _transpose
ad.primitive_jvps[linear_p] = _jvp
batching.primitive_batchers[linear_p] = _batch


def _differentiable(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _zero_tangent(y):
    if _differentiable(y):
        return jnp.zeros_like(y)
    return np.zeros(jnp.shape(y), jax.dtypes.float0)


def differentiable_call(
    rule: LinearRule | Callable[[Sequence], LinearRule],
    primal_fn: Callable[..., Sequence],
    xs: Sequence,
    held: Sequence[bool] = (),
) -> list:
    """Apply `primal_fn(*xs) -> ys` with derivatives given by `rule`'s two linear maps.

    `rule` may be a function of the outputs `ys` giving the LinearRule: it is then built only
    when a derivative is taken, from outputs already traced (no extra trace for their types).
    `held[i]` drops input i's tangent: no derivative flows from it into the outputs, yet the
    formulas still read its traced value, so differentiating them again reaches it.
    """

    @jax.custom_jvp
    def op(*xs):
        return tuple(primal_fn(*xs))

    held = tuple(held) or (False,) * len(xs)

    def op_jvp(primals, tangents):
        ys = op(*primals)
        has_tangent = tuple(
            not isinstance(t, SymbolicZero) and _differentiable(x) and not h for t, x, h in zip(tangents, primals, held)
        )
        linear = rule if isinstance(rule, LinearRule) else rule(ys)
        if not any(has_tangent) or not any(linear.out_differentiable):
            return ys, tuple(_zero_tangent(y) for y in ys)
        given = [t for t, h in zip(tangents, has_tangent) if h]
        # Inside shard_map, operands that vary over fewer mesh axes are cast up (pvary, whose
        # transpose is a psum): the linear map sees one type, as JAX's own primitives do.
        operands = jax_core.auto_insert_reshard(*given, *primals, *ys)
        diff_ts = iter(linear_p.bind(*operands, rule=linear, has_tangent=has_tangent, levels=()))
        return ys, tuple(next(diff_ts) if d else _zero_tangent(y) for y, d in zip(ys, linear.out_differentiable))

    op.defjvp(op_jvp, symbolic_zeros=True)
    return list(op(*xs))
