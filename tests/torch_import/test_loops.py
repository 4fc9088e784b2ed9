"""Unrolled loops of exported graphs (RNN time steps) run as scans of the same steps: torch's
values and gradients, the same as unrolled, and programs that do not grow with the length."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import jaxderiv.torch as jt  # noqa: E402
from jaxderiv.torch._loops import find_loops  # noqa: E402
from jaxderiv.torch._program import Program  # noqa: E402
from jaxderiv.torch.resolve import NodeKind  # noqa: E402
from jaxderiv.torch._steps import Ref, Step  # noqa: E402
from torch_models import against_torch  # noqa: E402

jax.config.update("jax_enable_x64", True)


class Deep(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = getattr(nn, cell)(3, 5, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(10, 2)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def _deep(cell):
    torch.manual_seed(0)
    return Deep(cell).double()


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_a_two_layer_bidirectional_rnn_runs_as_four_scans_with_torchs_gradients(cell):
    x = torch.randn(2, 8, 3, dtype=torch.float64)
    e = against_torch(_deep(cell), (x,))
    assert [loop.count for loop in e.model.program.loops] == [8, 8, 8, 8]  # 2 layers x 2 directions
    assert e.loss < 1e-12 and e.max_grad < 1e-10 and e.jvp < 1e-10, (e.loss, e.params, e.inputs, e.jvp)


def _grad_program_text(model, x) -> str:
    def loss(p):
        return jnp.sum(jnp.sin(model.apply(p, model.buffers, x)[0]))

    return jax.jit(jax.grad(loss)).lower(model.params).as_text()


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_the_rolled_program_does_not_grow_with_the_sequence_length(cell):
    """The gradient's program holds as many matrix products at 16 time steps as at 8 when
    rolled; unrolled, it grows with the length."""
    dots = {}
    for steps in (8, 16):
        x = torch.randn(2, steps, 3, dtype=torch.float64)
        for roll in (True, False):
            model = jt.from_module(_deep(cell), x, roll_loops=roll)
            dots[steps, roll] = _grad_program_text(model, jnp.asarray(x.numpy())).count("dot_general")
    assert dots[8, True] == dots[16, True]
    assert dots[16, False] > dots[8, False] > dots[8, True]


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_rolled_and_unrolled_agree_in_value_gradient_and_hessian_vector_product(cell):
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    xj = jnp.asarray(x.numpy())
    results = []
    for roll in (True, False):
        model = jt.from_module(_deep(cell), x, roll_loops=roll)

        def loss(p, model=model):
            return jnp.sum(jnp.sin(model.apply(p, model.buffers, xj)[0]))

        v = jax.tree.map(jnp.ones_like, model.params)
        hvp = jax.jvp(jax.grad(loss), (model.params,), (v,))[1]
        results.append((loss(model.params), jax.grad(loss)(model.params), hvp))
    assert bool(results[0][0] == results[1][0]) or abs(float(results[0][0] - results[1][0])) < 1e-13
    for a, b in zip(jax.tree.leaves(results[0][1:]), jax.tree.leaves(results[1][1:])):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


# -- the rolling itself, on programs made by hand -------------------------------------------------


def _f(a, b):
    return a + jnp.sin(b)


def _recurrence(n: int, kind: NodeKind = NodeKind.ENTRY) -> Program:
    """v_i = f(v_{i-1}, v_{i-2}) from v_0 = x, v_1 = y: each copy reads the one before it and the
    one before that, so the repeated block is two steps long."""
    names = ["x", "y"] + [f"v{i}" for i in range(2, n)]
    steps = tuple(Step(names[i], "f", _f, (Ref(names[i - 1]), Ref(names[i - 2])), {}, kind, "") for i in range(2, n))
    return Program((("x", "user", None), ("y", "user", None)), steps, ((Ref(names[-1]), "user", None),))


def test_a_copy_reading_two_steps_back_rolls_into_a_two_step_block():
    program = _recurrence(62)
    (loop,) = find_loops(program.steps, [r for r, _, _ in program.outputs])
    assert (loop.start, loop.period, loop.count) == (0, 2, 30)
    values = {"x": jnp.asarray(0.3), "y": jnp.asarray(-1.2)}
    rolled = Program(program.inputs, program.steps, program.outputs, (loop,)).run(values)
    unrolled = program.run(values)
    assert set(rolled) < set(unrolled) and "v61" in rolled  # only what is read after the loop
    assert float(rolled["v61"]) == pytest.approx(float(unrolled["v61"]), rel=1e-14)


def test_a_wrong_carry_gives_another_value():
    """The comparison above can fail: the same loop with its carries read from the wrong step."""
    import dataclasses

    program = _recurrence(62)
    (loop,) = find_loops(program.steps, [r for r, _, _ in program.outputs])
    swapped = tuple(
        tuple(dataclasses.replace(s, j=1 - s.j) if s.kind == "carry" else s for s in slots) for slots in loop.slots
    )
    wrong = dataclasses.replace(loop, slots=swapped)
    values = {"x": jnp.asarray(0.3), "y": jnp.asarray(-1.2)}
    got = Program(program.inputs, program.steps, program.outputs, (wrong,)).run(values)["v61"]
    assert abs(float(got) - float(program.run(values)["v61"])) > 1e-3


def test_random_steps_and_short_blocks_are_not_rolled():
    assert find_loops(_recurrence(62, kind=NodeKind.RANDOM).steps) == ()
    assert find_loops(_recurrence(40).steps) == ()  # 19 copies of 2 steps: 36 saved, fewer than MIN_SAVED


def test_copies_whose_inputs_differ_in_shape_run_unrolled():
    """Each copy reads an outside value of another shape: no scan can stack them, so the loop's
    steps run one by one, with the same result."""
    n = 60
    steps = tuple(
        Step(
            f"v{i}",
            "g",
            lambda a, z: a + jnp.sum(z),
            (Ref(f"v{i - 1}" if i else "x"), Ref(f"z{i}")),
            {},
            NodeKind.ENTRY,
            "",
        )
        for i in range(n)
    )
    program = Program((), steps, ((Ref(f"v{n - 1}"), "user", None),))
    loops = find_loops(steps, [Ref(f"v{n - 1}")])
    assert loops and loops[0].count == n
    values = {"x": jnp.asarray(1.0), **{f"z{i}": jnp.ones(i + 1) for i in range(n)}}
    rolled = Program((), steps, program.outputs, loops).run(values)
    assert float(rolled[f"v{n - 1}"]) == 1.0 + sum(range(1, n + 1))


def _chain(fn, n: int = 60) -> Program:
    """v_i = fn(v_{i-1}) from v_0 = fn(x): one block of one step, rolled into n copies."""
    steps = tuple(Step(f"v{i}", "h", fn, (Ref(f"v{i - 1}" if i else "x"),), {}, NodeKind.ENTRY, "") for i in range(n))
    outputs = ((Ref(f"v{n - 1}"), "user", None),)
    return Program((("x", "user", None),), steps, outputs, find_loops(steps, [Ref(f"v{n - 1}")]))


def test_a_step_that_needs_concrete_values_runs_unrolled():
    """`int()` of a value the scan traces raises a TypeError (one of NOT_A_SCAN) in the body: the
    loop's steps run one by one instead, with the same result."""
    program = _chain(lambda a: a + int(a > 0))
    assert program.loops and program.loops[0].count == 60
    assert float(program.run({"x": jnp.asarray(0.5)})["v59"]) == 60.5


