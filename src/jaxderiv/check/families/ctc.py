"""Checker samples of the CTC losses.

log_probs are log_softmax of random logits (T=5, N=3, C=4), every alignment possible, padded
(N, S) and concatenated targets, variable lengths, a repeated label (no skip transition).
Only the losses are compared: the second outputs (log_alpha; cuDNN's gradient) have no formula.

ATen's `_ctc_loss_backward` returns the gradient with respect to the logits of a log_softmax,
exp(log_probs) - posterior: it agrees with the derivative of the loss along the directions
that keep each time step's probabilities summing to one, the only ones a log_softmax output
moves in. Directions and gradients are projected onto those. The spec gives
`_ctc_loss_backward` no derivative, so the second-order check is not applicable.
"""

from __future__ import annotations

import numpy as np

from ..opdb import Equivalent, not_applicable, parity_differs, samples, torch_equivalent
from ..samples import Sample
from . import CUDA_ONLY

T, N, C = 5, 3, 4
PADDED = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
INPUT_LENGTHS, TARGET_LENGTHS = (5, 4, 3), (3, 2, 1)
CONCATENATED = np.concatenate([row[:n] for row, n in zip(PADDED, TARGET_LENGTHS)])


def _log_softmax(rng):
    logits = rng.normal(size=(T, N, C))
    return logits - np.log(np.sum(np.exp(logits), axis=2, keepdims=True))


def _normalized_directions(log_probs):
    """Orthogonal projection, per time step and sequence, onto sum_c exp(log_probs) * v = 0."""
    w = np.exp(log_probs)

    def project(vs):
        (v,) = vs
        return [v - w * (np.sum(w * v, axis=2, keepdims=True) / np.sum(w * w, axis=2, keepdims=True))]

    return project


def _loss_only(outs):
    return outs[:1]


@samples("_ctc_loss")
def _ctc(op, rng, dtype=np.float64):
    out = []
    for targets, layout in ((PADDED, "padded"), (CONCATENATED, "concatenated")):
        for blank, zero_infinity in ((0, False), (0, True)):
            lp = _log_softmax(rng)
            out.append(
                Sample(
                    (lp, targets, INPUT_LENGTHS, TARGET_LENGTHS, blank, zero_infinity),
                    {},
                    f"{layout} zero_infinity={zero_infinity}",
                    outputs=_loss_only,
                    tangents=_normalized_directions(lp),
                )
            )
    lp = _log_softmax(rng)
    out.append(
        Sample(
            # labels 1..C-1 moved to 0..C-2: a target never holds the blank (torch leaves that undefined)
            (lp, np.where(PADDED > 0, PADDED - 1, 0), INPUT_LENGTHS, TARGET_LENGTHS, C - 1, False),
            {},
            "blank=3",
            outputs=_loss_only,
            tangents=_normalized_directions(lp),
        )
    )
    return out


def _with_tensor_lengths(sample):
    """The same call with lengths as int64 arrays (the `.Tensor` overloads of newer specs)."""
    args = list(sample.args)
    args[2:4] = [np.array(args[2]), np.array(args[3])]
    return Sample(tuple(args), {}, sample.label + " tensor lengths", outputs=sample.outputs, tangents=sample.tangents)


samples("_ctc_loss.Tensor")(lambda op, rng, dtype=np.float64: [_with_tensor_lengths(s) for s in _ctc(op, rng, dtype)])


@samples("_cudnn_ctc_loss")
def _cudnn_ctc(op, rng, dtype=np.float64):
    """cuDNN's op normalizes its input itself: log_probs move freely."""
    return [
        Sample(
            (rng.normal(size=(T, N, C)), CONCATENATED, INPUT_LENGTHS, TARGET_LENGTHS, 0, True, zero_infinity),
            {},
            f"concatenated zero_infinity={zero_infinity}",
            outputs=_loss_only,
        )
        for zero_infinity in (False, True)
    ]


samples("_cudnn_ctc_loss.Tensor", "miopen_ctc_loss.Tensor")(
    lambda op, rng, dtype=np.float64: [_with_tensor_lengths(s) for s in _cudnn_ctc(op, rng, dtype)]
)
samples("miopen_ctc_loss")(_cudnn_ctc)  # ROCm's: the same normalized input, (costs, gradient) pair


not_applicable(
    "the backward formula reads the op's second output (cuDNN's gradient), whose derivative the entry "
    "does not give (it reads grads[0] only): the spec defines no second derivative (PyTorch's double "
    "backward drops that term)",
    "_cudnn_ctc_loss",
    "_cudnn_ctc_loss.Tensor",
    "miopen_ctc_loss",
    "miopen_ctc_loss.Tensor",
    modes=("vjp_vjp",),
)


# -- parity with torch ------------------------------------------------------------------------

torch_equivalent(
    Equivalent(
        lambda aten, a: aten._ctc_loss(
            a["log_probs"].log_softmax(2),
            a["targets"],
            a["input_lengths"],
            a["target_lengths"],
            a["blank"],
            a["zero_infinity"],
        )[:1],
        f"{CUDA_ONLY}: _ctc_loss's loss of the normalized input, as cuDNN normalizes (the 2nd output, cuDNN's gradient, not compared)",
    ),
    "_cudnn_ctc_loss",
    "miopen_ctc_loss",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten._ctc_loss.Tensor(
            a["log_probs"].log_softmax(2),
            a["targets"],
            a["input_lengths"],
            a["target_lengths"],
            a["blank"],
            a["zero_infinity"],
        )[:1],
        f"{CUDA_ONLY}: _ctc_loss.Tensor's loss of the normalized input, as cuDNN normalizes (the 2nd output not compared)",
    ),
    "_cudnn_ctc_loss.Tensor",
    "miopen_ctc_loss.Tensor",
)
_SCRATCH = (
    "log_alpha (output 1) past each sequence's input length and its 2 target_length + 1 states is "
    "scratch: torch leaves 0 or uninitialized memory there, jaxderiv -inf (the shape, N x T x "
    "2 max(target_lengths) + 1, is torch's); the loss and every gradient agree"
)
parity_differs(("forward",), _SCRATCH, "_ctc_loss", torch_spec=True)
parity_differs(
    ("forward",), _SCRATCH, "_ctc_loss.Tensor", torch_spec=True, seed_spec=False
)  # an entry of torch's file only
