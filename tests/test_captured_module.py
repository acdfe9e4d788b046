"""pg.compile(mode="reduce-overhead")'s captured forward and backward
(paragrad/captured_module.py) and pg.cuda.make_graphed_callables against eager code over several
training steps: values, gradients, optimizer state, accumulation over micro-batches, a new graph
per shape, train/eval and no_grad, the eager fallbacks with their one warning, outputs that a
later call doesn't overwrite, and parameter hooks.

On cuda the graphs are CUDA graphs. On the CPU, which has none, a stand-in graph replays by
running the recorded function again and copying its results into the recorded outputs (what a
graph replay does to its static buffers), so the same tests check the wrapping logic here."""
import contextlib
import warnings

import numpy as np
import pytest

import paragrad as pg
import paragrad.captured_module as cm
from paragrad import capture
from paragrad.backends.cpu import CPUBackend
from paragrad.cuda import graphed_callables
from paragrad.tensor import Tensor


class ReplayingGraph:
    """A CPU stand-in for the CUDA backend's StepGraph."""

    def __init__(self, *_):
        self.pool = object()

    def warmup(self, fn):
        return fn()

    def sibling(self):
        return ReplayingGraph()

    def capture(self, fn, name, inputs=(), pool=None):
        self.fn, self.inputs = fn, inputs
        for static, source in inputs:
            static[...] = source
        with capture.capturing(name):
            self.out = fn()
        return self.out

    def replay(self, sources=()):
        for (static, _), source in zip(self.inputs, sources):
            static[...] = source
        _copy_into(self.out, self.fn())


def _copy_into(old, new):
    if isinstance(old, Tensor):
        old._data[...] = new._data
    elif isinstance(old, (tuple, list)):
        for a, b in zip(old, new):
            _copy_into(a, b)


def _forbidden_in_capture(read):
    def host_read(self, op):
        capture.forbid_sync(op)
        return read(self, op)
    return host_read


def _stand_in(monkeypatch):
    """CPU tensors captured into ReplayingGraphs."""
    monkeypatch.setattr(CPUBackend, "step_graph", lambda self, index=0: ReplayingGraph(), raising=False)
    monkeypatch.setattr(cm, "_graph_device", lambda tensors: tensors[0].device if tensors else None)
    for name in ("_host", "_scalar"):      # host reads raise inside a capture, as a CUDA tensor's
        monkeypatch.setattr(Tensor, name, _forbidden_in_capture(getattr(Tensor, name)))


@pytest.fixture
def graphs(device, monkeypatch):
    """Graph capture on `device`: CUDA's own, or the CPU stand-in."""
    if device == "cpu":
        _stand_in(monkeypatch)
    return device


class Net(pg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2 = pg.nn.Linear(6, 16), pg.nn.LayerNorm(16), pg.nn.Linear(16, 4)

    def forward(self, x, targets=None):
        logits = self.fc2(pg.nn.functional.gelu(self.norm(self.fc1(x))))
        loss = None if targets is None else pg.nn.functional.cross_entropy(logits, targets)
        return logits, loss


def _twins(device):
    pg.manual_seed(0)
    eager = Net().to(device)
    captured = Net().to(device)
    captured.load_state_dict(eager.state_dict())
    return eager, captured


def _batch(device, n=8, seed=0):
    rng = np.random.default_rng(seed)
    return (pg.tensor(rng.standard_normal((n, 6)).astype(np.float32), device=device),
            pg.tensor(rng.integers(0, 4, n), device=device))


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=tol, atol=tol)


def test_training_steps_equal_eager(graphs):
    eager, model = _twins(graphs)
    compiled = pg.compile(model, mode="reduce-overhead")
    opts = [pg.optim.AdamW(m.parameters(), lr=1e-2) for m in (eager, compiled)]
    kept = []       # each step's .grad, which no later step may write into
    for step in range(5):
        x, y = _batch(graphs, seed=step)
        losses = []
        for m, opt in zip((eager, compiled), opts):
            logits, loss = m(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss)
        _close(*losses)
        assert losses[1].grad_fn is not None
        for a, b in zip(eager.parameters(), model.parameters()):
            _close(a.grad, b.grad)
            _close(a, b)
        kept.append((model.fc2.weight.grad, model.fc2.weight.grad.clone()))
    for grad, value in kept:
        _close(grad, value, tol=0)
    for a, b in zip(opts[0].state.values(), opts[1].state.values()):
        _close(a["exp_avg_sq"], b["exp_avg_sq"])
    assert len(compiled._captured._signatures) == 1


