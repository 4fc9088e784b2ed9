"""jaxderiv against torch: the one comparison both sources of samples share.

The record-driven parity run (`parity.py`: each op's samples, kinks and complex samples, read
from its record) and the OpInfo replay (`opinfo.py`: the ATen calls PyTorch's own OpInfo samples
make) ask the same questions of one call; they are answered here, once:

* tolerances: `RTOL`, `ATOL` (the parity run, float64 and complex128), `RTOL32`, `ATOL32` (its
  ops compared in float32), `REPLAY_RTOL`, `REPLAY_ATOL` (the replay's float64 and complex128
  calls), `TORCH_TESTING` (values of other dtypes: torch.testing's defaults);
* values: `close`, `error`, `first_difference`, `verdict`: |ours - torch's| <= atol + rtol
  |torch's| element by element, NaN equal to NaN, integers and booleans exactly;
* derivatives: a `Case` is one call on both sides (its differentiable inexact inputs, each
  side's outputs, the input directions it admits); `gradients` gives both sides' vjp on the
  same cotangents (torch.autograd.grad; JAX's convention is `jax_vjp(ct) ==
  conj(torch_grad(conj(ct)))`), `tangents` both sides' jvp along the same tangents (torch's
  forward-mode AD, `NoForwardAD` where torch has no formula);
* gauge: outputs defined up to a unit factor per column or row (an op record's `Gauge`:
  eigenvectors, singular vectors) taken into torch's choice (`factors`, `align`, `align_value`,
  `torch_cotangents`);
* workers: `run_parallel`, the process pool both spread their per-op comparisons over.

Needs torch, imported on first use (`torch_module`); jaxderiv itself never does.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import JaxderivError
from ..records import Gauge

__all__ = [
    "ATOL",
    "ATOL32",
    "REPLAY_ATOL",
    "REPLAY_RTOL",
    "RTOL",
    "RTOL32",
    "TORCH_TESTING",
    "FAILURES",
    "Case",
    "DrawDependent",
    "NoForwardAD",
    "TorchFailed",
    "Verdict",
    "align",
    "align_value",
    "aten_op",
    "close",
    "error",
    "factors",
    "first_difference",
    "gradients",
    "low_precision",
    "progress_bar",
    "run_parallel",
    "seeded",
    "tangents",
    "to_numpy",
    "to_torch",
    "torch_cotangents",
    "torch_forward",
    "torch_module",
    "verdict",
]

# -- tolerances ---------------------------------------------------------------------------
# The parity run, float64 and complex128: the largest error measured elsewhere is 3e-10
# (binary_cross_entropy_backward); its ops declared `parity_in_float32`, in float32.
RTOL, ATOL = 1e-8, 1e-10
RTOL32, ATOL32 = 1e-4, 1e-5
# The OpInfo replay's float64 and complex128 calls (as its issue asked): ATen calls recorded from
# torch's own samples, some of them ill-conditioned (OpInfo's large and extremal inputs).
REPLAY_RTOL, REPLAY_ATOL = 1e-7, 1e-9
# The values of other dtypes: torch.testing's default tolerances, by dtype name.
TORCH_TESTING = {
    "float32": (1.3e-6, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}


def low_precision(dtype) -> tuple[float, float] | None:
    """torch.testing's (rtol, atol) for a torch or NumPy dtype below float64, None for others."""
    return TORCH_TESTING.get(str(dtype).removeprefix("torch."))


# What either side raises on an input it refuses or a rule it cannot run: jaxderiv's errors,
# torch's (RuntimeError, its _LinAlgError; ValueError, TypeError, IndexError,
# NotImplementedError) and JAX's (TypeError, IndexError and RuntimeError subclasses). A
# comparison counts these as its result (a crash, a refusal, a difference); anything else (a
# NameError, an ImportError: the harness's own bug) propagates.
FAILURES: tuple[type[Exception], ...] = (
    JaxderivError,
    ArithmeticError,
    AssertionError,
    AttributeError,
    LookupError,
    NotImplementedError,
    RuntimeError,
    TypeError,
    ValueError,
)


# -- torch, on first use ------------------------------------------------------------------
def torch_module():
    """torch, or a RuntimeError saying that comparing with it needs it."""
    try:
        import torch
    except ImportError:
        raise RuntimeError("comparing with PyTorch needs torch: install it to run the comparison") from None
    return torch


