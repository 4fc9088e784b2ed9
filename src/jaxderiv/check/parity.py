"""jaxderiv against PyTorch itself: forward values, vjp, jvp, kinks and complex inputs, per op.

The checker judges rules by JAX's autodiff and finite differences, which cannot judge kinks;
this module asks the installed torch (torch.ops.aten, torch.autograd.grad, torch.func.jvp)
on the same inputs and cotangents. Complex: jax_vjp(ct) == conj(torch_grad(conj(ct))).
What it needs of each entry is read from the entry's op record (jaxderiv.check.opdb), declared
beside the entry's forward in jaxderiv.forward: the kink inputs (`kinks`); where torch cannot
run an op as the spec names it (a CUDA-only kernel, a schema changed since), the torch call that
computes the same thing (`torch_equivalent`); the ops compared in float32 (`parity_in_float32`),
on other samples than the checker's (`parity_samples`) or not at all (`not_compared`); and, by
column, where the results differ for a known reason (`parity_differs`). The comparison itself
(tolerances, values, vjp, jvp, the worker processes) is torch_compare.py's, which the OpInfo
replay (opinfo.py) shares: this module is its record-driven source of samples. Needs torch;
jaxderiv itself never does.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Any, Mapping, Union

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import NotImplementedDerivative, SpecError
from ..forward import implementation
from ..op import Op
from ..records import Difference, Equivalent, Sample, values_with
from ..registry import Registry
from ..spec import Spec
from .compare import random_like
from .opdb import database, record
from .samples import samples_for
from .torch_compare import (
    ATOL,
    ATOL32,
    FAILURES,
    RTOL,
    RTOL32,
    Case,
    DrawDependent,
    NoForwardAD,
    TorchFailed,
    aten_op,
    close,
    error,
    first_difference,
    gradients,
    run_parallel,
    seeded,
    tangents,
    to_numpy,
    torch_forward,
    torch_module,
)
from .torch_compare import to_torch as _to_torch  # tests/ops/* build torch's arguments with it as P._to_torch

__all__ = [
    "RTOL",
    "ATOL",
    "RTOL32",
    "ATOL32",
    "ParityRow",
    "applies",
    "compare",
    "compare_op",
    "implemented",
    "known_difference",
    "known_differences",
    "parity",
    "to_markdown",
    "torch_has",
    "write_json",
    "unexplained",
]

COLUMNS = ("forward", "vjp", "jvp", "kinks", "complex")


@dataclasses.dataclass
class ParityRow:
    """One op against torch: per column True (agrees), False (differs), None (not applicable)."""

    op: str
    spec: str
    forward: bool | None = None
    vjp: bool | None = None
    jvp: bool | None = None
    kinks: bool | None = None
    complex: bool | None = None
    max_err: float = 0.0
    note: str = ""  # the first difference or error, for the reader
    how: str = ""  # how torch was asked, where not by the op's own name in float64

    @property
    def ok(self) -> bool:
        return all(getattr(self, c) is not False for c in COLUMNS)

    @property
    def differs(self) -> tuple[str, ...]:
        return tuple(c for c in COLUMNS if getattr(self, c) is False)


class _Tally:
    """Worst error and first difference over the comparisons of one column."""

    def __init__(self, row: ParityRow, rtol: float = RTOL, atol: float = ATOL):
        self.row, self.rtol, self.atol = row, rtol, atol

    def close(self, what: str, ours, theirs) -> bool:
        a, b = (np.asarray(v) for v in (ours, theirs))
        if a.dtype == bool or b.dtype == bool:
            a, b = a.astype(np.float64), b.astype(np.float64)
        if a.shape != b.shape:
            return self._differs(f"{what}: shape {a.shape} vs torch {b.shape}")
        finite = np.isfinite(a) & np.isfinite(b)
        if finite.any():
            self.row.max_err = max(self.row.max_err, error(a[finite], b[finite]))
        if not close(a, b, self.rtol, self.atol):
            i = first_difference(a, b, self.rtol, self.atol)
            return self._differs(f"{what}: {a[i]!r} vs torch {b[i]!r} at {i}")
        return True

    def note(self, message: str) -> None:
        self.row.note = self.row.note or message

    def _differs(self, message: str) -> bool:
        self.note(message)
        return False


def applies(equivalent: Equivalent, op: Op) -> bool:
    """Whether torch is asked `equivalent.call` for `op`: always for an op torch cannot run,
    and for a schema change only while `op`'s schema is not the installed torch's."""
    if not equivalent.schema_change:
        return True
    try:
        theirs = aten_op(op.name)._schema
    except (AttributeError, RuntimeError):
        return True
    return [a.name for a in op.schema.arguments] != [a.name for a in theirs.arguments] or len(op.schema.returns) != len(
        theirs.returns
    )


def _equivalent(op: Op) -> Equivalent | None:
    """The torch call the parity run asks for `op` instead of torch's own op, if any."""
    equivalent = record(op.name).torch_equivalent
    return equivalent if equivalent is not None and applies(equivalent, op) else None


