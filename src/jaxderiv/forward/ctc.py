"""Forward implementations of ATen's connectionist temporal classification loss (Graves 2006).

log_probs is (T, N, C); targets are padded (N, S) or concatenated 1-D; the lengths are int
lists. Sequences are scored on the extended target l' = blank, l1, blank, l2, ..., blank:
log_alpha (N, T, 2S+1) is the forward variable in log space, -inf outside each sequence's
lengths. `_ctc_loss_backward` adds the backward variable and returns ATen's gradient, which
is taken with respect to the logits of a log_softmax: exp(log_probs) - posterior.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import NotImplementedDerivative
from ..records import CUDA_ONLY, Equivalent, Sample, not_applicable, parity_differs, samples, torch_equivalent
from . import impl
from .shapes import concrete

NEG_INF = -jnp.inf


def _log_add(*terms):
    """log(sum(exp(terms))), -inf (with zero gradients) where every term is -inf."""
    m = terms[0]
    for x in terms[1:]:
        m = jnp.maximum(m, x)
    m = jnp.where(jnp.isneginf(m), 0.0, m)
    total = sum(jnp.exp(x - m) for x in terms)
    positive = total > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, total, 1.0)) + m, NEG_INF)


def _log_sum(x, axis):
    """log(sum(exp(x), axis)) with the same care for all -inf slices."""
    m = jnp.max(x, axis=axis, keepdims=True)
    m = jnp.where(jnp.isneginf(m), 0.0, m)
    total = jnp.sum(jnp.exp(x - m), axis=axis)
    positive = total > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, total, 1.0)) + jnp.squeeze(m, axis), NEG_INF)


def _shift(x, k, fill=NEG_INF):
    """x[:, s - k] (k > 0) or x[:, s + |k|] (k < 0), `fill` where that leaves the row."""
    if abs(k) >= x.shape[1]:  # the whole row leaves (one state: every target length 0)
        return jnp.full(x.shape, fill, x.dtype)
    pad = jnp.full((x.shape[0], abs(k)), fill, x.dtype)
    return jnp.concatenate([pad, x[:, :-k]], axis=1) if k > 0 else jnp.concatenate([x[:, -k:], pad], axis=1)


def _ints(lengths, name):
    """Lengths as Python ints (int lists, or the .Tensor overloads' tensors): they fix the
    recursions' masks, so a tensor must be concrete."""
    if hasattr(lengths, "shape"):
        lengths = concrete(lengths, "_ctc_loss", f"pass {name} as a list of ints").reshape(-1)
    return [int(v) for v in lengths]


class _Problem:
    """The extended targets and the masks both recursions read, from the static lengths."""

    def __init__(self, log_probs, targets, input_lengths, target_lengths, blank):
        if log_probs.ndim != 3:
            raise ValueError(f"ctc_loss: expected a 3-dimensional log_probs (T, N, C), got {log_probs.ndim} dimensions")
        t_max, n, c = log_probs.shape
        il, tl = _ints(input_lengths, "input_lengths"), _ints(target_lengths, "target_lengths")
        if len(il) != n or len(tl) != n:
            raise ValueError(f"ctc_loss: input_lengths and target_lengths must have batch size {n} entries")
        if not 0 <= blank < c:
            raise ValueError("blank must be in label range")
        if max(il, default=0) > t_max:
            raise ValueError(f"ctc_loss: input length {max(il)} exceeds log_probs' {t_max} time steps")
        if targets.ndim == 1:  # concatenated: sequence b starts after the lengths before it
            width = max(tl, default=0)
            offsets = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(int)
            if targets.shape[0] < sum(tl):
                raise ValueError(f"ctc_loss: targets hold {targets.shape[0]} labels, target_lengths sum to {sum(tl)}")
            index = offsets[:, None] + np.minimum(np.arange(width)[None], np.maximum(np.array(tl)[:, None] - 1, 0))
            labels = targets[jnp.asarray(index)] if width else jnp.zeros((n, 0), jnp.int32)
        else:
            if max(tl, default=0) > targets.shape[1]:
                raise ValueError(f"ctc_loss: a target length exceeds the targets' width {targets.shape[1]}")
            width = max(tl, default=0)  # ATen's log_alpha has 2 max(target_lengths) + 1 states, whatever the padding
            labels = targets[:, :width]
        s = np.arange(2 * width + 1)
        odd = jnp.asarray(s % 2 == 1)
        label_at = jnp.asarray(np.minimum(s // 2, max(width - 1, 0)))
        picked = labels[:, label_at] if width else jnp.zeros((n, 2 * width + 1), jnp.int32)
        self.extended = jnp.where(odd[None], picked, blank).astype(jnp.int32)  # (N, 2S+1)
        self.il, self.tl = np.array(il), np.array(tl)
        self.valid_s = jnp.asarray(s[None] <= 2 * self.tl[:, None])  # (N, 2S+1)
        same_as_two_before = self.extended == _shift(self.extended, 2, fill=-1)
        self.skip = jnp.asarray(s[None] >= 2) & ~same_as_two_before  # s-2 -> s allowed
        self.t_max, self.c = t_max, c
        # log_probs of the extended labels: (T, N, 2S+1)
        self.lp = jnp.take_along_axis(
            log_probs, jnp.broadcast_to(self.extended[None], (t_max,) + self.extended.shape), axis=2
        )

    def running(self, t):
        """(N, 1): whether time step t lies inside each sequence."""
        return (t < jnp.asarray(self.il))[:, None]


def _alpha(p: _Problem):
    """(T, N, 2S+1) log forward variables."""
    s = jnp.arange(p.valid_s.shape[1])[None]
    first = ((s == 0) | ((s == 1) & jnp.asarray(p.tl > 0)[:, None])) & p.running(0)
    alpha0 = jnp.where(first, p.lp[0], NEG_INF)

    def step(prev, xs):
        lp_t, t = xs
        new = _log_add(prev, _shift(prev, 1), jnp.where(p.skip, _shift(prev, 2), NEG_INF)) + lp_t
        new = jnp.where(p.valid_s & p.running(t), new, NEG_INF)
        return new, new

    _, rest = lax.scan(step, alpha0, (p.lp[1:], jnp.arange(1, p.t_max)))
    return jnp.concatenate([alpha0[None], rest], axis=0)


def _final(p: _Problem, table):
    """(N,) log of the table's last two states at each sequence's last step (alpha: the likelihood)."""
    n = np.arange(len(p.il))
    last = np.maximum(p.il - 1, 0)
    end = table[last, n, 2 * p.tl]
    before = jnp.where(jnp.asarray(p.tl > 0), table[last, n, np.maximum(2 * p.tl - 1, 0)], NEG_INF)
    return _log_add(end, before)


@impl("_ctc_loss", "_ctc_loss.Tensor")
def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
    """(neg_log_likelihood (N,), log_alpha (N, T, 2S+1)); zero_infinity matters only to the backward."""
    p = _Problem(log_probs, targets, input_lengths, target_lengths, blank)
    alpha = _alpha(p)
    return -_final(p, alpha), jnp.transpose(alpha, (1, 0, 2))


@jax.custom_jvp
def _fixed(x):
    """x, refusing to be differentiated: the spec gives _ctc_loss_backward no derivative."""
    return x


@_fixed.defjvp
def _fixed_jvp(primals, tangents):
    raise NotImplementedDerivative(
        "the derivative of aten::_ctc_loss_backward is not given by the spec (PyTorch has none either)"
    )


def _collected(p: _Problem, log_alpha):
    """(T, N, C): log of sum over the states s with l'[s] == c of alpha[t, s] * beta[t, s]."""
    alpha = jnp.transpose(log_alpha, (1, 0, 2))
    s = jnp.arange(p.valid_s.shape[1])[None]
    tl = jnp.asarray(p.tl)[:, None]
    last = (s == 2 * tl) | ((s == 2 * tl - 1) & (tl > 0))
    skip_ahead = _shift(p.skip, -2, fill=False)  # s -> s+2 allowed
    owner = p.extended[:, :, None] == jnp.arange(p.c)[None, None]  # (N, 2S+1, C)

    def step(following, xs):
        lp_t, alpha_t, t = xs
        il = jnp.asarray(p.il)[:, None]
        recurse = (
            _log_add(following, _shift(following, -1), jnp.where(skip_ahead, _shift(following, -2), NEG_INF)) + lp_t
        )
        beta = jnp.where(t == il - 1, jnp.where(last, lp_t, NEG_INF), jnp.where(t < il - 1, recurse, NEG_INF))
        beta = jnp.where(p.valid_s, beta, NEG_INF)
        both = jnp.where(p.valid_s & p.running(t), alpha_t + beta, NEG_INF)
        return beta, _log_sum(jnp.where(owner, both[:, :, None], NEG_INF), axis=1)

    init = jnp.full(p.valid_s.shape, NEG_INF, p.lp.dtype)
    _, collected = lax.scan(step, init, (p.lp, alpha, jnp.arange(p.t_max)), reverse=True)
    return collected


@impl("_ctc_loss_backward")
def _ctc_loss_backward(
    grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood, log_alpha, blank, zero_infinity=False
):
    """(exp(lp) - exp(log(alpha beta summed per label) + nll - lp)) * grad inside each sequence,
    0 after its end, and 0 for a whole sequence whose loss is infinite when zero_infinity."""
    log_probs, neg_log_likelihood, log_alpha = _fixed(log_probs), _fixed(neg_log_likelihood), _fixed(log_alpha)
    p = _Problem(log_probs, targets, input_lengths, target_lengths, blank)
    nll = neg_log_likelihood[None, :, None]
    coefficient = jnp.exp(log_probs) - jnp.exp(_collected(p, log_alpha) + nll - log_probs)
    inside = (jnp.arange(p.t_max)[:, None] < jnp.asarray(p.il)[None])[:, :, None]
    if zero_infinity:
        inside = inside & ~jnp.isposinf(nll)
    return jnp.where(inside, coefficient * grad[None, :, None], 0.0)


@impl("_cudnn_ctc_loss", "_cudnn_ctc_loss.Tensor")
def _cudnn_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, deterministic, zero_infinity):
    """(costs, grad): cuDNN normalizes its input with a softmax and returns, besides the losses,
    their gradient with respect to that input; `deterministic` picks cuDNN's algorithm only."""
    return _library_ctc_loss("cudnn_ctc_loss", log_probs, targets, input_lengths, target_lengths, blank)


@impl("miopen_ctc_loss", "miopen_ctc_loss.Tensor")
def miopen_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, deterministic, zero_infinity):
    """ROCm's (costs, grad): ATen asks MIOpen for its softmax layer (`apply_softmax=true`), so, as
    with cuDNN, the losses are those of the normalized input and the second output their gradient
    with respect to the input; MIOpen has one (deterministic) algorithm."""
    return _library_ctc_loss("miopen_ctc_loss", log_probs, targets, input_lengths, target_lengths, blank)


def _library_ctc_loss(name, log_probs, targets, input_lengths, target_lengths, blank):
    if blank != 0:
        raise ValueError(f"blank must be label 0 for {name}")
    normalized = jax.nn.log_softmax(log_probs, axis=2)
    costs, log_alpha = _ctc_loss(normalized, targets, input_lengths, target_lengths, blank)
    # The raw gradient is an output the spec does not differentiate (its formula reads grads[0]).
    raw_grad = _ctc_loss_backward(
        jnp.ones_like(costs),
        lax.stop_gradient(normalized),
        targets,
        input_lengths,
        target_lengths,
        lax.stop_gradient(costs),
        lax.stop_gradient(log_alpha),
        blank,
    )
    return costs, raw_grad


# --- records: samples, domains and what the parity run against torch needs ------------------
#
# Checker samples of the CTC losses.
#
# log_probs are log_softmax of random logits (T=5, N=3, C=4), every alignment possible, padded
# (N, S) and concatenated targets, variable lengths, a repeated label (no skip transition).
# Only the losses are compared: the second outputs (log_alpha; cuDNN's gradient) have no formula.
#
# ATen's `_ctc_loss_backward` returns the gradient with respect to the logits of a log_softmax,
# exp(log_probs) - posterior: it agrees with the derivative of the loss along the directions
# that keep each time step's probabilities summing to one, the only ones a log_softmax output
# moves in. Directions and gradients are projected onto those. The spec gives
# `_ctc_loss_backward` no derivative, so the second-order check is not applicable.
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


def _ctc_loss_of_normalized(ctc_loss):
    """A torch call: the loss output of `ctc_loss(aten)` (_ctc_loss or an overload) at the
    normalized input, as cuDNN normalizes its own."""
    return lambda aten, a: ctc_loss(aten)(
        a["log_probs"].log_softmax(2),
        a["targets"],
        a["input_lengths"],
        a["target_lengths"],
        a["blank"],
        a["zero_infinity"],
    )[:1]


torch_equivalent(
    Equivalent(
        _ctc_loss_of_normalized(lambda aten: aten._ctc_loss),
        f"{CUDA_ONLY}: _ctc_loss's loss of the normalized input, as cuDNN normalizes (the 2nd output, cuDNN's gradient, not compared)",
    ),
    "_cudnn_ctc_loss",
    "miopen_ctc_loss",
)
torch_equivalent(
    Equivalent(
        _ctc_loss_of_normalized(lambda aten: aten._ctc_loss.Tensor),
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
