"""PyTorch's own OpInfo samples as a parity corpus (a first slice).

Every sample of `torch.testing._internal.common_methods_invocations.op_db` is run under a
`TorchDispatchMode` that records each ATen overload actually called (after autograd and
CompositeImplicit decompositions), with its arguments cloned. Each recorded call whose exact
overload the registry implements (an entry with a forward implementation) is then replayed:

* forward: the jaxderiv op's value and dtype against the overload run by torch;
* vjp: `jax.vjp` of the jaxderiv op against `torch.autograd.grad` of the overload, on a seeded
  cotangent, in float64 (complex128 for complex calls; JAX's convention is
  `jax_vjp(ct) == conj(torch_grad(conj(ct)))`).

Identical calls (same overload, shapes, dtypes and non-tensor arguments) are compared once.
jvp is not compared yet.

    python -m jaxderiv.torch.opinfo --registry torch --ops abs,exp --markdown report.md

Needs torch and `expecttest` (torch's testing module imports it).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import time
import zlib
from typing import Any, Iterable

import jax
import jax.numpy as jnp
import numpy as np
import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from ..registry import Registry, default_registry
from ._resolve import aten_name, torch_registry
from ._values import convert_constant, to_numpy

__all__ = ["Recorder", "Call", "OpRow", "Replay", "replay", "record_sample", "main"]

RTOL, ATOL = 1e-7, 1e-9  # float64 (and complex128), as the issue asks
# Other dtypes' forward values: torch.testing's default tolerances.
_TOLS = {
    torch.float32: (1.3e-6, 1e-5), torch.complex64: (1.3e-6, 1e-5),
    torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
}


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
    """Records every ATen OpOverload dispatched while active, with cloned arguments."""

    def __init__(self):
        super().__init__()
        self.calls: list[Call] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.OpOverload) and func.namespace == "aten":
            try:
                self.calls.append(Call(func, pytree.tree_map(_clone, tuple(args)), pytree.tree_map(_clone, dict(kwargs))))
            except Exception:  # an argument that cannot be cloned (a storage, an odd subclass)
                pass
        return func(*args, **kwargs)


def record_sample(opinfo, sample) -> list[Call]:
    """The ATen calls one OpInfo sample makes (forward only, no autograd)."""
    rec = Recorder()
    with torch.no_grad(), rec:
        opinfo(sample.input, *sample.args, **sample.kwargs)
    return rec.calls


# -- comparing ----------------------------------------------------------------------------
def _tensors(tree) -> list:
    return [x for x in pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def _to_jax(tree):
    return pytree.tree_map(lambda x: convert_constant(x) if isinstance(x, (torch.Tensor, torch.dtype, torch.device, torch.layout, torch.memory_format, torch.SymInt, torch.SymFloat, torch.SymBool, torch.Size)) else x, tree)


def _wide(x):
    """float64/complex128 copies of inexact tensors, for the derivative comparison."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            return x.detach().to(torch.complex128)
        if x.is_floating_point():
            return x.detach().to(torch.float64)
        return x.detach().clone()
    return x


