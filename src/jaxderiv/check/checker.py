"""Verify each op's rules against JAX's own autodiff of its forward and against finite differences.

This is the one place where JAX differentiates forward implementations: as the reference
the YAML-derived rules are judged against, never as a source of rules.

The default run compares along random directions and cotangents (fast); its vjp and jvp
comparisons also run the rule batched over two cotangents or tangents (transforms.py,
gradcheck's check_batched_grad) and with one output's cotangent or one input's tangent
undefined (undefined.py, check_undefined_grad), from the same program. Slower checks are
opt-in: full Jacobians element by element (`per_element`, elements.py; also re-run by itself
on a failed sample when small), the undefined parts against JAX autodiff and finite
differences too (`thorough`), and the comparisons without jit and batched over stacked inputs
(`transforms`). Every vjp check also asks for the derivatives the spec does not give and
expects them refused (refusals.py). This module draws the samples and directions, runs the
comparisons and turns their outcome into report rows.
"""

from __future__ import annotations

import copy
import os
import shlex
import time
import warnings
from typing import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import JaxderivError, NotImplementedDerivative
from ..forward import implementation
from ..op import Op
from ..registry import Registry, seed_registry
from ..translate import names_called
from ..spec import Spec, load_spec, shipped_spec_files
from .compare import (
    AUTODIFF,
    Accumulator,
    Compiled,
    central_differences,
    inexact_cotangents,
    input_label,
    check_jit,
    Mismatch,
    moved_cotangents,
    real_pairing,
    random_like,
    stack_pair,
)
from .elements import jacobian_by_element, rerun_by_element
from . import precision
from .refusals import check_refusals, refused_inputs, states_not_implemented
from .pool import check_in_workers, compilation_cache as _compilation_cache, fewer_collections
from .tasks import CheckOptions, Task
from .report import Report, Row
from .opdb import families_where, record, traits
from ..records import Sample, values_with
from .samples import samples_for
from . import undefined
from .transforms import TRANSFORMS, batched_values, compare_batched, compare_stacked_inputs, unjitted

__all__ = [
    "MODES",
    "SECOND_ORDER_MODES",
    "THIRD_ORDER_MODES",
    "COTANGENT_MODES",
    "PRECISION_MODES",
    "TRANSFORMS",
    "check",
    "check_all",
    "plan",
    "Tolerance",
]

# Second order, three ways: reverse-over-reverse (vjp_vjp), forward-over-reverse (jvp_vjp, the
# jvp of the backward formula: how jax.hessian differentiates) and reverse-over-forward
# (vjp_jvp, the gradient of the jvp: the only mode that differentiates a `result:` formula
# itself). Declarations made for vjp_vjp (known failures, modes not applicable, real-only) hold
# for all three: each differentiates a derivative formula, and where the spec gives no
# `result:` formula the jvp is the backward formula's.
SECOND_ORDER_MODES = ("vjp_vjp", "jvp_vjp", "vjp_jvp")
# The vjp and jvp in float32 and bfloat16 against the float64 rule (precision.py): elementwise
# and reduction entries. Declarations made for vjp hold for them.
PRECISION_MODES = tuple(precision.LOW_PRECISION)
# The third-order gradient, where the spec defines it, i.e. where a backward formula
# calls another entry's op (softmax's `_softmax_backward_data`, the losses' and poolings'
# `*_backward`): differentiating the second derivative then runs that entry's own backward
# formulas and their helpers' code (`softmax_double_backward`) once more. Elsewhere the third
# derivative would differentiate only the backward formula's JAX code again, as vjp_vjp does.
THIRD_ORDER_MODES = ("vjp_vjp_vjp",)
# The modes that differentiate a backward formula with respect to its cotangent `grad` as well as
# the inputs (gradgradcheck differentiates with respect to `grad_outputs` too): a formula that
# reads `grad` through `.detach()` or a helper that drops its derivative in `grad_output` is
# wrong only there. Their second direction `cs` moves the cotangents in finite differences.
COTANGENT_MODES = ("vjp_vjp", "vjp_vjp_vjp")
# Every mode, each checked by default.
MODES = ("vjp", "jvp", *SECOND_ORDER_MODES, *THIRD_ORDER_MODES, *PRECISION_MODES)

# What JAX raises where a function cannot be traced or transformed (its tracer errors, TypeErrors:
# ConcretizationTypeError, TracerArrayConversionError, ...; NonConcreteBooleanIndexError, an
# IndexError), where it has no derivative (a missing differentiation rule: NotImplementedError;
# a loop reverse mode cannot differentiate: ValueError; a derivative the spec refuses:
# NotImplementedDerivative), or where its one program does not compile (XLA: a RuntimeError).
# A sample is then evaluated otherwise (value by value, without a reference), where a genuine
# failure raises again.
_UNTRACEABLE: tuple[type[Exception], ...] = (
    JaxderivError,
    TypeError,
    ValueError,
    IndexError,
    NotImplementedError,
    RuntimeError,
)
# What an op's check may raise from the op's forward, its translated formulas, its samples or
# JAX's transformations of them: reported on the row of the mode it happened in, as an error.
# Anything else (MemoryError, an OSError of the compilation cache, KeyboardInterrupt) stops the
# check.
_OP_FAILURES: tuple[type[Exception], ...] = (
    *_UNTRACEABLE,
    ArithmeticError,
    AssertionError,
    AttributeError,
    LookupError,
)


class Tolerance:
    """How close the rule must be to each reference (float64)."""

    # Against JAX's autodiff of the forward: the same mathematics, other rounding, which agrees to
    # about 1e-12 relative. Tight enough that one float32 step inside a float64 formula (a
    # dtype-losing cast, about 6e-8 relative) fails; a formula that computes part of a float64
    # derivative in float32 as torch does is declared with its measured error
    # (opdb.reference_tolerance).
    ref_rtol = 1e-9
    ref_atol = 1e-11
    fd_step = 1e-6  # central differences
    fd_rtol = 1e-5
    fd_atol = 1e-6
    # Per-element Jacobians: at most this many real input coordinates (a complex entry counts
    # twice) and Jacobian entries. The automatic re-run of a failed sample has the small caps.
    element_inputs, element_entries = 4096, 4_000_000
    rerun_inputs, rerun_entries = 256, 100_000


def _declared(mode: str) -> str:
    """The mode whose declarations (samples.py, the families) hold for `mode`."""
    return {
        "jvp_vjp": "vjp_vjp",
        "vjp_jvp": "vjp_vjp",
        "vjp_vjp_vjp": "vjp_vjp",
        **{m: "vjp" for m in PRECISION_MODES},
    }.get(mode, mode)