def test_gradients_accumulate_over_micro_batches_as_eager(graphs):
    eager, model = _twins(graphs)
    compiled = pg.compile(model, mode="reduce-overhead")
    for m in (eager, compiled):
        for step in range(4):       # warm-up, record, two replays: none zeroes .grad
            x, y = _batch(graphs, seed=step)
            m(x, y)[1].backward()
    for a, b in zip(eager.parameters(), model.parameters()):
        _close(a.grad, b.grad)


def test_an_input_that_requires_grad_gets_its_gradient(graphs):
    eager, model = _twins(graphs)
    compiled = pg.compile(model, mode="reduce-overhead")
    for step in range(3):
        x, _ = _batch(graphs, seed=step)
        xs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
        for m, xi in zip((eager, compiled), xs):
            (m(xi * 2)[0] ** 2).sum().backward()
        _close(xs[0].grad, xs[1].grad)


def test_a_new_shape_records_a_new_graph_and_outputs_stay_the_callers(graphs):
    eager, model = _twins(graphs)
    compiled = pg.compile(model, mode="reduce-overhead")
    kept = []
    for n in (8, 16, 8, 16, 8, 8):
        x, _ = _batch(graphs, n=n, seed=n)
        with pg.no_grad():
            out, want = compiled(x)[0], eager(x)[0]
        _close(out, want)
        kept.append((out, want))
    for out, want in kept:          # a later replay did not write into an earlier output
        _close(out, want)
    assert len(compiled._captured._signatures) == 2


def test_train_eval_and_no_grad_each_have_their_own_graph(graphs):
    eager, model = _twins(graphs)
    eager.fc1 = pg.nn.Sequential(eager.fc1, pg.nn.Dropout(0.5))
    model.fc1 = pg.nn.Sequential(model.fc1, pg.nn.Dropout(0.5))
    compiled = pg.compile(model, mode="reduce-overhead")
    x, y = _batch(graphs)
    for _ in range(3):
        compiled.train()
        compiled(x, y)[1].backward()
        compiled.eval()
        eager.eval()
        with pg.no_grad():
            _close(compiled(x)[0], eager(x)[0])
    compiled.train()
    draws = []
    for _ in range(3):              # training mode without targets: warm-up, record, replay
        out = compiled(x)[0]
        draws.append(out.detach().clone())
        del out
    assert not np.allclose(draws[1].cpu().numpy(), draws[2].cpu().numpy())    # dropout drew anew
    assert len(compiled._captured._signatures) == 3


def test_dropout_draws_what_eager_draws_from_the_same_seed(graphs):
    """The RNG stream: a captured call draws from the default generator as the eager call
    would, advances it as far, and a reseeding between replays is seen by the graph."""
    eager, model = _twins(graphs)
    for m in (eager, model):
        m.fc1 = pg.nn.Sequential(m.fc1, pg.nn.Dropout(0.5))
    compiled = pg.compile(model, mode="reduce-overhead")
    generator = pg.random.default_generator(graphs)
    for step in range(4):           # warm-up, record, two replays
        x, y = _batch(graphs, seed=step)
        results = []
        for m in (eager, compiled):
            pg.manual_seed(100 + step)
            logits, loss = m(x, y)
            loss.backward()
            results.append((logits, generator.get_state()))
        _close(results[0][0], results[1][0], tol=0)
        assert results[0][1] == results[1][1]
        for a, b in zip(eager.parameters(), model.parameters()):
            _close(a.grad, b.grad)


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_autocast_outside_or_inside_the_call_as_eager(graphs, where):
    """autocast around the compiled call is part of its signature (a new graph, outputs in
    bfloat16); autocast entered by the module's own forward is recorded into its graph."""
    class Mixed(Net):
        def forward(self, x, targets=None):
            with pg.autocast(device_type=x.device.type, dtype=pg.bfloat16):
                return super().forward(x, targets)

    pg.manual_seed(0)
    kind = Mixed if where == "inside" else Net
    eager, model = kind().to(graphs), kind().to(graphs)
    model.load_state_dict(eager.state_dict())
    compiled = pg.compile(model, mode="reduce-overhead")
    around = (lambda: pg.autocast(device_type=graphs, dtype=pg.bfloat16)) if where == "outside" \
        else contextlib.nullcontext
    for step in range(3):
        x, y = _batch(graphs, seed=step)
        losses = []
        for m in (eager, compiled):
            with around():
                logits, loss = m(x, y)
            loss.backward()
            losses.append(loss)
            assert logits.dtype == pg.bfloat16
        _close(losses[0].float(), losses[1].float(), tol=1e-2)
    for a, b in zip(eager.parameters(), model.parameters()):
        _close(a.grad, b.grad, tol=1e-2)
    with pg.no_grad():      # the same call without autocast: another signature, float32 out
        assert compiled(x)[0].dtype == (pg.float32 if where == "outside" else pg.bfloat16)
    assert len(compiled._captured._signatures) == 2