def _err(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| over elements where they are not both NaN (inf where shapes differ)."""
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


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        return bool(np.array_equal(a, b.astype(a.dtype) if b.dtype != a.dtype else b))
    return bool(np.allclose(a.astype(np.complex128) if np.iscomplexobj(a) else a.astype(np.float64),
                            b.astype(np.complex128) if np.iscomplexobj(b) else b.astype(np.float64),
                            rtol=rtol, atol=atol, equal_nan=True))


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return to_numpy(x)
    return np.asarray(x)


@dataclasses.dataclass
class Outcome:
    """One distinct call's comparison: per mode 'agree' | 'mismatch' | 'crash' | 'skip'."""

    forward: str
    vjp: str
    forward_error: float = 0.0
    vjp_error: float = 0.0
    message: str = ""


class _Crash(Exception):
    """An exception inside jaxderiv (as opposed to torch's side or the harness)."""


def _compare_forward(op, call: Call) -> tuple[str, float, str]:
    args, kwargs = pytree.tree_map(_clone, (call.args, call.kwargs))
    expected = call.func(*args, **kwargs)
    jargs, jkwargs = _to_jax(call.args), _to_jax(call.kwargs)  # may raise TypeError (complex32): not comparable
    try:
        got = op(*jargs, **jkwargs)
        got = jax.block_until_ready(got)
    except Exception as e:  # noqa: BLE001 - a crash is a result here
        raise _Crash(f"forward: {type(e).__name__}: {e}") from e
    exp_leaves = [x for x in pytree.tree_leaves(expected) if x is not None]
    got_leaves = [x for x in jax.tree.leaves(got) if x is not None]
    if len(exp_leaves) != len(got_leaves):
        return "mismatch", float("inf"), f"{len(got_leaves)} outputs, torch has {len(exp_leaves)}"
    worst, why = 0.0, ""
    for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
        g = np.asarray(g)
        if isinstance(e, torch.Tensor):
            want = convert_constant(e.dtype)
            if g.dtype != want:
                return "mismatch", float("inf"), f"output {i}: dtype {g.dtype}, torch {want}"
            rtol, atol = _TOLS.get(e.dtype, (RTOL, ATOL))
        else:
            rtol, atol = RTOL, ATOL
        en = _np(e)
        if g.shape != en.shape:
            return "mismatch", float("inf"), f"output {i}: shape {g.shape}, torch {en.shape}"
        if not _close(g, en, rtol, atol):
            err = _err(g, en)
            if err >= worst:
                worst, why = err, f"output {i}: max error {err:.3g}"
    return ("agree" if not why else "mismatch"), worst, why


def _split(b: dict, names: list, kwarg_only: set):
    """Positional arguments while they are given in schema order; the rest by name."""
    pos, i = [], 0
    while i < len(names) and names[i] not in kwarg_only and names[i] in b:
        pos.append(b[names[i]])
        i += 1
    return pos, {n: b[n] for n in names[i:] if n in b}


def _compare_vjp(op, call: Call, seed: int) -> tuple[str, float, str]:
    """jax.vjp of the op vs torch.autograd.grad of the overload, in float64/complex128."""
    names = [a.name for a in call.func._schema.arguments]
    kwarg_only = {a.name for a in call.func._schema.arguments if a.kwarg_only}
    args, kwargs = pytree.tree_map(_wide, (call.args, call.kwargs))
    # which arguments (by schema name) are differentiable: the spec's inputs with an inexact dtype
    diff = set(op.differentiable_inputs)
    bound = dict(zip([n for n in names if n not in kwarg_only], args))
    bound.update(kwargs)
    targets = []  # (name, index or None, tensor)
    for n, v in bound.items():
        if n not in diff:
            continue
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()):
            targets.append((n, None, v))
        elif isinstance(v, (list, tuple)):
            for i, t in enumerate(v):
                if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
                    targets.append((n, i, t))
    if not targets:
        return "skip", 0.0, "no differentiable input"

    # torch
    leaves_t = [t.clone().requires_grad_(True) for _, _, t in targets]

    def substitute(values, wrap):
        b = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in bound.items()}
        for (n, i, _), x in zip(targets, values):
            if i is None:
                b[n] = x
            else:
                b[n][i] = x
        return _split({k: wrap(v) for k, v in b.items()}, names, kwarg_only)

    pos, kw = substitute(leaves_t, lambda v: v)
    try:
        with torch.enable_grad():
            out_t = call.func(*pos, **kw)
    except Exception as e:  # noqa: BLE001
        return "skip", 0.0, f"torch forward in float64 failed: {type(e).__name__}: {str(e)[:120]}"
    outs_t = [x for x in pytree.tree_leaves(out_t) if isinstance(x, torch.Tensor)]
    rng = np.random.default_rng(seed)

    def ct_for(shape, complex_):
        r = np.asarray(rng.standard_normal(shape))
        return np.asarray(r + 1j * rng.standard_normal(shape)) if complex_ else r

    cts = [ct_for(tuple(o.shape), o.is_complex()) if (o.is_floating_point() or o.is_complex()) else None for o in outs_t]
    grad_outs, with_grad = [], []
    for o, c in zip(outs_t, cts):
        if c is not None and o.requires_grad:
            with_grad.append(o)
            grad_outs.append(torch.from_numpy(np.asarray(np.conj(c)).astype(np.complex128 if o.is_complex() else np.float64)))
    if not with_grad:
        return "skip", 0.0, "torch output carries no gradient"
    try:
        g_t = torch.autograd.grad(with_grad, leaves_t, grad_outs, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        return "skip", 0.0, f"torch backward failed: {type(e).__name__}: {str(e)[:120]}"
    want = [np.conj(to_numpy(g)) if g is not None else np.zeros(tuple(t.shape), to_numpy(t).dtype) for g, t in zip(g_t, leaves_t)]
    torch_has_grad = [o.requires_grad for o in outs_t]

    # jax
    xs = [jnp.asarray(to_numpy(t)) for _, _, t in targets]
    jbound = {k: _to_jax(v) for k, v in bound.items()}

    def f(*vals):
        b = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in jbound.items()}
        for (n, i, _), x in zip(targets, vals):
            if i is None:
                b[n] = x
            else:
                b[n][i] = x
        p, k = _split(b, names, kwarg_only)
        return op(*p, **k)

    try:
        out_j, pullback = jax.vjp(f, *xs)
        leaves_j, treedef = jax.tree.flatten(out_j)
        if len(leaves_j) != len(outs_t):
            return "mismatch", float("inf"), f"{len(leaves_j)} outputs, torch has {len(outs_t)}"
        ct_j = []
        for y, c, has in zip(leaves_j, cts, torch_has_grad):
            y = jnp.asarray(y)
            if not jnp.issubdtype(y.dtype, jnp.inexact):
                ct_j.append(np.zeros(y.shape, jax.dtypes.float0))
            elif c is None or not has:
                ct_j.append(jnp.zeros(y.shape, y.dtype))
            else:
                ct_j.append(jnp.asarray(c, y.dtype))
        got = pullback(jax.tree.unflatten(treedef, ct_j))
        got = [np.asarray(g) for g in jax.block_until_ready(got)]
    except Exception as e:  # noqa: BLE001
        raise _Crash(f"vjp: {type(e).__name__}: {e}") from e
    worst, why = 0.0, ""
    for (n, i, _), g, w in zip(targets, got, want):
        if g.shape != w.shape:
            return "mismatch", float("inf"), f"grad {n}{'' if i is None else f'[{i}]'}: shape {g.shape}, torch {w.shape}"
        if not _close(g, w, RTOL, ATOL):
            err = _err(g, w)
            if err >= worst:
                worst, why = err, f"grad {n}{'' if i is None else f'[{i}]'}: max error {err:.3g}"
    return ("agree" if not why else "mismatch"), worst, why