def _outs(value) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _narrow(v, dtype):
    """float64/complex128 arrays (and lists of them) in float32/complex64, for the ops compared in float32."""
    if isinstance(v, (list, tuple)):
        return type(v)(_narrow(e, dtype) for e in v)
    if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.inexact):
        return v.astype(np.complex64 if np.iscomplexobj(v) else np.float32)
    return v


class _Call(Case):
    """One sample bound to an op's schema, callable on both sides with its inexact inputs replaced."""

    seeds = True  # torch's generator seeded before every call: a sampler's draw repeats
    functorch = True  # torch.func.jvp: a kernel running autograd inside (linear_backward) is not compared
    torch_first = False  # jaxderiv's derivative first: a `not_implemented` formula is no difference

    def __init__(self, op: Op, args: tuple, kwargs: dict, sample: Sample | None = None, float32: bool = False):
        self.op, self.sample = op, sample
        bound = op.bind(tuple(args), dict(kwargs))
        self.arguments = op.schema.arguments
        # A 0-d NumPy scalar given for a Tensor argument is a 0-d tensor on both sides.
        self.values = [
            np.asarray(v) if a.is_tensor and isinstance(v, np.generic) else v
            for a, v in zip(op.schema.arguments, bound.values())
        ]
        if float32:
            self.values = [_narrow(v, np.float32) for v in self.values]
        # (argument, element of a Tensor[] or None) of every differentiable inexact input
        self.paths: list[tuple[int, int | None]] = []
        for i, (a, v) in enumerate(zip(self.arguments, self.values)):
            if a.name not in op.differentiable_inputs:
                continue
            if a.is_tensor and _inexact(v):
                self.paths.append((i, None))
            elif a.is_tensor_list and isinstance(v, (list, tuple)):
                self.paths += [(i, j) for j, e in enumerate(v) if _inexact(e)]
        self.inplace = op.schema.name.endswith("_") and not op.schema.name.endswith("__")
        self.random = any(a.type.base == "Generator" for a in self.arguments)

    def _split(self, values):
        args = [v for a, v in zip(self.arguments, values) if not a.kwarg_only]
        return args, {a.name: v for a, v in zip(self.arguments, values) if a.kwarg_only}

    def _with(self, xs, convert):
        return values_with([convert(v) for v in self.values], self.paths, xs)

    def jax(self, *xs):
        args, kwargs = self._split(self._with(xs, lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v))
        return _outs(self.op(*args, **kwargs))

    def _torch_value(self, a, v):
        v = _to_torch(v)
        if a.type.is_list and a.type.base in ("int", "SymInt") and isinstance(v, int):
            return [v]  # torch.ops takes no bare int for int[]
        return v

    def torch(self, *xs):
        torch = torch_module()
        values = [self._torch_value(a, v) for a, v in zip(self.arguments, self._with(xs, lambda v: v))]
        if self.inplace:  # in place on a copy, so that a leaf stays a leaf
            values[0] = values[0].clone()
        for i, v in enumerate(values):  # running statistics and other buffers torch writes to
            if isinstance(v, torch.Tensor) and not v.requires_grad and self.arguments[i].type.is_write:
                values[i] = v.clone()
        equivalent = _equivalent(self.op)
        if equivalent is not None:
            return _outs(equivalent.call(torch.ops.aten, {a.name: v for a, v in zip(self.arguments, values)}))
        args, kwargs = self._split(values)
        return _outs(aten_op(self.op.name)(*args, **kwargs))

    def xs(self):
        return [self.values[i] if j is None else self.values[i][j] for i, j in self.paths]

    def inputs(self) -> list:
        return self.xs()

    def gauge(self, outs):
        """The sample's gauge-invariant function of the outputs (svd, eigh...), on either side."""
        return list(self.sample.outputs(outs)) if self.sample is not None and self.sample.outputs else outs

    def project(self, grads):
        """Gradients restricted to the input directions the sample admits (one triangle, Hermitian)."""
        return list(self.sample.tangents(list(grads))) if self.sample is not None and self.sample.tangents else grads


