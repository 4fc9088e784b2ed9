"""Checker samples of the loss functions and their backward ops (forward/losses.py).

Inputs keep clear of kinks (hinges of the margin losses, |x - y| = beta of smooth_l1 and delta
of huber) and of the edges of the domains (binary cross entropy's (0, 1)). Losses are called
with equal shapes, as torch.nn.functional calls them (it broadcasts first): their 1.7 formulas
normalize a mean by the numel of the argument they differentiate. Each loss is sampled in
every reduction (0 none, 1 mean, 2 sum); a backward entry's grad_output has the loss's shape.
Class-index targets (nll, the margins) are integer arrays; nll's include an ignored class.
"""

from __future__ import annotations

import numpy as np

from ..opdb import kinks, known_failure, samples
from . import matrix
from .nn import GAP, _away, _make

REDUCTIONS = (0, 1, 2)


def _pair_loss(kinks_of_difference=(), lo=-2.0, hi=2.0, target=None, extra=()):
    """loss(self, target, reduction, *extra) in each reduction; self - target clear of the kinks."""

    def fn(rng):
        out = []
        for r in REDUCTIONS:
            for s in ((2, 3), ()):
                t = target(rng, s) if target else rng.uniform(lo, hi, size=s)
                x = t + _away(rng, s, kinks_of_difference)
                out.append(((x, t, r, *extra), f"{s or '0-d'} reduction={r}"))
        return out

    return fn


def _pair_backward(loss_fn):
    """loss_backward(grad_output, self, target, reduction, ...): grad_output shaped as the loss."""

    def fn(rng):
        out = []
        for (x, t, r, *extra), label in loss_fn(rng):
            g = rng.normal(size=np.shape(x) if r == 0 else ())
            out.append(((g, x, t, r, *extra), label))
        return out

    return fn


_mse = _pair_loss()
_l1 = _pair_loss(kinks_of_difference=(0.0,))
_smooth = _pair_loss(kinks_of_difference=(0.0, -0.7, 0.7), extra=(0.7,))
_huber = _pair_loss(kinks_of_difference=(0.0, -0.7, 0.7), extra=(0.7,))  # |self - target| clear of 0 and +-delta
_soft_margin = _pair_loss(target=lambda rng, s: np.sign(rng.uniform(-1, 1, size=s)))
samples("mse_loss")(_make(_mse))
samples("mse_loss_backward")(_make(_pair_backward(_mse)))
samples("l1_loss")(_make(_l1))
samples("l1_loss_backward")(_make(_pair_backward(_l1)))
samples("smooth_l1_loss")(_make(_smooth))
samples("smooth_l1_loss_backward")(_make(_pair_backward(_smooth)))
samples("soft_margin_loss")(_make(_soft_margin))
samples("soft_margin_loss_backward")(_make(_pair_backward(_soft_margin)))
samples("huber_loss")(_make(_huber))
samples("huber_loss_backward")(_make(_pair_backward(_huber)))


def _kl_div(rng):
    out = []
    for r in REDUCTIONS:
        for log_target in (False, True):
            x = rng.normal(size=(2, 3))
            t = rng.normal(size=(2, 3)) if log_target else rng.uniform(0.2, 1.0, size=(2, 3))
            out.append(((x, t, r, log_target), f"reduction={r} log_target={log_target}"))
    return out


samples("kl_div")(_make(_kl_div, ("log_target",)))
samples("kl_div_backward")(_make(_pair_backward(_kl_div), ("log_target",)))


def _bce(rng):
    out = []
    for r in REDUCTIONS:
        for weighted in (False, True):
            x, t = rng.uniform(0.2, 0.8, size=(2, 3)), rng.uniform(0.0, 1.0, size=(2, 3))
            w = rng.uniform(0.5, 1.5, size=(2, 3)) if weighted else None
            out.append(((x, t, w, r), f"reduction={r} weight={weighted}"))
    return out


def _bce_backward(rng):
    return [((rng.normal(size=np.shape(x) if r == 0 else ()), x, t, w, r), label) for (x, t, w, r), label in _bce(rng)]


def _bce_logits(rng):
    out = []
    for r in REDUCTIONS:
        for weighted, pos in ((False, False), (True, True), (False, True)):
            x, t = rng.normal(size=(2, 3)) * 2, rng.uniform(0.0, 1.0, size=(2, 3))
            w = rng.uniform(0.5, 1.5, size=(2, 3)) if weighted else None
            pw = rng.uniform(0.5, 2.0, size=(3,)) if pos else None
            out.append(((x, t, w, pw, r), f"reduction={r} weight={weighted} pos_weight={pos}"))
    return out