def aten_op(name: str):
    """torch.ops.aten's overload of an entry name ('add.Tensor', 'abs': its default overload)."""
    base, _, overload = name.partition(".")
    return getattr(getattr(torch_module().ops.aten, base), overload or "default")


def to_torch(v):
    """A value as torch takes it: arrays as tensors (copies), dtypes as torch's, lists element by
    element; a jax.random key as None (torch draws from its own generator); others as they are."""
    torch = torch_module()
    if isinstance(v, jax.Array) and jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key):
        return None
    if isinstance(v, (np.ndarray, jax.Array)):
        return torch.from_numpy(np.array(v))
    if isinstance(v, np.dtype):
        return getattr(torch, v.name)
    if isinstance(v, (list, tuple)):
        return [to_torch(e) for e in v]
    return v


def to_numpy(t) -> np.ndarray:
    """A tensor's values as a NumPy array (a copy; conj, neg and storage-less zero views
    materialized; bfloat16 through float32, NumPy has no bfloat16); other values as arrays."""
    if not hasattr(t, "numpy"):
        return np.asarray(t)
    t = t.detach().cpu()
    if str(t.dtype) == "torch.bfloat16":
        return t.float().numpy(force=True).astype(jnp.bfloat16)
    return t.resolve_conj().resolve_neg().numpy(force=True).copy()


def seeded(seed: int, fn: Callable):
    """fn() with torch's global generator seeded: a sampler's draw repeats."""
    torch_module().manual_seed(seed)
    return fn()


# -- values -------------------------------------------------------------------------------
def _widened(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128) if np.iscomplexobj(a) else a.astype(np.float64)


def close(got, want, rtol: float, atol: float) -> bool:
    """Whether jaxderiv's `got` is torch's `want` within |got - want| <= atol + rtol |want|,
    element by element (same shape; NaN equals NaN; integers and booleans exactly)."""
    a, b = np.asarray(got), np.asarray(want)
    if a.shape != b.shape:
        return False
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        return bool(np.array_equal(a, b.astype(a.dtype) if b.dtype != a.dtype else b))
    return bool(np.allclose(_widened(a), _widened(b), rtol=rtol, atol=atol, equal_nan=True))


def error(got, want) -> float:
    """max |got - want| over the elements not both NaN (nor the same infinity); inf where one
    side is NaN and the other not, or the shapes differ."""
    a, b = np.asarray(got), np.asarray(want)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    a = a.astype(np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64)
    b = b.astype(a.dtype)
    both = (np.isnan(a) & np.isnan(b)) | ((a == b) & np.isinf(a))
    with np.errstate(invalid="ignore"):
        d = np.where(both, 0, np.abs(a - b))
    d = np.where(np.isnan(d), np.inf, d)
    return float(np.max(d))


def first_difference(got, want, rtol: float, atol: float) -> tuple[int, ...]:
    """The index of the first element of `got` outside the tolerance of `want` (same shapes)."""
    a, b = np.asarray(got), np.asarray(want)
    if not a.ndim:
        return ()
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        bad = a != b.astype(a.dtype)
    else:
        bad = ~np.isclose(_widened(a), _widened(b), rtol, atol, equal_nan=True)
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), a.shape))


class Verdict(NamedTuple):
    """One comparison: 'agree' | 'mismatch' (| 'skip', 'crash', 'n/a' where nothing or only one
    side ran), the worst error and where."""

    status: str
    error: float = 0.0
    message: str = ""


def verdict(pairs: Sequence[tuple[str, Any, Any, float, float]]) -> Verdict:
    """The verdict of (label, jaxderiv's, torch's, rtol, atol) pairs of arrays: where they
    disagree, the worst error and its label."""
    worst, why = 0.0, ""
    for label, g, w, rtol, atol in pairs:
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return Verdict("mismatch", float("inf"), f"{label}: shape {g.shape}, torch {w.shape}")
        if not close(g, w, rtol, atol):
            err = error(g, w)
            if err >= worst:
                worst, why = err, f"{label}: max error {err:.3g}"
    return Verdict("agree" if not why else "mismatch", worst, why)