def _real_only(op_name: str, mode: str) -> str | None:
    """Why `mode` leaves complex samples out, if declared: a precision mode runs the vjp and
    the jvp, so either's real-only declaration holds for it."""
    r = record(op_name)
    modes = ("vjp", "jvp") if mode in PRECISION_MODES else (_declared(mode),)
    return next((reason for m in modes if (reason := r.real_only_in(m))), None)


def _inexact(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)


class _Problem:
    """One sample as functions of its differentiable arrays: through the rules and natively."""

    directions: dict  # the sample's random draws (`_directions`), set once drawn

    def __init__(self, op: Op, sample: Sample, held: frozenset[str] = frozenset()):
        """held: inputs kept fixed, though differentiable (a derivative the spec refuses)."""
        self.op = op
        self.sample = sample
        self._shared: dict = {}
        bound = op.bind(tuple(sample.args), dict(sample.kwargs))
        self.names = list(bound)
        self.values = [_to_jax(v) for v in bound.values()]
        self.paths: list[tuple[int, int | None]] = []  # (position, index in list or None) of each differentiable array
        for i, (a, v) in enumerate(zip(op.schema.arguments, self.values)):
            if a.name not in op.differentiable_inputs or a.name in held:
                continue
            if a.is_tensor and v is not None and _inexact(v):
                self.paths.append((i, None))
            elif a.is_tensor_list:
                self.paths.extend((i, j) for j, e in enumerate(v) if e is not None and _inexact(e))
        self.xs = [self._get(p) for p in self.paths]
        self.out_mask = op.output_differentiable(
            *[v for a, v in zip(op.schema.arguments, self.values) if not a.kwarg_only],
            **{a.name: v for a, v in zip(op.schema.arguments, self.values) if a.kwarg_only},
        )

    def input_name(self, k: int) -> str:
        """The schema argument differentiable input k is, e.g. `self` or `tensors[1]`."""
        i, j = self.paths[k]
        return self.names[i] if j is None else f"{self.names[i]}[{j}]"

    def _get(self, path):
        i, j = path
        return self.values[i] if j is None else self.values[i][j]

    def _with(self, xs):
        return values_with(self.values, self.paths, xs)

    def _outputs(self, out):
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        outs = [y for y, m in zip(outs, self.out_mask) if m]
        return list(self.sample.outputs(outs)) if self.sample.outputs else outs

    def project(self, vs):
        """Input directions (or gradients) restricted to those the sample admits."""
        return list(self.sample.tangents(list(vs))) if self.sample.tangents else list(vs)

    def rule_fn(self, *xs):
        values = self._with(xs)
        args = [v for a, v in zip(self.op.schema.arguments, values) if not a.kwarg_only]
        kwargs = {a.name: v for a, v in zip(self.op.schema.arguments, values) if a.kwarg_only}
        return self._outputs(self.op(*args, **kwargs))

    def native_fn(self, *xs):
        return self._outputs((self.sample.reference or self.op.impl)(*self._with(xs)))

    @property
    def outputs(self) -> list:
        """`outputs_of(self)`, found once and shared by the copies the modes take."""
        if "outputs" not in self._shared:
            self._shared["outputs"] = outputs_of(self)
        return self._shared["outputs"]

    @property
    def fd_fn(self):
        """What finite differences differentiate: the forward through the rules, or the sample's reference."""
        return self.native_fn if self.sample.reference is not None else self.rule_fn


def outputs_of(p) -> list:
    """The differentiable outputs of a problem's rule: their shapes and dtypes, or their values
    where the shapes depend on them."""
    try:
        return jax.eval_shape(p.rule_fn, *p.xs)
    except _UNTRACEABLE:  # value-dependent output shapes: evaluated, as the check will (raising again if wrong)
        return Compiled(p.rule_fn)(*p.xs)


def _to_jax(v):
    if isinstance(v, np.ndarray):
        return jax.device_put(v)  # jnp.asarray would compile a copy program per shape
    if isinstance(v, list):
        return [_to_jax(e) for e in v]
    return v


# -- one sample: random directions, the values compared, the comparisons ------------------------------


def _directions(mode: str, p, rng) -> dict:
    """The random input directions `vs`, cotangents `cts` and second-order weights `ws` of a sample,
    drawn in a fixed order: skipping a sample replays its draws and leaves the next ones unchanged."""
    vs = p.project([random_like(rng, x) for x in p.xs])
    if mode == "jvp":
        return {"vs": vs, "cts": None, "ws": None}
    ys = p.outputs
    cts = [random_like(rng, y) for y in ys]
    if mode in PRECISION_MODES and not precision.applicable(mode, p, ys):
        return {"vs": vs, "cts": None, "ws": None, "skip": True}
    ws = p.project([random_like(rng, x) for x in p.xs]) if mode in ("vjp_vjp", "vjp_jvp", "vjp_vjp_vjp") else None
    if mode == "vjp_vjp_vjp":  # the third direction, paired with the second-order gradient
        ws = (ws, p.project([random_like(rng, x) for x in p.xs]))
    cs = [random_like(rng, y) for y in ys] if mode in COTANGENT_MODES else None
    return {"vs": vs, "cts": cts, "ws": ws, "cs": cs}


def entries_called(op: Op) -> set[str]:
    """The ops with an entry of their own that a backward formula of `op` calls, as the formulas
    name them (without `at::`): the calls the registry runs as those entries' ops."""
    if op.calls is None:
        return set()
    called = set().union(*(names_called(d.tree) for d in op.derivatives.backward if d.tree is not None))
    names = (n.removeprefix("at::") for n in called if not n.startswith("."))
    return {n for n in names if op.calls(n) is not None}


def _third_order_not_applicable(mode: str, op: Op) -> str | None:
    if mode not in THIRD_ORDER_MODES or entries_called(op):
        return None
    return (
        "the spec defines no third derivative here: no backward formula calls another entry's op, so it "
        "would differentiate the backward formula's own code again (vjp_vjp differentiates it)"
    )


