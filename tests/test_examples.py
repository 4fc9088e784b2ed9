"""Each example runs in its short mode and does what it claims: the CNN learns, the port agrees
with torch where plain JAX does not, the custom layer's check passes and catches a wrong rule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_digits_cnn_quick(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    out = tmp_path / "loss.png"
    result = _example("train_digits_cnn").main(["--quick", "--out", str(out)])
    losses = result["losses"]
    assert len(losses) >= 10 and np.all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    assert result["test_accuracy"] > 0.3  # ten classes: chance is 0.1
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_port_torch_model_quick():
    pytest.importorskip("torch")
    result = _example("port_torch_model").main(["--quick"])
    assert result["smooth"]["jaxderiv"] < 1e-12 and result["smooth"]["plain_jax"] < 1e-12
    assert result["kinks"]["jaxderiv"] < 1e-12
    assert result["kinks"]["plain_jax"] > 1e-3  # pruned weights under L1, pooling ties
    conventions = result["conventions"]
    assert all(row["jaxderiv_matches"] for row in conventions.values())
    assert not conventions["|x| at 0 (jnp.abs)"]["jax_matches"]
    assert not conventions["2x2 max pool of a tie (reshape + max)"]["jax_matches"]
    assert conventions["relu at 0 (jax.nn.relu)"]["jax_matches"]


def test_custom_layer_quick():
    result = _example("custom_layer").main(["--quick"])
    assert bool(result["report"]) and {r.status for r in result["report"]} == {"passed"}
    assert [r.status for r in result["fused_report"]] == ["failed"]


def test_verify_a_spec_quick(tmp_path):
    """The hand-edited formula fails, the untouched entries pass, the HTML report is written."""
    out = tmp_path / "report.html"
    result = _example("verify_a_spec").main(["--quick", "--out", str(out)])
    statuses = {(r.op, r.mode): r.status for r in result["report"]}
    assert statuses.pop(("mul.Tensor", "vjp")) == "failed"
    assert set(statuses.values()) == {"passed"}
    assert "1 checks failed" in out.read_text()


def test_torch_model_in_jax_quick(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "curve.png"
    result = _example("torch_model_in_jax").main(["--quick", "--out", str(out)])
    # GPT-2's loss is float32 inside transformers on both sides: equal to float32 rounding
    assert len(result["torch"]) == 5
    np.testing.assert_allclose(result["jax"], result["torch"], rtol=1e-6)
    assert result["torch"][0] != result["torch"][-1]  # it trained
    assert result["weight_diff"] < 1e-5
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_finetune_pretrained_quick(tmp_path):
    """Fine-tuned in JAX, saved to safetensors, reloaded by from_pretrained: the same accuracy in torch."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    result = _example("finetune_pretrained").main(["--quick", "--dir", str(tmp_path)])
    assert np.mean(result["losses"][-5:]) < 0.5 * result["losses"][0]
    assert result["jax_accuracy"] >= 0.9  # two classes: chance is 0.5
    assert result["jax_accuracy"] == result["torch_accuracy"]
    assert result["logits_diff"] < 1e-4
    assert (tmp_path / "model.safetensors").exists() and (tmp_path / "config.json").exists()


def test_train_sharded_quick(monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    monkeypatch.setenv("XLA_FLAGS", "")  # the example sets its 8 devices' flag: undone after the test
    result = _example("train_sharded").main(["--quick"])
    # as many devices as JAX started with here (8 where the example started it): the same losses as one device
    assert result["max_rel_difference"] < 1e-5
    assert result["losses"][-1] < result["losses"][0]  # it learns its two batches
    assert result["param_bytes_per_device"] <= 1.1 * result["param_bytes"] / result["devices"]