def as_accurate_as_torch(pairs, reference: list[np.ndarray], plain: Verdict) -> Verdict:
    """`plain`'s mismatches of low-precision outputs judged again against `reference` (torch's
    result in float64): jaxderiv's output agrees where it is as close to it as torch's own is
    (twice torch's error, or the atol): two float32 roundings of an ill-conditioned result (a
    matrix exponential of norm 1e5) differ more than the tolerance from each other, not from the
    value. `plain` stands where the reference does not pair with the outputs."""
    if len(reference) != len(pairs):
        return plain
    worst = 0.0
    for (_label, g, w, rtol, atol), r in zip(pairs, reference):
        if close(g, w, rtol, atol):
            continue
        if r.shape != np.shape(g):
            return plain
        if error(g, r) > max(2 * error(w, r), atol):
            return plain
        worst = max(worst, error(g, w))
    return Verdict("agree", worst, "")


# -- derivatives --------------------------------------------------------------------------
class Case:
    """One call of an op on both sides, as the derivative comparisons see it; each source of
    samples has its own (the parity run's `_Call`, a record's sample bound to the schema; the
    replay's `_Bound`, a recorded ATen call)."""

    random = False  # a sampler: torch's derivatives are taken with two seeds, compared where they agree
    seeds = False  # torch's generator seeded before each call (the replay's is the OpInfo samples' own)
    functorch = False  # torch's jvp by torch.func.jvp instead of dual tensors (see torch_jvp)
    # Which side's derivative is taken first, so whose failure speaks when both fail: torch's
    # (the replay: a call torch cannot differentiate is not compared, whatever jaxderiv does) or
    # jaxderiv's (the parity run: a `not_implemented` formula says there is nothing to compare).
    torch_first = True

    def inputs(self) -> list:
        """The differentiable inexact inputs, as NumPy arrays: what both sides differentiate by."""
        raise NotImplementedError

    def jax(self, *xs) -> list:
        """jaxderiv's outputs (a flat list) with the inputs replaced by `xs` (JAX arrays)."""
        raise NotImplementedError

    def torch(self, *xs) -> list:
        """torch's outputs (a flat list) with the inputs replaced by `xs` (tensors)."""
        raise NotImplementedError

    def project(self, grads: list) -> list:
        """Gradients (or tangents) restricted to the input directions the call admits."""
        return grads


class TorchFailed(Exception):
    """torch refused a step (`step`: its forward, backward or forward-mode AD); `__cause__` is
    torch's exception, `line` the first line of its message, `reason` its type and that line."""

    def __init__(self, step: str, cause: BaseException):
        self.step, self.line = step, str(cause).splitlines()[0] if str(cause) else ""
        self.reason = f"{type(cause).__name__}: {self.line}"
        super().__init__(f"torch {step} failed: {self.reason}")


class NoForwardAD(TorchFailed):
    """torch has no forward-mode derivative for the op: nothing to compare a jvp with."""


class DrawDependent(Exception):
    """A sampler whose torch derivative changes with the draw: jaxderiv's draw is another."""


_NO_FORWARD_AD = ("forward AD", "forward-mode", "transformed by a functorch transform")


def _stable(case: Case, run: Callable[[int], list]) -> list:
    """run(seed 0), checked against run(seed 1) for a sampler: its derivative must not depend on the draw."""
    first = run(0)
    if case.random:
        second = run(1)
        if any(
            (a is None) != (b is None) or a is not None and not np.allclose(a, b, equal_nan=True)
            for a, b in zip(first, second)
        ):
            raise DrawDependent
    return first


def _drawn(case: Case, seed: int, fn: Callable):
    return seeded(seed, fn) if case.seeds or case.random else fn()


def torch_forward(case: Case, seed: int = 0) -> tuple[list, list]:
    """(leaves, outputs): torch's outputs at the case's inputs, recorded for autograd (TorchFailed)."""
    torch = torch_module()
    leaves = [to_torch(x).requires_grad_() for x in case.inputs()]
    try:
        with torch.enable_grad():
            return leaves, _drawn(case, seed, lambda: case.torch(*leaves))
    except FAILURES as e:
        raise TorchFailed("forward", e) from e


def _inexact(t) -> bool:
    return bool(t.is_floating_point() or t.is_complex())