def _inexact(v) -> bool:
    return isinstance(v, (np.ndarray, jax.Array)) and np.issubdtype(np.dtype(v.dtype), np.inexact)


def _inexact_outputs(outs) -> list[int]:
    return [k for k, y in enumerate(outs) if jnp.issubdtype(jnp.result_type(y), jnp.inexact)]


def _described(e: BaseException) -> str:
    """An exception as a row's note says it: torch's own where torch refused (TorchFailed)."""
    cause = e.__cause__ if isinstance(e, TorchFailed) and e.__cause__ is not None else e
    return f"{type(cause).__name__}: {str(cause).splitlines()[0][:200] if str(cause) else ''}"


# A mode's difference: either side's failure (torch's refusals wrapped in TorchFailed).
_MODE_FAILURES: tuple[type[Exception], ...] = (*FAILURES, TorchFailed)


def _compare_sample(call: _Call, rng, tally: _Tally, with_jvp: bool) -> dict[str, bool | None]:
    """forward, vjp and jvp verdicts of one sample (None: nothing to differentiate)."""
    xs = call.xs()
    ours, theirs = call.jax(*[jnp.asarray(x) for x in xs]), seeded(0, lambda: call.torch(*[_to_torch(x) for x in xs]))
    fwd = len(ours) >= len(theirs) and (len(ours) == len(theirs) or _equivalent(call.op) is not None)
    if not fwd:
        tally.note(f"forward: {len(ours)} outputs vs torch {len(theirs)}")
    args, kwargs = call._split(call.values)
    differentiable = call.op.output_differentiable(*args, **kwargs)
    inexact = [k for k in _inexact_outputs(ours) if k < len(theirs) and theirs[k] is not None]
    outs = [k for k in inexact if differentiable[k]]
    # outputs defined up to a gauge (svd's signs, eigh's phases): compared through the sample's
    # gauge-invariant function, as the derivatives are
    gauged = outs if call.sample is not None and call.sample.outputs is not None else []
    for k, (o, t) in enumerate(zip(ours, theirs)):
        if t is None:  # an output its output_mask turns off: undefined in ATen, an array in JAX
            tally.note(f"forward output {k}: undefined in torch (output_mask), not compared")
            continue
        if not call.random and k not in gauged:  # a sampler's values are its generator's: shapes and dtypes compared
            fwd &= tally.close(f"forward output {k}", o, to_numpy(t))
        elif np.shape(o) != tuple(t.shape):
            fwd = tally._differs(f"forward output {k}: shape {np.shape(o)} vs torch {tuple(t.shape)}")
        if np.dtype(jnp.result_type(o)).name != str(t.dtype).removeprefix("torch."):
            fwd = tally._differs(f"forward output {k}: dtype {jnp.result_type(o)} vs torch {t.dtype}")
    if gauged:
        for j, (o, t) in enumerate(zip(call.gauge(_pick(ours, gauged)), call.gauge(_pick(theirs, gauged)))):
            fwd &= tally.close(f"forward gauge-invariant value {j}", o, to_numpy(t))
    verdict: dict[str, bool | None] = {"forward": fwd, "vjp": None, "jvp": None}
    if not xs or not outs:
        return verdict
    undifferentiated = [k for k in inexact if not differentiable[k]]
    compares = {
        "vjp": lambda: _compare_vjp(call, outs, rng, tally, undifferentiated),
        "jvp": lambda: _compare_jvp(call, outs, rng, tally),
    }
    for column, compare_ in compares.items():
        if column == "jvp" and not with_jvp:
            continue
        try:
            verdict[column] = compare_()
        except NotImplementedDerivative as e:  # the spec says not_implemented: nothing to compare
            tally.note(f"{column}: {str(e).rsplit(': ', 1)[-1]}")
        except DrawDependent:
            tally.note(f"{column}: torch's derivative depends on the draw: not compared")
        except _MODE_FAILURES as e:  # a crash of either side in one mode is that mode's difference
            verdict[column] = tally._differs(f"{column}: {_described(e)}")
    return verdict