def compare_call(op, call: Call, seed: int = 0) -> Outcome:
    """Forward and vjp of one recorded call (see the module docstring)."""
    try:
        fwd, fe, fwhy = _compare_forward(op, call)
    except _Crash as e:
        return Outcome("crash", "skip", message=str(e)[:300])
    except Exception as e:  # noqa: BLE001 - torch could not re-run it, or a value has no JAX form
        return Outcome("skip", "skip", message=f"not comparable: {type(e).__name__}: {str(e)[:120]}")
    try:
        vjp, ve, vwhy = _compare_vjp(op, call, seed)
    except _Crash as e:
        return Outcome(fwd, "crash", fe, message=str(e)[:300])
    msg = "; ".join(m for m in (fwhy and f"forward {fwhy}", vwhy and f"vjp {vwhy}") if m)
    return Outcome(fwd, vjp, fe, ve, msg)


# -- the replay ---------------------------------------------------------------------------
@dataclasses.dataclass
class OpRow:
    """Per ATen overload: distinct calls compared, agreeing per mode, mismatches, crashes."""

    op: str
    calls: int = 0  # distinct calls compared
    forward_agree: int = 0
    vjp_agree: int = 0
    vjp_compared: int = 0  # calls with a vjp comparison (agree + mismatch + crash)
    forward_mismatch: int = 0
    vjp_mismatch: int = 0
    forward_max_error: float = 0.0
    vjp_max_error: float = 0.0
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
        self.crashes += "crash" in (o.forward, o.vjp)
        if o.forward == "mismatch":
            self.forward_max_error = max(self.forward_max_error, o.forward_error)
        if o.vjp == "mismatch":
            self.vjp_max_error = max(self.vjp_max_error, o.vjp_error)
        if o.message and ("crash" in (o.forward, o.vjp) or "mismatch" in (o.forward, o.vjp)):
            if len(self.messages) < 3 and o.message not in self.messages:
                self.messages.append(f"[{opinfo}] {o.message}")