def gradients(
    case: Case,
    probe: tuple[list, list],
    outputs: Callable[[list], list],
    cotangents: Callable[[list, list], tuple[list, list]],
) -> tuple[list, list]:
    """(jaxderiv's, torch's) gradients at the case's inputs: each side's vjp of `outputs` (a
    function of its output list: those compared, or the gauge-invariant values of a sample)
    on cotangents; both projected (`Case.project`), torch's conjugated to JAX's convention and
    zeros where torch has no gradient. `probe` is `torch_forward(case)`, reused for torch's
    first draw. `cotangents(ours, torch's)` gets both sides' compared outputs and gives
    (jaxderiv's cotangents, torch's in JAX's convention), None for an output given none. After
    jaxderiv's forward, the two backward passes run in the case's order (`Case.torch_first`);
    jaxderiv's exceptions propagate, torch's raise TorchFailed, a sampler's DrawDependent."""
    torch = torch_module()
    xs = case.inputs()
    ys, pullback = jax.vjp(lambda *a: outputs(case.jax(*a)), *[jnp.asarray(x) for x in xs])
    cts, cts_t = cotangents(ys, outputs(probe[1]))

    def run(seed: int) -> list:
        leaves, outs = probe if seed == 0 else torch_forward(case, seed)
        picked = [(o, c) for o, c in zip(outputs(outs), cts_t) if c is not None and o.requires_grad]
        if not picked:
            return [None] * len(leaves)
        grad_outs = [to_torch(np.asarray(np.conj(c))) for _, c in picked]
        try:
            grads = torch.autograd.grad([o for o, _ in picked], leaves, grad_outs, allow_unused=True)
        except FAILURES as e:
            raise TorchFailed("backward", e) from e
        return [None if g is None else np.conj(to_numpy(g)) for g in grads]

    def pulled() -> list:
        ct_j = [
            np.zeros(y.shape, jax.dtypes.float0)
            if not jnp.issubdtype(y.dtype, jnp.inexact)
            else jnp.zeros(y.shape, y.dtype)
            if c is None
            else jnp.asarray(c, y.dtype)
            for y, c in zip(ys, cts)
        ]
        return [np.asarray(g) for g in jax.block_until_ready(pullback(ct_j))]

    if case.torch_first:
        theirs = _stable(case, run)
        ours = pulled()
    else:
        ours = pulled()
        theirs = _stable(case, run)
    theirs = [np.zeros(np.shape(x), np.asarray(x).dtype) if g is None else g for g, x in zip(theirs, xs)]
    return case.project(ours), case.project(theirs)


def torch_jvp(fn: Callable, xs: Sequence, ts: Sequence, *, functorch: bool = False) -> tuple[list, list]:
    """(primals, tangents) of fn's outputs under torch's forward-mode AD at `xs` along `ts`
    (NumPy arrays): dual tensors (`torch.autograd.forward_ad`), or with `functorch`
    `torch.func.jvp`, which refuses a kernel that runs autograd inside it (linear_backward),
    where dual tensors give a tangent that is not its derivative. An output's tangent is None
    where it is not inexact, zeros where torch gives none. NoForwardAD where torch has no
    forward-mode formula (or functorch refuses the kernel), TorchFailed for another refusal."""
    torch = torch_module()
    try:
        if functorch:
            primals, tangents_ = torch.func.jvp(
                lambda *a: tuple(fn(*a)), tuple(to_torch(x) for x in xs), tuple(to_torch(t) for t in ts)
            )
            return [to_numpy(p) for p in primals], [
                to_numpy(t) if _inexact(p) else None for p, t in zip(primals, tangents_)
            ]
        fw = torch.autograd.forward_ad
        with fw.dual_level():
            duals = [fw.make_dual(to_torch(x), torch.from_numpy(np.array(t, order="C"))) for x, t in zip(xs, ts)]
            primals, tans = [], []
            for o in fn(*duals):
                primal, tangent = fw.unpack_dual(o)
                primals.append(to_numpy(primal))
                tans.append(
                    None
                    if not _inexact(o)
                    else to_numpy(tangent)
                    if tangent is not None
                    else np.zeros(tuple(o.shape), to_numpy(o).dtype)
                )
    except FAILURES as e:
        if isinstance(e, (RuntimeError, NotImplementedError)) and any(m in str(e) for m in _NO_FORWARD_AD):
            raise NoForwardAD("forward-mode AD", e) from e
        raise TorchFailed("forward-mode AD", e) from e
    return primals, tans


