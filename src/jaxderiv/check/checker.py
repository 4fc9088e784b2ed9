"""Verify each op's rules against JAX's own autodiff of its forward and against finite differences.

This is the one place where JAX differentiates forward implementations: as the reference
the YAML-derived rules are judged against, never as a source of rules.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import JaxderivError, NotImplementedDerivative
from ..forward import implementation
from ..op import Op
from ..registry import Registry, default_registry
from ..spec import Spec, load_spec, shipped_spec_files
from .report import Report, Row
from .samples import Sample, checks_complex, known_failure_reason, not_applicable_reason, samples_for

__all__ = ["MODES", "check", "check_all", "plan", "Tolerance"]

MODES = ("vjp", "jvp", "vjp_vjp")


class Tolerance:
    """How close the rule must be to each reference (float64)."""

    ref_rtol = 1e-6  # against JAX's autodiff of the forward: same math, other rounding
    ref_atol = 1e-8
    fd_step = 1e-6  # central differences
    fd_rtol = 1e-5
    fd_atol = 1e-6


class _Mismatch(Exception):
    def __init__(self, message, abs_err, rel_err):
        super().__init__(message)
        self.abs_err, self.rel_err = abs_err, rel_err


def _errors(actual, expected):
    a, e = np.asarray(actual), np.asarray(expected)
    both_nan = np.isnan(a) & np.isnan(e)
    diff = np.where(both_nan, 0.0, np.abs(a - e))
    diff = np.where(np.isnan(diff), np.inf, diff)
    abs_err = float(np.max(diff, initial=0.0))
    rel_err = abs_err / max(float(np.max(np.abs(np.where(np.isnan(e), 0, e)), initial=0.0)), 1e-300)
    return abs_err, rel_err, diff, np.abs(np.where(np.isnan(e), 0, e))


class _Accumulator:
    """Worst errors seen over the samples of one op and mode."""

    def __init__(self):
        self.abs_err, self.rel_err = 0.0, 0.0

    def compare(self, what: str, actual, expected, rtol, atol):
        abs_err, rel_err, diff, scale = _errors(actual, expected)
        self.abs_err, self.rel_err = max(self.abs_err, abs_err), max(self.rel_err, min(rel_err, abs_err))
        bad = diff > atol + rtol * scale
        if np.any(bad):
            where = np.unravel_index(int(np.argmax(diff - rtol * scale)), diff.shape) if diff.ndim else ()
            raise _Mismatch(
                f"{what}: max |difference| {abs_err:.3e} at index {tuple(int(i) for i in where)} "
                f"(rule {np.asarray(actual)[where]!r}, reference {np.asarray(expected)[where]!r}, tolerance rtol={rtol} atol={atol})",
                abs_err,
                rel_err,
            )


def _inexact(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)


class _Problem:
    """One sample as functions of its differentiable arrays: through the rules and natively."""

    def __init__(self, op: Op, sample: Sample):
        self.op = op
        self.sample = sample
        bound = op.bind(tuple(sample.args), dict(sample.kwargs))
        self.names = list(bound)
        self.values = [_to_jax(v) for v in bound.values()]
        self.paths = []  # (position, index in list or None) of each differentiable array
        for i, (a, v) in enumerate(zip(op.schema.arguments, self.values)):
            if a.name not in op.differentiable_inputs:
                continue
            if a.is_tensor and v is not None and _inexact(v):
                self.paths.append((i, None))
            elif a.is_tensor_list:
                self.paths.extend((i, j) for j, e in enumerate(v) if e is not None and _inexact(e))
        self.xs = [self._get(p) for p in self.paths]
        self.out_mask = op.output_differentiable(*[v for a, v in zip(op.schema.arguments, self.values) if not a.kwarg_only], **{a.name: v for a, v in zip(op.schema.arguments, self.values) if a.kwarg_only})

    def _get(self, path):
        i, j = path
        return self.values[i] if j is None else self.values[i][j]

    def _with(self, xs):
        values = [list(v) if isinstance(v, list) else v for v in self.values]
        for (i, j), x in zip(self.paths, xs):
            if j is None:
                values[i] = x
            else:
                values[i][j] = x
        return values

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
    def fd_fn(self):
        """What finite differences differentiate: the forward through the rules, or the sample's reference."""
        return self.native_fn if self.sample.reference is not None else self.rule_fn