samples("binary_cross_entropy")(_make(_bce))
samples("binary_cross_entropy_backward")(_make(_bce_backward))
samples("binary_cross_entropy_with_logits")(_make(_bce_logits))


def _nll(two_d):
    def fn(rng):
        out = []
        shape, tshape = ((2, 3, 2, 2), (2, 2, 2)) if two_d else ((4, 3), (4,))
        for r in REDUCTIONS:
            for weighted, ignore in ((False, -100), (True, 1)):
                x = rng.normal(size=shape)
                t = rng.integers(0, 3, size=tshape)
                t.flat[0] = 1  # one sample ignored where ignore_index is 1
                t.flat[1] = 0
                w = rng.uniform(0.5, 1.5, size=(3,)) if weighted else None
                out.append(((x, t, w, r, ignore), f"reduction={r} weight={weighted} ignore_index={ignore}"))
        if not two_d:
            out.append(((rng.normal(size=(3,)), np.array(2), None, 1, -100), "C 0-d target"))
        return out

    return fn


def _nll_backward(two_d):
    from ...forward.losses import nll_loss_forward

    def fn(rng):
        out = []
        for (x, t, w, r, ignore), label in _nll(two_d)(rng):
            loss, total = nll_loss_forward(x, t, w, r, ignore)
            out.append(((rng.normal(size=np.shape(loss)), x, t, w, r, ignore, np.asarray(total)), label))
        return out

    return fn


samples("nll_loss_forward")(_make(_nll(False)))
samples("nll_loss2d_forward")(_make(_nll(True)))
samples("nll_loss_backward")(_make(_nll_backward(False)))
samples("nll_loss2d_backward")(_make(_nll_backward(True)))


def _margin_scores(rng, n, c):
    """Scores whose pairwise differences keep GAP away from the hinges at 1 (margin) and 0."""
    while True:
        x = rng.uniform(-2.0, 2.0, size=(n, c))
        d = np.abs(x[:, :, None] - x[:, None, :])
        if np.all((np.abs(d - 1.0) > GAP)):
            return x


def _multi_margin(rng):
    out = []
    for r in REDUCTIONS:
        for p, weighted in ((1, False), (2, True)):
            x = _margin_scores(rng, 3, 4)
            w = rng.uniform(0.5, 1.5, size=(4,)) if weighted else None
            out.append(((x, rng.integers(0, 4, size=(3,)), p, 1.0, w, r), f"reduction={r} p={p} weight={weighted}"))
    return out


def _multilabel(rng):
    out = []
    for r in REDUCTIONS:
        x = _margin_scores(rng, 2, 4)
        t = np.array([[3, 0, -1, 1], [1, 2, 3, -1]])
        out.append(((x, t, r), f"reduction={r}"))
    return out


samples("multi_margin_loss")(_make(_multi_margin))
samples("multilabel_margin_loss_forward")(_make(_multilabel))


# Checks known to fail, with why; the checker still runs them (see samples.known_failure).
known_failure("spec bug: the formula for `target` is zeros_like(grad), but the op depends on target", "kl_div_backward")
known_failure(
    "spec bug (PyTorch 1.7): kl_div's second derivative goes through kl_div_backward, whose formula "
    "for `target` is zeros_like(grad), though the op depends on target",
    "kl_div",
    modes=("vjp_vjp",),
)


# -- parity with torch ------------------------------------------------------------------------

# self - target exactly on huber's kinks, 0 and +-delta (binary fractions: no rounding in the
# difference): delta 0.5 without reduction, the default delta 1.0 with mean. huber_loss's
# gradient is continuous there; huber_loss_backward's (the second derivative) jumps, and torch
# gives it the outer branch's 0 at |self - target| == delta.
_TARGET = matrix([[0.25, -1.25, 0.75], [1.5, -0.5, 0.125]])
_ON_DELTA_HALF = _TARGET + matrix([[0.0, 0.5, -0.5], [0.5, 0.0, -0.5]])
_ON_DELTA_ONE = _TARGET + matrix([[0.0, 1.0, -1.0], [1.0, 0.0, -1.0]])
kinks("huber_loss", (_ON_DELTA_HALF, _TARGET, 0, 0.5), (_ON_DELTA_ONE, _TARGET, 1, 1.0))
kinks(
    "huber_loss_backward",
    (matrix([[1.0, -2.0, 0.5], [0.3, 1.5, -1.0]]), _ON_DELTA_HALF, _TARGET, 0, 0.5),
    (np.array(0.7), _ON_DELTA_ONE, _TARGET, 1, 1.0),
)