@dataclasses.dataclass
class Tangents:
    """Both sides' jvp of one call: jaxderiv's outputs and tangents, torch's outputs and tangents
    (None where an output is not inexact)."""

    values: list
    ours: list
    torch_values: list
    theirs: list


def tangents(case: Case, outputs: Callable[[list], list], ts: Sequence) -> Tangents:
    """Both sides' jvp of `outputs` (a function of the output list, as for `gradients`) at the
    case's inputs along the tangents `ts`, in the case's order (`Case.torch_first`): torch's
    (NoForwardAD, TorchFailed; a sampler's taken with two draws, DrawDependent) and jaxderiv's
    (its exceptions propagate)."""
    xs = case.inputs()
    draws: dict[int, list] = {}

    def run(seed: int) -> list:
        draws[seed] = list(
            _drawn(case, seed, lambda: torch_jvp(lambda *a: outputs(case.torch(*a)), xs, ts, functorch=case.functorch))
        )
        return draws[seed][1]

    def ours() -> tuple[list, list]:
        values, tans = jax.jvp(
            lambda *a: outputs(case.jax(*a)), tuple(jnp.asarray(x) for x in xs), tuple(jnp.asarray(t) for t in ts)
        )
        return [np.asarray(v) for v in values], [np.asarray(t) for t in jax.block_until_ready(tans)]

    if case.torch_first:
        theirs = _stable(case, run)
        values, mine = ours()
    else:
        values, mine = ours()
        theirs = _stable(case, run)
    return Tangents(values, mine, draws[0][0], theirs)


# -- gauge: outputs defined up to a unit factor per column or row -------------------------
# Eigenvectors and singular vectors are unique up to a sign (complex: a phase) per vector; torch
# and jaxderiv may pick different ones for the same input. Such outputs are compared after
# aligning each column's (row's) factor, measured from the two values themselves:
#
# * values: jaxderiv's column k times conj(p_k), where p_k = <torch's column, jaxderiv's> / |.|;
# * tangents: the same factor (both sides' forward-mode formulas give tangents with no component
#   along the free factor, so they differ by exactly the factor);
# * cotangents: jaxderiv's output is torch's times p, so a cotangent c on jaxderiv's side pairs
#   with c * p on torch's. A complex cotangent is first projected onto those the loss does not
#   depend on the factor for (torch's backward refuses the others: "ill-defined").
#
# Numbers are NumPy arrays; torch's values enter converted.
def _unit(p: np.ndarray) -> np.ndarray:
    size = np.abs(p)
    return np.where(size > 0, p / np.where(size > 0, size, 1), 1).astype(p.dtype)


def factors(gauge: Gauge, got: list, want: list) -> dict[int, np.ndarray]:
    """Per output of `gauge`: the unit factors p with got ≈ want * p, broadcastable to the output
    (columns: shape (..., 1, n); rows: (..., m, 1))."""
    out: dict[int, np.ndarray] = {}
    for k, axis in [(k, -2) for k in gauge.columns] + [(k, -1) for k in gauge.rows]:
        if k >= len(got) or got[k] is None or want[k] is None:
            continue
        g, w = np.asarray(got[k]), np.asarray(want[k])
        if g.shape != w.shape or g.ndim < 2:
            continue
        out[k] = _unit(np.sum(np.conj(w) * g, axis=axis, keepdims=True))
    return out


def align(p: dict[int, np.ndarray], k: int, x):
    """jaxderiv's value (or tangent) of output k in torch's choice of factors."""
    return x if k not in p or x is None else np.asarray(x) * np.conj(p[k])