def test_replaced_parameters_and_buffers_are_recorded_anew(graphs):
    """A graph reads the buffers it was recorded with: after `p.data = ...` or a new buffer the
    signature records again (on CUDA a replay would read the memory the module let go)."""
    class Shifted(Net):
        def __init__(self):
            super().__init__()
            self.register_buffer("shift", pg.zeros(4))

        def forward(self, x, targets=None):
            return super().forward(x, targets)[0] + self.shift

    pg.manual_seed(0)
    eager, model = Shifted().to(graphs), Shifted().to(graphs)
    model.load_state_dict(eager.state_dict())
    compiled = pg.compile(model)
    x, _ = _batch(graphs)

    def same_and_signature():
        with pg.no_grad():
            _close(compiled(x), eager(x))
        (sig,) = compiled._captured._signatures.values()
        return sig
    for _ in range(3):              # warm-up, record, replay
        recorded = same_and_signature()
    for m in (eager, model):
        m.fc1.weight.data = m.fc1.weight.detach() * 2
    assert same_and_signature() is not recorded
    for _ in range(2):
        recorded = same_and_signature()
    for m in (eager, model):
        m.shift = pg.full((4,), 3.0, device=graphs)
    assert same_and_signature() is not recorded
    assert same_and_signature().calls == 2      # (warmed up, then recorded on the new buffer)


def test_a_host_read_in_forward_runs_eagerly_with_one_warning(graphs):
    class Branchy(Net):
        def forward(self, x, targets=None):
            if x.sum() > 0:         # a Python branch on a tensor value
                x = x * 2
            return super().forward(x, targets)

    pg.manual_seed(0)
    eager = Branchy().to(graphs)
    model = Branchy().to(graphs)
    model.load_state_dict(eager.state_dict())
    compiled = pg.compile(model, mode="reduce-overhead")
    with pytest.warns(UserWarning, match="runs eagerly for this call signature: .*reads a device value"):
        for step in range(3):
            x, y = _batch(graphs, seed=step)
            for m in (eager, compiled):
                m(x, y)[1].backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, y = _batch(graphs, seed=9)
        compiled(x, y)[1].backward()
        eager(x, y)[1].backward()
    for a, b in zip(eager.parameters(), model.parameters()):
        _close(a.grad, b.grad)


def test_a_closed_over_tensor_that_requires_grad_runs_eagerly(graphs):
    scale = pg.ones(4, device=graphs, requires_grad=True)

    class Scaled(Net):
        def forward(self, x, targets=None):
            return super().forward(x)[0] * scale

    pg.manual_seed(0)
    compiled = pg.compile(Scaled().to(graphs), mode="reduce-overhead")
    with pytest.warns(UserWarning, match="neither an argument nor a parameter"):
        for step in range(3):
            compiled(_batch(graphs, seed=step)[0]).sum().backward()
    assert scale.grad is not None and float(scale.grad.abs().sum()) > 0


def test_a_module_with_hooks_runs_eagerly_and_parameter_hooks_run_every_step(graphs):
    eager, model = _twins(graphs)
    calls = []
    model.fc1.weight.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    compiled = pg.compile(model, mode="reduce-overhead")
    for step in range(4):
        compiled(*_batch(graphs, seed=step))[1].backward()
    assert len(calls) == 4
    model.fc2.register_forward_hook(lambda mod, args, out: out * 0)
    with pytest.warns(UserWarning, match="hooks"):
        logits = pg.compile(model, mode="reduce-overhead")(_batch(graphs)[0])[0]
    assert float(logits.abs().sum()) == 0


def test_a_second_call_before_the_first_ones_backward_runs_eagerly(graphs):
    eager, model = _twins(graphs)
    compiled = pg.compile(model, mode="reduce-overhead")
    for step in range(2):           # warm-up and record
        compiled(*_batch(graphs, seed=step))[1].backward()
        eager(*_batch(graphs, seed=step))[1].backward()
    batches = [_batch(graphs, seed=s) for s in (5, 6)]
    first, second = (compiled(*b)[1] for b in batches)       # two calls in flight
    (first + second).backward()
    for b in batches:
        eager(*b)[1].backward()
    for a, b in zip(eager.parameters(), model.parameters()):
        _close(a.grad, b.grad)


# ---- pg.cuda.make_graphed_callables (torch.cuda.make_graphed_callables) -----------------------