def check_sample(
    mode: str,
    p,
    rng,
    acc: Accumulator,
    tol=Tolerance,
    *,
    thorough: bool = False,
    transforms: Sequence[str] = ("jit",),
    rng2=None,
    values: dict | None = None,
):
    """Compare one sample's rule with the references in `mode`; raise _Mismatch on the first disagreement.

    thorough: the derivatives with an output's cotangent or an input's tangent undefined also
    against JAX autodiff and finite differences (by default: against the rule's own, zero-filled).
    transforms: "nojit" and "vmap" add those variants of the vjp/jvp comparison; `rng2` draws
    their extra cotangents, tangents and inputs (the main stream `rng` is left as without them).
    rng: None where `p.directions` are drawn already; values: what `_evaluate_together` returns
    for them, where computed with the op's other samples in one program.
    """
    if rng is not None:
        p.directions = _directions(mode, p, rng)  # kept for a per-element re-run of this sample
    if mode in PRECISION_MODES:
        precision.compare(mode, p, values if values is not None else _evaluate(mode, p, p.directions, tol, False), acc)
        return
    if values is None:
        values = _evaluate(mode, p, p.directions, tol, thorough)
    v = values
    _compare(mode, p, v, acc, tol)
    if mode not in ("vjp", "jvp"):
        return
    compare_batched(mode, p, v, acc, tol)
    undefined.compare(mode, p, v, acc, tol, thorough)
    if "nojit" in transforms:
        _compare(mode, p, dict(v, ours=unjitted(mode, p, v)), acc, tol, variant=" without jax.jit")
    if "vmap" in transforms:
        compare_stacked_inputs(mode, p, v, acc, tol, rng2 if rng2 is not None else np.random.default_rng(1))


def _evaluate(mode: str, p, d: dict, tol, thorough: bool) -> dict:
    """Everything one sample's check compares: from one jitted program, or function by function."""
    try:
        v = _evaluate_together(mode, p, d, tol, thorough)
        v["jitted"] = True
    except _UNTRACEABLE:  # evaluated function by function below, which raises what it raises
        v = _evaluate_apart(mode, p, d, tol, thorough)
        v["jitted"] = False
    return v


def _compare(mode: str, p, v: dict, acc: Accumulator, tol, variant: str = ""):
    """The default comparisons: the rule's derivative against JAX autodiff and finite differences."""
    fd_name = f"central finite differences, step {tol.fd_step:g}"
    _compare_dtypes(mode, p, v, variant)
    if mode == "jvp":
        if v["ref"] is not None:
            for k, (o, r) in enumerate(zip(v["ours"], v["ref"])):
                acc.compare(f"jvp{variant}", f"output {k}", AUTODIFF, o, r, tol.ref_rtol, tol.ref_atol)
        fd = central_differences(v["plus"], v["minus"], tol.fd_step)
        for k, (o, f) in enumerate(zip(v["ours"], fd)):
            acc.compare(f"jvp{variant}", f"output {k}", fd_name, o, f, tol.fd_rtol, tol.fd_atol)
        return
    ours, ref = p.project(v["ours"]), None if v["ref"] is None else p.project(v["ref"])
    if mode == "vjp":
        if ref is not None:
            for k, (o, r) in enumerate(zip(ours, ref)):
                acc.compare(f"vjp{variant}", input_label(p, k), AUTODIFF, o, r, tol.ref_rtol, tol.ref_atol)
        lhs = real_pairing(ours, v["vs"])
        rhs = real_pairing(v["cts"], central_differences(v["plus"], v["minus"], tol.fd_step))
        acc.compare(
            f"vjp{variant}",
            "<vjp(ct), v> summed over every input",
            "<ct, finite-difference jvp(v)>, " + fd_name,
            np.array(lhs),
            np.array(rhs),
            tol.fd_rtol,
            tol.fd_atol * max(1.0, abs(rhs)),
        )
        return
    if mode == "jvp_vjp":
        check = "jvp_vjp (forward-mode derivative of the vjp)"
        if ref is not None:
            for k, (o, r) in enumerate(zip(ours, ref)):
                acc.compare(check, input_label(p, k), AUTODIFF, o, r, tol.ref_rtol * 10, tol.ref_atol * 10)
        fd = p.project(central_differences(v["plus"], v["minus"], tol.fd_step * 10))
        for k, (o, f) in enumerate(zip(ours, fd)):
            acc.compare(
                check,
                input_label(p, k),
                f"central finite differences of vjp(ct), step {tol.fd_step * 10:g}",
                o,
                f,
                tol.fd_rtol * 10,
                tol.fd_atol * 10,
            )
        return
    check, scalar = {
        "vjp_vjp": ("vjp_vjp (second-order gradient)", "<vjp(ct), w>"),
        "vjp_jvp": ("vjp_jvp (gradient of the jvp)", "<ct, jvp(w)>"),
        "vjp_vjp_vjp": ("vjp_vjp_vjp (third-order gradient)", "<grad <vjp(ct), w>, u>"),
    }[mode]
    if ref is not None:
        for k, (o, r) in enumerate(zip(ours, ref)):
            acc.compare(check, input_label(p, k), AUTODIFF, o, r, tol.ref_rtol * 10, tol.ref_atol * 10)
    ours_ct, ct_outputs = v.get("ours_ct", []), v.get("ct_outputs", [])
    if v.get("ref_ct") is not None:
        for k, o, r in zip(ct_outputs, ours_ct, v["ref_ct"]):
            acc.compare(check, f"cotangent of output {k}", AUTODIFF, o, r, tol.ref_rtol * 10, tol.ref_atol * 10)
    fd = (np.asarray(v["plus"]) - np.asarray(v["minus"])) / (2 * tol.fd_step * 10)
    lhs = real_pairing(ours, v["vs"]) + real_pairing(ours_ct, v.get("cs", []))
    acc.compare(
        check,
        "<second-order gradient, v> summed over every input" + (" and cotangent" if ct_outputs else ""),
        f"central finite differences of {scalar}, step {tol.fd_step * 10:g}",
        np.array(lhs),
        np.asarray(fd),
        tol.fd_rtol * 10,
        tol.fd_atol * max(1.0, abs(float(fd))),
    )


def _compare_dtypes(mode: str, p, v: dict, variant: str = ""):
    """A derivative has its primal's dtype (gradcheck's check_grad_dtypes): a gradient its input's,
    a tangent its output's. A formula that drops the imaginary part or computes in another
    precision is wrong even where its values happen to agree."""
    if mode == "jvp":  # `plus` holds the outputs themselves (at a shifted input)
        pairs = [(f"output {k}", o, y) for k, (o, y) in enumerate(zip(v["ours"], v["plus"]))]
    else:
        pairs = [(input_label(p, k), o, x) for k, (o, x) in enumerate(zip(v["ours"], p.xs))]
    for side, ours, primal in pairs:
        got, want = np.asarray(ours).dtype, np.asarray(primal).dtype
        if got != want:
            raise Mismatch(
                f"{mode}{variant}, {side}: the spec's rule gives a {got} derivative of a {want} value "
                "(a derivative has its primal's dtype)",
                float("nan"),
                float("nan"),
            )


