"""Comparing outputs defined only up to a unit factor per column or row (an op record's `Gauge`).

Eigenvectors and singular vectors are unique up to a sign (complex: a phase) per vector; torch and
jaxderiv may pick different ones for the same input. Such outputs are compared after aligning
each column's (row's) factor, measured from the two values themselves:

* values: jaxderiv's column k times conj(p_k), where p_k = <torch's column, jaxderiv's> / |.|;
* tangents: the same factor (both sides' forward-mode formulas give tangents with no component
  along the free factor, so they differ by exactly the factor);
* cotangents: jaxderiv's output is torch's times p, so a cotangent c on jaxderiv's side pairs
  with c * p on torch's. A complex cotangent is first projected onto those the loss does not
  depend on the factor for (torch's backward refuses the others: "ill-defined").

Numbers are numpy arrays; torch's values enter converted.
"""

from __future__ import annotations

import numpy as np

from ..records import Gauge

__all__ = ["factors", "align", "align_value", "torch_cotangents"]


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
