"""The training zoo's CI slice: imported transformers models trained as people train them.

benchmarks/training_zoo.py runs in a subprocess with a clean environment, since this session's
conftest.py turns jax_enable_x64 on and users train in JAX's default 32-bit mode. Five models stand
for the zoo: a decoder LM with RMSNorm, rotary embeddings and grouped-query attention (Llama), an
encoder classifier (BERT), a windowed vision transformer with stochastic depth (Swin), a CNN with
BatchNorm (ResNet) and an encoder-decoder with LayerDrop trained on its labels (BART); each of the
four conditions (float32 against torch, dropout training, dynamic shapes, bfloat16) is one test.
Conditions the library fails today are strict xfails: when a fix lands, the test says so. The last
tests show that the checks can fail. About 2 minutes on 2 cores.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("optax")

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "benchmarks" / "training_zoo.py"
# loaded by path: putting benchmarks/ on sys.path would shadow modules named like its other scripts
_spec = importlib.util.spec_from_file_location("training_zoo", HARNESS)
zoo = importlib.util.module_from_spec(_spec)
sys.modules["training_zoo"] = zoo  # its dataclasses look their module up
_spec.loader.exec_module(zoo)  # numpy only at import: no torch, no JAX flags

MODELS = ("llama", "bert", "swin", "resnet", "bart")

# (model, condition) -> why it fails with the library as it is (none in this slice: BART's LayerDrop
# branch, which torch.export cannot record, takes the example's path since `branches="example"`)
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    return {**env, "PYTHONPATH": str(ROOT / "src"), "JAX_PLATFORMS": "cpu"}


def _harness(tmp: Path, *args: str) -> dict:
    out = tmp / "zoo.json"
    cmd = [sys.executable, str(HARNESS), "--json", str(out), "--log", str(tmp / "workers.log"), *args]
    run = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def slice_run(tmp_path_factory) -> dict:
    """The harness's rows, computed once per test session: under pytest-xdist the first worker to
    get here runs it (itself on every core) while the others wait for its file, instead of each
    worker running all five models again."""
    shared = tmp_path_factory.getbasetemp().parent  # one folder for all of a session's workers
    result = shared / "training_zoo_slice.json"
    with open(shared / "training_zoo_slice.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.is_file():
            rows = _harness(tmp_path_factory.mktemp("training_zoo"), "--models", ",".join(MODELS))
            result.write_text(json.dumps(rows))
    return json.loads(result.read_text())


def _case(model: str, condition: str):
    why = KNOWN_FAILURES.get((model, condition))
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(model, condition, marks=marks, id=f"{model}-{condition}")


@pytest.mark.parametrize("model, condition", [_case(m, c) for m in MODELS for c in zoo.CONDITIONS])
def test_condition(slice_run, model, condition):
    (row,) = [r for r in slice_run["rows"] if r["model"] == model]
    cell = row["conditions"][condition]
    assert cell["status"] == "pass", cell.get("error")
    assert row["nodes"] > 0
    m = cell["metrics"]
    if condition == "f32":  # the numbers behind the verdict, and an SGD trajectory that moved
        assert m["grad"] <= zoo.TOL["f32_grad"] and m["loss"] <= zoo.TOL["f32_loss"], m
        assert len(m["losses_jax"]) == zoo.SGD_STEPS and m["losses_jax"][-1] < m["losses_jax"][0], m
    if condition == "dropout":
        assert m["losses"][-1] < m["losses"][0], m
        if model != "resnet":  # ResNet has no dropout; the others draw their masks from the key
            assert m["random_ops"], m
    if condition == "shapes":
        assert len(m["errors"]) == len(zoo._shapes(zoo.MODELS[model])), m


def test_dropout_mask_statistics(slice_run):
    mask = slice_run["dropout_mask"]
    assert mask["status"] == "pass", mask
    assert abs(mask["zeros"] - mask["p"]) < 0.01 and mask["scale_err"] < 1e-6


def test_zoo_has_thirty_architectures():
    import transformers

    assert len(zoo.MODELS) >= 30
    for spec in zoo.MODELS.values():
        assert hasattr(transformers, spec.cls) and hasattr(transformers, spec.config), spec.name
    assert set(MODELS) <= set(zoo.MODELS)


# -- the checks can fail --------------------------------------------------------------------------


def test_comparison_sees_a_wrong_gradient():
    rng = np.random.default_rng(0)
    theirs = {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32)}
    ours = {k: v + rng.standard_normal(v.shape).astype(np.float32) * 1e-7 for k, v in theirs.items()}
    assert zoo.compare_grads(ours, theirs)[0] < zoo.TOL["f32_grad"]
    wrong = {**ours, "b": ours["b"] * 1.01}
    err, name = zoo.compare_grads(wrong, theirs)
    assert err > zoo.TOL["f32_grad"] and name == "b"
    assert zoo.compare_grads({"w": ours["w"]}, theirs)[0] == float("inf")  # a missing gradient
    assert zoo.compare_grads({**ours, "w": ours["w"] * np.nan}, theirs)[0] == float("inf")


def test_bf16_verdict_sees_a_wrong_gradient():
    rng = np.random.default_rng(1)
    truth = {"w": rng.standard_normal((8, 8))}
    torch_bf16 = {"w": truth["w"] * (1 + 0.01 * rng.standard_normal((8, 8)))}
    assert zoo.bf16_verdict(dict(torch_bf16), torch_bf16, truth, 1.0, 1.0, 1.0)["ok"]
    verdict = zoo.bf16_verdict({"w": truth["w"] * 1.5}, torch_bf16, truth, 1.0, 1.0, 1.0)
    assert not verdict["ok"] and "w" in verdict["why"]
    assert not zoo.bf16_verdict(dict(torch_bf16), torch_bf16, truth, 1.2, 1.0, 1.0)["ok"]  # a wrong loss


def test_harness_reports_an_injected_gradient_fault(tmp_path):
    """End to end: one imported gradient scaled by 1.01 fails the f32 condition with its numbers."""
    result = _harness(tmp_path, "--models", "gpt2", "--conditions", "f32", "--inject-fault", "grad")
    cell = result["rows"][0]["conditions"]["f32"]
    assert cell["status"] == "fail" and "error above" in cell["error"], cell
    assert cell["metrics"]["grad"] > zoo.TOL["f32_grad"]
