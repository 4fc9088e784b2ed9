"""Checker inputs of the pooling ops (forward/pooling.py): average, max, adaptive and fractional
pooling in 2-D and 3-D, max unpooling, and their backward ops.

Inputs are a shuffled grid of well-separated values: max pooling has no ties and its argmax
does not move under the finite-difference step. Shapes are small (a few pixels, two
channels); the variants cover padding, uneven strides, dilation, ceil_mode,
count_include_pad and divisor_override. A backward entry's grad_output (and indices) come
from its forward run on the same input; max unpooling's indices from a max pooling with
stride = kernel, so each output position is written at most once.

The parity run compares max pooling on tied maxima too, which finite differences cannot judge.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ...forward import implementation
from ..opdb import Equivalent, kinks, known_failure, parity_differs, parity_samples, torch_equivalent
from ..samples import Sample
from . import matrix
from ._spatial_common import _normal, _register


def _distinct(rng, *shape):
    """Values 0.1 apart in random order: no ties, and the argmax of a window stays put."""
    return rng.permutation(math.prod(shape)).reshape(shape) * 0.1 + rng.uniform(-0.01, 0.01, shape)


def _pool(shape, backward_of=None, indices_arg=None, **kw):
    """A pooling entry's sample; a backward entry's grad_output (and indices) from its forward."""

    def make(rng):
        x = _distinct(rng, *shape)
        values = {"self": x, **kw}
        if backward_of is not None:
            out = implementation(backward_of)(jnp.asarray(x), **{k: v for k, v in kw.items()})
            out, idx = out if isinstance(out, tuple) else (out, None)
            values["grad_output"] = _normal(rng, *out.shape)
            if indices_arg:
                values[indices_arg] = np.asarray(idx)
        return values

    return make


_P2, _P3 = (2, 2, 5, 5), (1, 2, 4, 4, 3)
_AVG2 = [
    dict(
        kernel_size=(3, 3),
        stride=(2, 2),
        padding=(1, 1),
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ),
    dict(
        kernel_size=(2, 3),
        stride=(2, 1),
        padding=(1, 1),
        ceil_mode=True,
        count_include_pad=False,
        divisor_override=None,
    ),
    dict(kernel_size=(2, 2), stride=(), padding=(0, 0), ceil_mode=True, count_include_pad=True, divisor_override=3),
]
_AVG3 = [
    dict(
        kernel_size=(2, 3, 2),
        stride=(1, 2, 2),
        padding=(1, 1, 0),
        ceil_mode=True,
        count_include_pad=False,
        divisor_override=None,
    )
]
_MAX2 = [
    dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=False),
    dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True),
]
_MAX3 = [dict(kernel_size=(2, 2, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(1, 1, 1), ceil_mode=True)]
for _n, _shape, _avg, _max in ((2, _P2, _AVG2, _MAX2), (3, _P3, _AVG3, _MAX3)):
    _register(f"avg_pool{_n}d", *[_pool(_shape, **v) for v in _avg])
    _register(f"avg_pool{_n}d_backward", *[_pool(_shape, f"avg_pool{_n}d", **v) for v in _avg])
    _register(f"max_pool{_n}d_with_indices", *[_pool(_shape, **v) for v in _max])
    _register(
        f"max_pool{_n}d_with_indices_backward",
        *[_pool(_shape, f"max_pool{_n}d_with_indices", "indices", **v) for v in _max],
    )
    _sizes = [dict(output_size=(3, 2)), dict(output_size=(2, 4))] if _n == 2 else [dict(output_size=(3, 2, 2))]
    for _adaptive_avg in ("_adaptive_avg_pool2d",) if _n == 2 else ("adaptive_avg_pool3d", "_adaptive_avg_pool3d"):
        _register(_adaptive_avg, *[_pool(_shape, **v) for v in _sizes])
        _register(f"{_adaptive_avg}_backward", *[_pool(_shape, _adaptive_avg, **v) for v in _sizes])
    _register(f"adaptive_max_pool{_n}d", *[_pool(_shape, **v) for v in _sizes])
    _register(
        f"adaptive_max_pool{_n}d_backward", *[_pool(_shape, f"adaptive_max_pool{_n}d", "indices", **v) for v in _sizes]
    )
    _frac = dict(kernel_size=(2,) * _n, output_size=(3, 2, 2)[:_n])
    _samples = lambda rng, _s=_shape, _k=_n: rng.uniform(0, 1, (_s[0], _s[1], _k))
    _register(
        f"fractional_max_pool{_n}d",
        lambda rng, _s=_shape, _f=_frac, _r=_samples: {**_pool(_s, **_f)(rng), "random_samples": _r(rng)},
    )
    _register(
        f"fractional_max_pool{_n}d_backward",
        lambda rng, _s=_shape, _f=_frac, _r=_samples, _k=_n: _fractional_backward(rng, _s, _f, _r(rng), _k),
    )


_register("max_pool2d", *[_pool(_P2, **v) for v in _MAX2])
_register("max_pool2d_backward", *[_pool(_P2, "max_pool2d", **v) for v in _MAX2])


def _fractional_backward(rng, shape, kw, random_samples, n):
    x = _distinct(rng, *shape)
    out, idx = implementation(f"fractional_max_pool{n}d")(
        jnp.asarray(x), kw["kernel_size"], kw["output_size"], jnp.asarray(random_samples)
    )
    return {"self": x, "grad_output": _normal(rng, *out.shape), "indices": np.asarray(idx), **kw}


def _unpool(shape, n, backward=False):
    """Indices of a max pooling with stride = kernel: each output position at most once."""

    def make(rng):
        x = _distinct(rng, *shape)
        out, idx = implementation(f"max_pool{n}d_with_indices")(jnp.asarray(x), (2,) * n, (2,) * n)
        values = {
            "self": _normal(rng, *out.shape),
            "indices": np.asarray(idx),
            "output_size": shape[2:],
            "stride": (2,) * n,
            "padding": (0,) * n,
        }
        if backward:
            values["grad_output"] = _normal(rng, *shape)
        return values

    return make


_register("max_unpool2d", _unpool(_P2, 2))
_register("max_unpool3d", _unpool(_P3, 3))
_register("max_unpool2d_backward", _unpool(_P2, 2, backward=True))


known_failure(
    "spec bug (torch 2.13, an MPS-only entry): max_pool2d_backward's `result: auto_linear` runs the op on "
    "the tangents of both grad_output and self, but the op is linear in grad_output only (self picks "
    "each window's argmax), so the tangent scatters grad_output_t to the argmax of self_t",
    "max_pool2d_backward",
    modes=("jvp",),
)


# -- parity with torch ------------------------------------------------------------------------

# A 1x1x4x4 image whose 2x2 windows each hold a tied maximum, and its 3-D counterpart: max
# pooling with equal elements in a window.
_TIED_IMAGE = np.kron(matrix([[1.0, 2.0], [3.0, 0.5]]), np.ones((2, 2)))[None, None]
_TIED_VOLUME = np.kron(matrix([[1.0, 2.0], [3.0, 0.5]])[None], np.ones((2, 2, 2)))[None, None]
kinks("max_pool2d_with_indices", (_TIED_IMAGE, [2, 2], [2, 2]))
kinks("max_pool3d_with_indices", (_TIED_VOLUME, [2, 2, 2], [2, 2, 2]))
kinks("adaptive_max_pool2d", (_TIED_IMAGE, [2, 2]))
# the checker's schema-default samples have no torch meaning here (float random_samples)
parity_samples(
    "fractional_max_pool3d",
    Sample(
        (),
        {
            "self": np.linspace(-1, 1, 2 * 5 * 5 * 4).reshape(1, 2, 5, 5, 4),
            "kernel_size": [2, 2, 2],
            "output_size": [3, 2, 2],
            "random_samples": np.full((1, 2, 3), 0.4),
        },
        "5x5x4 to 3x2x2",
    ),
)


# torch calls computing what ops torch cannot run on CPU (or under the seed's schema) compute;
# each gets torch.ops.aten and the sample's arguments by name, as torch values.
def _torch_max_pool2d_backward(aten, a):
    geometry = [a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"]]
    _, indices = aten.max_pool2d_with_indices(a["self"], *geometry)
    return [aten.max_pool2d_with_indices_backward(a["grad_output"], a["self"], *geometry, indices)]


torch_equivalent(
    Equivalent(
        _torch_max_pool2d_backward,
        "torch 2.13 runs max_pool2d_backward only on MPS: "
        "aten.max_pool2d_with_indices, then max_pool2d_with_indices_backward",
    ),
    "max_pool2d_backward",
)
parity_differs(
    ("jvp",),
    "torch 2.13's entry (MPS only) says `result: auto_linear`, which runs the op on the tangents "
    "of grad_output and self, but the op is linear in grad_output only: self_t picks other argmaxes. "
    "jaxderiv evaluates the spec's formula; torch's CPU equivalent differentiates the op",
    "max_pool2d_backward",
    torch_spec=True,
    seed_spec=False,
)