def _backward(fn, cts):
    """vjp(fn)(cts) as a function of the inputs: its jvp differentiates the backward formula forward."""
    return lambda *xs: list(jax.vjp(fn, *xs)[1](cts))


def _second_order(fn, cts, ws):
    """<vjp(fn)(ct), w> as a function of the inputs: its gradient differentiates the backward formula."""
    return lambda *xs: sum(jnp.real(jnp.sum(g * w)) for g, w in zip(jax.vjp(fn, *xs)[1](cts), ws))


def _forward_second_order(fn, cts, ws):
    """<ct, jvp(fn)(w)> as a function of the inputs: its gradient differentiates the forward formula."""
    return lambda *xs: sum(jnp.real(jnp.sum(c * t)) for c, t in zip(cts, jax.jvp(fn, tuple(xs), tuple(ws))[1]))


def _third_order(fn, cts, wus):
    """<grad <vjp(fn)(ct), w>, u> as a function of the inputs: its gradient differentiates the
    second derivative, i.e. the formulas of the entries a backward formula calls."""
    ws, us = wus

    def scalar(*xs):
        gs = jax.grad(_second_order(fn, cts, ws), argnums=tuple(range(len(xs))))(*xs)
        return sum(jnp.real(jnp.sum(g * u)) for g, u in zip(gs, us))

    return scalar


def _scalar_of(mode: str):
    """The scalar function whose gradient a second- or third-order mode (vjp_vjp, vjp_jvp,
    vjp_vjp_vjp) takes."""
    return {"vjp_jvp": _forward_second_order, "vjp_vjp_vjp": _third_order}.get(mode, _second_order)


def _shifted(xs, vs, h):
    return [x + h * v for x, v in zip(xs, vs)], [x - h * v for x, v in zip(xs, vs)]


def _rule_values(mode: str, p, xs, ds, linearize: bool = True) -> dict:
    """The rule's side of a vjp (ds: cotangents) or jvp (ds: tangents) comparison: the derivative
    itself ("ours"), and from the same pullback or linearized jvp, its batched and undefined
    variants (batched_values, undefined.values). linearize=False: the jvp traced afresh for
    each, where a forward's value-dependent shapes keep jax.linearize's map from being batched."""
    if mode == "jvp":
        if linearize:
            _, linear = jax.linearize(p.rule_fn, *xs)
        else:
            linear = lambda *ts: jax.jvp(p.rule_fn, tuple(xs), ts)[1]  # noqa: E731
        ours = linear(*ds)
    else:
        _, linear = jax.vjp(p.rule_fn, *xs)
        ours = linear(list(ds))
    return {"ours": ours, **batched_values(mode, linear, ds), **undefined.values(mode, p.rule_fn, xs, ds, linear)}


def _reference(mode: str, fn, xs, ds):
    """JAX autodiff of the forward `fn` along the same tangents or cotangents."""
    return jax.jvp(fn, tuple(xs), tuple(ds))[1] if mode == "jvp" else jax.vjp(fn, *xs)[1](list(ds))


def _at_both(fn, plus: list, minus: list) -> tuple:
    """fn at x + h v and at x - h v as one evaluation under jax.vmap: one trace of fn, not two
    (finite differences' two points; the program falls back to evaluating apart where fn's
    shapes depend on its values)."""
    out = jax.vmap(fn)(*stack_pair(plus, minus))
    return jax.tree.map(lambda o: o[0], out), jax.tree.map(lambda o: o[1], out)


def _program(mode: str, p, d: dict, tol, thorough: bool = False) -> tuple[Callable, tuple, Callable[[object], dict]]:
    """One sample's comparisons in `mode` as a traceable function, its arguments, and how its
    result becomes the values `_compare` reads."""
    if mode in PRECISION_MODES:
        return precision.program(mode, p, d)
    xs, vs, cts, ws = p.xs, d["vs"], d["cts"], d["ws"]
    step = tol.fd_step if mode in ("vjp", "jvp") else tol.fd_step * 10
    if mode in ("vjp", "jvp"):
        ds = vs if mode == "jvp" else cts

        def first_order_program(xs, vs, ds):
            plus, minus = _shifted(xs, vs, step)
            out = {**_rule_values(mode, p, xs, ds), "ref": _reference(mode, p.native_fn, xs, ds)}
            out["plus"], out["minus"] = _at_both(p.fd_fn, plus, minus)
            if thorough and "p_ours" in out:
                out["p_ref"] = undefined.partials(mode, p.native_fn, xs, ds)
                if mode == "jvp":
                    out["p_plus"], out["p_minus"] = undefined.shifts(p.fd_fn, xs, vs, step)
            return out

        return first_order_program, (list(xs), list(vs), list(ds)), lambda out: dict(out, vs=vs, cts=cts)
    if mode == "jvp_vjp":

        def jvp_vjp_program(xs, vs, cts):
            plus, minus = _shifted(xs, vs, step)
            ours, ref = (jax.jvp(_backward(fn, cts), tuple(xs), tuple(vs))[1] for fn in (p.rule_fn, p.native_fn))
            plus, minus = _at_both(_backward(p.rule_fn, cts), plus, minus)
            return {"ours": ours, "ref": ref, "plus": plus, "minus": minus}

        return jvp_vjp_program, (list(xs), list(vs), list(cts)), lambda out: dict(out, vs=vs, cts=cts)
    n, where = len(xs), _cotangents_differentiated(mode, cts)

    def program(xs, vs, cts, ws, cs):
        args = [*xs, *(cts[k] for k in where)]
        plus, minus = _shifted(args, [*vs, *cs], step)
        argnums = tuple(range(len(args)))
        ours, ref = (
            jax.grad(_scalar_in_cotangents(mode, fn, cts, ws, n, where), argnums=argnums)(*args)
            for fn in (p.rule_fn, p.native_fn)
        )
        return ours, ref, *_at_both(_scalar_in_cotangents(mode, p.rule_fn, cts, ws, n, where), plus, minus)

    def values(out):
        ours, ref, plus, minus = out
        return {"vs": vs, "plus": plus, "minus": minus, **_split_cotangents(ours, ref, d, n, where)}

    return program, (list(xs), list(vs), list(cts), list(ws), [d["cs"][k] for k in where]), values


def _cotangents_differentiated(mode: str, cts) -> list[int]:
    """The outputs whose cotangents `mode` differentiates with respect to (COTANGENT_MODES)."""
    return inexact_cotangents(cts) if mode in COTANGENT_MODES else []