@dataclasses.dataclass
class Replay:
    rows: dict  # overload name -> OpRow
    missing: dict  # overload name -> set of OpInfo names whose samples call it
    calls_recorded: int = 0
    calls_replayed: int = 0  # recorded calls of implemented overloads (before the cache)
    skipped: dict = dataclasses.field(default_factory=collections.Counter)  # reason -> count
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
        }

    def summary(self) -> str:
        t = self.totals
        pct = lambda a, b: f"{100 * a / b:.1f}%" if b else "-"  # noqa: E731
        lines = [
            f"OpInfo replay against the {self.registry} registry{' (stopped at the time limit)' if self.timed_out else ''}",
            f"  OpInfos run: {self.opinfos}; ATen calls recorded: {self.calls_recorded}; calls of implemented overloads replayed: {self.calls_replayed}",
            f"  distinct calls compared: {t['distinct_calls']} over {len(self.rows)} distinct ops",
            f"  forward agree: {t['forward_agree']}/{t['distinct_calls']} ({pct(t['forward_agree'], t['distinct_calls'])}), mismatches {t['forward_mismatch']}",
            f"  vjp agree: {t['vjp_agree']}/{t['vjp_compared']} ({pct(t['vjp_agree'], t['vjp_compared'])}), mismatches {t['vjp_mismatch']}",
            f"  crashes (exceptions inside jaxderiv): {t['crashes']}",
            f"  overloads called but not implemented by the registry: {len(self.missing)}",
            f"  OpInfos whose samples failed in torch itself: {len(self.sample_errors)}",
            f"  time: {self.seconds:.1f} s",
        ]
        return "\n".join(lines)

    def markdown(self) -> str:
        out = ["# OpInfo replay", "", "```", self.summary(), "```", "",
               "## Ops ranked by mismatches and crashes", "",
               "| op | distinct calls | forward agree | vjp agree / compared | forward mismatches (max err) | vjp mismatches (max err) | crashes | first messages |",
               "|---|---|---|---|---|---|---|---|"]
        rows = sorted(self.rows.values(), key=lambda r: (-(r.forward_mismatch + r.vjp_mismatch + r.crashes), r.op))
        for r in rows:
            msg = "<br>".join(m.replace("|", "\\|").replace("\n", " ")[:200] for m in r.messages)
            out.append(f"| `{r.op}` | {r.calls} | {r.forward_agree} | {r.vjp_agree}/{r.vjp_compared} | {r.forward_mismatch} ({r.forward_max_error:.3g}) | {r.vjp_mismatch} ({r.vjp_max_error:.3g}) | {r.crashes} | {msg} |")
        out += ["", "## Overloads OpInfo samples call that the registry lacks", "", "ranked by how many OpInfos call them", "",
                "| overload | OpInfos | examples |", "|---|---|---|"]
        for name, infos in sorted(self.missing.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            out.append(f"| `{name}` | {len(infos)} | {', '.join(sorted(infos)[:5])} |")
        if self.skipped:
            out += ["", "## Calls not compared", "", "| reason | calls |", "|---|---|"]
            for why, n in self.skipped.most_common():
                out.append(f"| {why} | {n} |")
        return "\n".join(out) + "\n"


def _implemented(registry: Registry, name: str):
    if name not in registry.spec:
        return None
    op = registry.op(name)
    return op if op.impl is not None else None


def _dtypes_for(opinfo, dtypes: Iterable[torch.dtype]) -> list[torch.dtype]:
    supported = opinfo.supported_dtypes("cpu")
    return [d for d in dtypes if d in supported]


def replay(registry: Registry | str = "torch", ops: Iterable[str] | None = None, *, limit: int | None = None,
           samples: int | None = None, dtypes=(torch.float64, torch.complex128), time_limit: float | None = None,
           progress: bool = False, seed: int = 0) -> Replay:
    """Replay op_db samples (filtered to OpInfo names `ops`; the first `limit` OpInfos; at most
    `samples` samples per OpInfo and dtype) and compare every implemented call."""
    from torch.testing._internal.common_methods_invocations import op_db

    label = registry if isinstance(registry, str) else repr(registry)
    if isinstance(registry, str):
        registry = {"torch": torch_registry, "default": default_registry}[registry]()
    infos = list(op_db)
    if ops is not None:
        wanted = list(ops)
        infos = [o for o in infos if o.name in wanted or (o.variant_test_name and f"{o.name}.{o.variant_test_name}" in wanted)]
    if limit is not None:
        infos = infos[:limit]
    result = Replay(rows={}, missing=collections.defaultdict(set), registry=label)
    cache: dict = {}
    start = time.monotonic()
    bar = None
    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        bar = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        task = bar.add_task("OpInfos", total=len(infos))
        bar.start()
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
                                calls = record_sample(info, sample)
                            except Exception as e:  # noqa: BLE001 - torch rejects its own sample (error inputs etc.)
                                result.sample_errors.setdefault(full, f"{type(e).__name__}: {str(e)[:120]}")
                                continue
                            _compare_calls(registry, calls, full, result, cache, seed)
                    except Exception as e:  # noqa: BLE001 - sample generation itself failed
                        result.sample_errors.setdefault(full, f"sample_inputs: {type(e).__name__}: {str(e)[:120]}")
                if bar is not None:
                    bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    result.seconds = time.monotonic() - start
    result.missing = dict(result.missing)
    return result


def _compare_calls(registry, calls, opinfo, result: Replay, cache, seed):
    for call in calls:
        result.calls_recorded += 1
        name = call.name
        op = _implemented(registry, name)
        if op is None:
            result.missing[name].add(opinfo)
            continue
        if call.func._schema.is_mutable:
            result.skipped["mutating overload"] += 1
            continue
        if torch.Tag.nondeterministic_seeded in call.func.tags:
            result.skipped["random (nondeterministic_seeded)"] += 1
            continue
        if any(t.layout != torch.strided or t.is_quantized or t.is_nested for t in _tensors((call.args, call.kwargs))):
            result.skipped["non-strided tensor argument"] += 1
            continue
        result.calls_replayed += 1
        key = call.key()
        row = result.rows.setdefault(name, OpRow(name))
        if key in cache:
            row.opinfos.add(opinfo)
            continue
        try:
            outcome = compare_call(op, call, seed=seed + zlib.crc32(repr(key).encode()))
        except Exception as e:  # noqa: BLE001 - a bug of this harness, not of jaxderiv: counted apart
            result.skipped[f"harness error: {type(e).__name__}: {str(e)[:80]}"] += 1
            continue
        cache[key] = outcome
        if outcome.forward == "skip":
            result.skipped[outcome.message[:100]] += 1
            continue
        row.add(outcome, opinfo)


# -- CLI ----------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxderiv.torch.opinfo", description="Replay PyTorch's OpInfo samples through jaxderiv and compare with torch.")
    p.add_argument("--registry", choices=["default", "torch"], default="torch")
    p.add_argument("--ops", help="comma-separated OpInfo names (default: all of op_db)")
    p.add_argument("--limit", type=int, help="at most N OpInfos")
    p.add_argument("--samples", type=int, help="at most N samples per OpInfo and dtype")
    p.add_argument("--dtypes", default="float64,complex128", help="sample dtypes (default float64,complex128)")
    p.add_argument("--time-limit", type=float, help="stop starting new samples after this many seconds")
    p.add_argument("--markdown", help="write a markdown report to FILE")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    r = replay(a.registry, a.ops.split(",") if a.ops else None, limit=a.limit, samples=a.samples,
               dtypes=tuple(getattr(torch, d) for d in a.dtypes.split(",")), time_limit=a.time_limit,
               progress=not a.no_progress)
    print(r.summary())
    t = r.totals
    worst = sorted(r.rows.values(), key=lambda x: -(x.forward_mismatch + x.vjp_mismatch + x.crashes))[:10]
    worst = [w for w in worst if w.forward_mismatch + w.vjp_mismatch + w.crashes]
    if worst:
        print("top mismatching / crashing ops:")
        for w in worst:
            print(f"  {w.op}: forward {w.forward_mismatch} (max {w.forward_max_error:.3g}), vjp {w.vjp_mismatch} (max {w.vjp_max_error:.3g}), crashes {w.crashes}")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(r.markdown())
        print(f"wrote {a.markdown}")
    return 0 if t["crashes"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
