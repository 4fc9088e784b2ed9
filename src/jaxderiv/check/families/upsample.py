"""Checker inputs of the upsampling ops (forward/upsample.py): nearest, linear, bilinear, bicubic
and trilinear (each with its .vec overload), torch 2.13's nearest-exact and antialiased
bilinear/bicubic/Lanczos modes, and their backward ops.

All are linear in their input, so no kinks: what matters are the sizes. Output sizes are no
multiples of the input's (the .vec overloads scale by 1.7), so source positions are neither a
repeat nor a stride; the interpolating modes are sampled with align_corners False and True,
nearest-exact also downsampling, and the antialiased modes also downsample, where the filter
spans several inputs. A backward entry's grad_output has the output's shape.
"""

from __future__ import annotations

from ._spatial_common import _normal, _register

_UP = {
    "nearest1d": (1, False),
    "linear1d": (1, True),
    "nearest2d": (2, False),
    "bilinear2d": (2, True),
    "bicubic2d": (2, True),
    "nearest3d": (3, False),
    "trilinear3d": (3, True),
}
_UP_IN = {1: (2, 2, 5), 2: (1, 2, 4, 5), 3: (1, 2, 3, 3, 4)}
_UP_OUT = {1: (8,), 2: (7, 9), 3: (5, 4, 6)}
for _mode, (_n, _corners) in _UP.items():
    _in, _out = _UP_IN[_n], _UP_OUT[_n]
    _scales = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}[_n]
    _ac = [{"align_corners": a} for a in ((False, True) if _corners else (False,))]
    _register(
        f"upsample_{_mode}",
        *[lambda rng, _i=_in, _o=_out, _a=a: {"self": _normal(rng, *_i), "output_size": _o, **_a} for a in _ac],
    )
    _register(
        f"upsample_{_mode}.vec",
        *[
            lambda rng, _i=_in, _a=a, _n=_n: {
                "input": _normal(rng, *_i),
                "output_size": None,
                "scale_factors": (1.7,) * _n,
                **_a,
            }
            for a in _ac
        ],
    )
    _register(
        f"upsample_{_mode}_backward",
        *[
            lambda rng, _i=_in, _o=_out, _a=a: {
                "grad_output": _normal(rng, *_i[:2], *_o),
                "output_size": _o,
                "input_size": _i,
                **_a,
            }
            for a in _ac
        ],
    )
    _register(
        f"upsample_{_mode}_backward.vec",
        *[
            lambda rng, _i=_in, _o=_out, _a=a: {
                "grad_output": _normal(rng, *_i[:2], *_o),
                "output_size": _o,
                "input_size": _i,
                "scale_factors": None,
                **_a,
            }
            for a in _ac
        ],
    )

# torch 2.13's nearest-exact mode: sizes whose source positions are neither a repeat nor a stride
for _n in (1, 2, 3):
    _in, _out = _UP_IN[_n], _UP_OUT[_n]
    _register(
        f"_upsample_nearest_exact{_n}d",
        lambda rng, _i=_in, _o=_out: {"self": _normal(rng, *_i), "output_size": _o},
        lambda rng, _i=_in, _o=_out: {"self": _normal(rng, *_i), "output_size": tuple(max(o // 3, 1) for o in _o)},
    )
    _register(
        f"_upsample_nearest_exact{_n}d_backward",
        lambda rng, _i=_in, _o=_out: {"grad_output": _normal(rng, *_i[:2], *_o), "output_size": _o, "input_size": _i},
    )

# torch 2.13's antialiased modes: upsampling, and downsampling where the filter spans several inputs
_AA = [((1, 2, 4, 5), (7, 9), False), ((1, 2, 9, 11), (4, 5), False), ((1, 2, 9, 11), (4, 5), True)]
for _mode in ("bilinear2d_aa", "bicubic2d_aa", "lanczos2d_aa"):
    _register(
        f"_upsample_{_mode}",
        *[
            lambda rng, _i=i, _o=o, _a=a: {"self": _normal(rng, *_i), "output_size": _o, "align_corners": _a}
            for i, o, a in _AA
        ],
    )
    _register(
        f"_upsample_{_mode}_backward",
        *[
            lambda rng, _i=i, _o=o, _a=a: {
                "grad_output": _normal(rng, *_i[:2], *_o),
                "output_size": _o,
                "input_size": _i,
                "align_corners": _a,
            }
            for i, o, a in _AA
        ],
    )
