"""Checker samples of the neural-network core (forward/nn.py): softmax and its masked and safe
variants, glu, dropout, embedding and embedding_bag, linear and the prelu kernel.

Inputs keep clear of kinks (prelu's at self = 0, ties of embedding_bag's max). The backward
entries of softmax get output = softmax(self), as their formulas assume; masked softmax's mask
leaves every slice an element; embedding takes neither padding_idx nor scale_grad_by_freq
(their gradients differ from the forward's derivative by design). `_make` (a samples
function from argument tuples) and `_away` (values clear of kinks) serve losses.py and
normalization.py too.
"""

from __future__ import annotations

import jax
import numpy as np

from ...forward import implementation
from ..opdb import Equivalent, kinks, not_applicable, not_compared, parity_differs, samples, torch_equivalent
from ..samples import Sample
from . import CUDA_ONLY

GAP = 0.1


def _away(rng, shape, kinks=(), lo=-2.0, hi=2.0):
    """Uniform values, redrawn until none lies within GAP of a kink."""
    x = np.array(rng.uniform(lo, hi, size=shape))
    while kinks and (near := np.any(np.abs(x[..., None] - np.asarray(kinks)) < GAP, axis=-1)).any():
        x[near] = rng.uniform(lo, hi, size=int(near.sum()))
    return x


def _make(fn, kwarg_only=()):
    """A samples function from `fn(rng) -> [(args, label)]`; the last len(kwarg_only) args go by keyword."""

    def make(op, rng, dtype=np.float64):
        out = []
        for args, label in fn(rng):
            n = len(args) - len(kwarg_only)
            out.append(Sample(tuple(args[:n]), dict(zip(kwarg_only, args[n:])), label))
        return out

    return make


# -- softmax and glu -------------------------------------------------------------------------------


def _softmax(rng):
    return [
        ((rng.normal(size=s), d, False), f"{s} dim={d}") for s, d in (((2, 3), 1), ((2, 3), -2), ((4,), 0), ((), 0))
    ]


def _softmax_backward_data(log):
    """grad_output, output = (log_)softmax(self), dim, and `self` (1.7's schema) or its dtype
    (from 1.11). The 1.7 spec keys the derivative through `output` to `self`: its formula for
    `self` is softmax's double backward, the derivative through output = softmax(self). So the
    reference, of which it is the derivative, computes output from self. From 1.11 the
    formula is keyed to `output` itself and needs no reference."""
    forward_name = "_log_softmax" if log else "_softmax"

    def make(op, rng, dtype=np.float64):
        softmax, backward = implementation(forward_name), implementation(op.name)
        keyed_to_self = [a.name for a in op.schema.arguments][-1] == "self"

        def reference(grad_output, output, dim, self):
            return backward(grad_output, softmax(self, dim, False), dim, self)

        out = []
        for s, d in (((2, 3), 1), ((3, 2), 0)):
            x = rng.normal(size=s)
            y = np.asarray(softmax(x, d, False))
            last = x if keyed_to_self else np.dtype(dtype)
            out.append(
                Sample(
                    (rng.normal(size=s), y, d, last),
                    {},
                    f"{s} dim={d}, output = {forward_name}(self)",
                    reference=reference if keyed_to_self else None,
                )
            )
        return out

    return make


# Their second derivative reaches `output` (softmax(self) in every use), for which the 1.7
# entries give no formula: PyTorch's graph has no derivative there either.
not_applicable(
    "the second derivative runs through `output` (= softmax(self)), for which the 1.7 entry gives no formula",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
    modes=("vjp_vjp",),
    when=lambda op: op.schema.arguments[-1].name == "self",
)
samples("_softmax", "_log_softmax")(_make(_softmax))
samples("_softmax_backward_data")(_softmax_backward_data(False))
samples("_log_softmax_backward_data")(_softmax_backward_data(True))
samples("glu")(_make(lambda rng: [((rng.normal(size=(2, 4)), d), f"2x4 dim={d}") for d in (-1, 0)]))
samples("glu_backward")(
    _make(
        lambda rng: [
            ((rng.normal(size=(2, 2)), rng.normal(size=(2, 4)), 1), "2x4 dim=1"),
            ((rng.normal(size=(1, 3)), rng.normal(size=(2, 3)), 0), "2x3 dim=0"),
        ]
    )
)


# -- dropout and embedding ----------------------------------------------------------------------

samples("_fused_dropout")(
    _make(lambda rng: [((rng.normal(size=(3, 4)), 0.7, jax.random.key(int(rng.integers(1 << 30)))), "3x4 p=0.7")])
)

# Only the draws ATen's native_dropout determines (its schema has no Generator): not training,
# p = 0 and p = 1; training at other p is jaxderiv.torch's, with a key (tests/nn/test_nn.py).
samples("native_dropout")(
    _make(
        lambda rng: [
            ((rng.normal(size=(3, 4)), 0.0, True), "3x4 p=0 train"),
            ((rng.normal(size=(3, 4)), 0.4, False), "3x4 p=0.4 eval"),
            ((rng.normal(size=(2, 3)), 1.0, True), "2x3 p=1 train"),
            ((rng.normal(size=(2, 3)), 0.0, None), "2x3 p=0 train=None"),
        ]
    )
)


