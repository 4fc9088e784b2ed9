"""The training zoo: transformers architectures imported with `jaxderiv.torch`, trained as people train them.

    python benchmarks/training_zoo.py [--models gpt2,bert,...] [--conditions f32,dropout,shapes,bf16]
                                      [--markdown FILE] [--json FILE] [--time-budget SECONDS] [--list]
    python benchmarks/training_zoo.py --from-json a.json b.json --markdown FILE   # one table from saved runs

The float64 zoo (tests/torch_import/test_torch_import_zoo.py) proves the formulas; users train in float32
with JAX's default 32-bit mode, with dropout and stochastic depth on, on batches of changing shapes, and
in bfloat16. Each model here is a small transformers config with random weights (nothing downloaded),
trained on its own loss (labels given), and each condition is a column of the table:

  f32      float32, dropout off, module.train(): the loss and every parameter gradient against torch's
           float32 `loss.backward()` on identical weights and inputs, then 3 optax SGD steps whose losses
           follow `torch.optim.SGD` step by step.
  dropout  dropout and drop_path on: `jax.jit(jax.value_and_grad(loss))` with `key=jax.random.key(i)` per
           step; the loss falls over 5 adam steps on a fixed batch, the same key gives the same loss and
           gradient, other keys others. Once per run, the mask of an `nn.Dropout` is checked: zeros at
           rate p, kept values scaled by 1/(1-p).
  shapes   one import with `dynamic_shapes` (torch.export's per-input `{dim: Dim.AUTO}`), run at two batch
           sizes and two sequence lengths (images: two batch sizes) against torch's outputs. "pending"
           while `from_module` does not take `dynamic_shapes`.
  bf16     `module.to(torch.bfloat16)`: loss and gradients against torch's bfloat16 backward, or, where
           bfloat16 rounding alone separates the two, no further from the float32 gradient than torch.

JAX stays in 32-bit mode (jax_enable_x64 off): the models run in a worker process with a clean
environment, one model after another; a worker that crashes or hangs is replaced and only its model's row
records it, and every exception is caught into its condition's cell.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONDITIONS = ("f32", "dropout", "shapes", "bf16")
VOCAB = 50
BATCH, SEQ = 2, 6  # the example inputs of every import
TEXT_SHAPES = ((2, 6), (3, 6), (2, 9))  # (batch, sequence) for the `shapes` condition
IMAGE_SHAPES = ((2, 0), (3, 0))
# f32_sgd: three SGD steps at lr 0.1 amplify float32 rounding (LeViT's BatchNorm over a batch of 2: 1.2e-3);
# the gradients themselves are held to f32_grad
TOL = {"f32_grad": 1e-3, "f32_loss": 1e-4, "f32_sgd": 1e-2, "shapes": 1e-4, "bf16": 5e-2}
BF16_FACTOR = 3.0  # bf16: at most this many times torch's own distance from the float32 gradient
SGD_LR, SGD_STEPS = 0.1, 3
ADAM_LR, ADAM_STEPS = 1e-2, 5
DROPOUT_P = 0.1
DROP_PATH_P = 0.2  # stochastic depth draws one number per sample: at 0.1, two samples are often both kept
MARK = "@@zoo "  # the worker's result lines on stdout; anything else there is the models' own printing


def rel(a, b) -> float:
    """max |a - b| / max |b|, the scale at least 1e-12 (a gradient that is zero in exact arithmetic)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shape {a.shape} != torch's {b.shape}")
    if a.size == 0:
        return 0.0
    if not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def compare_grads(ours: dict, theirs: dict, floor: float = 1e-3) -> tuple[float, str]:
    """The worst per-parameter relative gradient error and its parameter. A parameter's scale is at
    least `floor` times the largest gradient of the model: in float32 a gradient that is zero in exact
    arithmetic (a bias before a norm) is rounding noise on both sides, not a derivative to match."""
    if set(ours) != set(theirs):
        return float("inf"), f"parameters differ: {sorted(set(ours) ^ set(theirs))[:5]}"
    top = max((float(np.max(np.abs(np.asarray(v, np.float64)))) for v in theirs.values() if np.size(v)), default=0.0)
    worst, name = 0.0, ""
    for k, b in theirs.items():
        a, b = np.asarray(ours[k], np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            return float("inf"), f"{k}: shape {a.shape} != torch's {b.shape}"
        if not np.all(np.isfinite(a)):
            return float("inf"), f"{k}: not finite"
        if a.size == 0:
            continue
        e = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), floor * top, 1e-30))
        if e > worst or not name:
            worst, name = e, k
    return worst, name


def bf16_verdict(ours: dict, theirs: dict, truth: dict, loss_ours: float, loss_theirs: float, loss_truth: float):
    """bfloat16 gradients pass where they are within TOL["bf16"] of torch's bfloat16 gradients, or no
    more than BF16_FACTOR times as far from the float32 gradient (same rounded weights and inputs) as
    torch's bfloat16 gradients are: a bfloat16 backward through a dozen layers is itself 10-50% off,
    and two different summation orders differ by that much without either being wrong."""
    top = max((float(np.max(np.abs(np.asarray(v, np.float64)))) for v in truth.values() if np.size(v)), default=0.0)

    def err(a, b):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape or not np.all(np.isfinite(a)):
            return float("inf")
        scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-2 * top, 1e-30)
        return float(np.max(np.abs(a - b), initial=0.0) / scale)

    tol, worst, bad = TOL["bf16"], (0.0, 0.0, ""), []
    if set(ours) != set(theirs):
        bad.append(f"parameters differ: {sorted(set(ours) ^ set(theirs))[:5]}")
    for k in sorted(set(ours) & set(theirs) & set(truth)):
        direct, mine, torchs = err(ours[k], theirs[k]), err(ours[k], truth[k]), err(theirs[k], truth[k])
        if direct > tol and mine > max(tol, BF16_FACTOR * torchs):
            bad.append(f"{k}: {mine:.2e} from float32, torch bf16 {torchs:.2e}")
        if mine / max(torchs, tol) > worst[0] / max(worst[1], tol) or not worst[2]:
            worst = (mine, torchs, k)
    direct = abs(loss_ours - loss_theirs) / max(abs(loss_theirs), 1e-12)
    mine = abs(loss_ours - loss_truth) / max(abs(loss_truth), 1e-12)
    torchs = abs(loss_theirs - loss_truth) / max(abs(loss_truth), 1e-12)
    if direct > tol and mine > max(tol, BF16_FACTOR * torchs):
        bad.insert(0, f"loss: {mine:.2e} from float32, torch bf16 {torchs:.2e}")
    return dict(
        ok=not bad,
        why=f"{len(bad)} value(s) over {BF16_FACTOR:g}x torch's bf16 error: " + "; ".join(bad[:4]) if bad else "",
        ours_vs_f32=worst[0],
        torch_vs_f32=worst[1],
        worst_vs_f32=worst[2],
    )