def test_another_error_in_a_rolled_step_is_raised_with_its_node():
    def broken(a):
        raise ZeroDivisionError("a step's own error")

    with pytest.raises(ZeroDivisionError, match="a step's own error") as info:
        _chain(broken).run({"x": jnp.asarray(0.5)})
    assert "while running graph node 'v0' (h), as the body of a jax.lax.scan over 60 copies of its block" in (
        info.value.__notes__
    )


# -- activation checkpointing over the rolled loops ------------------------------------------------


def _temp_bytes_and_grads(model, x):
    f = jax.jit(jax.grad(lambda p: jnp.sum(jnp.sin(model.apply(p, model.buffers, x)[0]))))
    return f.lower(model.params).compile().memory_analysis().temp_size_in_bytes, f(model.params)


def test_remat_recomputes_the_loop_copies_with_the_same_gradients_and_less_memory():
    x = torch.randn(4, 64, 3, dtype=torch.float64)
    model = jt.from_module(_deep("LSTM"), x)
    xj = jnp.asarray(x.numpy())
    kept, grads = _temp_bytes_and_grads(model, xj)
    recomputed, remat_grads = _temp_bytes_and_grads(model.with_remat(), xj)
    assert recomputed < 0.9 * kept, (recomputed, kept)  # 0.80 measured: the per-step gate activations
    for a, b in zip(jax.tree.leaves(remat_grads), jax.tree.leaves(grads)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert model.with_remat(None).program.remat is None and model.program.remat is None
