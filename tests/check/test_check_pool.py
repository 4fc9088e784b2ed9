"""The checker's speed-ups change no verdict: one program for an op's samples and modes, worker
processes, the persistent compilation cache, and `--changed` checking only what differs. The
executor (pool.py) is a plain one: it runs the function it is handed on Tasks (tasks.py)."""

from __future__ import annotations

import dataclasses
import gc
import inspect
import math
import multiprocessing
import os
import pickle

import jax
import pytest

from jaxderiv import Registry, check_all, load_spec
from jaxderiv.check import checker, pool
from jaxderiv.check.checker import PRECISION_MODES
from jaxderiv.check.pool import check_in_workers
from jaxderiv.check.tasks import CheckOptions, Task
from jaxderiv.cli import main

OPS = ["sin", "mm", "_softmax", "cumsum", "masked_select"]  # masked_select: value-dependent shapes, evaluated apart

WRONG_SIN = """\
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj() * 3
- name: neg(Tensor self) -> Tensor
  self: grad.neg()
"""


def _rows(report):
    return [(r.op, r.mode, r.spec, r.status, r.reason, r.max_abs_err, r.max_rel_err) for r in report]


def _same(a, b):
    assert [r[:5] for r in a] == [r[:5] for r in b]
    for x, y in zip(a, b):
        for e, f in zip(x[5:], y[5:]):
            # The worst errors are rounding (1e-10 for a finite difference in float64, 1e-7 in
            # float32), which XLA's fusion choices move by some ulps from one program to another.
            rel, atol = (0.5, 0.0) if x[1] in PRECISION_MODES else (1e-6, 1e-13)
            assert (e is None and f is None) or math.isclose(e, f, rel_tol=rel, abs_tol=atol), (x, y)


@pytest.fixture(scope="module")
def one_process():
    return check_all(ops=OPS)


def test_one_program_per_op_gives_the_rows_of_one_program_per_sample(one_process, monkeypatch):
    monkeypatch.setattr(checker, "_evaluate_all", lambda work, tol, thorough: {})
    _same(_rows(one_process), _rows(check_all(ops=OPS)))
    assert all(r.status in ("passed", "not_applicable") for r in one_process if r.op != "masked_select")
    assert sum(r.status == "passed" for r in one_process) >= 5 * len(OPS)


def test_one_program_per_op_is_used(monkeypatch):
    def by_itself(*args, **kwargs):
        raise AssertionError("a sample was evaluated by itself")

    monkeypatch.setattr(checker, "_evaluate_together", by_itself)
    monkeypatch.setattr(checker, "_evaluate_apart", by_itself)
    report = check_all(ops=["sin"], modes=("vjp", "jvp"))
    assert [r.status for r in report] == ["passed", "passed"]


def test_an_entry_compiled_apart_gets_no_shared_program(monkeypatch):
    """A record's `compiled_apart` sends each (mode, sample) to its own program, same rows."""
    from jaxderiv.check import opdb

    def shared(*args, **kwargs):
        raise AssertionError("the entry's samples were compiled as one program")

    together = check_all(ops=["_softmax"], modes=("vjp", "vjp_vjp"))
    monkeypatch.setattr(checker, "_evaluate_all", shared)
    with opdb.replaced("_softmax", compiled_apart="measured faster apart"):
        apart = check_all(ops=["_softmax"], modes=("vjp", "vjp_vjp"))
    _same(_rows(together), _rows(apart))
    assert [r.status for r in apart] == ["passed", "passed"]


def test_workers_give_the_rows_of_one_process(one_process):
    _same(_rows(one_process), _rows(check_all(ops=OPS, jobs=2)))


def test_a_wrong_formula_fails_in_a_worker(tmp_path):
    spec = tmp_path / "wrong.yaml"
    spec.write_text(WRONG_SIN)
    report = check_all(load_spec(spec), modes=("vjp",), jobs=2)
    assert {r.op: r.status for r in report} == {"sin": "failed", "neg": "passed"}
    assert "differs from the reference" in next(r.reason for r in report if r.op == "sin")


