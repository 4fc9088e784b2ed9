"""PyTorch's own OpInfo samples as a parity corpus: the second source of samples of the
comparison with torch (torch_compare.py; the first is the records' parity run, parity.py).

Every sample of `torch.testing._internal.common_methods_invocations.op_db` is run under a
`TorchDispatchMode` that records each ATen overload actually called (after autograd and
CompositeImplicit decompositions), with its arguments cloned. Each recorded call whose exact
overload the registry implements (an entry with a forward implementation) is then replayed:

* forward: the jaxderiv op's value and dtype against the overload run by torch;
* vjp: `jax.vjp` of the jaxderiv op against `torch.autograd.grad` of the overload, on a seeded
  cotangent, in float64 (complex128 for complex calls; JAX's convention is
  `jax_vjp(ct) == conj(torch_grad(conj(ct)))`);
* jvp: `jax.jvp` of the jaxderiv op (its `result:` formula, or the transposed backward formula)
  against torch's forward-mode AD (`torch.autograd.forward_ad`) of the overload along the same
  seeded tangent, in float64/complex128. Where torch has no forward-mode formula the call is
  "not applicable", torch's message its reason.

The tolerances, the comparisons of values and derivatives, the alignment of outputs defined up
to a unit factor per column (an op record's `Gauge`) and the worker processes are
torch_compare.py's; this module records the calls and decides what each is compared as.

An in-place or `_copy` overload that derivatives.yaml does not list runs as its functional entry
(`add_.Tensor` as `add.Tensor`, `expand_copy` as `expand`: `jaxderiv.torch`'s `runs_as`): torch's
side runs the recorded overload on a clone of the argument it writes, jaxderiv's result is cast
to that argument's dtype. An overload with no derivatives.yaml entry that jaxderiv runs as a
gradient-free forward (constructors such as `ones`, `full`, `arange`, `empty.memory_format`,
`*_like`; `argmax`, `logical_not`, ...; `runs_as` kind "constant", as exported graphs run them)
has its forward compared: values and dtypes, or for the uninitialized constructors
(`UNINITIALIZED`) shapes and dtypes. Inputs a record declares Hermitian (cholesky's
`hermitian_inputs`) are compared along Hermitian directions only. Identical calls (same overload, shapes, dtypes and non-tensor
arguments) are compared once. The importer's resolver (`jaxderiv.torch`: `runs_as`, `resolve`,
its variants) decides how an overload runs, as it does for an exported graph's node.

    python -m jaxderiv.check.opinfo --registry torch --ops abs,exp --markdown report.md

Needs torch and `expecttest` (torch's testing module imports it).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import time
import warnings
import zlib
from typing import Any, Callable, Iterable

import jax
import numpy as np
import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .. import forward as _forward
from ..forward.nondifferentiable import UNINITIALIZED
from ..records import Gauge
from ..registry import Registry, default_registry
from ..torch.resolve import NodeKind, aten_name, convert_constant, resolve, runs_as, torch_registry, variant_op
from .opdb import record
from .parity import judged_by_content, known_difference
from .torch_compare import (
    FAILURES,
    REPLAY_ATOL,
    REPLAY_RTOL,
    Case,
    TorchFailed,
    Verdict,
    align,
    align_value,
    as_accurate_as_torch,
    deadline_left,
    factors,
    gradients,
    low_precision,
    progress_bar,
    run_parallel,
    tangents,
    to_numpy,
    torch_cotangents,
    torch_forward,
    verdict,
)

__all__ = ["Recorder", "Call", "OpRow", "Replay", "replay", "record_sample", "compare_call", "main"]


# -- recording ----------------------------------------------------------------------------
@dataclasses.dataclass
class Call:
    """One recorded ATen call: the overload and its (cloned) arguments."""

    func: Any  # torch._ops.OpOverload
    args: tuple
    kwargs: dict

    @property
    def name(self) -> str:
        return aten_name(self.func)

    def key(self) -> tuple:
        """Overload, tensor shapes and dtypes, and the other arguments' values."""

        def leaf(x):
            if isinstance(x, torch.Tensor):
                return ("T", tuple(x.shape), str(x.dtype), x.layout == torch.strided and x.is_conj())
            return repr(x)

        leaves = pytree.tree_leaves((self.args, self.kwargs))
        return (str(self.func), tuple(leaf(x) for x in leaves))


def _clone(x):
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    return x


class Recorder(TorchDispatchMode):
    """Records every ATen OpOverload dispatched while active, with cloned arguments; a call whose
    arguments cannot be cloned (a storage, an odd subclass) is counted in `uncloned` instead."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self.uncloned: collections.Counter[str] = collections.Counter()  # reason -> calls not recorded

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.OpOverload) and func.namespace == "aten":
            try:
                self.calls.append(
                    Call(func, pytree.tree_map(_clone, tuple(args)), pytree.tree_map(_clone, dict(kwargs)))
                )
            except FAILURES as e:
                self.uncloned[f"arguments that cannot be cloned: {type(e).__name__}: {str(e)[:80]}"] += 1
        return func(*args, **kwargs)


def _record(opinfo, sample) -> Recorder:
    rec = Recorder()
    with torch.no_grad(), rec:
        opinfo(sample.input, *sample.args, **sample.kwargs)
    return rec


def record_sample(opinfo, sample) -> list[Call]:
    """The ATen calls one OpInfo sample makes (forward only, no autograd)."""
    return _record(opinfo, sample).calls


# -- comparing ----------------------------------------------------------------------------
def _tensors(tree) -> list:
    return [x for x in pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def _to_jax(tree):
    return pytree.tree_map(
        lambda x: (
            convert_constant(x)
            if isinstance(
                x,
                (
                    torch.Tensor,
                    torch.dtype,
                    torch.device,
                    torch.layout,
                    torch.memory_format,
                    torch.SymInt,
                    torch.SymFloat,
                    torch.SymBool,
                    torch.Size,
                ),
            )
            else x
        ),
        tree,
    )


def _wide(x):
    """float64/complex128 copies of inexact tensors, for the derivative comparison."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            return x.detach().to(torch.complex128)
        if x.is_floating_point():
            return x.detach().to(torch.float64)
        return x.detach().clone()
    return x


@dataclasses.dataclass
class Outcome:
    """One distinct call's comparison: per mode 'agree' | 'mismatch' | 'crash' | 'skip'; jvp
    also 'n/a' (torch has no forward-mode formula for the overload; `jvp_reason` says torch's message)."""

    forward: str
    vjp: str
    forward_error: float = 0.0
    vjp_error: float = 0.0
    message: str = ""
    jvp: str = "skip"
    jvp_error: float = 0.0
    jvp_reason: str = ""
    declared_reason: str = ""  # the op record's reason, where a mode's mismatch is declared