# -- the zoo ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Spec:
    """A model: its transformers class and config, the kind of inputs it takes and how it is trained."""

    name: str
    cls: str
    config: str
    kw: dict
    inputs: str  # causal, seqcls, mlm, electra, seq2seq, image, seg, whisper, clip
    image: int = 16
    note: str = ""
    wrap: str = ""  # "clip_loss": CLIPModel with return_loss=True (a constant keyword is no graph input)


def _lm(**kw) -> dict:
    """A 2-layer decoder with 2 query heads, 1 key/value head (GQA), hidden 16."""
    base = dict(
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        hidden_size=16,
        intermediate_size=32,
        vocab_size=VOCAB,
        max_position_embeddings=32,
        use_cache=False,
    )
    return {**base, **kw}


def _enc(**kw) -> dict:
    base = dict(
        num_hidden_layers=2,
        num_attention_heads=2,
        hidden_size=16,
        intermediate_size=32,
        vocab_size=VOCAB,
        max_position_embeddings=32,
    )
    return {**base, **kw}


def _vit(**kw) -> dict:
    base = dict(
        num_hidden_layers=2,
        num_attention_heads=2,
        hidden_size=16,
        intermediate_size=32,
        image_size=16,
        patch_size=4,
        num_labels=3,
    )
    return {**base, **kw}


def _stages(**kw) -> dict:
    return {"num_labels": 3, **kw}