def align_value(gauge: Gauge, p: dict[int, np.ndarray], k: int, got: list, want):
    """jaxderiv's value of output k in torch's choice: the free factors aligned, and the vectors
    past `gauge.counted_by`'s count (a complement's basis) replaced by their projection onto
    torch's, which equals torch's exactly when the two span the same space."""
    x = align(p, k, got[k])
    if gauge.counted_by is None or k not in p:
        return x
    n = np.shape(got[gauge.counted_by])[-1]
    w = np.asarray(want)
    x = np.array(x)
    if k in gauge.columns and x.shape[-1] > n:
        c, t = x[..., :, n:], w[..., :, n:]
        x[..., :, n:] = c @ (np.conj(np.swapaxes(c, -1, -2)) @ t)
    if k in gauge.rows and x.shape[-2] > n:
        r, t = x[..., n:, :], w[..., n:, :]
        x[..., n:, :] = (t @ np.conj(np.swapaxes(r, -1, -2))) @ r
    return x


def torch_cotangents(gauge: Gauge, p: dict[int, np.ndarray], cts: list, torch_outs: list) -> tuple[list, list]:
    """(jaxderiv's cotangents, torch's in JAX's convention) from the random ones `cts` (one per
    output, None where there is none): complex ones projected so that the loss does not depend on
    the free factors (Im Σ_outputs diag(Xᴴ g) = 0, as torch's backward checks), then carried over."""
    theirs = [c if c is None or k not in p else np.asarray(c) * p[k] for k, c in enumerate(cts)]
    if any(np.iscomplexobj(torch_outs[k]) for k in p):
        theirs = _project(gauge, theirs, torch_outs)
    ours = [c if c is None or k not in p else np.asarray(c) * np.conj(p[k]) for k, c in enumerate(theirs)]
    return ours, theirs


def _project(gauge: Gauge, cts: list, outs: list) -> list:
    """Cotangents (JAX's convention: torch gets their conjugates) with the factor-dependent part
    removed: for torch's grad g = conj(c), Im Σ diag(Uᴴ g_U) + Im Σ diag(Vh g_Vhᴴ) = 0, taken out
    of the first column-gauged output (its columns have norm 1)."""
    cols = [k for k in gauge.columns if k < len(cts) and cts[k] is not None]
    rows = [k for k in gauge.rows if k < len(cts) and cts[k] is not None]
    if not cols:
        return cts
    first = cols[0]
    n = min([outs[k].shape[-1] for k in cols] + [outs[k].shape[-2] for k in rows])
    imag = 0.0
    for k in cols:
        g = np.conj(cts[k])[..., :n]
        imag = imag + np.imag(np.sum(np.conj(outs[k][..., :n]) * g, axis=-2))
    for k in rows:
        g = np.conj(cts[k])[..., :n, :]
        imag = imag + np.imag(np.sum(outs[k][..., :n, :] * np.conj(g), axis=-1))
    g = np.conj(cts[first]).copy()
    g[..., :n] -= 1j * outs[first][..., :n] * np.expand_dims(imag, -2)
    out = list(cts)
    out[first] = np.conj(g)
    return out


# -- workers ------------------------------------------------------------------------------
def progress_bar(description: str, total: int):
    """A started rich progress bar and its task."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    task = bar.add_task(description, total=total)
    bar.start()
    return bar, task


def run_parallel(
    work: Callable[[Any], Any], tasks: list, jobs: int, *, sizes: list[int] | None = None, progress: str | None = None
) -> list:
    """work(task) for every task over `jobs` spawned processes (torch and XLA are not fork-safe),
    the results in the tasks' order. `work` is a module-level function (a spawned process
    imports it); tasks are taken as processes free up, so a task should be a few ops' worth.
    With `progress`, a bar of that description advanced by each task's size (`sizes`, else 1)."""
    import concurrent.futures
    import multiprocessing

    sizes = sizes if sizes is not None else [1] * len(tasks)
    results: dict[int, Any] = {}
    bar, task = progress_bar(f"{progress} ({jobs} processes)", sum(sizes)) if progress else (None, None)
    try:
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(work, t): k for k, t in enumerate(tasks)}
            for f in concurrent.futures.as_completed(futures):
                results[futures[f]] = f.result()
                if bar is not None:
                    bar.advance(task, sizes[futures[f]])
    finally:
        if bar is not None:
            bar.stop()
    return [results[k] for k in range(len(tasks))]


def deadline_left(deadline: float | None) -> float | None:
    """Seconds left until a wall-clock `deadline` (time.time()), for a worker's time limit."""
    return None if deadline is None else max(0.0, deadline - time.time())