def _pick(values, ks):
    return [values[k] for k in ks]


def _compare_vjp(call: _Call, outs, rng, tally: _Tally, undifferentiated=()) -> bool | None:
    """`outs`: the outputs jaxderiv differentiates; `undifferentiated`: its other inexact
    outputs, each a difference if torch differentiates it (a gradient jaxderiv would drop).
    None where torch differentiates none of `outs`: nothing to compare."""
    probe = torch_forward(call)
    leaves, t_outs = probe
    dropped = [
        k for k in undifferentiated if t_outs[k].requires_grad and _has_gradient(leaves, t_outs[k], rng, tally.atol)
    ]
    if dropped:
        return tally._differs(f"vjp: torch differentiates output(s) {dropped}, jaxderiv does not")
    outs = [
        k for k in outs if t_outs[k].requires_grad
    ]  # torch's non-differentiable outputs (pivots, indices) carry no gradient
    if not outs:
        return None

    def cotangents(ys, _):
        cts = [random_like(rng, y) for y in ys]
        return cts, cts

    ours, theirs = gradients(call, probe, lambda o: call.gauge(_pick(o, outs)), cotangents)
    return all([tally.close(f"vjp input {j}", g, t) for j, (g, t) in enumerate(zip(ours, theirs))])


def _has_gradient(leaves, out, rng, atol) -> bool:
    """Whether torch gives `out` a nonzero gradient (not a `not_implemented` formula, not the
    zero derivative of a real input's sign)."""
    ct = _to_torch(np.asarray(random_like(rng, to_numpy(out.detach()))))
    try:
        grads = torch_module().autograd.grad(out, leaves, ct, allow_unused=True, retain_graph=True)
    except RuntimeError:
        return False
    return any(g is not None and g.numel() and float(g.abs().max()) > atol for g in grads)


def _compare_jvp(call: _Call, outs, rng, tally: _Tally) -> bool | None:
    """jaxderiv's jvp (the `result:` formulas, or the backward formulas transposed where the
    entry has none) against torch's forward-mode AD."""
    ts = call.project([np.asarray(random_like(rng, x)) for x in call.xs()])
    try:
        both = tangents(call, lambda o: call.gauge(_pick(o, outs)), ts)
    except NoForwardAD as e:
        tally.note(f"jvp: torch has no forward-mode derivative ({e.line[:150]}): not compared")
        return None
    return all(
        [tally.close(f"jvp output {k}", o, t) for k, (o, t) in enumerate(zip(both.ours, both.theirs)) if t is not None]
    )


def _merge(old, new):
    return new if old is None else old if new is None else old and new