class _Crash(Exception):
    """An exception inside jaxderiv (as opposed to torch's side or the harness)."""


def _tolerance(dtype) -> tuple[float, float]:
    """A forward value's tolerance: float64's and complex128's, or torch.testing's below them."""
    return low_precision(dtype) or (REPLAY_RTOL, REPLAY_ATOL)


def _compare_forward(op, call: Call, gauge: Gauge | None = None) -> Verdict:
    args, kwargs = pytree.tree_map(_clone, (call.args, call.kwargs))
    expected = call.func(*args, **kwargs)
    jargs, jkwargs = _to_jax(call.args), _to_jax(call.kwargs)  # may raise TypeError (complex32): not comparable
    try:
        got = op(*jargs, **jkwargs)
        got = jax.block_until_ready(got)
    except FAILURES as e:  # a crash of jaxderiv's is a result here
        raise _Crash(f"forward: {type(e).__name__}: {e}") from e
    exp_leaves = [x for x in pytree.tree_leaves(expected) if x is not None]
    got_leaves = [x for x in jax.tree.leaves(got) if x is not None]
    if len(exp_leaves) != len(got_leaves):
        return Verdict("mismatch", float("inf"), f"{len(got_leaves)} outputs, torch has {len(exp_leaves)}")
    got_np, want_np = [np.asarray(g) for g in got_leaves], [to_numpy(x) for x in exp_leaves]
    p = factors(gauge, got_np, want_np) if gauge else {}
    pairs = []
    for i, (x, g) in enumerate(zip(exp_leaves, got_leaves)):
        g = np.asarray(g)
        if gauge is not None and i in p:  # defined up to a factor per column (row): in torch's choice
            g = align_value(gauge, p, i, got_np, want_np[i]).astype(g.dtype)
        if isinstance(x, torch.Tensor):
            want = convert_constant(x.dtype)
            if g.dtype != want:
                return Verdict("mismatch", float("inf"), f"output {i}: dtype {g.dtype}, torch {want}")
            rtol, atol = _tolerance(x.dtype)
        else:
            rtol, atol = REPLAY_RTOL, REPLAY_ATOL
        pairs.append((f"output {i}", g, to_numpy(x), rtol, atol))
    plain = verdict(pairs)
    if plain.status == "mismatch" and any(
        isinstance(x, torch.Tensor) and low_precision(x.dtype) for x in exp_leaves
    ):  # low-precision outputs: judged against torch's own float64 result
        try:
            args, kwargs = pytree.tree_map(_wide, (call.args, call.kwargs))
            reference = [to_numpy(x) for x in pytree.tree_leaves(call.func(*args, **kwargs)) if x is not None]
        except FAILURES:  # torch has no float64 kernel for it: the plain verdict stands
            return plain
        return as_accurate_as_torch(pairs, reference, plain)
    return plain


def _compare_constant(fn, call: Call) -> Outcome:
    """The forward of a gradient-free overload (a constructor, an argmax, a logical op): its
    values and dtypes (shapes and dtypes for `UNINITIALIZED`); no derivative to compare."""
    try:
        if call.name in UNINITIALIZED:
            args, kwargs = pytree.tree_map(_clone, (call.args, call.kwargs))
            expected = call.func(*args, **kwargs)
            try:
                got = jax.block_until_ready(fn(*_to_jax(call.args), **_to_jax(call.kwargs)))
            except FAILURES as e:  # a crash of jaxderiv's is a result here
                raise _Crash(f"forward: {type(e).__name__}: {e}") from e
            want = (tuple(expected.shape), convert_constant(expected.dtype))
            have = (tuple(got.shape), np.asarray(got).dtype)
            fwd, err, why = ("agree", 0.0, "") if have == want else ("mismatch", float("inf"), f"{have}, torch {want}")
        else:
            fwd, err, why = _compare_forward(fn, call)
    except _Crash as e:
        return Outcome("crash", "skip", message=str(e)[:300])
    except FAILURES as e:  # torch could not re-run it, or a value has no JAX form
        return Outcome("skip", "skip", message=f"not comparable: {type(e).__name__}: {str(e)[:120]}")
    return Outcome(fwd, "skip", err, message=why and f"forward {why}", jvp="skip")


# A random overload's values are compared in distribution: a two-sample Kolmogorov-Smirnov test of
# about RANDOM_DRAWS values of torch's against as many of jaxderiv's (the call repeated, each
# jaxderiv call with a key of its own), real and imaginary parts pooled; agreement at p > RANDOM_P.
RANDOM_DRAWS, RANDOM_P = 4000, 1e-4


def _draw_inputs(call: Call) -> list[int]:
    """Positions of tensor arguments a random overload writes its draw into without returning
    them (rrelu_with_noise's `noise`): jaxderiv's op reads the draw from that input instead (JAX
    cannot write into an argument, and the backward formula reads it there)."""
    schema = call.func._schema
    returned: set = set().union(*(set(r.alias_info.before_set) for r in schema.returns if r.alias_info is not None))
    return [
        i
        for i, a in enumerate(schema.arguments)
        if i < len(call.args)
        and isinstance(call.args[i], torch.Tensor)
        and a.alias_info is not None
        and a.alias_info.is_write
        and not returned & set(a.alias_info.before_set)
    ]


def _compare_given_draw(op, call: Call, drawn: list[int]) -> Outcome:
    """The forward of a random overload on torch's own draw: torch runs on clones (writing its
    draw into the `drawn` inputs), jaxderiv's op is given those inputs as torch filled them and
    the call's other arguments as recorded; values and dtypes compared exactly as a forward."""
    try:
        args, kwargs = pytree.tree_map(_clone, (call.args, call.kwargs))
        expected = call.func(*args, **kwargs)
        given = list(call.args)
        for i in drawn:
            given[i] = args[i]
        jargs, jkwargs = _to_jax(tuple(given)), _to_jax(call.kwargs)
    except FAILURES as e:  # torch could not re-run it, or a value has no JAX form
        return Outcome("skip", "skip", message=f"not comparable: {type(e).__name__}: {str(e)[:120]}")
    try:
        got = np.asarray(jax.block_until_ready(op(*jargs, **jkwargs)))
    except FAILURES as e:  # a crash of jaxderiv's is a result here
        return Outcome("crash", "skip", message=f"forward: {type(e).__name__}: {e}"[:300])
    want = to_numpy(expected)
    if got.dtype != want.dtype:
        return Outcome("mismatch", "skip", float("inf"), message=f"forward dtype {got.dtype}, torch {want.dtype}")
    status, err, why = verdict([("output 0 (torch's draw given)", got, want, REPLAY_RTOL, REPLAY_ATOL)])
    return Outcome(status, "skip", err, message=why and f"forward {why}")