MODELS: dict[str, Spec] = {
    s.name: s
    for s in [
        # decoders, trained on their own causal LM loss (labels = input_ids)
        Spec("gpt2", "GPT2LMHeadModel", "GPT2Config", dict(n_layer=2, n_head=2, n_embd=16, vocab_size=VOCAB,
             n_positions=32, use_cache=False), "causal"),
        Spec("llama", "LlamaForCausalLM", "LlamaConfig", _lm(), "causal", note="RMSNorm, rotary, GQA"),
        Spec("mistral", "MistralForCausalLM", "MistralConfig", _lm(sliding_window=4), "causal", note="sliding window"),
        Spec("qwen2", "Qwen2ForCausalLM", "Qwen2Config", _lm(), "causal"),
        Spec("qwen3", "Qwen3ForCausalLM", "Qwen3Config", _lm(head_dim=8), "causal", note="q/k norm"),
        Spec("gemma", "GemmaForCausalLM", "GemmaConfig", _lm(head_dim=8), "causal"),
        Spec("gemma2", "Gemma2ForCausalLM", "Gemma2Config", _lm(head_dim=8, sliding_window=4), "causal",
             note="logit soft-capping"),
        Spec("phi", "PhiForCausalLM", "PhiConfig", _lm(), "causal", note="partial rotary"),
        Spec("phi3", "Phi3ForCausalLM", "Phi3Config", _lm(pad_token_id=0), "causal"),
        Spec("olmo", "OlmoForCausalLM", "OlmoConfig", _lm(pad_token_id=0), "causal", note="non-parametric LayerNorm"),
        Spec("stablelm", "StableLmForCausalLM", "StableLmConfig", _lm(), "causal"),
        Spec("starcoder2", "Starcoder2ForCausalLM", "Starcoder2Config", _lm(), "causal"),
        Spec("falcon", "FalconForCausalLM", "FalconConfig", dict(num_hidden_layers=2, num_attention_heads=2,
             hidden_size=16, vocab_size=VOCAB, use_cache=False), "causal"),
        Spec("gpt_neox", "GPTNeoXForCausalLM", "GPTNeoXConfig", _enc(use_cache=False), "causal"),
        Spec("gpt_neo", "GPTNeoForCausalLM", "GPTNeoConfig", dict(num_layers=2, num_heads=2, hidden_size=16,
             vocab_size=VOCAB, max_position_embeddings=32, attention_types=[[["global", "local"], 1]], window_size=4,
             use_cache=False), "causal", note="local attention"),
        Spec("gptj", "GPTJForCausalLM", "GPTJConfig", dict(n_layer=2, n_head=2, n_embd=16, rotary_dim=4,
             vocab_size=VOCAB, n_positions=32, use_cache=False), "causal"),
        Spec("codegen", "CodeGenForCausalLM", "CodeGenConfig", dict(n_layer=2, n_head=4, n_embd=32, rotary_dim=4,
             vocab_size=VOCAB, n_positions=32, n_ctx=32, use_cache=False), "causal", note="4 heads: mp_num=4"),
        Spec("bloom", "BloomForCausalLM", "BloomConfig", dict(n_layer=2, n_head=2, hidden_size=16, vocab_size=VOCAB,
             use_cache=False), "causal", note="ALiBi"),
        Spec("opt", "OPTForCausalLM", "OPTConfig", dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=16,
             ffn_dim=32, word_embed_proj_dim=16, vocab_size=VOCAB, max_position_embeddings=32, use_cache=False),
             "causal", note="LayerDrop"),
        Spec("mamba", "MambaForCausalLM", "MambaConfig", dict(num_hidden_layers=2, hidden_size=16, state_size=4,
             vocab_size=VOCAB, time_step_rank=4, use_cache=False), "causal", note="selective scan"),
        # encoders
        Spec("bert", "BertForSequenceClassification", "BertConfig", _enc(), "seqcls"),
        Spec("roberta", "RobertaForMaskedLM", "RobertaConfig", _enc(pad_token_id=1), "mlm"),
        Spec("distilbert", "DistilBertForSequenceClassification", "DistilBertConfig", dict(n_layers=2, n_heads=2,
             dim=16, hidden_dim=32, vocab_size=VOCAB, max_position_embeddings=32), "seqcls"),
        Spec("albert", "AlbertForMaskedLM", "AlbertConfig", _enc(embedding_size=8), "mlm", note="shared layers"),
        Spec("electra", "ElectraForPreTraining", "ElectraConfig", _enc(embedding_size=16), "electra"),
        Spec("deberta_v2", "DebertaV2ForSequenceClassification", "DebertaV2Config", _enc(relative_attention=True,
             problem_type="single_label_classification", position_buckets=8, max_relative_positions=16,
             pos_att_type=["p2c", "c2p"]), "seqcls", note="disentangled attention"),
        Spec("mpnet", "MPNetForMaskedLM", "MPNetConfig", _enc(), "mlm", note="relative buckets"),
        # encoder-decoders
        Spec("t5", "T5ForConditionalGeneration", "T5Config", dict(num_layers=2, num_decoder_layers=2, num_heads=2,
             d_model=16, d_kv=8, d_ff=32, vocab_size=VOCAB, decoder_start_token_id=0, pad_token_id=0,
             use_cache=False), "seq2seq"),
        Spec("bart", "BartForConditionalGeneration", "BartConfig", dict(encoder_layers=2, decoder_layers=2,
             encoder_attention_heads=2, decoder_attention_heads=2, d_model=16, encoder_ffn_dim=32, decoder_ffn_dim=32,
             vocab_size=VOCAB, max_position_embeddings=32, use_cache=False), "seq2seq", note="LayerDrop"),
        Spec("whisper", "WhisperForConditionalGeneration", "WhisperConfig", dict(encoder_layers=2, decoder_layers=2,
             encoder_attention_heads=2, decoder_attention_heads=2, d_model=16, encoder_ffn_dim=32, decoder_ffn_dim=32,
             vocab_size=VOCAB, num_mel_bins=8, max_source_positions=8, max_target_positions=32, pad_token_id=0,
             bos_token_id=0, eos_token_id=0, decoder_start_token_id=1, begin_suppress_tokens=None, use_cache=False),
             "whisper", note="LayerDrop"),
        # vision
        Spec("vit", "ViTForImageClassification", "ViTConfig", _vit(), "image"),
        Spec("deit", "DeiTForImageClassification", "DeiTConfig", _vit(), "image"),
        Spec("beit", "BeitForImageClassification", "BeitConfig", _vit(use_relative_position_bias=True), "image",
             note="drop_path, relative bias"),
        Spec("dinov2", "Dinov2ForImageClassification", "Dinov2Config", _vit(), "image", note="drop_path, layer scale"),
        Spec("swin", "SwinForImageClassification", "SwinConfig", _stages(image_size=32, patch_size=2, embed_dim=16,
             depths=[1, 1], num_heads=[2, 2], window_size=4), "image", image=32, note="drop_path, shifted windows"),
        Spec("convnext", "ConvNextForImageClassification", "ConvNextConfig", _stages(hidden_sizes=[8, 16],
             depths=[1, 1], num_stages=2), "image", image=32, note="drop_path"),
        Spec("convnextv2", "ConvNextV2ForImageClassification", "ConvNextV2Config", _stages(hidden_sizes=[8, 16],
             depths=[1, 1], num_stages=2), "image", image=32, note="drop_path, GRN"),
        Spec("resnet", "ResNetForImageClassification", "ResNetConfig", _stages(embedding_size=8, hidden_sizes=[8, 16],
             depths=[1, 1], layer_type="basic"), "image", image=32, note="BatchNorm"),
        Spec("regnet", "RegNetForImageClassification", "RegNetConfig", _stages(embedding_size=8, hidden_sizes=[8, 16],
             depths=[1, 1], groups_width=4), "image", image=32, note="grouped conv, squeeze-excite"),
        Spec("mobilenet_v2", "MobileNetV2ForImageClassification", "MobileNetV2Config", _stages(image_size=32,
             depth_multiplier=0.25, min_depth=4), "image", image=32, note="depthwise conv, relu6"),
        Spec("efficientnet", "EfficientNetForImageClassification", "EfficientNetConfig", _stages(image_size=32,
             width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320), "image", image=32,
             note="drop_connect"),
        Spec("poolformer", "PoolFormerForImageClassification", "PoolFormerConfig", _stages(hidden_sizes=[8, 16],
             depths=[1, 1], num_encoder_blocks=2, patch_sizes=[7, 3], strides=[4, 2], padding=[2, 1]), "image",
             image=32, note="avg-pool mixer"),
        Spec("levit", "LevitForImageClassification", "LevitConfig", _stages(image_size=32, hidden_sizes=[16, 32],
             num_attention_heads=[2, 2], depths=[1, 1], key_dim=[8, 8], mlp_ratio=[2, 2], attention_ratio=[2, 2],
             down_ops=[["Subsample", 8, 2, 4, 2, 2]], patch_size=16), "image", image=32, note="attention bias"),
        Spec("segformer", "SegformerForSemanticSegmentation", "SegformerConfig", _stages(num_encoder_blocks=2,
             depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[7, 3], strides=[4, 2],
             num_attention_heads=[1, 2], mlp_ratios=[2, 2], decoder_hidden_size=16), "seg", image=32,
             note="bilinear upsample"),
        Spec("clip", "CLIPModel", "CLIPConfig", dict(text_config=dict(num_hidden_layers=2, num_attention_heads=2,
             hidden_size=16, intermediate_size=32, vocab_size=VOCAB, max_position_embeddings=32),
             vision_config=dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=16, intermediate_size=32,
             image_size=16, patch_size=4), projection_dim=8), "clip", note="contrastive loss", wrap="clip_loss"),
    ]
}  # fmt: skip


