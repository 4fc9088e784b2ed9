"""Checker samples of the fused recurrent cells and of packing padded sequences.

Cells: batch 2, hidden size 3, with and without the two biases. Packing: lengths sorted
in decreasing order (as ATen requires), time-major and batch-first.
"""

from __future__ import annotations

import numpy as np

from ..samples import Sample, samples

B, H = 2, 3


def _cell(gates):
    def fn(op, rng, dtype=np.float64):
        out = []
        for bias in (True, False):
            args = [rng.normal(size=(B, gates * H)), rng.normal(size=(B, gates * H)), rng.normal(size=(B, H))]
            if bias:
                args += [rng.normal(size=(gates * H,)), rng.normal(size=(gates * H,))]
            out.append(Sample(tuple(args), {}, f"batch {B} hidden {H} bias={bias}"))
        return out

    return fn


samples("_thnn_fused_lstm_cell")(_cell(4))
samples("_thnn_fused_gru_cell")(_cell(3))


@samples("_pack_padded_sequence")
def _pack(op, rng, dtype=np.float64):
    lengths = np.array([4, 2, 1])
    return [Sample((rng.normal(size=(4, 3, 2)), lengths, False), {}, "T=4 B=3 lengths 4,2,1"),
            Sample((rng.normal(size=(3, 4, 2)), lengths, True), {}, "batch_first")]