def _compare_random(op, call: Call, seed: int) -> Outcome:
    """A random overload (`nondeterministic_seeded`): shapes, dtypes and the distribution of the
    values (see RANDOM_DRAWS); no derivative is compared (the two sides' noise differs)."""
    from scipy.stats import ks_2samp

    def pooled(x) -> np.ndarray:
        x = np.asarray(x)
        return np.concatenate([x.real.ravel(), x.imag.ravel()]) if np.iscomplexobj(x) else x.ravel()

    drawn = _draw_inputs(call)
    if drawn:  # the op takes the draw as an input: given torch's, the values compare exactly
        return _compare_given_draw(op, call, drawn)
    try:
        args, kwargs = pytree.tree_map(_clone, (call.args, call.kwargs))
        first = call.func(*args, **kwargs)
        size = max(int(first.numel()), 1)
        repeats = max(1, min(200, -(-RANDOM_DRAWS // size)))
        theirs = [to_numpy(first)]
        for _ in range(repeats - 1):
            args, kwargs = pytree.tree_map(_clone, (call.args, call.kwargs))
            theirs.append(to_numpy(call.func(*args, **kwargs)))
        jargs, jkwargs = _to_jax(call.args), _to_jax(call.kwargs)
    except FAILURES as e:  # torch could not re-run it, or a value has no JAX form
        return Outcome("skip", "skip", message=f"not comparable: {type(e).__name__}: {str(e)[:120]}")
    keys = jax.random.split(jax.random.key(seed), repeats)
    try:
        ours = [np.asarray(jax.block_until_ready(op(*jargs, **{**jkwargs, "generator": k}))) for k in keys]
    except FAILURES as e:  # a crash of jaxderiv's is a result here
        return Outcome("crash", "skip", message=f"forward: {type(e).__name__}: {e}"[:300])
    want = (tuple(first.shape), convert_constant(first.dtype))
    have = (ours[0].shape, ours[0].dtype)
    if have != want:
        return Outcome("mismatch", "skip", float("inf"), message=f"forward {have}, torch {want}")
    a, b = pooled(np.stack(ours)).astype(np.float64), pooled(np.stack(theirs)).astype(np.float64)
    if a.size == 0 or (np.array_equal(np.unique(a), np.unique(b)) and np.unique(a).size == 1):
        return Outcome("agree", "skip")  # empty, or the same constant (p = 0, p = 1 draws)
    with warnings.catch_warnings():  # discrete draws (bernoulli, multinomial): scipy's exact-p notes
        warnings.simplefilter("ignore")
        test = ks_2samp(a, b)
    if test.pvalue > RANDOM_P:
        return Outcome("agree", "skip")
    return Outcome(
        "mismatch",
        "skip",
        float(test.statistic),
        message=f"forward distribution differs (Kolmogorov-Smirnov D = {test.statistic:.3g}, p = {test.pvalue:.2g},"
        f" {a.size} values each; means {a.mean():.4g} and torch's {b.mean():.4g})",
    )


def _split(b: dict, names: list, kwarg_only: set):
    """Positional arguments while they are given in schema order; the rest by name."""
    pos, i = [], 0
    while i < len(names) and names[i] not in kwarg_only and names[i] in b:
        pos.append(b[names[i]])
        i += 1
    return pos, {n: b[n] for n in names[i:] if n in b}


# Overloads whose input is a Hermitian (real: symmetric) matrix of which they read one triangle:
# a derivative there is defined only along Hermitian directions (torch's OpInfos test them through
# `gradcheck_wrapper_hermitian_input`). Their gradients are compared by their Hermitian parts and
# their tangents are Hermitian, when the recorded input is Hermitian. Overload -> argument.
def _herm(x: np.ndarray) -> np.ndarray:
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


def _is_hermitian(t, recorded_dtype=None) -> bool:
    """Hermitian up to the rounding of the dtype the sample was built in (a float32 A Aᴴ need not
    be exactly symmetric)."""
    tol = 1e-12 if recorded_dtype in (None, torch.float64, torch.complex128) else 1e-5
    return (
        isinstance(t, torch.Tensor)
        and t.dim() >= 2
        and t.shape[-1] == t.shape[-2]
        and bool(torch.allclose(t, t.mH, rtol=tol, atol=tol * float(t.abs().max()) if t.numel() else tol))
    )


class _Bound(Case):
    """A call's arguments by schema name, widened to float64/complex128, and its differentiable
    inexact tensors (`targets`: (name, index in a list or None, tensor)): the call as the
    derivative comparisons see it, jaxderiv's `op` on one side and the recorded overload on the
    other."""

    def __init__(self, op, call: Call):
        self.op, self.call = op, call
        self.names = [a.name for a in call.func._schema.arguments]
        self.kwarg_only = {a.name for a in call.func._schema.arguments if a.kwarg_only}
        # arguments an in-place overload writes: torch's side mutates a clone of them
        self.written = {
            a.name for a in call.func._schema.arguments if a.alias_info is not None and a.alias_info.is_write
        }
        args, kwargs = pytree.tree_map(_wide, (call.args, call.kwargs))
        diff = set(op.differentiable_inputs)
        self.bound = dict(zip([n for n in self.names if n not in self.kwarg_only], args))
        self.bound.update(kwargs)
        self.targets: list[tuple[str, int | None, torch.Tensor]] = []
        for n, v in self.bound.items():
            if n not in diff:
                continue
            if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
                self.targets.append((n, None, v))
            elif isinstance(v, (list, tuple)):
                for i, t in enumerate(v):
                    if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
                        self.targets.append((n, i, t))
        herm = record(call.name).hermitian_inputs
        recorded = dict(zip([n for n in self.names if n not in self.kwarg_only], call.args)) | dict(call.kwargs)
        # the dtypes an in-place overload writes in: jaxderiv's functional result is cast to them
        self.written_dtypes = [recorded[n].dtype for n in self.written if isinstance(recorded.get(n), torch.Tensor)]
        # per target: compared on Hermitian directions only
        self.hermitian = [
            n in herm and i is None and _is_hermitian(t, getattr(recorded.get(n), "dtype", None))
            for n, i, t in self.targets
        ]
        self.jbound = {k: _to_jax(v) for k, v in self.bound.items()}

    def _with(self, bound: dict, values) -> dict:
        """The bound arguments with the targets replaced by `values`."""
        b = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in bound.items()}
        for (n, i, _), x in zip(self.targets, values):
            if i is None:
                b[n] = x
            else:
                b[n][i] = x
        return b

    def inputs(self) -> list:
        return [to_numpy(t) for _, _, t in self.targets]

    def torch(self, *xs) -> list:
        """The recorded overload with the targets replaced by `xs` (written arguments cloned):
        its tensor outputs."""
        b = self._with(self.bound, xs)
        for n in self.written:
            if isinstance(b.get(n), torch.Tensor):
                b[n] = b[n].clone()
        pos, kw = _split(b, self.names, self.kwarg_only)
        return [x for x in pytree.tree_leaves(self.call.func(*pos, **kw)) if isinstance(x, torch.Tensor)]

    def jax(self, *xs) -> list:
        p, k = _split(self._with(self.jbound, xs), self.names, self.kwarg_only)
        return jax.tree.leaves(self.op(*p, **k))

    def project(self, grads: list) -> list:
        """Gradients and tangents of the Hermitian inputs by their Hermitian parts."""
        return [
            _herm(g) if herm and np.shape(g) == tuple(t.shape) else g
            for g, herm, (_, _, t) in zip(grads, self.hermitian, self.targets)
        ]

    def label(self, k: int) -> str:
        n, i, _ = self.targets[k]
        return f"{n}{'' if i is None else f'[{i}]'}"


def _direction(rng, shape, complex_):
    """A seeded standard normal cotangent or tangent (real and imaginary parts) of `shape`."""
    r = np.asarray(rng.standard_normal(shape))
    return np.asarray(r + 1j * rng.standard_normal(shape)) if complex_ else r


def _derivative_tols(dtypes: list, bd: _Bound) -> tuple[float, float]:
    """float64 tolerances, or the loosest of the low-precision dtypes torch's widened call still
    returns (a `dtype=` argument) or jaxderiv's in-place result is cast to (the recorded dtype of
    the argument an in-place overload writes): derivatives through them carry their rounding."""
    tols = [t for d in list(dtypes) + bd.written_dtypes if (t := low_precision(d)) is not None]
    return max(tols) if tols else (REPLAY_RTOL, REPLAY_ATOL)


class _Skip(Exception):
    """Nothing to compare in this mode (its message says why)."""


class _Outputs(Exception):
    """The two sides return different numbers of outputs (its message says how many)."""


def _compare_vjp(op, call: Call, seed: int, gauge: Gauge | None = None) -> Verdict:
    """jax.vjp of the op vs torch.autograd.grad of the overload, in float64/complex128, on the
    seeded cotangents of torch's inexact outputs (carried into torch's factors for `gauge`)."""
    bd = _Bound(op, call)
    if not bd.targets:
        return Verdict("skip", 0.0, "no differentiable input")
    try:
        probe = torch_forward(bd)
    except TorchFailed as e:
        return Verdict("skip", 0.0, f"torch forward in float64 failed: {e.reason[:120]}")
    outs_t = probe[1]
    rng = np.random.default_rng(seed)

    def cotangents(ys, _):
        if len(ys) != len(outs_t):
            raise _Outputs(f"{len(ys)} outputs, torch has {len(outs_t)}")
        cts = [_direction(rng, tuple(o.shape), o.is_complex()) if _inexact(o) else None for o in outs_t]
        cts_t = cts  # torch's cotangents, in JAX's convention (torch gets their conjugates)
        if gauge is not None:  # outputs up to a factor per column (row): the cotangents carried over
            values_t = [to_numpy(o) for o in outs_t]
            cts, cts_t = torch_cotangents(gauge, factors(gauge, [np.asarray(y) for y in ys], values_t), cts, values_t)
        if not any(c is not None and o.requires_grad for o, c in zip(outs_t, cts_t)):
            raise _Skip("torch output carries no gradient")
        return [c if o.requires_grad else None for o, c in zip(outs_t, cts)], cts_t

    try:
        got, want = gradients(bd, probe, lambda outs: outs, cotangents)
    except _Outputs as e:
        return Verdict("mismatch", float("inf"), str(e))
    except _Skip as e:
        return Verdict("skip", 0.0, str(e))
    except TorchFailed as e:
        return Verdict("skip", 0.0, f"torch backward failed: {e.reason[:120]}")
    except FAILURES as e:  # jaxderiv's vjp (its forward, or its pullback) crashed
        raise _Crash(f"vjp: {type(e).__name__}: {e}") from e
    tols = _derivative_tols([o.dtype for o in outs_t], bd)
    return verdict([(f"grad {bd.label(k)}", g, w, *tols) for k, (g, w) in enumerate(zip(got, want))])


def _inexact(t: torch.Tensor) -> bool:
    return bool(t.is_floating_point() or t.is_complex())


def _compare_jvp(op, call: Call, seed: int, gauge: Gauge | None = None) -> Verdict:
    """jax.jvp of the op vs torch's forward-mode AD of the overload along the same random
    tangent (one per differentiable inexact input), in float64/complex128. 'n/a' where torch
    has no forward-mode formula for the overload (its message is the reason)."""
    bd = _Bound(op, call)
    if not bd.targets:
        return Verdict("skip", 0.0, "no differentiable input")
    rng = np.random.default_rng(seed + 1)
    ts = bd.project(
        [
            _direction(rng, tuple(t.shape), t.is_complex()).astype(x.dtype)
            for (_, _, t), x in zip(bd.targets, bd.inputs())
        ]
    )
    try:
        both = tangents(bd, lambda outs: outs, ts)
    except TorchFailed as e:  # no forward-mode formula in torch (or torch refuses)
        cause = type(e.__cause__).__name__
        return Verdict("n/a", 0.0, f"torch: {cause}: {e.line[:160]}")
    except FAILURES as e:
        raise _Crash(f"jvp: {type(e).__name__}: {e}") from e
    tan_j, want = both.ours, both.theirs
    if len(tan_j) != len(want):
        return Verdict("mismatch", float("inf"), f"{len(tan_j)} output tangents, torch has {len(want)}")
    if gauge is not None:  # tangents of outputs up to a factor per column (row): in torch's factors
        p = factors(gauge, both.values, both.torch_values)
        tan_j = [align(p, k, x).astype(x.dtype) if k in p else x for k, x in enumerate(tan_j)]
    tols = _derivative_tols([v.dtype for v in both.torch_values], bd)
    return verdict(
        [
            (f"tangent of output {k}", g, w, *tols)
            for k, (g, w) in enumerate(zip(tan_j, want))
            if w is not None and g.dtype != jax.dtypes.float0
        ]
    )


def compare_call(op, call: Call, seed: int = 0, *, jvp: bool = True, gauge: Gauge | None = None) -> Outcome:
    """Forward, vjp and (with `jvp`) jvp of one recorded call (see the module docstring); outputs
    of `gauge` (the entry's record's) compared up to their free factors."""
    try:
        fwd, fe, fwhy = _compare_forward(op, call, gauge)
    except _Crash as e:
        return Outcome("crash", "skip", message=str(e)[:300])
    except FAILURES as e:  # torch could not re-run it, or a value has no JAX form
        return Outcome("skip", "skip", message=f"not comparable: {type(e).__name__}: {str(e)[:120]}")
    msgs = [fwhy and f"forward {fwhy}"]

    def mode(name, compare):
        """(status, error, reason) of one mode, a crash included; its message kept for the row."""
        try:
            status, error, why = compare(op, call, seed, gauge)
        except _Crash as e:
            status, error, why = "crash", 0.0, str(e)[:300]
        if status in ("mismatch", "crash"):
            msgs.append(why if status == "crash" else f"{name} {why}")
        return status, error, why

    vjp, ve, _ = mode("vjp", _compare_vjp)
    j, je, jwhy = mode("jvp", _compare_jvp) if jvp else ("skip", 0.0, "not compared")
    return Outcome(
        fwd, vjp, fe, ve, "; ".join(m for m in msgs if m), jvp=j, jvp_error=je, jvp_reason=jwhy if j == "n/a" else ""
    )


# -- the replay ---------------------------------------------------------------------------
@dataclasses.dataclass
class OpRow:
    """Per ATen overload: distinct calls compared, agreeing per mode, mismatches, crashes."""

    op: str
    via: str = ""  # the functional entry an in-place / `_copy` overload runs as ("" = its own)
    calls: int = 0  # distinct calls compared
    forward_agree: int = 0
    vjp_agree: int = 0
    vjp_compared: int = 0  # calls with a vjp comparison (agree + mismatch + crash)
    forward_mismatch: int = 0
    vjp_mismatch: int = 0
    forward_max_error: float = 0.0
    vjp_max_error: float = 0.0
    jvp_agree: int = 0
    jvp_mismatch: int = 0
    jvp_compared: int = 0  # calls with a jvp comparison (agree + mismatch + crash)
    jvp_na: int = 0  # torch has no forward-mode formula for the overload
    jvp_max_error: float = 0.0
    # mismatches the entry's op record declares (`parity_differs`), per mode
    forward_declared: int = 0
    vjp_declared: int = 0
    jvp_declared: int = 0
    crashes: int = 0
    messages: list = dataclasses.field(default_factory=list)  # first few mismatch/crash messages
    opinfos: set = dataclasses.field(default_factory=set)

    def add(self, o: Outcome, opinfo: str):
        self.calls += 1
        self.opinfos.add(opinfo)
        self.forward_agree += o.forward == "agree"
        self.forward_mismatch += o.forward == "mismatch"
        if o.vjp != "skip":
            self.vjp_compared += 1
        self.vjp_agree += o.vjp == "agree"
        self.vjp_mismatch += o.vjp == "mismatch"
        self.jvp_compared += o.jvp in ("agree", "mismatch", "crash", "declared")
        self.jvp_agree += o.jvp == "agree"
        self.jvp_mismatch += o.jvp == "mismatch"
        self.jvp_na += o.jvp == "n/a"
        self.forward_declared += o.forward == "declared"
        self.vjp_declared += o.vjp == "declared"
        self.jvp_declared += o.jvp == "declared"
        self.crashes += "crash" in (o.forward, o.vjp, o.jvp)
        if o.jvp == "mismatch":
            self.jvp_max_error = max(self.jvp_max_error, o.jvp_error)
        if o.forward == "mismatch":
            self.forward_max_error = max(self.forward_max_error, o.forward_error)
        if o.vjp == "mismatch":
            self.vjp_max_error = max(self.vjp_max_error, o.vjp_error)
        if o.message and ("crash" in (o.forward, o.vjp, o.jvp) or "mismatch" in (o.forward, o.vjp, o.jvp)):
            if len(self.messages) < 3 and o.message not in self.messages:
                self.messages.append(f"[{opinfo}] {o.message}")


@dataclasses.dataclass
class Replay:
    rows: dict  # overload name -> OpRow
    missing: dict  # overload name -> set of OpInfo names whose samples call it
    calls_recorded: int = 0
    calls_replayed: int = 0  # recorded calls of implemented overloads (before the cache)
    calls_routed: int = 0  # of those, in-place / `_copy` overloads run through their functional entry
    calls_constant: int = 0  # of those, gradient-free overloads with no entry (forward compared only)
    jvp_not_applicable: collections.Counter[str] = dataclasses.field(
        default_factory=collections.Counter
    )  # torch's reason -> distinct calls
    # distinct call key -> (overload, the entry it runs as, first OpInfo, its outcome)
    outcomes: dict = dataclasses.field(default_factory=dict)
    declared: collections.Counter[tuple[str, str, str]] = dataclasses.field(
        default_factory=collections.Counter
    )  # (overload, mode, the op record's reason) -> distinct calls whose mismatch it declares
    # reason -> recorded calls not compared (random, non-strided, harness errors)
    skipped: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    # reason -> distinct calls with no comparable value (torch cannot re-run it, complex32)
    not_comparable: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    sample_errors: dict = dataclasses.field(default_factory=dict)  # opinfo -> message
    opinfos: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    registry: str = ""

    @property
    def totals(self) -> dict:
        r = self.rows.values()
        return {
            "distinct_calls": sum(x.calls for x in r),
            "forward_agree": sum(x.forward_agree for x in r),
            "vjp_compared": sum(x.vjp_compared for x in r),
            "vjp_agree": sum(x.vjp_agree for x in r),
            "crashes": sum(x.crashes for x in r),
            "forward_mismatch": sum(x.forward_mismatch for x in r),
            "vjp_mismatch": sum(x.vjp_mismatch for x in r),
            "jvp_compared": sum(x.jvp_compared for x in r),
            "jvp_agree": sum(x.jvp_agree for x in r),
            "jvp_mismatch": sum(x.jvp_mismatch for x in r),
            "jvp_na": sum(x.jvp_na for x in r),
            "forward_declared": sum(x.forward_declared for x in r),
            "vjp_declared": sum(x.vjp_declared for x in r),
            "jvp_declared": sum(x.jvp_declared for x in r),
        }

    def summary(self) -> str:
        t = self.totals
        pct = lambda a, b: f"{100 * a / b:.1f}%" if b else "-"  # noqa: E731
        lines = [
            f"OpInfo replay against the {self.registry} registry{' (stopped at the time limit)' if self.timed_out else ''}",
            f"  OpInfos run: {self.opinfos}; ATen calls recorded: {self.calls_recorded}; calls of implemented overloads replayed: {self.calls_replayed}"
            f" ({self.calls_routed} in-place / _copy calls through their functional entry,"
            f" {self.calls_constant} of gradient-free overloads with no entry, forward only)",
            f"  distinct calls compared: {t['distinct_calls']} over {len(self.rows)} distinct ops",
            f"  forward agree: {t['forward_agree']}/{t['distinct_calls']} ({pct(t['forward_agree'], t['distinct_calls'])}), mismatches {t['forward_mismatch']}",
            f"  vjp agree: {t['vjp_agree']}/{t['vjp_compared']} ({pct(t['vjp_agree'], t['vjp_compared'])}), mismatches {t['vjp_mismatch']}",
            f"  jvp agree: {t['jvp_agree']}/{t['jvp_compared']} ({pct(t['jvp_agree'], t['jvp_compared'])}), mismatches {t['jvp_mismatch']};"
            f" not applicable (torch has no forward-mode formula): {t['jvp_na']}",
            f"  declared differences (op records' parity_differs): forward {t['forward_declared']}, vjp {t['vjp_declared']},"
            f" jvp {t['jvp_declared']} distinct calls",
            f"  crashes (exceptions inside jaxderiv): {t['crashes']}",
            f"  overloads called but not implemented by the registry: {len(self.missing)}"
            f" ({sum(bool(record(n).not_applicable) for n in self.missing)} of them declared with no JAX meaning)",
            f"  OpInfos whose samples failed in torch itself: {len(self.sample_errors)}",
            f"  time: {self.seconds:.1f} s",
        ]
        return "\n".join(lines)

    def markdown(self) -> str:
        out = [
            "# OpInfo replay",
            "",
            "```",
            self.summary(),
            "```",
            "",
            "## Ops ranked by mismatches and crashes",
            "",
            "| op | distinct calls | forward agree | vjp agree / compared | jvp agree / compared (n/a) | forward mismatches (max err) | vjp mismatches (max err) | jvp mismatches (max err) | crashes | first messages |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        rows = sorted(
            self.rows.values(),
            key=lambda r: (-(r.forward_mismatch + r.vjp_mismatch + r.jvp_mismatch + r.crashes), r.op),
        )
        for r in rows:
            msg = "<br>".join(m.replace("|", "\\|").replace("\n", " ")[:200] for m in r.messages)
            via = {"no gradient": " (no gradient: forward only)", "random": " (random: values in distribution)"}.get(
                r.via, f" (as `{r.via}`)" if r.via else ""
            )
            out.append(
                f"| `{r.op}`{via} | {r.calls} | {r.forward_agree} | {r.vjp_agree}/{r.vjp_compared} | {r.jvp_agree}/{r.jvp_compared} ({r.jvp_na}) | {r.forward_mismatch} ({r.forward_max_error:.3g}) | {r.vjp_mismatch} ({r.vjp_max_error:.3g}) | {r.jvp_mismatch} ({r.jvp_max_error:.3g}) | {r.crashes} | {msg} |"
            )
        out += [
            "",
            "## Overloads OpInfo samples call that the registry lacks",
            "",
            "ranked by how many OpInfos call them; why: the op record's declaration, where it has one",
            "",
            "| overload | OpInfos | examples | why |",
            "|---|---|---|---|",
        ]
        for name, infos in sorted(self.missing.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            why = record(name).not_applicable or "not implemented"
            out.append(f"| `{name}` | {len(infos)} | {', '.join(sorted(infos)[:5])} | {why} |")
        if self.declared:
            out += [
                "",
                "## Declared differences (op records)",
                "",
                "| overload | mode | reason | distinct calls |",
                "|---|---|---|---|",
            ]
            for (name, mode, why), n in sorted(self.declared.items()):
                out.append(f"| `{name}` | {mode} | {why.replace('|', chr(92) + '|')} | {n} |")
        if self.jvp_not_applicable:
            out += [
                "",
                "## jvp not applicable: torch has no forward-mode formula",
                "",
                "| torch's message | distinct calls |",
                "|---|---|",
            ]
            for why, n in self.jvp_not_applicable.most_common():
                out.append(f"| {why.replace('|', chr(92) + '|')} | {n} |")
        if self.sample_errors:
            out += ["", "## OpInfos whose samples torch itself rejected", "", "| OpInfo | first error |", "|---|---|"]
            for name, why in sorted(self.sample_errors.items()):
                out.append(f"| {name} | {why.replace('|', chr(92) + '|')} |")
        if self.skipped or self.not_comparable:
            out += ["", "## Calls not compared", "", "| reason | calls |", "|---|---|"]
            for why, n in (self.skipped + self.not_comparable).most_common():
                out.append(f"| {why.replace('|', chr(92) + '|')} | {n} |")
        return "\n".join(out) + "\n"


def _implemented(registry: Registry, name: str):
    """(op, the entry it runs) for an overload: its own entry with a forward, or for an in-place
    or `_copy` overload derivatives.yaml does not list, its functional entry (`add_.Tensor` runs
    as `add.Tensor`, `expand_copy` as `expand`: `resolve.runs_as`, as `jaxderiv.torch` runs
    them), or a variant composing entries' ops (`copy_`: `forward.variant`); (None, None)
    otherwise. An entry without a forward is not built: its formulas need
    not translate (`_to_sparse`'s `.sym_blocksize()`), and building it would abort the OpInfo."""
    if name in registry.spec:
        if _forward.implementation(name) is None:
            return None, None
        return registry.op(name), name
    kind, target = runs_as(name, registry)
    if kind is NodeKind.ENTRY and target != name:
        assert target is not None  # runs_as names the entry
        return registry.op(target), target
    if kind is NodeKind.VARIANT:  # `copy_`: entries' ops composed (`forward.variant`)
        return variant_op(registry, name), name
    return None, None


def _in_place(op, call: Call):
    """The functional entry's op as the in-place overload computes: its result cast to the
    written argument's dtype (torch's codegen copies the functional result into `self`)."""
    written = [a.name for a in call.func._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    names = [a.name for a in call.func._schema.arguments if not a.kwarg_only]
    if not written or written[0] not in names or names.index(written[0]) >= len(call.args):
        return op
    target = call.args[names.index(written[0])]
    if not isinstance(target, torch.Tensor):
        return op
    dtype = convert_constant(target.dtype)

    @functools.wraps(op)
    def run(*args, **kwargs):
        out = op(*args, **kwargs)
        return out.astype(dtype) if isinstance(out, jax.Array) else out

    run.differentiable_inputs = op.differentiable_inputs  # type: ignore[attr-defined]  # a function attribute, read as Op's
    return run


def _dtypes_for(opinfo, dtypes: Iterable[torch.dtype]) -> list[torch.dtype]:
    supported = opinfo.supported_dtypes("cpu")
    return [d for d in dtypes if d in supported]


def replay(
    registry: Registry | str = "torch",
    ops: Iterable[str] | None = None,
    *,
    limit: int | None = None,
    samples: int | None = None,
    dtypes=(torch.float64, torch.complex128),
    time_limit: float | None = None,
    progress: bool = False,
    seed: int = 0,
    jvp: bool = True,
    jobs: int = 1,
    _indices: list[int] | None = None,
    _cache: dict | None = None,
) -> Replay:
    """Replay op_db samples (filtered to OpInfo names `ops`; the first `limit` OpInfos; at most
    `samples` samples per OpInfo and dtype) and compare every implemented call (forward, vjp,
    and with `jvp` forward mode). `jobs` > 1 runs the OpInfos in that many processes (a registry
    given by name only), each with its own compile cache, and merges their replays."""
    from torch.testing._internal.common_methods_invocations import op_db

    label = registry if isinstance(registry, str) else repr(registry)
    indices = _indices if _indices is not None else _select(op_db, ops, limit)
    if jobs > 1:
        if not isinstance(registry, str):
            raise ValueError("replay(jobs > 1) takes the registry by name ('torch' or 'default')")
        options = dict(samples=samples, dtypes=dtypes, seed=seed, jvp=jvp)
        return _parallel(registry, indices, jobs, options, time_limit, progress)
    if isinstance(registry, str):
        makers: dict[str, Callable[[], Registry]] = {"torch": torch_registry, "default": default_registry}
        registry = makers[registry]()
    infos = [op_db[i] for i in indices]
    result = Replay(rows={}, missing=collections.defaultdict(set), registry=label)
    judged = judged_by_content(registry.spec)  # whose declared differences hold, per entry (by its text)
    cache: dict = {} if _cache is None else _cache  # call key -> outcome
    start = time.monotonic()
    bar, task = progress_bar("OpInfos", len(infos)) if progress else (None, None)
    try:
        with jax.enable_x64(True):
            for info in infos:
                full = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
                if bar is not None:
                    bar.update(task, description=full[:28])
                if time_limit is not None and time.monotonic() - start > time_limit:
                    result.timed_out = True
                    break
                result.opinfos += 1
                for dtype in _dtypes_for(info, dtypes):
                    torch.manual_seed(seed)  # OpInfo samples draw from torch's global generator: seeded, replays repeat
                    try:
                        it = info.sample_inputs("cpu", dtype, requires_grad=False)
                        for k, sample in enumerate(it):
                            if samples is not None and k >= samples:
                                break
                            if time_limit is not None and time.monotonic() - start > time_limit:
                                result.timed_out = True
                                break
                            try:
                                rec = _record(info, sample)
                            except FAILURES as e:  # torch rejects its own sample (error inputs etc.)
                                result.sample_errors.setdefault(full, f"{type(e).__name__}: {str(e)[:120]}")
                                continue
                            result.skipped.update(rec.uncloned)
                            _compare_calls(registry, rec.calls, full, result, cache, seed, jvp, judged)
                    except FAILURES as e:  # sample generation itself failed
                        result.sample_errors.setdefault(full, f"sample_inputs: {type(e).__name__}: {str(e)[:120]}")
                if bar is not None:
                    bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    result.seconds = time.monotonic() - start
    result.missing = dict(result.missing)
    return result


def _declare_known(outcome: Outcome, call: Call, difference) -> None:
    """Turn the outcome's mismatches that the entry's record declares (`parity_differs`: its
    columns forward, vjp, jvp; "complex" for every mode of a call on complex tensors) into
    "declared", with the record's reason."""
    if difference is None:
        return
    complex_call = any(t.is_complex() for t in _tensors((call.args, call.kwargs)))
    for mode in ("forward", "vjp", "jvp"):
        if getattr(outcome, mode) == "mismatch" and (
            mode in difference.columns or (complex_call and "complex" in difference.columns)
        ):
            setattr(outcome, mode, "declared")
            outcome.declared_reason = difference.reason


def _select(op_db, ops: Iterable[str] | None, limit: int | None) -> list[int]:
    """Indices into op_db of the OpInfos named `ops` (a name, or name.variant), the first `limit`."""
    wanted = None if ops is None else set(ops)
    picked = [
        i
        for i, o in enumerate(op_db)
        if wanted is None or o.name in wanted or (o.variant_test_name and f"{o.name}.{o.variant_test_name}" in wanted)
    ]
    return picked if limit is None else picked[:limit]


def _shard(args: tuple) -> Replay:
    """One process's part of a parallel replay (module level: spawned processes import it)."""
    registry, indices, options, deadline = args
    # one outcome cache per process and registry: a call met in an earlier chunk is not redone
    # (merge counts it once, from the chunk that compared it)
    cache = _SHARD_CACHES.setdefault(registry, {})
    return replay(registry, _indices=indices, time_limit=deadline_left(deadline), _cache=cache, **options)


_SHARD_CACHES: dict[str, dict] = {}


def _parallel(registry: str, indices: list[int], jobs: int, options: dict, time_limit, progress: bool) -> Replay:
    """The OpInfos in chunks of a few over `jobs` worker processes, merged in op_db order.
    Costly OpInfos sit side by side in op_db, so chunks are small and taken as processes free up."""
    start = time.monotonic()
    deadline = None if time_limit is None else time.time() + time_limit
    chunks = [indices[i : i + 4] for i in range(0, len(indices), 4)]
    parts = run_parallel(
        _shard,
        [(registry, c, options, deadline) for c in chunks],
        jobs,
        sizes=[len(c) for c in chunks],
        progress="OpInfos" if progress else None,
    )
    result = merge(parts)
    result.registry = registry
    result.seconds = time.monotonic() - start
    return result


def _compare_calls(registry, calls, opinfo, result: Replay, cache, seed, jvp=True, judged=None):
    for call in calls:
        result.calls_recorded += 1
        name = call.name
        op, target = _implemented(registry, name)
        kind = runs_as(name, registry)[0] if op is None else NodeKind.ENTRY
        constant = kind is NodeKind.CONSTANT
        sampler = kind is NodeKind.RANDOM  # a gradient-free sampler with no entry (`randn`): its distribution
        if op is None and not (constant or sampler):
            result.missing[name].add(opinfo)
            continue
        routed = op is not None and target != name
        if op is not None and call.func._schema.is_mutable:
            # in place: torch mutates a clone, jaxderiv's result is cast to the written argument's dtype
            op = _in_place(op, call)
        random = torch.Tag.nondeterministic_seeded in call.func.tags
        if random and not sampler and (constant or "generator" not in {a.name for a in call.func._schema.arguments}):
            result.skipped["random (nondeterministic_seeded) with no generator argument"] += 1
            continue
        if any(t.layout != torch.strided or t.is_quantized or t.is_nested for t in _tensors((call.args, call.kwargs))):
            result.skipped["non-strided tensor argument"] += 1
            continue
        result.calls_replayed += 1
        result.calls_routed += routed
        result.calls_constant += constant or sampler
        key = call.key()
        via = "no gradient" if constant else target if routed else "random" if random or sampler else ""
        if key in cache:
            if name in result.rows:
                result.rows[name].opinfos.add(opinfo)
            continue
        try:
            if constant:  # a gradient-free overload with no entry: its forward only
                outcome = _compare_constant(resolve(name, registry).fn, call)
            elif sampler:  # its forward's draws (the generator argument: a key) against torch's
                outcome = _compare_random(
                    _forward.implementation(name), call, seed=seed + zlib.crc32(repr(key).encode())
                )
            elif random:  # the values' distribution (the two generators' draws differ)
                outcome = _compare_random(op, call, seed=seed + zlib.crc32(repr(key).encode()))
            else:
                assert target is not None
                outcome = compare_call(
                    op, call, seed=seed + zlib.crc32(repr(key).encode()), jvp=jvp, gauge=record(target).gauge
                )
                _declare_known(outcome, call, known_difference(target, judged))
        except FAILURES as e:  # a failure of this harness, not of jaxderiv's: counted apart
            result.skipped[f"harness error: {type(e).__name__}: {str(e)[:80]}"] += 1
            continue
        cache[key] = outcome
        result.outcomes[key] = (name, via, opinfo, outcome)
        _tally(result, name, via, opinfo, outcome)


def _tally(result: Replay, name: str, via: str, opinfo: str, outcome: Outcome) -> None:
    """Count one distinct call's outcome into the replay's rows and tables."""
    if outcome.forward == "skip":
        result.not_comparable[outcome.message[:100]] += 1
        return
    result.rows.setdefault(name, OpRow(name, via=via)).add(outcome, opinfo)
    if outcome.jvp == "n/a":
        result.jvp_not_applicable[f"`{name}`: {outcome.jvp_reason[:140]}"] += 1
    for mode in ("forward", "vjp", "jvp"):
        if getattr(outcome, mode) == "declared":
            result.declared[(name, mode, outcome.declared_reason)] += 1


def merge(parts: list[Replay]) -> Replay:
    """One replay of several processes' (each ran some of the OpInfos): counts summed, distinct
    calls counted once (the first process's outcome of each)."""
    out = Replay(rows={}, missing=collections.defaultdict(set), registry=parts[0].registry if parts else "")
    for r in parts:
        out.calls_recorded += r.calls_recorded
        out.calls_replayed += r.calls_replayed
        out.calls_routed += r.calls_routed
        out.calls_constant += r.calls_constant
        out.opinfos += r.opinfos
        out.timed_out |= r.timed_out
        out.sample_errors.update(r.sample_errors)
        for name, infos in r.missing.items():
            out.missing[name] |= set(infos)
        out.skipped.update(r.skipped)
        for key, (name, via, opinfo, outcome) in r.outcomes.items():
            if key not in out.outcomes:
                out.outcomes[key] = (name, via, opinfo, outcome)
                _tally(out, name, via, opinfo, outcome)
        for name, row in r.rows.items():
            out.rows.setdefault(name, OpRow(name, via=row.via)).opinfos.update(row.opinfos)
    out.missing = dict(out.missing)
    return out


# -- CLI ----------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m jaxderiv.check.opinfo",
        description="Replay PyTorch's OpInfo samples through jaxderiv and compare with torch.",
    )
    p.add_argument("--registry", choices=["default", "torch"], default="torch")
    p.add_argument("--ops", help="comma-separated OpInfo names (default: all of op_db)")
    p.add_argument("--limit", type=int, help="at most N OpInfos")
    p.add_argument("--samples", type=int, help="at most N samples per OpInfo and dtype")
    p.add_argument("--dtypes", default="float64,complex128", help="sample dtypes (default float64,complex128)")
    p.add_argument("--time-limit", type=float, help="stop starting new samples after this many seconds")
    p.add_argument("--markdown", help="write a markdown report to FILE")
    p.add_argument("--no-jvp", action="store_true", help="compare forward and vjp only")
    p.add_argument("--jobs", type=int, default=1, help="processes to run the OpInfos in (default 1)")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    r = replay(
        a.registry,
        a.ops.split(",") if a.ops else None,
        limit=a.limit,
        samples=a.samples,
        dtypes=tuple(getattr(torch, d) for d in a.dtypes.split(",")),
        time_limit=a.time_limit,
        progress=not a.no_progress,
        jvp=not a.no_jvp,
        jobs=a.jobs,
    )
    print(r.summary())
    t = r.totals
    bad = lambda x: x.forward_mismatch + x.vjp_mismatch + x.jvp_mismatch + x.crashes  # noqa: E731
    worst = [w for w in sorted(r.rows.values(), key=lambda x: -bad(x))[:10] if bad(w)]
    if worst:
        print("top mismatching / crashing ops:")
        for w in worst:
            print(
                f"  {w.op}: forward {w.forward_mismatch} (max {w.forward_max_error:.3g}), vjp {w.vjp_mismatch} (max {w.vjp_max_error:.3g}),"
                f" jvp {w.jvp_mismatch} (max {w.jvp_max_error:.3g}), crashes {w.crashes}"
            )
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(r.markdown())
        print(f"wrote {a.markdown}")
    return 0 if t["crashes"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