# -- the worker: one model at a time, in float32 JAX -------------------------------------------------


class _Skip(Exception):
    """A condition that does not apply (n/a) or cannot run yet (pending)."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


def _set_dropout(cfg, on: bool) -> None:
    """Every dropout (DROPOUT_P) and stochastic-depth (DROP_PATH_P) probability of a config, nested
    ones too, on or off; LayerDrop stays 0 (its layer skipping is a Python branch on a random number,
    outside the graph); integer fields (LeViT's unused drop_path_rate) are left alone."""
    for k, v in list(vars(cfg).items()):
        if hasattr(v, "to_dict") and hasattr(v, "model_type"):
            _set_dropout(v, on)
        elif re.search(r"layerdrop", k):
            setattr(cfg, k, 0.0)
        elif re.search(r"dropout|pdrop|drop_path|drop_connect|drop_rate", k) and (v is None or isinstance(v, float)):
            setattr(cfg, k, (DROP_PATH_P if re.search(r"path|connect", k) else DROPOUT_P) if on else 0.0)


def _ClipLoss(model):
    """CLIPModel whose forward asks for the contrastive loss."""
    from torch import nn

    class ClipLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, pixel_values):
            return self.model(input_ids=input_ids, pixel_values=pixel_values, return_loss=True)

    return ClipLoss()


def _build(spec: Spec, *, dropout: bool, dtype=None):
    import torch
    import transformers

    cfg = getattr(transformers, spec.config)(**spec.kw)
    _set_dropout(cfg, dropout)
    torch.manual_seed(0)
    model = getattr(transformers, spec.cls)(cfg)
    if spec.wrap == "clip_loss":
        model = _ClipLoss(model)
    if dtype is not None:
        model = model.to(dtype)
    return model.train()


def _inputs(spec: Spec, batch: int, seq: int, dtype=None) -> dict:
    """Keyword inputs (torch tensors) for one batch; the same (batch, seq) gives the same tensors."""
    import torch

    g = torch.Generator().manual_seed(1000 * batch + seq)
    dtype = dtype or torch.float32

    def ids(*shape, high=VOCAB):
        return torch.randint(2, high, shape, generator=g)

    def image(n=3):
        return torch.randn(batch, n, spec.image, spec.image, generator=g).to(dtype)

    kind = spec.inputs
    if kind == "causal":
        x = ids(batch, seq)
        return {"input_ids": x, "labels": x.clone()}
    if kind == "seqcls":
        return {"input_ids": ids(batch, seq), "labels": torch.arange(batch) % 2}
    if kind == "mlm":
        return {"input_ids": ids(batch, seq), "labels": ids(batch, seq)}
    if kind == "electra":
        return {"input_ids": ids(batch, seq), "labels": torch.randint(0, 2, (batch, seq), generator=g)}
    if kind == "seq2seq":
        return {"input_ids": ids(batch, seq), "labels": ids(batch, seq - 2)}
    if kind == "whisper":
        n_mel, frames = spec.kw["num_mel_bins"], 2 * spec.kw["max_source_positions"]
        return {"input_features": torch.randn(batch, n_mel, frames, generator=g).to(dtype), "labels": ids(batch, seq)}
    if kind == "image":
        return {"pixel_values": image(), "labels": torch.randint(0, 3, (batch,), generator=g)}
    if kind == "seg":
        return {"pixel_values": image(), "labels": torch.randint(0, 3, (batch, spec.image, spec.image), generator=g)}
    if kind == "clip":
        return {"input_ids": ids(batch, seq), "pixel_values": image()}
    raise ValueError(kind)


def _dynamic(spec: Spec, inputs: dict) -> dict:
    """torch.export's dynamic_shapes: batch dims dynamic, and the sequence dims of token inputs."""
    from torch.export import Dim

    out = {}
    for k, v in inputs.items():
        dims = {0: Dim.AUTO}
        if k in ("input_ids", "labels") and spec.inputs not in ("image", "seg") and v.dim() == 2:
            dims[1] = Dim.AUTO
        out[k] = dims
    return out


def _shapes(spec: Spec):
    return IMAGE_SHAPES if spec.inputs in ("image", "seg") else TEXT_SHAPES


def _to_jax(inputs: dict) -> dict:
    """As a user hands them over: integers as int32 (JAX's 32-bit mode), floats in their dtype."""
    import jax.numpy as jnp
    import torch

    out = {}
    for k, v in inputs.items():
        if v.dtype == torch.bfloat16:
            out[k] = jnp.asarray(v.float().numpy()).astype(jnp.bfloat16)
        elif v.is_floating_point():
            out[k] = jnp.asarray(v.numpy())
        else:
            out[k] = jnp.asarray(v.numpy().astype(np.int32))
    return out


def _loss_of(out):
    """The model's own loss (labels given; CLIP's contrastive loss)."""
    if isinstance(out, dict):
        return out["loss"]
    return out.loss


def _first(out):
    if isinstance(out, dict):
        return next(iter(v for k, v in out.items() if k != "loss"))
    if hasattr(out, "to_tuple"):
        return next(v for k, v in out.items() if k != "loss")
    return out[0] if isinstance(out, (tuple, list)) else out


def _first_key(out):
    """The name of torch's first output other than the loss (None for a tuple)."""
    return next((k for k in out.keys() if k != "loss"), None) if hasattr(out, "keys") else None


def _np(x) -> np.ndarray:
    import torch

    if isinstance(x, torch.Tensor):
        x = x.detach()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    return np.asarray(x).astype(np.float32) if np.asarray(x).dtype.name == "bfloat16" else np.asarray(x)