def compare_op(
    op: Op,
    samples: list[Sample],
    kinks: list[tuple],
    complex_samples: list[Sample],
    seed: int = 0,
    rtol: float | None = None,
) -> ParityRow:
    """Compare one op with torch on its samples (forward, vjp, jvp), kink inputs and complex ones
    (`rtol`: instead of the record's tolerance, for inputs in another precision)."""
    row = ParityRow(op.name, os.path.basename(op.entry.location.file or ""))
    float32, equivalent, looser = record(op.name).parity_float32, _equivalent(op), record(op.name).parity_rtol
    base_rtol, atol = (RTOL32, ATOL32) if float32 else (RTOL, ATOL)
    if rtol is None:
        rtol = max(base_rtol, looser[0]) if looser else base_rtol
    tally, rng = _Tally(row, rtol, atol), np.random.default_rng(seed)
    row.how = "; ".join(
        x
        for x in (
            equivalent.reason if equivalent is not None else "",
            f"float32: {float32}" if float32 else "",
            f"rtol {looser[0]:g}: {looser[1]}" if looser else "",
            "random: shapes and dtypes compared, derivatives where torch's do not depend on the draw"
            if any(a.type.base == "Generator" for a in op.schema.arguments)
            else "",
        )
        if x
    )
    with_jvp = True  # the result: formulas, or the backward formulas transposed where the entry has none
    groups: tuple[tuple[str, list[tuple[Any, dict, Sample | None]]], ...] = (
        ("plain", [(s.args, s.kwargs, s) for s in samples]),
        ("kinks", [(k, {}, None) for k in kinks]),
        ("complex", [(s.args, s.kwargs, s) for s in complex_samples]),
    )
    for group, cases in groups:
        for args, kwargs, sample in cases:
            try:
                verdict = _compare_sample(_Call(op, args, kwargs, sample, float32 is not None), rng, tally, with_jvp)
            except FAILURES as e:  # a crash on either side (binding, forward) is a difference, reported
                verdict = {"forward": tally._differs(f"{group}: {_described(e)}")}
            if group == "plain":
                for column in ("forward", "vjp", "jvp"):
                    setattr(row, column, _merge(getattr(row, column), verdict.get(column)))
            else:
                agreed = all(v is not False for v in verdict.values())
                setattr(row, group, _merge(getattr(row, group), agreed))
    return row


