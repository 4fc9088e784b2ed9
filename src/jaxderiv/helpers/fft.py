"""FunctionsManual's FFT helpers: each transform's backward is the adjoint transform.

The adjoint of a c2c transform is the opposite-direction transform with the same
normalization. A one-sided r2c drops the mirrored half of the spectrum: its adjoint puts
zeros there before the inverse c2c and keeps the real part. A c2r transform reads each
entry of its one-sided input twice unless the entry is its own mirror image (index 0, and
n / 2 for even n): its adjoint is a one-sided r2c with those other entries doubled.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..forward.fft import fft_c2c, fft_r2c, fft_with_size
from ..namespace import helper, method


@method("back")
def back(values):
    """The last element of an int list (`dim.back()`)."""
    return values[-1]


def _double_mirrored(g, axis, n):
    """g with entries 1 .. n - (n // 2 + 1) of `axis` doubled: those whose mirror image was dropped."""
    count = n - g.shape[axis]
    if count <= 0:
        return g
    index = jnp.arange(g.shape[axis])
    factor = jnp.where((index >= 1) & (index <= count), 2.0, 1.0)
    return g * jnp.reshape(factor, (-1,) + (1,) * (g.ndim - 1 - axis % g.ndim))


def _zero_filled(g, axis, n):
    """g padded with zeros along `axis` up to n entries (the one-sided spectrum made full)."""
    axis %= g.ndim
    pad = [(0, 0)] * g.ndim
    pad[axis] = (0, n - g.shape[axis])
    return jnp.pad(g, pad) if n > g.shape[axis] else g


@helper("fft_r2c_backward")
def fft_r2c_backward(grad, dim, normalization, onesided, last_dim_size):
    full = _zero_filled(grad, dim[-1], last_dim_size) if onesided else grad
    return jnp.real(fft_c2c(full, dim, normalization, False))


@helper("fft_c2r_backward")
def fft_c2r_backward(grad, dim, normalization):
    gi = fft_r2c(grad, dim, normalization, True)
    return _double_mirrored(gi, dim[-1], grad.shape[dim[-1]])


@helper("fft_backward")
def fft_backward(
    self,
    grad,
    signal_ndim,
    complex_input,
    complex_output,
    inverse,
    checked_signal_sizes,
    normalization,
    onesided,
    output_sizes,
):
    """PyTorch <= 1.7's backward of _fft_with_size (complex as a trailing dim of size 2)."""
    sizes = tuple(checked_signal_sizes)
    if not complex_input and complex_output:  # r2c: zero-fill a one-sided grad, inverse c2c, real part
        full = _zero_filled(grad, -2, sizes[-1]) if onesided else grad
        return fft_with_size(full, signal_ndim, True, True, not inverse, sizes, normalization, False, full.shape)[
            ..., 0
        ]
    if complex_input and not complex_output and onesided:  # c2r: a one-sided r2c, mirrored entries doubled
        gi = fft_with_size(grad, signal_ndim, False, True, False, sizes, normalization, True, self.shape)
        return _double_mirrored(gi, -2, sizes[-1])
    return fft_with_size(
        grad, signal_ndim, complex_input, complex_output, not inverse, sizes, normalization, onesided, grad.shape
    )