def _scalar_in_cotangents(mode: str, fn, cts, ws, n: int, where: Sequence[int]):
    """The mode's scalar (`_scalar_of`) as a function of the n inputs, then of the cotangents of
    the outputs `where`; the other cotangents stay constant."""

    def scalar(*args):
        return _scalar_of(mode)(fn, moved_cotangents(cts, where, args[n:]), ws)(*args[:n])

    return scalar


def _split_cotangents(ours, ref, d: dict, n: int, where: Sequence[int]) -> dict:
    """A gradient in (inputs, cotangents) as the values `_compare` reads: "ours"/"ref" in the
    inputs, "ours_ct"/"ref_ct" in the cotangents of the outputs `ct_outputs`, moved along "cs"."""
    return {
        "ours": list(ours[:n]),
        "ref": None if ref is None else list(ref[:n]),
        "ours_ct": list(ours[n:]),
        "ref_ct": None if ref is None else list(ref[n:]),
        "cs": [d["cs"][k] for k in where],
        "ct_outputs": list(where),
    }


def _evaluate_together(mode: str, p, d: dict, tol, thorough: bool = False) -> dict:
    """Everything a sample's check compares, from one jitted program: one XLA compile."""
    program, args, values = _program(mode, p, d, tol, thorough)
    return values(check_jit(program)(*args))


def _evaluate_all(work: Sequence[tuple], tol, thorough: bool) -> dict:
    """`_evaluate_together` of many (mode, problem) pairs as ONE jitted program: an XLA compile
    costs about 30 ms whatever its size, and an op's samples and modes need a dozen of them.
    Returns {(mode, index): values}; empty where any part defeats one program (value-dependent
    shapes, a reference JAX cannot differentiate, a missing derivative), which is then
    evaluated sample by sample as before."""
    if len(work) < 2:
        return {}
    try:
        built = [_program(mode, p, p.directions, tol, thorough) for mode, _, p in work]
        outs = check_jit(lambda args: [fn(*a) for (fn, _, _), a in zip(built, args)])([a for _, a, _ in built])
    except _OP_FAILURES:  # each sample is evaluated by itself, which raises what it raises on its row
        return {}
    return {
        (mode, index): dict(values(out), jitted=True)
        for (mode, index, _), (_, _, values), out in zip(work, built, outs)
    }


def _or_none(fn: Callable, *args):
    """fn(*args), or None for a reference JAX cannot differentiate: finite differences only."""
    try:
        return Compiled(fn)(*args)
    except _UNTRACEABLE:  # JAX cannot differentiate the reference (or trace it): finite differences only
        return None


def _evaluate_apart(mode: str, p, d: dict, tol, thorough: bool = False) -> dict:
    """The same values function by function, for a sample whose reference or shapes defeat one program."""
    if mode in PRECISION_MODES:
        return precision.evaluate_apart(mode, p, d, Compiled, _or_none)
    xs, vs, cts, ws = p.xs, d["vs"], d["cts"], d["ws"]
    if mode in ("vjp", "jvp"):
        ds = vs if mode == "jvp" else cts
        rule = Compiled(lambda xs, ds: _rule_values(mode, p, xs, ds, linearize=False))(list(xs), list(ds))
        out = dict(rule, vs=vs, cts=cts)
        out["ref"] = _or_none(lambda xs, ds: _reference(mode, p.native_fn, xs, ds), list(xs), list(ds))
        fd_fn = Compiled(p.fd_fn)
        plus, minus = _shifted(xs, vs, tol.fd_step)
        out["plus"], out["minus"] = fd_fn(*plus), fd_fn(*minus)
        if thorough and "p_ours" in out:
            out["p_ref"] = _or_none(lambda xs, ds: undefined.partials(mode, p.native_fn, xs, ds), list(xs), list(ds))
            if mode == "jvp":
                out["p_plus"], out["p_minus"] = undefined.shifts(fd_fn, xs, vs, tol.fd_step)
        return out
    if mode == "jvp_vjp":
        ours = Compiled(lambda xs, vs: jax.jvp(_backward(p.rule_fn, cts), xs, vs)[1])(tuple(xs), tuple(vs))
        ref = _or_none(lambda xs, vs: jax.jvp(_backward(p.native_fn, cts), xs, vs)[1], tuple(xs), tuple(vs))
        bwd = Compiled(_backward(p.rule_fn, cts))
        plus, minus = _shifted(xs, vs, tol.fd_step * 10)
        return {"vs": vs, "cts": cts, "ours": ours, "ref": ref, "plus": bwd(*plus), "minus": bwd(*minus)}
    n, where = len(xs), _cotangents_differentiated(mode, cts)
    args = [*xs, *(cts[k] for k in where)]
    argnums = tuple(range(len(args)))
    ours = Compiled(jax.grad(_scalar_in_cotangents(mode, p.rule_fn, cts, ws, n, where), argnums=argnums))(*args)
    ref = _or_none(jax.grad(_scalar_in_cotangents(mode, p.native_fn, cts, ws, n, where), argnums=argnums), *args)
    hv = Compiled(_scalar_in_cotangents(mode, p.rule_fn, cts, ws, n, where))
    plus, minus = _shifted(args, [*vs, *(d["cs"][k] for k in where)], tol.fd_step * 10)
    return {"vs": vs, "plus": hv(*plus), "minus": hv(*minus), **_split_cotangents(ours, ref, d, n, where)}


def _precision_not_applicable(mode: str, op: Op) -> str | None:
    if mode not in PRECISION_MODES:
        return None
    family = op.impl.__module__.rsplit(".", 1)[-1] if op.impl is not None else ""
    if not traits(family).low_precision:
        covered = ", ".join(families_where("low_precision"))
        return f"{mode} runs cover the elementwise and reduction entries ({covered}), not {family or 'this family'}"
    return None


def _sample_text(index: int, count: int, sample: Sample, complex_: bool) -> str:
    return f"sample {index} of {count} ({sample.label or '#'}, {'complex128' if complex_ else 'float64'})"


# -- one op, every mode -----------------------------------------------------------------------------


