"""pg.jit's bookkeeping and the capture guards, on the CPU. (A real CUDA graph is exercised by
tests/test_jit_cuda.py on a GPU.) A stand-in graph object records what jit asks of it: run
eagerly, record, replay — with the capture flag set while "recording", as the CUDA one does."""
import sys

import numpy as np
import pytest

import paragrad as pg
from paragrad import capture
from paragrad.backends.cpu import CPUBackend


class FakeGraph:
    """Warm-up and capture run fn (the capture under the capture flag); a replay re-runs the
    recorded fn on the static inputs and writes its result into the captured output, as a
    graph replays the recorded kernels into the same buffers."""
    log = []

    def __init__(self, device_index):
        self.fn = None

    def warmup(self, fn):
        FakeGraph.log.append("warmup")
        return fn()

    def capture(self, fn, name, inputs):
        FakeGraph.log.append("capture")
        with capture.capturing(name):
            out = fn()
        self.fn, self.out, self.statics = fn, out, [static for static, _ in inputs]
        return out

    def replay(self, sources):
        FakeGraph.log.append("replay")
        for static, source in zip(self.statics, sources):
            static[...] = source
        self.out._data[...] = self.fn()._data

    def num_nodes(self):
        return 7


@pytest.fixture
def fake_graphs(monkeypatch):
    FakeGraph.log = []
    monkeypatch.setattr(CPUBackend, "step_graph", lambda self, i=0: FakeGraph(i), raising=False)
    monkeypatch.setattr(sys.modules["paragrad.jit"], "_graph_device", lambda tensors: tensors[0].device if tensors else None)
    return FakeGraph.log


def test_cpu_runs_the_function_eagerly_every_call():
    calls = []

    @pg.jit
    def f(x):
        calls.append(1)
        return x * 2
    for i in range(3):
        np.testing.assert_array_equal(f(pg.full((2,), float(i))).numpy(), [2.0 * i] * 2)
    assert len(calls) == 3


def test_warmup_then_capture_then_replay_with_the_inputs_copied_in(fake_graphs):
    seen = []

    @pg.jit
    def f(x):
        seen.append(x)
        return x + 1
    outs = [f(pg.full((3,), float(i))) for i in range(4)]
    assert fake_graphs == ["warmup", "capture", "replay", "replay"]
    # the capture and the replays read one static buffer, refilled from each call's argument
    assert seen[1] is seen[2] is seen[3] and seen[0] is not seen[1]
    assert outs[2] is outs[3]          # a replay returns the captured outputs, overwritten
    np.testing.assert_array_equal(outs[3].numpy(), [4.0] * 3)
    assert f.graph_nodes() == 7


def test_a_new_shape_or_dtype_captures_anew(fake_graphs):
    f = pg.jit(lambda x: x.sum())
    for x in (pg.ones(4), pg.ones(4), pg.ones(5), pg.ones(4), pg.ones(5), pg.ones(5, dtype=pg.float64)):
        f(x)
    assert fake_graphs == ["warmup", "capture", "warmup", "replay", "capture", "warmup"]
    np.testing.assert_allclose(f(pg.full((5,), 2.0)).item(), 10.0)


def test_too_many_signatures_is_a_clear_error(fake_graphs):
    f = pg.jit(lambda x, n: x * n, max_graphs=2)
    f(pg.ones(2), 1)
    f(pg.ones(2), 2)
    with pytest.raises(RuntimeError, match="max_graphs=2.*Python numbers"):
        f(pg.ones(2), 3)


def test_unhashable_arguments_are_refused(fake_graphs):
    f = pg.jit(lambda x, opts: x)
    with pytest.raises(TypeError, match="pg.jit.*set"):
        f(pg.ones(2), {1, 2})


def test_nested_arguments_are_found(fake_graphs):
    f = pg.jit(lambda batch: batch["x"] + batch["y"][0])
    for i in range(3):
        out = f({"x": pg.full((2,), float(i)), "y": (pg.ones(2),)})
    np.testing.assert_array_equal(out.numpy(), [3.0, 3.0])


def test_graph_nodes_before_any_capture_is_an_error(fake_graphs):
    f = pg.jit(lambda x: x)
    f(pg.ones(1))
    with pytest.raises(RuntimeError, match="no graph captured yet"):
        f.graph_nodes()


def test_host_reads_inside_a_capture_name_the_op():
    with capture.capturing("step"):
        for op in ("Tensor.item()", "bool(Tensor)"):
            with pytest.raises(capture.CaptureSyncError, match=r"Tensor.item\(\)|bool\(Tensor\)") as e:
                capture.forbid_sync(op)
            assert "capturing step" in str(e.value)
        assert pg.ones(1).item() == 1.0      # CPU tensors are host memory: reading them is fine
    capture.forbid_sync("Tensor.item()")     # no capture: no error


def test_nested_captures_are_refused():
    with capture.capturing("outer"):
        with pytest.raises(RuntimeError, match="nested"):
            with capture.capturing("inner"):
                pass
    assert capture.active() is None


def test_scheduler_step_inside_a_capture_is_an_error():
    opt = pg.optim.SGD([pg.nn.Parameter(pg.ones(2))], lr=0.1)
    sched = pg.optim.lr_scheduler.StepLR(opt, 1)
    with capture.capturing("step"), pytest.raises(RuntimeError, match="outside the jitted function"):
        sched.step()


def test_optimizer_state_is_not_created_inside_a_capture():
    p = pg.nn.Parameter(pg.ones(2))
    p.grad = pg.ones(2)
    opt = pg.optim.Adam([p])
    with capture.capturing("step"), pytest.raises(RuntimeError, match="first .*eager.* call"):
        opt.step()
    opt.step()                                # eagerly: fine
    with capture.capturing("step"):
        opt.step()                            # the state exists now


def test_device_lr_buffer_follows_the_host_value_and_refuses_changes_while_capturing():
    p = pg.nn.Parameter(pg.ones(2))
    opt = pg.optim.SGD([p], lr=0.1)
    g = opt.param_groups[0]
    buf = opt._lr_buffer(g, p)
    g["lr"] = 0.05
    capture.sync_device_state()               # what pg.jit does before a replay
    assert buf is opt._lr_buffer(g, p) and float(buf) == 0.05    # rewritten in place
    g["lr"] = 0.01
    with capture.capturing("step"), pytest.raises(RuntimeError, match="learning rate changed"):
        opt._lr_buffer(g, p)


def test_arguments_on_two_devices_are_refused(fake_graphs, monkeypatch):
    monkeypatch.setattr(sys.modules["paragrad.jit"], "_graph_device", lambda tensors: pg.device("cuda"))
    with pytest.raises(RuntimeError, match="pg.jit.*cuda.*cpu.*constant"):
        pg.jit(lambda x: x)(pg.ones(2))