def _torch_loss_grads(module, inputs):
    """torch's loss and every trained parameter's gradient (zeros where unused). A parameter with
    requires_grad=False (Whisper's sinusoidal positions) is state in the import, as in torch."""
    module.zero_grad(set_to_none=True)
    loss = _loss_of(module(**inputs))
    loss.backward()
    grads = {}
    for n, p in module.named_parameters():
        if not p.requires_grad:
            continue
        grads[n] = _np(p.grad) if p.grad is not None else np.zeros(tuple(p.shape), np.float32)
    module.zero_grad(set_to_none=True)
    return float(loss.detach().float()), grads


def _ours(grads_j) -> dict:
    """The import's gradients as NumPy, under torch's parameter names."""
    return {n: _np(g) for n, g in grads_j.items()}


def _theirs(model, grads_t) -> dict:
    """torch's gradients less the tied names (named_parameters gives a tied tensor once, as the import)."""
    return {n: g for n, g in grads_t.items() if n not in model.aliases}


def _block(x):
    import jax

    return jax.block_until_ready(x)


def _import(module, inputs, **kw):
    import jaxderiv.torch as jt

    t0 = time.perf_counter()
    model = jt.from_module(module, **kw, **inputs)
    return model, time.perf_counter() - t0


def cond_f32(spec: Spec, row: dict, fault: str | None) -> dict:
    import jax
    import optax
    import torch

    module = _build(spec, dropout=False)
    inputs = _inputs(spec, BATCH, SEQ)
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    model, import_s = _import(module, inputs)
    module.load_state_dict(state)
    row["nodes"] = len(model.program.steps)
    loss_t, grads_t = _torch_loss_grads(module, inputs)
    buffers_t = {k: _np(v) for k, v in module.state_dict().items() if k in model.buffers}
    xs = _to_jax(inputs)
    opt = optax.sgd(SGD_LR)

    def loss_fn(params, buffers):
        out, new_buffers = model.apply(params, buffers, **xs)
        return _loss_of(out), new_buffers

    @jax.jit
    def step(params, buffers, opt_state):
        (loss, new_buffers), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, buffers)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), new_buffers, opt_state, loss, grads

    params, buffers, opt_state = model.params, model.buffers, opt.init(model.params)
    t0 = time.perf_counter()
    params, buffers, opt_state, loss_j, grads_j = _block(step(params, buffers, opt_state))
    compile_s = time.perf_counter() - t0
    ours = _ours(grads_j)
    if fault == "grad":  # the harness must see a wrong gradient: scale the first one by 1.01
        k = next(iter(ours))
        ours[k] = ours[k] * 1.01
    grad_err, worst = compare_grads(ours, _theirs(model, grads_t))
    loss_err = abs(float(loss_j) - loss_t) / max(abs(loss_t), 1e-12)
    # a running mean of a normalized input is rounding noise around 0: the floor applies to buffers too
    buf_err = compare_grads({k: _np(buffers[k]) for k in buffers_t}, buffers_t)[0] if buffers_t else 0.0

    # the SGD trajectory, torch beside JAX, from the same weights
    module.load_state_dict(state)
    topt = torch.optim.SGD(module.parameters(), lr=SGD_LR)
    losses_t, losses_j, times = [], [float(loss_j)], []
    for i in range(SGD_STEPS):
        topt.zero_grad()
        lt = _loss_of(module(**inputs))
        lt.backward()
        topt.step()
        losses_t.append(float(lt.detach()))
        if i + 1 < SGD_STEPS:
            t0 = time.perf_counter()
            params, buffers, opt_state, lj, _ = _block(step(params, buffers, opt_state))
            times.append(time.perf_counter() - t0)
            losses_j.append(float(lj))
    sgd_err = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses_j, losses_t))
    module.load_state_dict(state)
    ok = grad_err <= TOL["f32_grad"] and loss_err <= TOL["f32_loss"] and sgd_err <= TOL["f32_sgd"]
    ok = ok and buf_err <= TOL["f32_grad"] and losses_j[-1] != losses_j[0]
    errors = dict(loss=loss_err, grad=grad_err, worst_param=worst, buffers=buf_err, sgd=sgd_err)
    return dict(
        status="pass" if ok else "fail",
        error="" if ok else _numbers(errors, TOL["f32_grad"]),
        metrics={**errors, "losses_jax": losses_j, "losses_torch": losses_t},
        import_s=import_s,
        compile_s=compile_s,
        step_s=statistics.median(times) if times else None,
    )


def _numbers(errors: dict, tol: float) -> str:
    parts = [f"{k} {v:.2e}" if isinstance(v, float) else f"{k} {v}" for k, v in errors.items()]
    return f"error above {tol:g}: " + ", ".join(parts)


def cond_dropout(spec: Spec, row: dict, fault: str | None) -> dict:
    import jax
    import optax

    module = _build(spec, dropout=True)
    inputs = _inputs(spec, BATCH, SEQ)
    model, import_s = _import(module, inputs)
    row.setdefault("nodes", len(model.program.steps))
    random_ops = sorted({s.op for s in model.program.steps if s.kind == "random"})
    xs = _to_jax(inputs)
    opt = optax.adam(ADAM_LR)

    def loss_fn(params, buffers, key):
        out, new_buffers = model.apply(params, buffers, **xs, key=key)
        return _loss_of(out), new_buffers

    @jax.jit
    def step(params, buffers, opt_state, key):
        (loss, new_buffers), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, buffers, key)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), new_buffers, opt_state, loss, optax.global_norm(grads)

    params, buffers, opt_state = model.params, model.buffers, opt.init(model.params)
    t0 = time.perf_counter()
    # the draw is the key's: the first weights' loss and gradient norm under keys 100, 100, 101..107 (the
    # norm too: a stochastic-depth branch behind ConvNeXt's 1e-6 layer scale hardly moves the loss)
    same = [step(params, buffers, opt_state, jax.random.key(k))[3:] for k in (100, 100, *range(101, 108))]
    same = [(float(a), float(b)) for a, b in same]
    compile_s, losses, times = time.perf_counter() - t0, [], []
    for i in range(ADAM_STEPS):
        t0 = time.perf_counter()
        params, buffers, opt_state, loss, _ = _block(step(params, buffers, opt_state, jax.random.key(i)))
        times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    finite = all(np.isfinite(losses)) and all(np.isfinite(same).ravel())
    falls = losses[-1] < losses[0]
    keyed = same[0] == same[1] and (len(set(same[1:])) > 1 or not random_ops)
    problems = [
        *([] if finite else ["loss not finite"]),
        *([] if falls else [f"loss does not fall: {losses[0]:.4g} -> {losses[-1]:.4g}"]),
        *(
            []
            if keyed
            else [f"the key does not decide the draw: (loss, gradient norm) under keys 100, 100, 101..107: {same}"]
        ),
    ]
    return dict(
        status="fail" if problems else "pass",
        error="; ".join(problems),
        metrics=dict(losses=losses, random_ops=random_ops, keyed_losses=same),
        import_s=import_s,
        compile_s=compile_s,
        step_s=statistics.median(times) if times else None,
    )


