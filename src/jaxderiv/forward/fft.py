"""Forward implementations of ATen's FFT kernels: `_fft_r2c`, `_fft_c2r`, `_fft_c2c` and the
PyTorch <= 1.7 `_fft_with_size`, which held complex numbers as a trailing dim of size 2.

`normalization` is ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the number of
points of the (full) signal. `forward` picks exp(-2 pi i k t / n), its inverse exp(+...).
A complex-to-real transform reads the first n // 2 + 1 entries of its last dim, the others
being their conjugate mirror images (Hermitian symmetry), as pocketfft and MKL do.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..records import Sample, samples
from . import impl


def _scale(normalization, n):
    return (1.0, 1.0 / math.sqrt(n), 1.0 / n)[normalization] if n else 1.0


def _c2c(x, dim, normalization, forward):
    dim = tuple(dim)
    n = math.prod(x.shape[d] for d in dim)
    y = jnp.fft.fftn(x, axes=dim) if forward else jnp.fft.ifftn(x, axes=dim, norm="forward")
    return y * _scale(normalization, n)


def _r2c(x, dim, normalization, onesided, forward=True):
    dim = tuple(dim)
    n = math.prod(x.shape[d] for d in dim)
    y = jnp.fft.rfftn(x, axes=dim) if onesided else jnp.fft.fftn(x.astype(jnp.result_type(x, jnp.complex64)), axes=dim)
    y = y * _scale(normalization, n)
    return y if forward else jnp.conj(y)  # real input: the inverse transform is the conjugate


def _c2r(x, dim, normalization, sizes, forward=False):
    """Inverse (or forward) complex-to-real transform to signal `sizes` over `dim`."""
    dim = tuple(dim)
    z = jnp.conj(x) if forward else x
    return jnp.fft.irfftn(z, s=tuple(sizes), axes=dim, norm="forward") * _scale(normalization, math.prod(sizes))


def _complex_dtype(x):
    if not jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise RuntimeError(f"expected a complex input tensor, got {x.dtype}")


@impl("_fft_c2c")
def fft_c2c(self, dim, normalization, forward):
    _complex_dtype(self)
    return _c2c(self, dim, normalization, forward)


@impl("_fft_r2c")
def fft_r2c(self, dim, normalization, onesided):
    if not jnp.issubdtype(self.dtype, jnp.floating):
        raise RuntimeError(f"expected a real floating input tensor, got {self.dtype}")
    return _r2c(self, dim, normalization, onesided)


@impl("_fft_c2r")
def _fft_c2r(self, dim, normalization, last_dim_size):
    _complex_dtype(self)
    dim = [d % self.ndim for d in dim]
    sizes = [self.shape[d] for d in dim[:-1]] + [last_dim_size]
    return _c2r(self, dim, normalization, sizes)


# -- PyTorch <= 1.7: complex numbers as a trailing dim of size 2 ---------------------------------


def _as_complex(x):
    return x[..., 0] + 1j * x[..., 1]


def _as_real(z):
    return jnp.stack([jnp.real(z), jnp.imag(z)], axis=-1)


@impl("_fft_with_size.norm_modes")
def fft_with_size(
    self,
    signal_ndim,
    complex_input,
    complex_output,
    inverse,
    checked_signal_sizes,
    normalization,
    onesided,
    output_sizes,
):
    """The signal is the last `signal_ndim` dims before the complex one; any dims before are batch.

    checked_signal_sizes are the full signal's sizes (a one-sided input or output has
    n // 2 + 1 entries in its last signal dim); output_sizes only repeat the output's shape.
    """
    x = _as_complex(self) if complex_input else self
    dim = tuple(range(x.ndim - signal_ndim, x.ndim))
    if complex_input and complex_output:
        return _as_real(_c2c(x, dim, normalization, not inverse))
    if complex_output:
        return _as_real(_r2c(x, dim, normalization, onesided, not inverse))
    if not complex_input:
        raise RuntimeError("_fft_with_size: a real-to-real transform is not defined")
    return _c2r(x, dim, normalization, checked_signal_sizes, not inverse)


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker inputs of the FFT kernels: every normalization, one- and two-sided spectra, even
# and odd last sizes, batch dims, and transforms over 1 to 3 signal dims.
#
# PyTorch 1.7's fft_backward has no branch for a two-sided complex-to-real input: it runs the
# same c2r transform on the real gradient, which ATen rejected (no trailing dim of 2), so
# torch.irfft(onesided=False) had no working gradient there; no sample asks for it.
NORMS = (0, 1, 2)


def _complex(rng, shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def _kernel_samples(rng, cases, draw, last, label):
    """A kernel's samples of (shape, dim, normalization, its last argument's value) cases: the
    input `draw(rng, shape)`, `last` the last argument's name, `label` its name in the labels."""
    return [
        Sample((), {"self": draw(rng, s), "dim": d, "normalization": n, last: v}, f"{s} dim={d} norm={n} {label}={v}")
        for s, d, n, v in cases
    ]