@pytest.fixture
def graphed(graphs, monkeypatch):
    """make_graphed_callables on `device` (on the CPU past its CUDA-tensor check, onto the stand-in graphs)."""
    if graphs == "cpu":
        monkeypatch.setattr(graphed_callables, "_check", lambda c, args: None)
    return graphs


def test_a_graphed_module_trains_as_eager_and_its_warm_up_leaves_no_gradient(graphed):
    eager, model = _twins(graphed)
    x, y = _batch(graphed)
    assert pg.cuda.make_graphed_callables(model, (x,)) is model
    assert all(p.grad is None for p in model.parameters())
    opts = [pg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, model)]
    for step in range(4):
        x, y = _batch(graphed, seed=step)
        for m, opt in zip((eager, model), opts):
            logits, _ = m(x)
            opt.zero_grad()
            pg.nn.functional.cross_entropy(logits, y).backward()
            opt.step()
    for a, b in zip(eager.parameters(), model.parameters()):
        _close(a, b)
    model.eval()                    # the other mode runs the module's own forward
    with pg.no_grad():
        eager.eval()
        _close(model(x)[0], eager(x)[0])


def test_a_graphed_function_gives_its_arguments_gradients(graphed):
    rng = np.random.default_rng(1)

    def leaf(shape):
        return pg.tensor(rng.standard_normal(shape).astype(np.float32), device=graphed, requires_grad=True)

    def f(x, w):
        return (x @ w).tanh()
    x, w = leaf((5, 3)), leaf((3, 2))
    g = pg.cuda.make_graphed_callables(f, (x, w), num_warmup_iters=1)
    for step in range(3):
        xs, ws = leaf((5, 3)), leaf((3, 2))
        (g(xs, ws) * 3).sum().backward()
        xe, we = xs.detach().requires_grad_(), ws.detach().requires_grad_()
        (f(xe, we) * 3).sum().backward()
        _close(xs.grad, xe.grad)
        _close(ws.grad, we.grad)


def test_an_unused_input_raises_unless_allowed(graphed):
    x = pg.ones(3, device=graphed, requires_grad=True)
    y = pg.ones(3, device=graphed, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused_input=True"):
        pg.cuda.make_graphed_callables(lambda a, b: a * 2, (x, y))
    g = pg.cuda.make_graphed_callables(lambda a, b: a * 2, (x, y), allow_unused_input=True)
    g(x, y).sum().backward()
    assert x.grad is not None and y.grad is None


def test_make_graphed_callables_argument_errors_name_what_is_wrong():
    lin = pg.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="only Tensors"):
        pg.cuda.make_graphed_callables(lin, (pg.ones(1, 2), 3))
    with pytest.raises(RuntimeError, match="must be CUDA tensors"):
        pg.cuda.make_graphed_callables(lin, (pg.ones(1, 2),))
    with pytest.raises(RuntimeError, match="pool"):
        pg.cuda.make_graphed_callables(lin, (pg.ones(1, 2),), pool=object())
    with pytest.raises(ValueError, match="2 callables but 1"):
        pg.cuda.make_graphed_callables((lin, lin), ((pg.ones(1, 2),),))


@pytest.mark.parametrize("failing", ["backward", "forward"])
def test_a_recording_that_fails_runs_that_call_and_later_ones_eagerly(monkeypatch, failing):
    _stand_in(monkeypatch)          # (the failure is injected into the stand-in graph)
    graphs = "cpu"
    capture_ = ReplayingGraph.capture

    def failing_capture(self, fn, name, inputs=(), pool=None):
        if name.endswith("backward") == (failing == "backward"):
            raise RuntimeError("injected: this API can't be recorded")
        return capture_(self, fn, name, inputs, pool)
    monkeypatch.setattr(ReplayingGraph, "capture", failing_capture)
    eager, model = _twins(graphs)
    compiled = pg.compile(model, mode="reduce-overhead")
    with pytest.warns(UserWarning, match=f"recording its {failing} failed .*injected"):
        for step in range(4):
            x, y = _batch(graphs, seed=step)
            for m in (eager, compiled):
                m(x, y)[1].backward()
    for a, b in zip(eager.parameters(), model.parameters()):
        _close(a.grad, b.grad)
    assert list(compiled._captured._signatures.values()) == [None]


def test_every_mode_captures_but_those_that_ask_for_no_cuda_graphs():
    m = Net()
    for mode in (None, "default", "reduce-overhead", "max-autotune"):
        assert pg.compile(m, mode=mode)._captured.module is m
    assert pg.compile(m, mode="max-autotune-no-cudagraphs")._captured is None
    for backend in ("eager", "aot_eager"):
        assert pg.compile(m, mode="reduce-overhead", backend=backend)._captured is None
    assert pg.compile(m, backend="cudagraphs")._captured.module is m