def cond_shapes(spec: Spec, row: dict, fault: str | None) -> dict:
    import inspect

    import jax

    import jaxderiv.torch as jt

    if "dynamic_shapes" not in inspect.signature(jt.from_module).parameters:
        raise _Skip("pending", "from_module takes no dynamic_shapes yet")
    module = _build(spec, dropout=False)
    example = _inputs(spec, BATCH, SEQ)
    try:
        model, import_s = _import(module, example, dynamic_shapes=_dynamic(spec, example))
    except TypeError as e:
        if "dynamic_shapes" in str(e):
            raise _Skip("pending", f"from_module: {e}") from None
        raise
    row.setdefault("nodes", len(model.program.steps))
    fwd = jax.jit(lambda params, buffers, xs: model.apply(params, buffers, **xs)[0])
    errors, times, compile_s = {}, [], 0.0
    for b, s in _shapes(spec):
        inputs = _inputs(spec, b, s)
        out_t = module(**inputs)
        t0 = time.perf_counter()
        out_j = _block(fwd(model.params, model.buffers, _to_jax(inputs)))
        if compile_s:
            times.append(time.perf_counter() - t0)
        else:
            compile_s = time.perf_counter() - t0
        label = f"b{b}" + (f"s{s}" if s else "")
        key = _first_key(out_t)
        first_j = out_j[key] if key is not None else _first(out_j)
        errors[label] = max(rel(_np(first_j), _np(_first(out_t))), rel(_np(_loss_of(out_j)), _np(_loss_of(out_t))))
    worst = max(errors.values())
    ok = worst <= TOL["shapes"]
    return dict(
        status="pass" if ok else "fail",
        error="" if ok else _numbers(errors, TOL["shapes"]),
        metrics=dict(errors=errors, worst=worst),
        import_s=import_s,
        compile_s=compile_s,
        step_s=statistics.median(times) if times else None,
    )


def cond_bf16(spec: Spec, row: dict, fault: str | None) -> dict:
    import jax
    import torch

    module = _build(spec, dropout=False, dtype=torch.bfloat16)
    inputs = _inputs(spec, BATCH, SEQ, dtype=torch.bfloat16)
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    try:
        loss_t, grads_t = _torch_loss_grads(module, inputs)
    except Exception as e:  # noqa: BLE001  # torch's own CPU kernels lack some bfloat16 ops
        raise _Skip("n/a", f"torch CPU bfloat16: {type(e).__name__}: {str(e)[:200]}") from None
    module.load_state_dict(state)
    # the float32 truth on the same (bfloat16-rounded) weights and inputs
    reference = _build(spec, dropout=False)
    reference.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
    loss_32, grads_32 = _torch_loss_grads(
        reference, {k: v.float() if v.is_floating_point() else v for k, v in inputs.items()}
    )
    model, import_s = _import(module, inputs)
    xs = _to_jax(inputs)

    def loss_fn(params):
        return _loss_of(model.apply(params, model.buffers, **xs)[0]).astype("float32")

    vg = jax.jit(jax.value_and_grad(loss_fn))
    t0 = time.perf_counter()
    loss_j, grads_j = _block(vg(model.params))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _block(vg(model.params))
    step_s = time.perf_counter() - t0
    ours = _ours(grads_j)
    if fault == "grad":
        k = next(iter(ours))
        ours[k] = ours[k] * 1.5
    theirs = _theirs(model, grads_t)
    grad_err, worst = compare_grads(ours, theirs, floor=1e-2)
    verdict = bf16_verdict(ours, theirs, _theirs(model, grads_32), float(loss_j), loss_t, loss_32)
    metrics = dict(loss=abs(float(loss_j) - loss_t) / max(abs(loss_t), 1e-12), grad=grad_err, worst_param=worst)
    metrics.update(verdict)
    return dict(
        status="pass" if verdict["ok"] else "fail",
        error="" if verdict["ok"] else verdict["why"],
        metrics=metrics,
        import_s=import_s,
        compile_s=compile_s,
        step_s=step_s,
    )


RUNNERS = {"f32": cond_f32, "dropout": cond_dropout, "shapes": cond_shapes, "bf16": cond_bf16}