def _to_jax(v):
    if isinstance(v, np.ndarray):
        return jnp.asarray(v)
    if isinstance(v, list):
        return [_to_jax(e) for e in v]
    return v


def _random_like(rng, x):
    """Standard normal entries (real and imaginary) of x's shape and dtype; x may be abstract."""
    shape, dtype = np.shape(x), np.dtype(x.dtype)
    r = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        r = r + 1j * rng.normal(size=shape)
    return jnp.asarray(r.astype(dtype))


def _pair(a: Sequence, b: Sequence) -> float:
    """Re(sum(a * b)): the pairing under which JAX's vjp is the transpose of its jvp."""
    return float(sum(np.real(np.sum(np.asarray(x) * np.asarray(y))) for x, y in zip(a, b)))


def _fd_jvp(fn: Callable, xs, vs, h: float):
    plus = fn(*[x + h * v for x, v in zip(xs, vs)])
    minus = fn(*[x - h * v for x, v in zip(xs, vs)])
    return [(p - m) / (2 * h) for p, m in zip(plus, minus)]


# A check runs each program once or twice: XLA's backend optimizations (LLVM -O) cost more
# compile time than they save (results agree to rounding: no fast-math either way).
_CHECK_COMPILE = {"xla_backend_optimization_level": 0}


class _Compiled:
    """`fn` as one jitted XLA program, or eager where it cannot be traced (value-dependent shapes).

    Eager evaluation compiles one small program per primitive and shape; a check runs
    hundreds of them. One program per function and sample compiles several times less.
    The eager result (value or exception) is the authority: any failure under jit falls back.
    """

    def __init__(self, fn: Callable):
        self.fn, self.jitted = fn, jax.jit(fn, compiler_options=_CHECK_COMPILE)

    def __call__(self, *args):
        if self.jitted is not None:
            try:
                return self.jitted(*args)
            except Exception:  # noqa: BLE001 - evaluated eagerly below, which raises what it raises
                self.jitted = None
        return self.fn(*args)


def _check_sample(mode: str, p: _Problem, rng, acc: _Accumulator, tol=Tolerance):
    state = rng.bit_generator.state
    try:
        v = _evaluate_together(mode, p, rng, tol)
    except Exception:  # noqa: BLE001 - evaluated function by function below, which raises what it raises
        rng.bit_generator.state = state  # the same random directions
        v = _evaluate_apart(mode, p, rng, tol)
    if mode == "jvp":
        if v["ref"] is not None:
            for k, (o, r) in enumerate(zip(v["ours"], v["ref"])):
                acc.compare(f"jvp output {k} vs JAX autodiff of the forward", o, r, tol.ref_rtol, tol.ref_atol)
        fd = _differences(v["plus"], v["minus"], tol.fd_step)
        for k, (o, f) in enumerate(zip(v["ours"], fd)):
            acc.compare(f"jvp output {k} vs finite differences", o, f, tol.fd_rtol, tol.fd_atol)
        return
    ours, ref = p.project(v["ours"]), None if v["ref"] is None else p.project(v["ref"])
    if mode == "vjp":
        if ref is not None:
            for k, (o, r) in enumerate(zip(ours, ref)):
                acc.compare(f"vjp input {k} vs JAX autodiff of the forward", o, r, tol.ref_rtol, tol.ref_atol)
        lhs = _pair(ours, v["vs"])
        rhs = _pair(v["cts"], _differences(v["plus"], v["minus"], tol.fd_step))
        acc.compare("<vjp(ct), v> vs <ct, finite-difference jvp(v)>", np.array(lhs), np.array(rhs), tol.fd_rtol, tol.fd_atol * max(1.0, abs(rhs)))
        return
    if ref is not None:
        for k, (o, r) in enumerate(zip(ours, ref)):
            acc.compare(f"second-order gradient, input {k}, vs JAX autodiff of the forward", o, r, tol.ref_rtol * 10, tol.ref_atol * 10)
    fd = (v["plus"] - v["minus"]) / (2 * tol.fd_step * 10)
    lhs = _pair(ours, v["vs"])
    acc.compare("<second-order gradient, v> vs finite differences", np.array(lhs), np.asarray(fd), tol.fd_rtol * 10, tol.fd_atol * max(1.0, abs(float(fd))))