def _embedding(rng):
    idx = np.array([[0, 2], [4, 2]])
    # padding_idx and scale_grad_by_freq make the formula differ from the forward's derivative
    # by design (tests/nn/test_nn.py checks them against torch): the checker takes neither.
    return [((rng.normal(size=(5, 3)), idx, -1, False, False), "no padding, no scaling")]


samples("embedding")(_make(_embedding))
samples("embedding_renorm_")(_make(lambda rng: [((rng.normal(size=(5, 3)), np.array([0, 2]), 1.0, 2.0), "max_norm=1")]))
samples("embedding_dense_backward")(
    _make(
        lambda rng: [((rng.normal(size=(2, 2, 3)), np.array([[0, 2], [4, 2]]), 5, -1, False), "no padding, no scaling")]
    )
)


def _embedding_bag(rng):
    out = []
    idx, offsets = np.array([0, 2, 4, 2, 1, 3]), np.array([0, 2, 2, 5])  # bag 1 is empty
    for mode in (0, 1, 2):
        w = rng.normal(size=(5, 3))
        psw = rng.uniform(0.5, 1.5, size=6) if mode == 0 else None
        out.append(
            ((w, idx, offsets, False, mode, False, psw, False), f"mode={mode} per_sample_weights={psw is not None}")
        )
    out.append(
        (
            (rng.normal(size=(5, 3)), idx, np.array([0, 2, 4, 6]), False, 1, False, None, True),
            "mean include_last_offset",
        )
    )
    return out


samples("_embedding_bag")(_make(_embedding_bag))


# -- torch 2.13's linear, prelu kernel, dropout backward and softmax variants ------------------------

linear_samples = samples("linear")(
    _make(
        lambda rng: [
            ((rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4,))), "2x3 by 4x3, bias"),
            ((rng.normal(size=(2, 2, 3)), rng.normal(size=(4, 3)), None), "batched 2x2x3, no bias"),
            ((rng.normal(size=(3,)), rng.normal(size=(4, 3)), rng.normal(size=(4,))), "1-d input"),
        ]
    )
)
# every output_mask entry on: an output the mask turns off is undefined (None), nothing to check
samples("linear_backward")(
    _make(
        lambda rng: [
            (
                (rng.normal(size=(2, 3)), rng.normal(size=(2, 4)), rng.normal(size=(4, 3)), (True, True, True)),
                "2x3 by 4x3, every output",
            ),
            (
                (rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 2, 4)), rng.normal(size=(4, 3)), (True, True, True)),
                "batched 2x2x3",
            ),
        ]
    )
)
# the kink of prelu is self = 0: values kept away from it
samples("_prelu_kernel")(
    _make(
        lambda rng: [
            ((_away(rng, (2, 3), (0.0,)), rng.normal(size=(3,))), "2x3, weight 3 broadcast"),
            ((_away(rng, (2, 3, 2), (0.0,)), rng.normal(size=(1, 3, 1))), "channel weight"),
        ]
    )
)
samples("_prelu_kernel_backward")(
    _make(
        lambda rng: [
            ((rng.normal(size=(2, 3)), _away(rng, (2, 3), (0.0,)), rng.normal(size=(3,))), "2x3, weight 3 broadcast"),
        ]
    )
)
samples("native_dropout_backward")(
    _make(
        lambda rng: [
            ((rng.normal(size=(3, 4)), rng.uniform(size=(3, 4)) < 0.7, 1 / 0.7), "3x4 scale=1/0.7"),
        ]
    )
)


def _masked(rng, shape, dim):
    """A mask (True: left out) that leaves at least one element of every slice along dim."""
    mask = rng.uniform(size=shape) < 0.4
    keep = np.expand_dims(np.arange(shape[dim]), tuple(i for i in range(len(shape)) if i != dim % len(shape))) == 0
    return mask & ~keep


samples("_masked_softmax")(
    _make(
        lambda rng: [
            ((rng.normal(size=(2, 4)), _masked(rng, (2, 4), -1), None, None), "2x4 last dim"),
            ((rng.normal(size=(3, 2, 3)), _masked(rng, (3, 2, 3), 0), 0, 2), "3x2x3 dim=0"),
        ]
    )
)
samples("_safe_softmax")(
    _make(
        lambda rng: [
            ((rng.normal(size=(2, 3)), 1, None), "2x3 dim=1"),
            ((rng.normal(size=(3, 2)), -2, None), "3x2 dim=-2"),
            ((rng.normal(size=()), 0, None), "0-d"),
        ]
    )
)