def dropout_mask(p: float = 0.3) -> dict:
    """Once per run: an nn.Dropout's mask from the import: zeros at rate p (within 5 standard
    deviations), kept values exactly x/(1-p), another key another mask, the same key the same."""
    import jax
    import torch

    import jaxderiv.torch as jt

    x = torch.rand(200, 500) + 0.5
    model = jt.from_module(torch.nn.Dropout(p).train(), x)
    xj = jax.numpy.asarray(x.numpy())
    ys = [np.asarray(model(xj, key=jax.random.key(k))) for k in (0, 0, 1)]
    zeros = float(np.mean(ys[0] == 0))
    kept = ys[0] != 0
    scale_err = float(np.max(np.abs(ys[0][kept] - x.numpy()[kept] / (1 - p)) / (x.numpy()[kept] / (1 - p))))
    both = float(np.mean((ys[0] == 0) & (ys[2] == 0)))
    sigma = (p * (1 - p) / x.numel()) ** 0.5
    problems = []
    if abs(zeros - p) > 5 * sigma:
        problems.append(f"fraction of zeros {zeros:.4f}, p = {p}")
    if scale_err > 1e-6:
        problems.append(f"kept values not x/(1-p): relative error {scale_err:.2e}")
    if not np.array_equal(ys[0], ys[1]):
        problems.append("the same key gave another mask")
    if abs(both - p * p) > 5 * sigma:
        problems.append(f"masks of keys 0 and 1 overlap at {both:.4f}, independent ones at {p * p:.4f}")
    return dict(
        status="fail" if problems else "pass",
        error="; ".join(problems),
        p=p,
        zeros=zeros,
        scale_err=scale_err,
        overlap=both,
        random_ops=sorted({s.op for s in model.program.steps if s.kind == "random"}),
    )


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text[:2000]


def _emit(event: dict) -> None:
    sys.stdout.write(MARK + json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


def worker(models: list[str], conditions: list[str], fault: str | None, mask: bool) -> None:
    """Run each model's conditions and emit a row per model; never raises for a model's failure."""
    import warnings

    warnings.filterwarnings("ignore")
    import jax

    if jax.config.jax_enable_x64:  # type: ignore[attr-defined]
        raise SystemExit("the training zoo runs JAX in its default 32-bit mode: unset JAX_ENABLE_X64")
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    if mask:
        _emit({"event": "start", "model": "nn.Dropout", "condition": "mask"})
        try:
            _emit({"event": "mask", "result": dropout_mask()})
        except Exception as e:  # noqa: BLE001
            _emit({"event": "mask", "result": {"status": "fail", "error": _short(e), "trace": traceback.format_exc()}})
    for name in models:
        spec = MODELS[name]
        row: dict = {"model": name, "note": spec.note, "conditions": {}}
        for cond in conditions:
            _emit({"event": "start", "model": name, "condition": cond})
            t0 = time.perf_counter()
            try:
                cell = RUNNERS[cond](spec, row, fault)
            except _Skip as e:
                cell = {"status": e.status, "error": str(e)}
            except Exception as e:  # noqa: BLE001  # a model's failure is its cell, never the run's
                cell = {"status": "fail", "error": _short(e), "trace": traceback.format_exc()[-4000:]}
            cell["wall_s"] = time.perf_counter() - t0
            row["conditions"][cond] = cell
        _emit({"event": "row", "row": row})


# -- the command: workers, progress, table ----------------------------------------------------------


def _worker_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def run_zoo(
    models: list[str],
    conditions: list[str],
    *,
    time_budget: float | None = None,
    model_timeout: float = 600.0,
    fault: str | None = None,
    mask: bool | None = None,
    log: Path | None = None,
    progress=None,
) -> dict:
    """Every model in a worker process (one at a time); a crashed or hung worker is replaced."""
    start = time.perf_counter()
    mask = ("dropout" in conditions) if mask is None else mask
    rows: dict[str, dict] = {}
    result: dict = {"conditions": conditions, "rows": [], "dropout_mask": None}
    pending = list(models)
    logf = open(log or os.devnull, "a")
    task = progress.add_task("starting", total=len(models)) if progress else None
    try:
        while pending or mask:
            if time_budget is not None and time.perf_counter() - start > time_budget:
                for name in pending:
                    rows[name] = _skipped_row(name, conditions, f"time budget of {time_budget:g} s spent")
                break
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--models", ",".join(pending) or "-"]
            cmd += ["--conditions", ",".join(conditions)] + (["--inject-fault", fault] if fault else [])
            cmd += [] if mask else ["--no-mask"]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=logf, text=True, env=_worker_env())
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=lambda: ([lines.put(x) for x in proc.stdout], lines.put(None)), daemon=True).start()
            current, since, died = None, time.perf_counter(), None
            while True:
                try:
                    line = lines.get(timeout=5.0)
                except queue.Empty:
                    line = ""
                if line is None:
                    proc.wait()
                    died = f"worker exited with {proc.returncode} during {current or 'start-up'}"
                    break
                if line.startswith(MARK):
                    event = json.loads(line[len(MARK) :])
                    if event["event"] == "start":
                        if current is None or current[0] != event["model"]:
                            since = time.perf_counter()
                        current = (event["model"], event["condition"])
                        if progress:
                            progress.update(task, description=f"{event['model']}: {event['condition']}")
                    elif event["event"] == "mask":
                        result["dropout_mask"], mask = event["result"], False
                    elif event["event"] == "row":
                        rows[event["row"]["model"]] = event["row"]
                        pending.remove(event["row"]["model"])
                        current = None
                        if progress:
                            progress.advance(task)
                            progress.console.log(_summary(event["row"]))
                        if time_budget is not None and time.perf_counter() - start > time_budget and pending:
                            proc.kill()
                            proc.wait()
                            break
                elif time.perf_counter() - since > model_timeout:
                    proc.kill()
                    proc.wait()
                    died = f"timed out after {model_timeout:g} s in {current}"
                    break
            if died and current is not None and current[0] in pending:
                name = current[0]
                rows[name] = _skipped_row(name, conditions, died, status="fail", upto=current[1])
                pending.remove(name)
                if progress:
                    progress.advance(task)
            elif died and mask and current and current[0] == "nn.Dropout":
                result["dropout_mask"], mask = {"status": "fail", "error": died}, False
            elif died and not pending:
                break
            elif died:  # the worker died before its first model: do not loop forever
                for name in pending:
                    rows[name] = _skipped_row(name, conditions, died, status="fail")
                break
    finally:
        logf.close()
    result["rows"] = [rows[m] for m in models if m in rows]
    result["wall_s"] = time.perf_counter() - start
    return result


def _summary(row: dict) -> str:
    """One line per finished model, for the log above the progress bar."""
    cells = ", ".join(f"{c} {v['status']}" for c, v in row["conditions"].items())
    took = sum(v.get("wall_s") or 0 for v in row["conditions"].values())
    return f"{row['model']:14} {cells} ({took:.0f} s)"