def _check_op(
    op: Op,
    modes: Sequence[str],
    seed: int,
    complex_: bool = True,
    *,
    sample: int | None = None,
    per_element: bool = False,
    thorough: bool = False,
    transforms: Sequence[str] = ("jit",),
    repro: Callable[[str, int | None], str] | None = None,
    tol=Tolerance,
) -> list[Row]:
    rows = []
    formulas = op.formulas
    label = {
        "vjp": formulas["vjp"],
        "jvp": formulas["jvp"],
        "vjp_vjp": "derivative of " + formulas["vjp"],
        "jvp_vjp": "forward-mode derivative of " + formulas["vjp"],
        "vjp_jvp": "derivative of " + formulas["jvp"],
        "vjp_vjp_vjp": "second derivative of " + formulas["vjp"],
        **{m: f"{formulas['vjp']} and {formulas['jvp']}, in {m}" for m in PRECISION_MODES},
    }
    if op.impl is None:
        return [Row(op.name, m, "no_forward", reason="no forward implementation yet", formula=label[m]) for m in modes]
    if not op.differentiable_inputs or _all_not_implemented(op):
        if not op.differentiable_inputs:
            why = "no differentiable input: the spec gives no formula for any Tensor input"
        else:
            why = (
                "the spec states no derivative ("
                + "; ".join(f"{f.key}: {f.text}" for f in op.entry.backward + op.entry.forward)
                + ")"
            )
        rows = [Row(op.name, m, "not_applicable", reason=why[:300], formula=label[m]) for m in modes]
        return [_refusals(op, seed, None, r) if r.mode == "vjp" else r for r in rows]
    # First every mode's samples, problems and random directions, drawn as a mode-by-mode run
    # draws them; then all of them evaluated in one program; then each mode's comparisons.
    prepared, seconds = {}, {}
    why_not = {
        mode: record(op.name).not_applicable_in(mode, op)
        or record(op.name).not_applicable_in(_declared(mode), op)
        or _precision_not_applicable(mode, op)
        or _third_order_not_applicable(mode, op)
        for mode in modes
    }
    tol, looser = _tolerance(op, tol)
    memo: dict = {}
    for mode in modes:
        start = time.perf_counter()
        if why_not[mode] is None:
            prepared[mode] = _Prepared(op, mode, seed, complex_, sample, memo)
        seconds[mode] = time.perf_counter() - start
    start = time.perf_counter()
    work = [(mode, index, p) for mode, prep in prepared.items() for index, p in prep.items]
    values = _evaluate_all(work, tol, thorough) if record(op.name).compiled_apart is None else {}
    for mode in prepared:  # the shared program's time, split between the modes it served
        seconds[mode] += (time.perf_counter() - start) / len(prepared)
    for mode in modes:
        start = time.perf_counter()
        acc = Accumulator()
        if (skip_reason := why_not[mode]) is not None:
            rows.append(Row(op.name, mode, "not_applicable", reason=skip_reason, formula=label[mode]))
            continue
        row = Row(op.name, mode, "passed", formula=label[mode])
        prep = prepared[mode]
        index, problem, too_large, cases = None, None, [], prep.cases
        try:
            row.reason = prep.reason
            checked = 0
            for index, problem in prep.items:
                check_sample(
                    mode,
                    problem,
                    None,
                    acc,
                    tol,
                    thorough=thorough,
                    transforms=transforms,
                    rng2=np.random.default_rng([seed, index]),
                    values=values.get((mode, index)),
                )
                if (
                    per_element
                    and mode not in PRECISION_MODES
                    and jacobian_by_element(mode, problem, tol, tol.element_inputs, tol.element_entries)
                ):
                    too_large.append(index)
                checked += 1
                row.complex_samples += cases[index][1]
            if prep.error is not None:
                index, problem = prep.error_index, prep.error_problem
                raise prep.error
            if checked == 0 and mode in PRECISION_MODES:
                row.status, row.reason = (
                    "not_applicable",
                    f"no sample's inputs and outputs have a {mode} counterpart ({mode} has no complex dtype)",
                )
                index = None
            elif checked == 0:
                row.status, row.reason = "not_applicable", "no sample has a differentiable input and output"
                index = None
            elif too_large:
                row.reason = f"per-element comparison skipped for sample(s) {too_large}: over the size caps of Tolerance.element_inputs/element_entries"
        except Mismatch as m:
            assert index is not None  # a mismatch is raised only by comparing a sample
            s, is_complex = cases[index]
            row.status, row.reason = (
                "failed",
                f"{op.name} [{mode}] {_sample_text(index, len(cases), s, is_complex)}: {m}",
            )
            if "per-element Jacobian" not in str(m) and mode not in PRECISION_MODES + THIRD_ORDER_MODES:
                row.reason += rerun_by_element(mode, problem, tol, per_element)
        except NotImplementedDerivative as e:
            row.status, row.reason = "not_applicable", str(e)
        except JaxderivError as e:
            row.status, row.reason = "error", f"{type(e).__name__}: {e}"
        except _OP_FAILURES as e:  # a crash of the op's code or of JAX on it is the row's error
            row.status, row.reason = "error", f"{type(e).__name__}: {e}"
        if looser and row.status == "passed" and not row.reason and mode not in PRECISION_MODES:
            row.reason = looser
        if mode == "vjp" and row.status == "passed":
            row = _refusals(op, seed, cases, row)
        if row.status in ("passed", "failed"):
            row.max_abs_err, row.max_rel_err = acc.abs_err, acc.rel_err
        if row.status in ("failed", "error") and repro is not None:
            row.repro = repro(mode, index)
        # the gradient of a wrong jvp is wrong too: vjp_jvp inherits jvp's declared failures
        known = (
            record(op.name).known_failure(mode)
            or record(op.name).known_failure(_declared(mode))
            or (record(op.name).known_failure("jvp") if mode == "vjp_jvp" else None)
        )
        if known is not None and row.status in ("failed", "error"):
            row.status, row.reason = "known_failure", f"known failure: {known} [{row.reason}]"
        row.seconds = seconds[mode] + time.perf_counter() - start
        rows.append(row)
    return rows


def _tolerance(op: Op, tol) -> tuple[type, str]:
    """`tol` with the looser float64 tolerance against JAX autodiff that the op's record declares,
    and the note a passed row carries about it ("" where none holds)."""
    declared = record(op.name).reference_tolerance
    if declared is None or not declared.holds_for(op):
        return tol, ""
    looser = type(tol.__name__, (tol,), {"ref_rtol": declared.rtol, "ref_atol": declared.atol})
    return looser, f"compared with {AUTODIFF} at rtol {declared.rtol:g}, atol {declared.atol:g}: {declared.reason}"