def _float64(fn):
    def run(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return run


def torch_has(name: str) -> bool:
    """Whether torch.ops.aten has the op, or its record a torch call computing it (`torch_equivalent`)."""
    if record(name).torch_equivalent is not None:
        return True
    try:
        aten_op(name)
    except (AttributeError, RuntimeError):
        return False
    return True


def implemented(spec: Spec) -> list[str]:
    """The entries of `spec` that have a forward implementation (with or without a torch counterpart)."""
    return [e.name for e in spec if implementation(e.name) is not None and record(e.name).not_applicable is None]


@_float64
def compare(registry: Registry, name: str, seed: int = 0, max_samples: int | None = None) -> ParityRow:
    """The parity row of one op of `registry`, on its checker samples (the first `max_samples`)."""
    declared = record(name)
    if declared.not_compared is not None:
        return ParityRow(name, "", note=f"n/a: {declared.not_compared}")
    if not torch_has(name):
        return ParityRow(
            name, "", note=f"n/a: torch {torch_module().__version__} has no aten.{name} and no equivalent call"
        )
    try:
        op = registry.op(name)
        rng = np.random.default_rng(seed)
        samples = _accepted(op, list(declared.parity_samples or ()) or samples_for(op, rng), max_samples)
        complex_samples = samples_for(op, rng, complex_=True)[:max_samples] if record(name).checks_complex() else []
        kinks = list(declared.kinks)
    except FAILURES as e:  # an op that does not build (its formulas, its samples) is a row, not a crash
        return ParityRow(name, "", forward=False, note=f"{type(e).__name__}: {str(e)[:200]}")
    return compare_op(op, samples, kinks, complex_samples, seed)


def _size(sample: Sample) -> tuple[int, int]:
    """How many arrays a sample holds and how many elements: what a comparison's cost grows with."""
    arrays = [
        v
        for v in list(sample.args) + list(sample.kwargs.values())
        for v in (v if isinstance(v, (list, tuple)) else [v])
        if isinstance(v, np.ndarray)
    ]
    return len(arrays), sum(v.size for v in arrays)


def _accepted(op: Op, samples: list[Sample], n: int | None) -> list[Sample]:
    """The n smallest samples torch's op accepts (its input checks can be stricter than the
    seed's), else the n smallest: a short run compares each op on its cheapest inputs."""
    if n is None:
        return samples
    ok = []
    for s in sorted(samples, key=_size):
        try:
            call = _Call(op, s.args, s.kwargs, s, record(op.name).parity_float32 is not None)
            seeded(0, lambda: call.torch(*[_to_torch(x) for x in call.xs()]))
        except FAILURES:  # torch refuses this input (or it does not bind): the next is tried
            continue
        ok.append(s)
        if len(ok) == n:
            break
    return ok or sorted(samples, key=_size)[:n]


_REGISTRIES: dict[int, Registry] = {}  # a worker process's registry, built once per parallel run


def _compare_chunk(task: tuple) -> list[ParityRow]:
    """One worker process's ops of a parallel run (module level: spawned processes import it)."""
    token, spec, names, seed, max_samples = task
    if token not in _REGISTRIES:
        _REGISTRIES.clear()
        _REGISTRIES[token] = Registry(spec)
    return [compare(_REGISTRIES[token], n, seed, max_samples) for n in names]


def parity(
    registry: Registry,
    ops: list[str] | None = None,
    seed: int = 0,
    max_samples: int | None = None,
    *,
    jobs: int = 1,
    progress: bool = False,
) -> list[ParityRow]:
    """Parity rows of the named ops, or of every implemented entry of the registry's spec; with
    `jobs` > 1 compared in that many processes (each builds the registry again from its spec),
    the rows in the same order and with the same verdicts."""
    names = ops if ops is not None else implemented(registry.spec)
    if jobs <= 1:
        return [compare(registry, n, seed, max_samples) for n in names]
    chunks = [names[i : i + 4] for i in range(0, len(names), 4)]
    parts = run_parallel(
        _compare_chunk,
        [(id(registry), registry.spec, c, seed, max_samples) for c in chunks],
        jobs,
        sizes=[len(c) for c in chunks],
        progress="ops" if progress else None,
    )
    return [row for part in parts for row in part]


# Which declarations judge a spec's rows: False, the seed files' (`parity_differs`); True, torch's own
# file's (`torch_spec=True`); "newest", torch 2.14.1's (`newest_spec`, else as torch's own file's);
# None, none (another file, whose differences nobody has judged); or per entry, a mapping from entry
# name to one of those (see `judged_by_content`).
Judged = Union[bool, None, str, Mapping[str, Union[bool, None, str]]]


def _fingerprint(entry) -> tuple:
    """What decides an entry's derivatives: its schema, formulas and output differentiability as
    written, and the release whose helper meanings they are read with (not the file's name)."""
    formulas = tuple((f.names, f.text) for f in entry.backward + entry.forward)
    release = entry.version.release if entry.version is not None else None
    return (str(entry.schema), formulas, entry.output_differentiability, release)


@functools.lru_cache(maxsize=None)
def _judged_references() -> tuple[tuple[bool | str, dict[str, tuple]], ...]:
    """(judgement, entry name -> fingerprint) of the files whose differences the op records
    declare: torch 2.14.1's ("newest"), the installed torch's (True), the seed files (False)."""
    from ..spec import load_spec, newest_spec_file, shipped_spec_files

    references: list[tuple[bool | str, dict[str, tuple]]] = [
        ("newest", {e.name: _fingerprint(e) for e in load_spec(newest_spec_file())})
    ]
    try:
        references.append((True, {e.name: _fingerprint(e) for e in load_spec(from_torch=True)}))
    except SpecError:  # no torch installed (its file not found): only the shipped files are judged
        pass
    for path in shipped_spec_files():
        references.append((False, {e.name: _fingerprint(e) for e in load_spec(path)}))
    return tuple(references)


def judged_by_content(spec: Spec) -> dict[str, bool | None | str]:
    """Per entry of `spec`, the declarations that judge it: those of the judged file (torch
    2.14.1's, the installed torch's, a seed file's) whose entry of that name is written the same
    and read as the same release; None (nobody's) for an entry written otherwise. A copy of a
    judged file under any name is judged as that file; an edited entry is judged by nobody."""
    judged: dict[str, bool | None | str] = {}
    references = _judged_references()
    for e in spec:
        mark = _fingerprint(e)
        judged[e.name] = next((j for j, entries in references if entries.get(e.name) == mark), None)
    return judged


def _torch_spec_of(name: str, torch_spec: Judged) -> bool | None | str:
    return torch_spec.get(name) if isinstance(torch_spec, Mapping) else torch_spec


def known_difference(name: str, torch_spec: Judged = False) -> Difference | None:
    """Entry `name`'s known difference from torch (declared with `parity_differs` in its op record)
    under the seed files, or with `torch_spec`, under torch's own file; None: another spec file,
    whose differences nobody has judged (a mapping: per entry, see `Judged`)."""
    torch_spec = _torch_spec_of(name, torch_spec)
    difference = record(name).difference
    if difference is None or torch_spec is None:
        return None
    if torch_spec == "newest":
        holds = difference.torch_spec if difference.newest_spec is None else difference.newest_spec
    else:
        holds = difference.torch_spec if torch_spec else difference.seed_spec
    return difference if holds else None


def known_differences(torch_spec: Judged = False) -> dict[str, Difference]:
    """Every known difference under the seed files (or with `torch_spec`, torch's own file), by entry."""
    return {n: d for n in database() if (d := known_difference(n, torch_spec)) is not None}


def unexplained(rows: list[ParityRow], torch_spec: Judged = False) -> list[ParityRow]:
    """The rows that differ from torch otherwise than their records' known differences say (those
    of the seed files, or with `torch_spec`, of torch's own file; None: none, for another spec
    file): what a parity run should fail on."""
    return [r for r in rows if r.differs != _known_columns(r.op, torch_spec)]


def _known_columns(name: str, torch_spec: Judged) -> tuple[str, ...]:
    difference = known_difference(name, torch_spec)
    return difference.columns if difference is not None else ()


def _mark(v: bool | None) -> str:
    return "n/a" if v is None else "ok" if v else "DIFFERS"


def counts(rows: list[ParityRow]) -> str:
    """Agreeing rows per column, of those where the column applies."""
    return ", ".join(
        f"{c} {sum(getattr(r, c) is True for r in rows)}/{sum(getattr(r, c) is not None for r in rows)}"
        for c in COLUMNS
    )


METHOD = f"""Each op is called on every checker sample (`jaxderiv.check.samples_for`; real, and complex where the
checker checks complex; `--samples N`: the N smallest that torch accepts) and on the hand-picked kink and tie inputs declared with `kinks` in its op record
(`jaxderiv.check.opdb`, declared beside each forward in jaxderiv/forward), once through jaxderiv and once
through `torch.ops.aten.<name>.<overload>` with the same arguments.

- **forward**: values, dtype and shape of every output (random ops: shapes and dtypes only, the values
  are each library's generator's);
- **vjp**: `jax.vjp` with a random cotangent against `torch.autograd.grad` with the same cotangent;
  complex: `jax_vjp(ct) == conj(torch_grad(conj(ct)))`; outputs torch does not differentiate (indices,
  pivots) get none, and one torch gives a nonzero gradient that jaxderiv does not differentiate is a difference;
  gauge-dependent outputs (svd, eigh) and one-triangle inputs (cholesky) are compared
  through the sample's gauge-invariant function and input projection, as the checker does;
- **jvp**: `jax.jvp` against `torch.func.jvp`: the `result:` formulas, or, for an entry without one, its
  backward formulas transposed (not compared where torch has no forward-mode derivative: the note says so);
- **kinks**: forward and vjp (and jvp) on the kink inputs: abs/sgn/relu at 0, clamp and friends at their
  bounds, max/min/amax/amin/maximum/minimum/median with ties, sqrt/rsqrt at 0, norm at the zero vector,
  prod with one and two zeros, where with equal branches, sort/topk/kthvalue/mode with equal values,
  max pooling with equal elements in a window;
- **complex**: the same comparisons on complex128 samples.

Tolerances: rtol {RTOL:g}, atol {ATOL:g} in float64/complex128; rtol {RTOL32:g}, atol {ATOL32:g} for the
ops torch runs in float32 only; a looser rtol where the op record declares one (`parity_tolerance`, with
what torch computes less precisely and the error measured: the `how` column says so). `n/a`: nothing to compare (no differentiable input, no forward-mode
derivative in torch, no kink or complex inputs, a `not_implemented` formula, or no torch counterpart: the note
says which). `max error` is the largest absolute difference over all compared values.

PyTorch itself has changed kink conventions and formulas between releases (clamp's gradient at its
bounds changed in 2.14; schemas of elu_backward, softplus_backward, _softmax_backward_data changed
since 1.10), and jaxderiv follows whichever spec file is loaded: with the seed files some
results differ from torch 2.13 for that reason; each such difference is listed below by op, with
its reason, and asserted as a difference by tests/check/test_parity.py."""


def _table(title: str, head: str, items) -> list[str]:
    items = list(items)
    return ["", title, "", head, "|---|---|"] + [f"| {op} | {text} |" for op, text in items] if items else []


# The heading of the known differences, per `torch_spec` (None: another spec file, none listed).
_LISTED = {
    False: "seed files; declared with `parity_differs` in the op records of jaxderiv/forward",
    True: "torch's own spec; declared with `parity_differs(..., torch_spec=True)` in the op records of jaxderiv/forward",
    "newest": "torch 2.14.1's file; declared with `parity_differs(..., newest_spec=True)`, else as for torch's own file, in "
    "the op records of jaxderiv/forward",
    "mixed": "per entry by the file it comes from: torch 2.14.1's declarations (`newest_spec`, else torch's own file's, "
    "`torch_spec=True`) for its entries, the seed files' for the seeds'; in the op records of jaxderiv/forward",
}


def to_markdown(rows: list[ParityRow], title: str, torch_spec: Judged = False) -> str:
    """The page: title, method, the known differences (the seed files', or with `torch_spec`,
    torch's own file's, or per entry; None: none) and the torch equivalents among `rows`, in the rows' order, the table."""
    records = [record(n) for n in dict.fromkeys(r.op for r in rows)]
    lines = [title, "", METHOD]
    if torch_spec is not None:
        lines += _table(
            f"Known differences ({_LISTED['mixed' if isinstance(torch_spec, Mapping) else torch_spec]})",
            "| op | columns: reason |",
            [
                (r.name, f"{', '.join(d.columns)}: {d.reason}")
                for r in records
                if (d := known_difference(r.name, torch_spec)) is not None
            ],
        )
    lines += _table(
        "Compared through an equivalent torch call (`torch_equivalent`) or in float32 (`parity_in_float32`)",
        "| op | why |",
        [(r.name, r.torch_equivalent.reason) for r in records if r.torch_equivalent is not None]
        + [(r.name, f"float32: {r.parity_float32}") for r in records if r.parity_float32 is not None],
    )
    lines += ["", "| op | spec | " + " | ".join(COLUMNS) + " | max error | note |", "|---" * (len(COLUMNS) + 4) + "|"]
    for r in rows:
        note = "; ".join(x for x in (r.note, r.how) if x).replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {r.op} | {r.spec} | "
            + " | ".join(_mark(getattr(r, c)) for c in COLUMNS)
            + f" | {r.max_err:.1e} | {note} |"
        )
    compared = [r for r in rows if any(getattr(r, c) is not None for c in COLUMNS)]
    lines += ["", f"{len(rows)} ops, {len(compared)} compared; agreeing per column (of applicable): {counts(rows)}."]
    return "\n".join(lines) + "\n"


def write_json(rows: list[ParityRow], path: str, torch_version: str) -> None:
    with open(path, "w") as f:
        json.dump(
            {
                "torch": torch_version,
                "rtol": RTOL,
                "atol": ATOL,
                "rtol32": RTOL32,
                "atol32": ATOL32,
                "rows": [dataclasses.asdict(r) for r in rows],
            },
            f,
            indent=1,
        )
