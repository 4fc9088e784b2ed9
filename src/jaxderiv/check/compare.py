"""What every comparison of the checker shares: the error measures, the mismatch they raise, and
how the compared functions are evaluated (one jitted program per function, eager where jit fails).

Apart from the checker so that its optional comparisons (elements.py, transforms.py) use the
same measures and messages as the default one without importing the orchestrator. Public:
`random_like` (the directions every comparison draws, the parity run's too), `check_jit` and
`stack_pair`, which the checker, transforms.py and spectools/diff_numeric.py share.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import JaxderivError

ACTUAL = "the spec's rule"  # the side under test in every comparison
AUTODIFF = "JAX autodiff of the forward"


class Mismatch(Exception):
    """A rule outside the tolerance: the message says where; the errors feed the row's figures."""

    def __init__(self, message, abs_err, rel_err):
        super().__init__(message)
        self.abs_err, self.rel_err = abs_err, rel_err


def errors_between(actual, expected):
    a, e = np.asarray(actual), np.asarray(expected)
    both_nan = np.isnan(a) & np.isnan(e)
    diff = np.where(both_nan, 0.0, np.abs(a - e))
    diff = np.where(np.isnan(diff), np.inf, diff)
    abs_err = float(np.max(diff, initial=0.0))
    rel_err = abs_err / max(float(np.max(np.abs(np.where(np.isnan(e), 0, e)), initial=0.0)), 1e-300)
    return abs_err, rel_err, diff, np.abs(np.where(np.isnan(e), 0, e))


def format_number(v) -> str:
    v = complex(v) if np.iscomplexobj(v) else float(v)
    return f"{v.real:.8g}{v.imag:+.8g}j" if isinstance(v, complex) else f"{v:.8g}"


class Accumulator:
    """Worst errors seen over the samples of one op and mode."""

    def __init__(self):
        self.abs_err, self.rel_err = 0.0, 0.0

    def compare(self, check: str, side: str, reference: str, actual, expected, rtol, atol):
        """Raise _Mismatch, saying where and by how much, unless |actual - expected| <= atol + rtol |expected|."""
        abs_err, rel_err, diff, scale = errors_between(actual, expected)
        self.abs_err, self.rel_err = max(self.abs_err, abs_err), max(self.rel_err, min(rel_err, abs_err))
        bad = diff > atol + rtol * scale
        if np.any(bad):
            index = np.unravel_index(int(np.argmax(diff - rtol * scale)), diff.shape) if diff.ndim else ()
            where = tuple(int(i) for i in index)
            raise Mismatch(
                f"{check}, {side}: actual ({ACTUAL}) differs from the reference ({reference}): "
                f"max |actual - reference| = {abs_err:.3e} at element {where} "
                f"(actual {format_number(np.asarray(actual)[where])}, reference {format_number(np.asarray(expected)[where])}); "
                f"{int(np.sum(bad))} of {bad.size} element(s) outside the tolerance |actual - reference| <= atol + rtol * |reference|, "
                f"rtol={rtol:g}, atol={atol:g}",
                abs_err,
                rel_err,
            )


def input_label(p, k: int) -> str:
    """Differentiable input k as reports name it, with its schema argument where known."""
    name = p.input_name(k) if hasattr(p, "input_name") else None
    return f"input {k}" + (f" (`{name}`)" if name else "")


def random_like(rng, x):
    """Standard normal entries (real and imaginary) of x's shape and dtype; x may be abstract."""
    shape, dtype = np.shape(x), np.dtype(x.dtype)
    r = rng.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        r = r + 1j * rng.normal(size=shape)
    return jax.device_put(r.astype(dtype))  # jnp.asarray would compile a copy program per shape


# A check runs each program once or twice: XLA's backend optimizations (LLVM -O) cost more
# compile time than they save (results agree to rounding: no fast-math either way). Splitting a
# program into parallel LLVM modules only adds work where every core already compiles a
# program of its own (one worker per core): 17 % less CPU per program, measured.
_CHECK_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_cpu_use_fusion_emitters": False,
    "xla_cpu_parallel_codegen_split_count": 1,
}


def check_jit(fn: Callable):
    """jax.jit with the checks' compiler options (above)."""
    return jax.jit(fn, compiler_options=_CHECK_COMPILE)


# What a function may raise under jit and not eagerly: JAX's tracer errors (TypeErrors:
# ConcretizationTypeError, TracerArrayConversionError, ...; NonConcreteBooleanIndexError, an
# IndexError), a forward's or a formula's refusal of a traced value (ValueError, JaxderivError),
# a missing rule (NotImplementedError), a failed XLA compile (a RuntimeError), an assertion or a
# lookup on a value a tracer does not have. Evaluated eagerly, a genuine failure raises again.
UNTRACEABLE: tuple[type[Exception], ...] = (
    JaxderivError,
    TypeError,
    ValueError,
    LookupError,
    NotImplementedError,
    RuntimeError,
    AssertionError,
    ArithmeticError,
)


class Compiled:
    """`fn` as one jitted XLA program, or eager where it cannot be traced (value-dependent shapes).

    Eager evaluation compiles one small program per primitive and shape; a check runs
    hundreds of them. One program per function and sample compiles several times less.
    The eager result (value or exception) is the authority: any failure under jit falls back.
    """

    def __init__(self, fn: Callable):
        self.fn, self.jitted = fn, check_jit(fn)

    def __call__(self, *args):
        if self.jitted is not None:
            try:
                return self.jitted(*args)
            except UNTRACEABLE:  # evaluated eagerly below, which raises what it raises
                self.jitted = None
        return self.fn(*args)


def real_pairing(a: Sequence, b: Sequence) -> float:
    """Re(sum(a * b)): the pairing under which JAX's vjp is the transpose of its jvp."""
    return float(sum(np.real(np.sum(np.asarray(x) * np.asarray(y))) for x, y in zip(a, b)))


def central_differences(plus, minus, h):
    # numpy: in JAX each shape would compile two more tiny programs (same IEEE arithmetic)
    return [(np.asarray(a) - np.asarray(b)) / (2 * h) for a, b in zip(plus, minus)]


def stack_pair(a: Sequence, b: Sequence) -> list:
    """Arrays of `a` and `b` paired into one batch of 2 (for jax.vmap)."""
    return [jnp.stack([x, y]) for x, y in zip(a, b)]


def inexact_cotangents(cts: Sequence) -> list[int]:
    """The outputs whose cotangents a mode may differentiate with respect to (not integer ones)."""
    return [k for k, c in enumerate(cts) if jnp.issubdtype(c.dtype, jnp.inexact)]


def moved_cotangents(cts: Sequence, where: Sequence[int], values: Sequence) -> list:
    """`cts` with the cotangents of the outputs `where` replaced by `values` (traced ones)."""
    moved = list(cts)
    for k, c in zip(where, values):
        moved[k] = c
    return moved
