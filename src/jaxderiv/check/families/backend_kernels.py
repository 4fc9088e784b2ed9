"""Checker inputs of the backend kernels with dense semantics (forward/backend_kernels.py): the
depthwise convolutions and oneDNN's linear and pooling entries take the generic ops' samples;
oneDNN's adaptive average pooling needs input sizes divisible by the output size.

torch 2.13's formulas of `_conv_depthwise2d` and `conv_depthwise3d` call convolution_backward
with groups = 1, which holds only for a single input channel: with C > 1 channels the weight
(C * m, 1, k...) does not fit an input of C channels, and torch's own convolution_backward
raises for those arguments ("Given groups=1, weight of size [4, 1, 3, 3], expected input[2, 2,
5, 5] to have 1 channels"). Autograd never reaches these formulas in torch (its depthwise
convolutions differentiate through `convolution`), so the spec bug is latent; the checker runs
the entries on two channels and reports the failure as known."""

from __future__ import annotations

from ..samples import SAMPLES, known_failure
from . import nn  # noqa: F401  (registers linear's samples, reused below)
from .spatial import _DEPTHWISE, _MAX2, _MAX3, _P2, _P3, _conv_entry, _pool, _register

_register("_conv_depthwise2d", _conv_entry("", _DEPTHWISE, n=2, groups=2, depthwise=True))
_register("conv_depthwise3d", _conv_entry("", _DEPTHWISE, n=3, groups=2, depthwise=True))
_register("mkldnn_max_pool2d", *[_pool(_P2, **v) for v in _MAX2])
_register("mkldnn_max_pool3d", *[_pool(_P3, **v) for v in _MAX3])
_register("mkldnn_adaptive_avg_pool2d", *[_pool((2, 2, 6, 4), output_size=s) for s in ((3, 2), (2, 4), (6, 1))])
SAMPLES["mkldnn_linear"] = SAMPLES["linear"]
known_failure("torch 2.13's formula passes groups=1 to convolution_backward: wrong for a depthwise weight of C > 1 "
              "input channels (torch's convolution_backward raises for the same arguments)", "_conv_depthwise2d", "conv_depthwise3d")