class _Prepared:
    """One mode's samples of an op, as (index, problem) pairs with their random directions drawn.

    Draws from a generator seeded with `seed` in a fixed order (the samples, then each sample's
    directions in turn), so every mode's draws are those of a run of that mode alone. A failure
    while preparing is kept with the sample it happened at, and raised when the mode's rows are
    made, after the samples before it were compared: the order a sample-by-sample run has.
    """

    def __init__(self, op: Op, mode: str, seed: int, complex_: bool, sample: int | None, memo: dict | None = None):
        """memo: shared by the modes of one op, which draw the same samples: each sample and
        problem is built once, and a mode takes its own copy (its directions are its own)."""
        memo = {} if memo is None else memo
        self.cases, self.items, self.reason = [], [], ""
        self.error, self.error_index, self.error_problem = None, None, None
        rng = np.random.default_rng(seed)
        index = problem = None
        kinds = set()  # precision modes compare one real and one complex sample: the kinds taken
        # Inputs whose backward formula is not_implemented(...) are held fixed, so the given
        # derivatives are checked; the refusal of theirs is checked apart (refusals.py). A
        # `result:` formula still gives their tangents, in the modes that read it.
        held = frozenset(refused_inputs(op)) if not (op.entry.forward and mode in ("jvp", "vjp_jvp")) else frozenset()
        try:
            self.cases = [(s, False) for s in _drawn(memo, "real", rng, lambda: samples_for(op, rng))]
            if (
                complex_
                and record(op.name).complex
                and _real_only(op.name, mode) is None
                and (mode not in PRECISION_MODES or precision.LOW_PRECISION[mode][1])
            ):
                self.cases += [
                    (s, True) for s in _drawn(memo, "complex", rng, lambda: samples_for(op, rng, complex_=True))
                ]
                if op.real_only is not None:  # samples_for left out the complex values it refuses
                    self.reason = (
                        f"not applicable where {', '.join(sorted(op.real_only[1]))} is complex: {op.real_only[0]}"
                    )
            elif complex_ and (real_only := _real_only(op.name, mode)):
                self.reason = f"real inputs only in this mode: {real_only}"
            if sample is not None and not 0 <= sample < len(self.cases):
                raise ValueError(
                    f"sample {sample} out of range: {op.name} has {len(self.cases)} samples, 0 to {len(self.cases) - 1}"
                )
            for index, (s, is_complex) in enumerate(self.cases):
                if sample is not None and index > sample:
                    break
                key = ("problem", index, is_complex, held)
                if key not in memo:
                    memo[key] = _Problem(op, s, held)
                problem = copy.copy(memo[key])
                if not problem.xs or not any(problem.out_mask):
                    continue
                directions = _directions(mode, problem, rng)  # drawn for a skipped sample too: the next ones stay
                if sample is not None and index < sample:
                    continue
                if directions.get("skip"):
                    continue
                if mode in PRECISION_MODES and sample is None:
                    if is_complex in kinds:
                        continue
                    kinds.add(is_complex)
                problem.directions = directions
                self.items.append((index, problem))
        except _OP_FAILURES as e:  # re-raised in order by the mode's row
            self.error, self.error_index, self.error_problem = e, index, problem


def _drawn(memo: dict, kind: str, rng, draw: Callable[[], list]) -> list:
    """draw() once per op and kind; later modes replay it, leaving `rng` where drawing it left it."""
    if kind not in memo:
        memo[kind] = (draw(), copy.deepcopy(rng.bit_generator.state))
    else:
        rng.bit_generator.state = copy.deepcopy(memo[kind][1])
    return memo[kind][0]


def _repro_command(
    spec_file: str | None,
    name: str,
    seed: int,
    thorough: bool,
    transforms: Sequence[str],
    torch_version: str | None = None,
) -> Callable[[str, int | None], str]:
    """The command line that checks exactly one (op, mode, sample) again, element by element."""

    def command(mode: str, index: int | None) -> str:
        parts = ["python", "-m", "jaxderiv", "check"]
        parts += ["--spec", spec_file] if spec_file else []
        parts += (
            ["--torch-version", torch_version] if spec_file and torch_version else []
        )  # a given release is not in the file
        parts += ["--ops", name, "--modes", mode]
        parts += ["--sample", str(index)] if index is not None else []
        parts.append("--per-element")
        parts += ["--seed", str(seed)] if seed else []
        parts += ["--thorough"] if thorough else []
        extra = [t for t in transforms if t != "jit"]
        parts += ["--transforms", ",".join(["jit", *extra])] if extra else []
        return shlex.join(parts)

    return command


def _resolve_registry(spec, registry):
    if registry is not None:
        return registry
    if spec is None:
        return seed_registry()
    if isinstance(spec, Spec):
        return Registry(spec)
    return Registry(load_spec(spec))


def check(
    name: str,
    modes: Sequence[str] = MODES,
    *,
    spec=None,
    registry: Registry | None = None,
    seed: int = 0,
    sample: int | None = None,
    per_element: bool = False,
    thorough: bool = False,
    transforms: Sequence[str] = ("jit",),
) -> Report:
    """Check one op's rules in each mode; see `check_all`."""
    return check_all(
        spec,
        ops=[name],
        modes=modes,
        registry=registry,
        seed=seed,
        sample=sample,
        per_element=per_element,
        thorough=thorough,
        transforms=transforms,
    )


def plan(
    spec=None, ops: Iterable[str] | None = None, registry: Registry | None = None
) -> list[tuple[Registry, str, bool]]:
    """The (registry, op name, complex checked) triples a check covers.

    With no spec and no registry: every entry of the seed files' union (`load_seed_spec`),
    then each older seed file's entries that a newer one replaced with other formulas, so
    that every formula of every seed file is verified. Those older formulas are checked on
    real inputs only: before PyTorch 1.10 most formulas were written for real tensors (no
    `.conj()`), and complex autograd covered only a short list of ops.
    """
    names = list(ops) if ops is not None else None
    if spec is not None or registry is not None:
        reg = _resolve_registry(spec, registry)
        return [(reg, n, True) for n in (names if names is not None else reg.names())]
    union = seed_registry()
    pairs = [(union, n, True) for n in (names if names is not None else union.names())]
    for path in shipped_spec_files()[:-1]:
        older = load_spec(path)
        replaced = [
            e.name
            for e in older
            if e.name in union.spec
            and union.spec[e.name].location.file != e.location.file
            and _texts(union.spec[e.name]) != _texts(e)
        ]
        reg = Registry(older)
        pairs += [(reg, n, False) for n in replaced if names is None or n in names]
    return pairs


def _texts(entry) -> tuple:
    return tuple((f.key, f.text) for f in entry.backward + entry.forward)


def _refusals(op: Op, seed: int, cases: list | None, row: Row) -> Row:
    """`row` failed where a derivative the spec does not give was not refused (refusals.py),
    asked of the op's first real sample; as it was otherwise."""
    if not refused_inputs(op):
        return row
    try:
        sample = cases[0][0] if cases else samples_for(op, np.random.default_rng(seed))[0]
        _, problems = check_refusals(op, sample.args, sample.kwargs)
    except _OP_FAILURES:  # no sample to ask with (none drawn, or the call fails): nothing asked
        return row
    if problems:
        row.status, row.reason = (
            "failed",
            f"{op.name} [vjp] sample 0: a derivative the spec does not give was not refused: " + "; ".join(problems),
        )
    return row