def _differences(plus, minus, h):
    return [(a - b) / (2 * h) for a, b in zip(plus, minus)]


def _second_order(fn, cts, ws):
    """<vjp(fn)(ct), w> as a function of the inputs: its gradient differentiates the backward formula."""
    return lambda *xs: sum(jnp.real(jnp.sum(g * w)) for g, w in zip(jax.vjp(fn, *xs)[1](cts), ws))


def _shifted(xs, vs, h):
    return [x + h * v for x, v in zip(xs, vs)], [x - h * v for x, v in zip(xs, vs)]


def _evaluate_together(mode: str, p: _Problem, rng, tol) -> dict:
    """Everything a sample's check compares, from one jitted program: one XLA compile."""
    xs = p.xs
    vs = p.project([_random_like(rng, x) for x in xs])
    step = tol.fd_step if mode != "vjp_vjp" else tol.fd_step * 10
    if mode == "jvp":

        def program(xs, vs):
            plus, minus = _shifted(xs, vs, step)
            return jax.jvp(p.rule_fn, xs, vs)[1], jax.jvp(p.native_fn, xs, vs)[1], p.fd_fn(*plus), p.fd_fn(*minus)

        ours, ref, plus, minus = jax.jit(program, compiler_options=_CHECK_COMPILE)(tuple(xs), tuple(vs))
        return {"vs": vs, "ours": ours, "ref": ref, "plus": plus, "minus": minus}
    cts = [_random_like(rng, y) for y in jax.eval_shape(p.rule_fn, *xs)]
    if mode == "vjp":

        def program(xs, vs, cts):
            plus, minus = _shifted(xs, vs, step)
            return jax.vjp(p.rule_fn, *xs)[1](cts), jax.vjp(p.native_fn, *xs)[1](cts), p.fd_fn(*plus), p.fd_fn(*minus)

        ours, ref, plus, minus = jax.jit(program, compiler_options=_CHECK_COMPILE)(list(xs), list(vs), list(cts))
        return {"vs": vs, "cts": cts, "ours": ours, "ref": ref, "plus": plus, "minus": minus}
    ws = p.project([_random_like(rng, x) for x in xs])
    argnums = tuple(range(len(xs)))

    def program(xs, vs, cts, ws):
        plus, minus = _shifted(xs, vs, step)
        ours, ref = (jax.grad(_second_order(fn, cts, ws), argnums=argnums)(*xs) for fn in (p.rule_fn, p.native_fn))
        hv = _second_order(p.rule_fn, cts, ws)
        return ours, ref, hv(*plus), hv(*minus)

    ours, ref, plus, minus = jax.jit(program, compiler_options=_CHECK_COMPILE)(list(xs), list(vs), list(cts), list(ws))
    return {"vs": vs, "ours": ours, "ref": ref, "plus": plus, "minus": minus}


