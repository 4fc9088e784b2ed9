"""Per-element comparison: a sample's full Jacobians, entry by entry, against JAX autodiff and finite differences.

Slower than the default comparison along random directions, so opt-in (`per_element`), and
re-run by itself on a failed sample (small ones only) to name the exact Jacobian entry that differs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import JaxderivError
from .compare import (
    AUTODIFF,
    Compiled,
    errors_between,
    inexact_cotangents,
    input_label,
    Mismatch,
    moved_cotangents,
    format_number,
)

# What JAX raises where a function cannot be traced or transformed: its tracer errors (TypeErrors:
# ConcretizationTypeError, TracerArrayConversionError, ...; NonConcreteBooleanIndexError, an
# IndexError), a missing differentiation or batching rule (NotImplementedError), a loop reverse
# mode cannot differentiate (ValueError), a forward's or a C++ condition's refusal of a traced
# value (ValueError; inside a formula, the JaxderivError that names the formula), a program XLA
# cannot compile (RuntimeError). Each fallback below evaluates otherwise, where a genuine failure
# raises again.
_UNTRACEABLE = (JaxderivError, TypeError, ValueError, IndexError, NotImplementedError, RuntimeError)
# What a re-run may fail with besides (an XLA failure is a RuntimeError, so is NotImplementedError;
# a floating-point trap an ArithmeticError): reported after the first failure, which stands.
_RERUN_FAILURES = (TypeError, ValueError, LookupError, RuntimeError, ArithmeticError, JaxderivError)


class _Coordinates:
    """The real coordinates of a list of arrays, flattened in order; a complex entry counts twice."""

    def __init__(self, arrays):
        self.shapes = [tuple(np.shape(a)) for a in arrays]
        self.dtypes = [np.dtype(a.dtype) for a in arrays]
        self.complex = [np.issubdtype(t, np.complexfloating) for t in self.dtypes]
        self.sizes = [int(np.prod(s, dtype=int)) * (2 if c else 1) for s, c in zip(self.shapes, self.complex)]
        self.size = sum(self.sizes)

    def flatten(self, arrays):
        parts = [
            jnp.stack([jnp.real(a), jnp.imag(a)], -1).ravel() if c else jnp.ravel(a).astype(jnp.float64)
            for a, c in zip(arrays, self.complex)
        ]
        return jnp.concatenate(parts) if parts else jnp.zeros((0,))

    def unflatten(self, d):
        out, at = [], 0
        for shape, dtype, c, n in zip(self.shapes, self.dtypes, self.complex, self.sizes):
            piece = d[at : at + n]
            at += n
            if c:
                piece = piece.reshape(shape + (2,))
                out.append((piece[..., 0] + 1j * piece[..., 1]).astype(dtype))
            else:
                out.append(piece.reshape(shape).astype(dtype))
        return out

    def locate(self, k: int) -> tuple[int, tuple, str]:
        """(array, element, part) of coordinate k; part is "" or " real part" / " imaginary part"."""
        for i, n in enumerate(self.sizes):
            if k < n:
                part = ""
                if self.complex[i]:
                    k, r = divmod(k, 2)
                    part = " imaginary part" if r else " real part"
                where = tuple(int(j) for j in np.unravel_index(k, self.shapes[i])) if self.shapes[i] else ()
                return i, where, part
            k -= n
        raise IndexError(k)


def jacobian_by_element(mode: str, p, tol, max_inputs: int, max_entries: int) -> str:
    """Compare the full Jacobians of the sample's derivative element by element: the rule's
    (jax.jacrev for vjp, vjp_vjp and vjp_jvp, jax.jacfwd for jvp and jvp_vjp; vjp_vjp's in the
    cotangents too), JAX autodiff's of the forward, and
    central finite differences column by column. Raise _Mismatch naming the worst and the first
    failing entry; return "" when every entry agrees, or why the sample was not compared."""
    xs = list(p.xs)
    n, where = len(xs), []
    if mode in ("vjp_vjp", "jvp_vjp"):
        cts = p.directions["cts"]
        if mode == "vjp_vjp":  # the backward in the cotangents too, as gradgradcheck differentiates it
            where = inexact_cotangents(cts)
            xs += [cts[k] for k in where]

        def backward(fn):
            def at(*args):
                return p.project(list(jax.vjp(fn, *args[:n])[1](moved_cotangents(cts, where, args[n:]))))

            return at

        rule, native = backward(p.rule_fn), backward(p.native_fn)
        fd_base, step, scale = rule, tol.fd_step * 10, 10
        out_name = lambda k: f"gradient of {input_label(p, k)}"  # noqa: E731
    elif mode == "vjp_jvp":
        ws = tuple(p.directions["ws"])
        rule = lambda *xs: list(jax.jvp(p.rule_fn, tuple(xs), ws)[1])  # noqa: E731
        native = lambda *xs: list(jax.jvp(p.native_fn, tuple(xs), ws)[1])  # noqa: E731
        fd_base, step, scale = rule, tol.fd_step * 10, 10
        out_name = lambda k: f"tangent of output {k}"  # noqa: E731
    else:
        rule, native, fd_base, step, scale = p.rule_fn, p.native_fn, p.fd_fn, tol.fd_step, 1
        out_name = lambda k: f"output {k}"  # noqa: E731
    inputs = _Coordinates(xs)
    try:
        y0 = jax.eval_shape(lambda *xs: rule(*xs), *xs)
    except _UNTRACEABLE:  # value-dependent shapes: evaluated
        y0 = rule(*xs)
    outputs = _Coordinates(y0)
    if inputs.size > max_inputs or inputs.size * outputs.size > max_entries:
        entries = inputs.size * outputs.size
        return f"not compared element by element: {inputs.size} input coordinates, {entries} Jacobian entries (caps {max_inputs}, {max_entries})"

    def moved(fn):
        def at(d):
            ds = inputs.unflatten(d)
            ds = p.project(ds[:n]) + ds[n:]  # the inputs' directions the sample admits; any cotangent's
            return outputs.flatten(fn(*[x + t for x, t in zip(xs, ds)]))

        return at

    jac = jax.jacfwd if mode in ("jvp", "jvp_vjp") else jax.jacrev
    zero = jnp.zeros((inputs.size,))
    actual = np.asarray(Compiled(jac(moved(rule)))(zero))
    try:
        ref = np.asarray(Compiled(jac(moved(native)))(zero))
    except _UNTRACEABLE:  # a forward JAX cannot differentiate: finite differences only
        ref = None
    f = moved(fd_base)
    column = lambda e: (f(e) - f(-e)) / (2 * step)  # noqa: E731
    try:
        fd = np.asarray(Compiled(jax.vmap(column))(step * jnp.eye(inputs.size))).T
    except _UNTRACEABLE:  # not batchable: one column at a time
        one = Compiled(column)
        fd = (
            np.stack([np.asarray(one(step * jnp.eye(inputs.size)[i])) for i in range(inputs.size)], axis=1)
            if inputs.size
            else np.zeros((outputs.size, 0))
        )
    value_scale = max(1.0, float(np.max(np.abs(np.asarray(f(zero))), initial=0.0)))
    how = f"jax.{jac.__name__} of the rule's {'backward' if mode in ('vjp_vjp', 'jvp_vjp') else 'jvp' if mode == 'vjp_jvp' else mode}"
    comparisons = (
        [] if ref is None else [(ref, f"jax.{jac.__name__} of {AUTODIFF}", tol.ref_rtol * scale, tol.ref_atol * scale)]
    )
    comparisons.append(
        (
            fd,
            f"central finite differences per input coordinate, step {step:g}",
            tol.fd_rtol * scale,
            tol.fd_atol * scale * value_scale,
        )
    )

    def entry(j, i):
        ko, wo, po = outputs.locate(j)
        ki, wi, pi = inputs.locate(i)
        wrt = input_label(p, ki) if ki < n else f"cotangent of output {where[ki - n]}"
        return f"d {out_name(ko)}{list(wo)}{po} / d {wrt}{list(wi)}{pi}"

    for expected, name, rtol, atol in comparisons:
        abs_err, rel_err, diff, mag = errors_between(actual, expected)
        limit = atol + rtol * mag
        bad = diff > limit
        if np.any(bad):
            j, i = np.unravel_index(int(np.argmax(diff - limit)), diff.shape)
            fj, fi = np.argwhere(bad)[0]
            raise Mismatch(
                f"per-element Jacobian ({outputs.size} x {inputs.size}, {how}) vs {name}: {int(np.sum(bad))} of {bad.size} entries "
                f"outside |actual - reference| <= atol + rtol * |reference| (rtol={rtol:g}, atol={atol:g}); "
                f"worst {entry(j, i)}: actual {format_number(actual[j, i])}, reference {format_number(expected[j, i])}, |difference| {diff[j, i]:.3e}; "
                f"first {entry(fj, fi)}: actual {format_number(actual[fj, fi])}, reference {format_number(expected[fj, fi])}",
                abs_err,
                rel_err,
            )
    return ""


def rerun_by_element(mode: str, p, tol, per_element: bool) -> str:
    """A failed sample compared again element by element (small samples only, unless per_element)."""
    caps = (tol.element_inputs, tol.element_entries) if per_element else (tol.rerun_inputs, tol.rerun_entries)
    try:
        note = jacobian_by_element(mode, p, tol, *caps)
    except Mismatch as m:
        return f". Re-run element by element: {m}"
    except _RERUN_FAILURES as e:  # the first failure stands; say why the re-run did not run
        return f". Re-run element by element could not run: {type(e).__name__}: {e}"
    return f". Re-run element by element: {note or 'every Jacobian entry is within tolerance (all tangents and cotangents defined, under jit)'}"
