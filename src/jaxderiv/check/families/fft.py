"""Checker inputs of the FFT kernels: every normalization, one- and two-sided spectra, even
and odd last sizes, batch dims, and transforms over 1 to 3 signal dims.

PyTorch 1.7's fft_backward has no branch for a two-sided complex-to-real input: it runs the
same c2r transform on the real gradient, which ATen rejected (no trailing dim of 2), so
torch.irfft(onesided=False) had no working gradient there; no sample asks for it.
"""

from __future__ import annotations

import numpy as np

from ..opdb import samples
from ..samples import Sample

NORMS = (0, 1, 2)


def _complex(rng, shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


@samples("_fft_c2c")
def _c2c(op, rng, dtype=np.complex128):
    cases = [
        ((2, 5), (1,), 0, True),
        ((3, 4), (0, 1), 1, False),
        ((2, 3, 4), (2, 0), 2, True),
        ((2, 2, 3, 2), (1, 2, 3), 1, True),
    ]
    return [
        Sample(
            (),
            {"self": _complex(rng, s), "dim": d, "normalization": n, "forward": f},
            f"{s} dim={d} norm={n} forward={f}",
        )
        for s, d, n, f in cases
    ]


@samples("_fft_r2c")
def _r2c(op, rng, dtype=np.float64):
    cases = [
        ((2, 5), (1,), 0, True),
        ((2, 6), (1,), 1, False),
        ((3, 4, 5), (1, 2), 2, True),
        ((4, 3, 2), (2, 0), 1, True),
    ]
    return [
        Sample(
            (),
            {"self": rng.normal(size=s), "dim": d, "normalization": n, "onesided": o},
            f"{s} dim={d} norm={n} onesided={o}",
        )
        for s, d, n, o in cases
    ]


@samples("_fft_c2r")
def _c2r(op, rng, dtype=np.complex128):
    cases = [((2, 3), (1,), 0, 5), ((2, 4), (1,), 1, 6), ((3, 4, 3), (1, 2), 2, 4), ((3, 2, 3), (2, 0), 1, 5)]
    return [
        Sample(
            (),
            {"self": _complex(rng, s), "dim": d, "normalization": n, "last_dim_size": m},
            f"{s} dim={d} norm={n} n={m}",
        )
        for s, d, n, m in cases
    ]


@samples("_fft_with_size.norm_modes")
def _fft_with_size(op, rng, dtype=np.float64):
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
        kw = dict(
            self=x,
            signal_ndim=ndim,
            complex_input=ci,
            complex_output=co,
            inverse=inv,
            checked_signal_sizes=sizes,
            normalization=norm,
            onesided=onesided,
            output_sizes=out_shape,
        )
        out.append(
            Sample((), kw, f"{shape} ndim={ndim} c_in={ci} c_out={co} inverse={inv} norm={norm} onesided={onesided}")
        )
    return out