def test_tasks_are_frozen_and_travel_as_they_are():
    task = Task(0, "sin", ("vjp", "jvp"), seed=3, options=CheckOptions(sample=1, transforms=("jit", "vmap")))
    assert pickle.loads(pickle.dumps(task)) == task
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.name = "cos"
    # the options' defaults are check_all's
    defaults = inspect.signature(check_all).parameters
    assert CheckOptions() == CheckOptions(
        **{f.name: defaults[f.name].default for f in dataclasses.fields(CheckOptions)}
    )


def _describe(registry, task):
    """What the function a worker runs sees of its task (module level, so picklable: a stand-in
    for the checker's). A task named "dies" kills the worker process that runs it."""
    if task.name == "dies" and multiprocessing.parent_process() is not None:
        os._exit(1)
    return [task.name, sorted(registry.names()), task.options.thorough, os.getpid()]


def test_the_pool_runs_the_function_it_is_given(tmp_path):
    spec = tmp_path / "wrong.yaml"
    spec.write_text(WRONG_SIN)
    registry = Registry(load_spec(spec))
    tasks = [Task(0, name, ("vjp",), options=CheckOptions(thorough=True)) for name in ("a", "b", "c")]
    out = check_in_workers(_describe, [registry], tasks, jobs=2)
    assert [o[:3] for o in out] == [[name, ["neg", "sin"], True] for name in "abc"]  # in the tasks' order
    assert os.getpid() not in {o[3] for o in out}  # run by the workers, from the registry's Spec
    # a worker that dies leaves its task (and any not done) to this process
    out = check_in_workers(_describe, [registry], [Task(0, name, ("vjp",)) for name in ("a", "dies", "b")], jobs=2)
    assert [o[:2] for o in out] == [[name, ["neg", "sin"]] for name in ("a", "dies", "b")]
    assert out[1][3] == os.getpid()


def test_jobs_refuses_a_registry_it_cannot_rebuild():
    from jaxderiv import Registry

    class Mine(Registry):
        pass

    with pytest.raises(ValueError, match="plain Registry"):
        check_all(registry=Mine(), ops=["sin", "cos"], jobs=2)
    with pytest.raises(ValueError, match="at least 1"):
        check_all(ops=["sin"], jobs=0)


def test_compilation_cache_is_filled_and_the_settings_restored(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    report = check_all(ops=["sin"], modes=("vjp",), compilation_cache=tmp_path / "xla")
    assert report and any((tmp_path / "xla").iterdir())
    assert jax.config.jax_compilation_cache_dir == before


def test_collections_are_fewer_during_a_check_and_restored_after(monkeypatch):
    seen, check_task = [], checker._check_task

    def observed(registry, task):
        seen.append(gc.get_threshold())
        return check_task(registry, task)

    monkeypatch.setattr(checker, "_check_task", observed)
    before = gc.get_threshold()
    assert before != pool._CHECK_THRESHOLDS
    assert check_all(ops=["sin"], modes=("vjp",))
    assert seen == [pool._CHECK_THRESHOLDS] and gc.get_threshold() == before


def test_changed_checks_only_the_entries_that_differ(tmp_path, capsys):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(
        "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
        "- name: cos(Tensor self) -> Tensor\n  self: grad * -self.sin().conj()\n"
    )
    new.write_text(
        "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
        "- name: cos(Tensor self) -> Tensor\n  self: grad * self.sin().conj()\n"
        "- name: neg(Tensor self) -> Tensor\n  self: grad.neg()\n"
    )
    json_file = tmp_path / "r.json"
    assert (
        main(
            [
                "check",
                "--spec",
                str(new),
                "--changed",
                str(old),
                "--modes",
                "vjp",
                "--json",
                str(json_file),
                "--no-cache",
                "--quiet",
            ]
        )
        == 1
    )
    import json

    rows = json.loads(json_file.read_text())
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert {r["op"]: r["status"] for r in rows} == {"cos": "failed", "neg": "passed"}
    assert main(["check", "--changed", str(old), "--quiet"]) == 2  # needs --spec
