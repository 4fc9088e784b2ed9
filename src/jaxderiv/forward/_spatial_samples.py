"""What the convolution, pooling and upsampling families (conv.py, pooling.py, upsample.py, and
backend_kernels.py's oneDNN and depthwise entries) share: a sample of keyword arguments per
variant, and normal random values. It declares no entry of its own.
"""

from __future__ import annotations

import numpy as np

from ..records import Sample, samples


def standard_normal(rng, *shape):
    return rng.normal(size=shape)


def register_spatial_samples(name, *variants):
    """`variants`: functions rng -> keyword arguments of one sample."""

    @samples(name)
    def make(op, rng, dtype=np.float64):
        out = []
        for v in variants:
            given = v(rng)
            kw = {a.name: given.get(a.name) for a in op.schema.arguments if a.name in given or a.is_tensor}
            out.append(Sample((), kw, " ".join(f"{k}={x}" for k, x in kw.items() if not isinstance(x, np.ndarray))))
        return out