def _embedding_bag_backward(rng):
    """The bag layout (offset2bag, bag_size, maximum_indices) of _embedding_bag's forward on the
    same indices; `grad` itself has a not_implemented formula, so nothing is differentiable."""
    out = []
    bag = implementation("_embedding_bag")
    for (w, idx, offsets, _, mode, _, psw, last), label in _embedding_bag(rng):
        if last:
            continue
        _, offset2bag, bag_size, max_indices = (
            np.asarray(t) for t in bag(w, idx, offsets, False, mode, False, psw, last)
        )
        g = rng.normal(size=(len(offsets), w.shape[1]))
        for scale, padding_idx in ((False, -1), (True, 2)):
            out.append(
                (
                    (
                        g,
                        idx,
                        offsets,
                        offset2bag,
                        bag_size,
                        max_indices,
                        w.shape[0],
                        scale,
                        mode,
                        False,
                        psw,
                        padding_idx,
                    ),
                    f"{label} scale_grad_by_freq={scale} padding_idx={padding_idx}",
                )
            )
    return out


samples("_embedding_bag_backward")(_make(_embedding_bag_backward))


# -- parity with torch ------------------------------------------------------------------------
# torch calls computing what ops torch cannot run on CPU (or under the seed's schema) compute;
# each gets torch.ops.aten and the sample's arguments by name, as torch values.


def _torch_linear_backward(aten, a):
    """linear's gradients by torch's autograd, with create_graph so that they stay differentiable
    in self, grad_output and weight; a bias leaf gives the bias gradient."""
    import torch

    mask = a["output_mask"]
    x, w, g = a["self"], a["weight"], a["grad_output"]
    x, w = (t if t.requires_grad else t.detach().requires_grad_() for t in (x, w))
    b = torch.zeros(w.shape[0], dtype=w.dtype, requires_grad=True)
    grads = torch.autograd.grad(aten.linear(x, w, b), (x, w, b), g, create_graph=True)
    return [gr if m else None for gr, m in zip(grads, mask)]


torch_equivalent(
    Equivalent(
        lambda aten, a: aten.native_dropout(a["self"], 1 - a["p"], True), f"{CUDA_ONLY}: native_dropout(self, 1 - p)"
    ),
    "_fused_dropout",
)
torch_equivalent(
    Equivalent(
        _torch_linear_backward,
        "torch 2.13 runs linear_backward only on MKL-DNN and nested tensors: "
        "torch.autograd.grad of aten.linear, create_graph=True",
    ),
    "linear_backward",
)
# schema changes since the seed files: the same computation under torch 2.13's signature
torch_equivalent(
    Equivalent(
        lambda aten, a: aten._softmax_backward_data(a["grad_output"], a["output"], a["dim"], a["self"].dtype),
        "torch 2.13 takes ScalarType input_dtype where the seed takes Tensor self",
        True,
    ),
    "_softmax_backward_data",
)
torch_equivalent(
    Equivalent(
        lambda aten, a: aten._log_softmax_backward_data(a["grad_output"], a["output"], a["dim"], a["self"].dtype),
        "torch 2.13 takes ScalarType input_dtype where the seed takes Tensor self",
        True,
    ),
    "_log_softmax_backward_data",
)
parity_differs(
    ("vjp", "jvp"),
    "the seed's formula sends softmax_double_backward to Tensor self; torch 2.13's "
    "schema has input_dtype there and sends it to output: the second-order gradient lands on another input "
    "(and the jvp, that formula transposed, reads another tangent)",
    "_softmax_backward_data",
)
parity_differs(
    ("vjp", "jvp"),
    "the seed's formula sends the second-order gradient to Tensor self; torch 2.13's "
    "schema has input_dtype there and sends it to output (the jvp, that formula transposed, too)",
    "_log_softmax_backward_data",
)
parity_differs(
    ("forward",),
    "with scale_grad_by_freq, torch 2.13's CPU kernel (_embedding_bag_dense_backward_cpu_sum_mean) divides "
    "the rows of the k-th smallest distinct index by the count of the k-th sorted index (repeats included), "
    "not by that index's own count; jaxderiv divides by the index's own count (row 3 of the "
    "`scale_grad_by_freq=True` samples: -0.698 vs torch -0.349, a factor 2). tests/nn/test_nn.py asserts "
    "both values",
    "_embedding_bag_backward",
    torch_spec=True,
    seed_spec=False,
)
not_compared(
    "a backward op whose checker samples are schema defaults (float indices); compared through _embedding_bag's vjp",
    "_embedding_bag_dense_backward",
)
# padding_idx (the checker's samples take none): the padding row gets no gradient, so grad_output
# at the positions of the padding index gets none back either
kinks(
    "embedding_dense_backward",
    (np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4), np.array([[0, 2, 1], [2, 4, 1]]), 5, 1, False),
)
parity_differs(
    ("kinks",),
    "spec bug (PyTorch 1.7): the formula for grad_output, embedding_dense_double_backward(grad, indices), "
    "has no padding_idx, so the positions of the padding index get their rows of grad back (the kink, "
    "padding_idx=1: 1.043 at grad_output[0, 2, 0] where torch 2.13 gives 0); torch's own file passes padding_idx "
    "(embedding_dense_double_backward_symint(grad, indices, padding_idx)) and agrees",
    "embedding_dense_backward",
)