@samples("_fft_c2c")
def _c2c_samples(op, rng, dtype=np.complex128):
    cases = [
        ((2, 5), (1,), 0, True),
        ((3, 4), (0, 1), 1, False),
        ((2, 3, 4), (2, 0), 2, True),
        ((2, 2, 3, 2), (1, 2, 3), 1, True),
    ]
    return _kernel_samples(rng, cases, _complex, "forward", "forward")


@samples("_fft_r2c")
def _r2c_samples(op, rng, dtype=np.float64):
    cases = [
        ((2, 5), (1,), 0, True),
        ((2, 6), (1,), 1, False),
        ((3, 4, 5), (1, 2), 2, True),
        ((4, 3, 2), (2, 0), 1, True),
    ]
    return _kernel_samples(rng, cases, lambda rng, s: rng.normal(size=s), "onesided", "onesided")


@samples("_fft_c2r")
def _c2r_samples(op, rng, dtype=np.complex128):
    cases = [((2, 3), (1,), 0, 5), ((2, 4), (1,), 1, 6), ((3, 4, 3), (1, 2), 2, 4), ((3, 2, 3), (2, 0), 1, 5)]
    return _kernel_samples(rng, cases, _complex, "last_dim_size", "n")


@samples("_fft_with_size.norm_modes")
def _fft_with_size_samples(op, rng, dtype=np.float64):
    """(shape, signal_ndim, complex_input, complex_output, inverse, signal sizes, norm, onesided)."""
    cases = [
        ((2, 5, 2), 1, True, True, False, (5,), 0, False),  # fft
        ((3, 4, 2), 2, True, True, True, (3, 4), 2, False),  # ifft
        ((2, 3, 4, 2), 2, True, True, False, (3, 4), 1, False),  # normalized, batched
        ((2, 5), 1, False, True, False, (5,), 0, True),  # rfft, one-sided
        ((2, 3, 4), 2, False, True, False, (3, 4), 1, False),  # rfft, two-sided
        ((2, 3, 2, 2), 3, False, True, False, (2, 3, 2), 2, True),  # 3-d rfft
        ((2, 3, 2), 1, True, False, True, (5,), 2, True),  # irfft, odd size
        ((3, 3, 2), 2, True, False, True, (3, 4), 1, True),  # 2-d irfft, even size
    ]
    out = []
    for shape, ndim, ci, co, inv, sizes, norm, onesided in cases:
        x = rng.normal(size=shape)
        out_shape = shape[:-1] if ci and not co else shape + (2,) if co and not ci else shape
        if co and not ci and onesided:
            out_shape = shape[:-1] + (sizes[-1] // 2 + 1, 2)
        if ci and not co:
            out_shape = shape[: len(shape) - 1 - ndim] + sizes
        values = (x, ndim, ci, co, inv, sizes, norm, onesided, out_shape)  # the schema's arguments in order
        kw = dict(zip((a.name for a in op.schema.arguments), values, strict=True))
        out.append(
            Sample((), kw, f"{shape} ndim={ndim} c_in={ci} c_out={co} inverse={inv} norm={norm} onesided={onesided}")
        )
    return out