def _all_not_implemented(op: Op) -> bool:
    """Whether each formula the entry gives (backward and result) is a `not_implemented(...)` call."""
    formulas = op.entry.backward + op.entry.forward
    return bool(formulas) and all(states_not_implemented(f) for f in formulas)


def check_all(
    spec: Spec | str | os.PathLike | None = None,
    ops: Iterable[str] | None = None,
    modes: Sequence[str] = MODES,
    *,
    registry: Registry | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    sample: int | None = None,
    per_element: bool = False,
    thorough: bool = False,
    transforms: Sequence[str] = ("jit",),
    jobs: int = 1,
    compilation_cache: str | os.PathLike | None = None,
) -> Report:
    """Compare every op's vjp, jvp and second-order rules with references, in float64.

    spec: a Spec, a path to a derivatives.yaml, or None for the shipped files (see `plan`).
    ops: names to check (default: every entry). Returns a Report; `bool(report)` is False
    iff a check failed or errored. Each row names the spec file its formulas came from; a
    failed row's reason says where the rule and the reference differ, and its `repro` is
    the command line that checks that op, mode and sample again.

    By default each sample is compared along random directions and cotangents; the vjp and
    jvp also batched over two of them under jax.vmap, and with each output's cotangent (vjp)
    or each input's tangent (jvp) left undefined, against the rule's own derivative. Options:
    sample: check only the sample of this index (real samples first, then complex ones);
    the random directions are those of the full run. per_element: also compare full
    Jacobians element by element with JAX autodiff and finite differences (slow; a failed
    sample is re-run so by itself when small). thorough: the derivatives with parts undefined
    also against JAX autodiff and finite differences. transforms: any of "jit" (always run),
    "nojit" (the vjp/jvp evaluated without jax.jit) and "vmap" (under jax.vmap over 2 stacked
    inputs as well as 2 cotangents/tangents).

    modes: any of MODES, all by default: "vjp", "jvp", "vjp_vjp" (second-order gradient),
    "jvp_vjp" (forward-over-reverse), "vjp_jvp" (reverse-over-forward: the gradient of the jvp,
    which differentiates a `result:` formula), "vjp_vjp_vjp" (third-order gradient, where a
    backward formula calls another entry's op) and "float32" / "bfloat16" (elementwise and
    reduction entries' vjp and jvp in that dtype, against the float64 rule at the same rounded
    values; see precision.py).

    jobs: check the entries in this many worker processes (the rows are the same as in one).
    compilation_cache: a directory for JAX's persistent compilation cache, set for this
    process and the workers, so that a second run compiles nothing it compiled before.
    """
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}; choose from {MODES}")
    transforms = tuple(transforms)
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown:
        raise ValueError(f"unknown transform(s) {unknown}; choose from {TRANSFORMS}")
    shipped = spec is None and registry is None
    options = CheckOptions(sample=sample, per_element=per_element, thorough=thorough, transforms=transforms)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    registries: list[Registry] = []
    tasks: list[Task] = []
    for r, name, complex_ in plan(spec, ops, registry):
        which = next((i for i, known in enumerate(registries) if known is r), None)
        if which is None:
            which = len(registries)
            registries.append(r)
        tasks.append(Task(which, name, tuple(modes), seed, complex_, shipped and complex_, options))
    versions: dict[str, str] = {}
    for task in tasks:
        r = registries[task.registry]
        for f, v in zip(r.spec.files, r.spec.versions):
            versions.setdefault(f, str(v))
    if jobs > 1 and len(tasks) > 1:
        cache = None if compilation_cache is None else os.fspath(compilation_cache)
        per_task = check_in_workers(_check_task, registries, tasks, min(jobs, len(tasks)), cache, progress)
    else:
        per_task = []
        with _compilation_cache(compilation_cache), fewer_collections():
            for task in tasks:
                per_task.append(_check_task(registries[task.registry], task))
                if progress is not None:
                    progress(task.name)
    return Report([row for rows in per_task for row in rows], versions)


def _check_task(registry: Registry, task: Task) -> list[Row]:
    """The rows of one entry's check, in float64: what the executor (pool.py) runs in each worker
    process, or this process runs task by task. `registry` is the one `task.registry` names."""
    with jax.enable_x64(True):
        return _entry_rows(registry, task)


def _entry_rows(registry: Registry, task: Task) -> list[Row]:
    name, modes, seed, options = task.name, task.modes, task.seed, task.options
    try:
        entry = registry.spec[name]
    except KeyError as e:
        return [Row(name, m, "error", reason=str(e).strip('"')) for m in modes]
    source = os.path.basename(entry.location.file or "")
    spec_file = (
        None if task.default_spec else (os.path.abspath(entry.location.file) if entry.location.file else "SPEC_FILE")
    )
    given = entry.version.text if entry.version is not None and entry.version.how == "given" else None
    repro = _repro_command(spec_file, name, seed, options.thorough, options.transforms, given)
    why_not = record(name).not_applicable
    if why_not is not None:
        rows = [Row(name, m, "not_applicable", reason=why_not) for m in modes]
    elif implementation(name) is None:
        # Ops of families not implemented yet: their helpers may be missing too.
        rows = [Row(name, m, "no_forward", reason="no forward implementation yet") for m in modes]
    else:
        # A formula may warn on purpose (`warn_backwards`): recorded on the rows, not printed.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                rows = _check_op(
                    registry.op(name),
                    modes,
                    seed,
                    task.complex_,
                    sample=options.sample,
                    per_element=options.per_element,
                    thorough=options.thorough,
                    transforms=options.transforms,
                    repro=repro,
                )
            except JaxderivError as e:
                rows = [Row(name, m, "error", reason=f"{type(e).__name__}: {e}", repro=repro(m, None)) for m in modes]
        warned = "; ".join(sorted({f"{w.category.__name__}: {w.message}" for w in caught}))
        for r in rows:
            r.warned = warned[:300]
    proofs = _mode_proofs(entry)
    for r in rows:
        r.spec = source
        if r.status == "passed":
            r.proof = proofs.get(r.mode, "")
    return rows


def _mode_proofs(entry) -> dict[str, str]:
    """sympy proofs of the elementwise entries' formulas, reported beside `passed`; none without
    sympy (the `proofs` extra): the numerical checks do not need it."""
    try:
        from .proofs import mode_proofs
    except ModuleNotFoundError as e:
        if e.name != "sympy":
            raise
        return {}
    return mode_proofs(entry)