def _evaluate_apart(mode: str, p: _Problem, rng, tol) -> dict:
    """The same values function by function, for a sample whose reference or shapes defeat one program."""
    xs = p.xs
    vs = p.project([_random_like(rng, x) for x in xs])
    rule_fn, fd_fn = _Compiled(p.rule_fn), _Compiled(p.fd_fn)
    if mode == "jvp":
        _, ours = _Compiled(lambda xs, vs: jax.jvp(p.rule_fn, xs, vs))(tuple(xs), tuple(vs))
        try:
            _, ref = _Compiled(lambda xs, vs: jax.jvp(p.native_fn, xs, vs))(tuple(xs), tuple(vs))
        except Exception:  # noqa: BLE001 - a forward JAX cannot differentiate: finite differences only
            ref = None
        plus, minus = _shifted(xs, vs, tol.fd_step)
        return {"vs": vs, "ours": ours, "ref": ref, "plus": fd_fn(*plus), "minus": fd_fn(*minus)}
    ys = rule_fn(*xs)
    cts = [_random_like(rng, y) for y in ys]
    if mode == "vjp":
        ours = _Compiled(lambda xs, cts: jax.vjp(p.rule_fn, *xs)[1](cts))(list(xs), list(cts))
        try:
            ref = _Compiled(lambda xs, cts: jax.vjp(p.native_fn, *xs)[1](cts))(list(xs), list(cts))
        except Exception:  # noqa: BLE001
            ref = None
        plus, minus = _shifted(xs, vs, tol.fd_step)
        return {"vs": vs, "cts": cts, "ours": ours, "ref": ref, "plus": fd_fn(*plus), "minus": fd_fn(*minus)}
    ws = p.project([_random_like(rng, x) for x in xs])
    argnums = tuple(range(len(xs)))
    ours = _Compiled(jax.grad(_second_order(p.rule_fn, cts, ws), argnums=argnums))(*xs)
    try:
        ref = _Compiled(jax.grad(_second_order(p.native_fn, cts, ws), argnums=argnums))(*xs)
    except Exception:  # noqa: BLE001
        ref = None
    hv = _Compiled(_second_order(p.rule_fn, cts, ws))
    plus, minus = _shifted(xs, vs, tol.fd_step * 10)
    return {"vs": vs, "ours": ours, "ref": ref, "plus": hv(*plus), "minus": hv(*minus)}


def _check_op(op: Op, modes: Sequence[str], seed: int, complex_: bool = True) -> list[Row]:
    rows = []
    formulas = op.formulas
    label = {"vjp": formulas["vjp"], "jvp": formulas["jvp"], "vjp_vjp": "derivative of " + formulas["vjp"]}
    if op.impl is None:
        return [Row(op.name, m, "skipped", reason="no forward implementation yet", formula=label[m]) for m in modes]
    if not op.differentiable_inputs:
        return [Row(op.name, m, "not_applicable", reason="no differentiable input: the spec gives no formula for any Tensor input", formula=label[m]) for m in modes]
    for mode in modes:
        start = time.perf_counter()
        rng = np.random.default_rng(seed)
        acc = _Accumulator()
        row = Row(op.name, mode, "passed", formula=label[mode])
        try:
            cases = [(s, False) for s in samples_for(op, rng)]
            if complex_ and checks_complex(op.name):
                cases += [(s, True) for s in samples_for(op, rng, complex_=True)]
            checked = 0
            for sample, _ in cases:
                problem = _Problem(op, sample)
                if not problem.xs or not any(problem.out_mask):
                    continue
                _check_sample(mode, problem, rng, acc)
                checked += 1
            if checked == 0:
                row.status, row.reason = "not_applicable", "no sample has a differentiable input and output"
        except _Mismatch as m:
            row.status, row.reason = "failed", f"sample {sample.label or '#'}{' complex' if _ else ''}: {m}"
        except NotImplementedDerivative as e:
            row.status, row.reason = "not_applicable", str(e)
        except JaxderivError as e:
            row.status, row.reason = "error", f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 - any crash is reported, not raised
            row.status, row.reason = "error", f"{type(e).__name__}: {e}"
        if row.status in ("passed", "failed"):
            row.max_abs_err, row.max_rel_err = acc.abs_err, acc.rel_err
        known = known_failure_reason(op.name, mode)
        if known is not None and row.status in ("failed", "error"):
            row.status, row.reason = "skipped", f"known failure: {known} [{row.reason}]"
        row.seconds = time.perf_counter() - start
        rows.append(row)
    return rows