def _skipped_row(name: str, conditions: list[str], why: str, status: str = "skipped", upto: str | None = None):
    cells = {}
    for c in conditions:
        cells[c] = {"status": status if upto in (None, c) else "skipped", "error": why}
    return {"model": name, "note": MODELS[name].note, "conditions": cells, "nodes": None}


def _cell(c: dict | None) -> str:
    if not c:
        return ""
    s, m = c["status"], c.get("metrics") or {}
    if s == "pass":
        if "torch_vs_f32" in m:  # bf16: against torch's bf16, and both sides' distance from float32
            return f"pass {m['grad']:.0e} (f32: {m['ours_vs_f32']:.0e}, torch {m['torch_vs_f32']:.0e})"
        if "grad" in m:
            return f"pass {m['grad']:.0e}"
        if "worst" in m:
            return f"pass {m['worst']:.0e}"
        if "losses" in m:
            return f"pass {m['losses'][0]:.3g}→{m['losses'][-1]:.3g}"
        return "pass"
    err = (c.get("error") or "").splitlines()
    return f"{s.upper() if s == 'fail' else s}: {(err[0] if err else '')[:90]}".replace("|", "/")


def markdown(result: dict) -> str:
    """The table, then each failure's full message."""
    conds = result["conditions"]
    lines = [
        "| model | nodes | " + " | ".join(conds) + " | import s | compile s | step ms |",
        "|---|---:|" + "---|" * len(conds) + "---:|---:|---:|",
    ]
    for r in result["rows"]:
        first = next((c for c in r["conditions"].values() if c.get("compile_s") is not None), {})
        step = first.get("step_s")
        cells = [_cell(r["conditions"].get(c)) for c in conds]
        lines.append(
            f"| {r['model']} | {r.get('nodes') or ''} | "
            + " | ".join(cells)
            + f" | {_f(first.get('import_s'))} | {_f(first.get('compile_s'))} | {_f(step and 1e3 * step)} |"
        )
    totals = {c: sum(r["conditions"].get(c, {}).get("status") == "pass" for r in result["rows"]) for c in conds}
    lines += ["", "Passed: " + ", ".join(f"{c} {n}/{len(result['rows'])}" for c, n in totals.items())]
    lines.append(f"Wall time: {result.get('wall_s', 0):.0f} s. Times are the first listed condition's.")
    m = result.get("dropout_mask")
    if m:
        if m["status"] == "pass":
            lines.append(
                f"nn.Dropout(p={m['p']}) mask: pass (zeros {m['zeros']:.4f}, kept values x/(1-p) to "
                f"{m['scale_err']:.0e}, two keys' masks overlap {m['overlap']:.4f}; ops {', '.join(m['random_ops'])})"
            )
        else:
            lines.append(f"nn.Dropout mask: FAIL: {m.get('error')}")
    fails = [(r["model"], c, v) for r in result["rows"] for c, v in r["conditions"].items() if v["status"] == "fail"]
    if fails:
        lines += ["", "## Failures", ""]
        for model, cond, v in fails:
            lines.append(f"- **{model} / {cond}**: {v.get('error', '')[:1500]}".replace("\n", " ⏎ "))
    return "\n".join(lines) + "\n"


def _f(x) -> str:
    return "" if x is None else f"{x:.1f}"


def merge(results: list[dict]) -> dict:
    """Several runs as one (a model's row from the latest run that has it), in the zoo's order."""
    rows = {r["model"]: r for result in results for r in result["rows"]}
    conds = [c for c in CONDITIONS if any(c in result["conditions"] for result in results)]
    masks = [r["dropout_mask"] for r in results if r.get("dropout_mask")]
    return dict(
        conditions=conds,
        rows=[rows[m] for m in MODELS if m in rows],
        dropout_mask=masks[-1] if masks else None,
        wall_s=sum(r.get("wall_s", 0) for r in results),
    )


def _write(result: dict, args) -> None:
    if args.markdown:
        args.markdown.write_text("# Training zoo\n\n" + markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: all); --list lists them")
    ap.add_argument("--conditions", default=",".join(CONDITIONS), help=f"comma-separated subset of {CONDITIONS}")
    ap.add_argument("--markdown", type=Path, help="write the table here")
    ap.add_argument("--json", type=Path, help="write every row, error and number here")
    ap.add_argument("--time-budget", type=float, help="seconds: start no model after this")
    ap.add_argument("--model-timeout", type=float, default=600.0, help="seconds one model may take (default 600)")
    ap.add_argument("--log", type=Path, help="the workers' stderr (warnings, tracebacks)")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--inject-fault", choices=["grad"], help="scale one JAX gradient (the checks must fail)")
    ap.add_argument("--from-json", type=Path, nargs="+", help="run nothing: one table from saved runs (later wins)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-mask", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m and m != "-"]
    conditions = [c for c in args.conditions.split(",") if c]
    unknown = [m for m in models if m not in MODELS] + [c for c in conditions if c not in CONDITIONS]
    if unknown:
        ap.error(f"unknown model(s) or condition(s): {unknown}; models: {', '.join(MODELS)}")
    if args.list:
        for s in MODELS.values():
            print(f"{s.name:14} {s.cls:40} {s.note}")
        return 0
    if args.worker:
        worker(models, conditions, args.inject_fault, mask=not args.no_mask and "dropout" in conditions)
        return 0

    from rich.console import Console
    from rich.markdown import Markdown
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if args.from_json:
        result = merge([json.loads(f.read_text()) for f in args.from_json])
        _write(result, args)
        Console().print(Markdown(markdown(result)))
        return 0
    with Progress(
        TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as progress:
        result = run_zoo(
            models,
            conditions,
            time_budget=args.time_budget,
            model_timeout=args.model_timeout,
            fault=args.inject_fault,
            log=args.log,
            progress=progress,
        )
    _write(result, args)
    Console().print(Markdown(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