def _resolve_registry(spec, registry):
    if registry is not None:
        return registry
    if spec is None:
        return default_registry()
    if isinstance(spec, Spec):
        return Registry(spec)
    return Registry(load_spec(spec))


def check(name: str, modes: Sequence[str] = MODES, *, spec=None, registry: Registry | None = None, seed: int = 0) -> Report:
    """Check one op's rules in each mode; see `check_all`."""
    return check_all(spec, ops=[name], modes=modes, registry=registry, seed=seed)


def plan(spec=None, ops: Iterable[str] | None = None, registry: Registry | None = None) -> list[tuple[Registry, str, bool]]:
    """The (registry, op name, complex checked) triples a check covers.

    With no spec and no registry: every entry of the default spec (the shipped files' union),
    then each older shipped file's entries that a newer file replaced with other formulas, so
    that every formula of every shipped file is verified. Those older formulas are checked on
    real inputs only: before PyTorch 1.10 most formulas were written for real tensors (no
    `.conj()`), and complex autograd covered only a short list of ops.
    """
    names = list(ops) if ops is not None else None
    if spec is not None or registry is not None:
        reg = _resolve_registry(spec, registry)
        return [(reg, n, True) for n in (names if names is not None else reg.names())]
    union = default_registry()
    pairs = [(union, n, True) for n in (names if names is not None else union.names())]
    for path in shipped_spec_files()[:-1]:
        older = load_spec(path)
        replaced = [
            e.name for e in older
            if e.name in union.spec and union.spec[e.name].location.file != e.location.file and _texts(union.spec[e.name]) != _texts(e)
        ]
        reg = Registry(older)
        pairs += [(reg, n, False) for n in replaced if names is None or n in names]
    return pairs


def _texts(entry) -> tuple:
    return tuple((f.key, f.text) for f in entry.backward + entry.forward)


def check_all(
    spec: Spec | str | os.PathLike | None = None,
    ops: Iterable[str] | None = None,
    modes: Sequence[str] = MODES,
    *,
    registry: Registry | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Compare every op's vjp, jvp and second-order rules with references, in float64.

    spec: a Spec, a path to a derivatives.yaml, or None for the shipped files (see `plan`).
    ops: names to check (default: every entry). Returns a Report; `bool(report)` is False
    iff a check failed or errored. Each row names the spec file its formulas came from.
    """
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}; choose from {MODES}")
    rows: list[Row] = []
    with jax.enable_x64(True):
        for registry_, name, complex_ in plan(spec, ops, registry):
            rows += _check_named(registry_, name, modes, seed, complex_)
            if progress is not None:
                progress(name)
    return Report(rows)


def _check_named(registry: Registry, name: str, modes: Sequence[str], seed: int, complex_: bool) -> list[Row]:
    try:
        entry = registry.spec[name]
    except KeyError as e:
        return [Row(name, m, "error", reason=str(e).strip('"')) for m in modes]
    source = os.path.basename(entry.location.file or "")
    why_not = not_applicable_reason(name)
    if why_not is not None:
        rows = [Row(name, m, "not_applicable", reason=why_not) for m in modes]
    elif implementation(name) is None:
        # Ops of families not implemented yet: their helpers may be missing too.
        rows = [Row(name, m, "skipped", reason="no forward implementation yet") for m in modes]
    else:
        try:
            rows = _check_op(registry.op(name), modes, seed, complex_)
        except JaxderivError as e:
            rows = [Row(name, m, "error", reason=f"{type(e).__name__}: {e}") for m in modes]
    proofs = _mode_proofs(entry)
    for r in rows:
        r.spec = source
        if r.status == "passed":
            r.proof = proofs.get(r.mode, "")
    return rows


def _mode_proofs(entry) -> dict[str, str]:
    """sympy proofs of the elementwise entries' formulas, reported beside `passed`."""
    from ..proofs import mode_proofs

    return mode_proofs(entry)
