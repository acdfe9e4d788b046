"""The recording logic of the CUDA backend's fused elementwise chains (backends/cuda/
fused_chains.py), on the CPU: the module is imported over a stand-in for CuPy whose arrays are
NumPy arrays with addresses, and a chain's launch is replaced by a NumPy evaluation of the ops
it recorded (`source()` says what the real kernel computes; tests/backends/cuda/
test_fused_chains.py runs the real one on a GPU). What this checks: which ops are recorded and
which launch at once, the operand tokens (a reshape of a result is that result, a slice of one
is not), where a chain is cut (element count, dtype, length), the arguments a launch gets, and
`flush_before`'s wrapping."""
import importlib
import sys
import types

import numpy as np
import pytest


class _Memory:
    """One allocation (CuPy's PooledMemory): views share it."""


class _Pointer:
    def __init__(self, mem, ptr):
        self.mem, self.ptr = mem, ptr


class _Array:
    """What fused_chains reads of a CuPy array, over a NumPy array."""
    live = {}       # address -> NumPy array (kept alive: addresses are not reused in a test)

    def __init__(self, shape=None, dtype=None, *, a=None, mem=None):
        if a is None:
            a, mem = np.full(shape, np.nan, dtype), _Memory()      # (unwritten: NaN)
        self.a, self.data = a, _Pointer(mem, a.__array_interface__["data"][0])
        _Array.live.setdefault(self.data.ptr, []).append(a)

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: self.a.dtype)
    size = property(lambda self: self.a.size)
    ndim = property(lambda self: self.a.ndim)
    _c_contiguous = property(lambda self: self.a.flags.c_contiguous)

    def __getitem__(self, key):
        return _Array(a=self.a[key], mem=self.data.mem)

    def reshape(self, *shape):
        return _Array(a=self.a.reshape(*shape), mem=self.data.mem)


_FUNCTORS = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Neg": np.negative,
    "Exp": np.exp, "Tanh": np.tanh, "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "Relu": lambda x: np.where(x < 0, 0, x), "TanhGrad": lambda g, y: -(g * (y * y - 1)),
    "Cube": lambda x: x * x * x,
}


class _Launch:
    """A chain's kernel, evaluated in NumPy from its key: (ops, layouts), args as the real
    launch gets them (input addresses, result addresses, scalars, n)."""
    launches = []

    def __init__(self, chain):
        self.ops, self.layouts = list(chain.ops), list(chain.layouts)

    def __call__(self, grid, block, *args, stream):
        k, m = len(self.layouts), len(self.ops)
        ins, outs, scalars, n = args[:k], args[k:k + m], args[k + m:-1], args[-1]
        _Launch.launches.append((stream, len(self.ops), n))
        find = lambda ptr, size: next(a for a in _Array.live[ptr] if a.size == size)    # noqa: E731
        x = [find(p, n if layout == "x" else 1).reshape(-1) for p, layout in zip(ins, self.layouts)]
        v = []
        for j, (functor, *tokens) in enumerate(self.ops):
            args_ = [{"v": lambda i: v[i], "x": lambda i: x[i], "one": lambda i: x[i][0],
                      "s": lambda i: scalars[i]}[kind](i) for kind, i in tokens]
            v.append(np.asarray(_FUNCTORS[functor](*args_), dtype=x[0].dtype if x else np.float32))
            find(outs[j], n).reshape(-1)[:] = v[j]


@pytest.fixture
def chains(monkeypatch):
    cupy = types.ModuleType("cupy")
    cupy.ndarray = _Array
    stream = types.SimpleNamespace(ptr=7)
    cupy.cuda = types.SimpleNamespace(
        get_current_stream=lambda: stream, runtime=types.SimpleNamespace(getDevice=lambda: 0),
        driver=types.SimpleNamespace(launchKernel=None, CUDADriverError=RuntimeError),
        Device=lambda d: types.SimpleNamespace(__enter__=lambda: None, __exit__=lambda *a: None))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    for name in ("paragrad.backends.cuda.fused_chains", "paragrad.backends.cuda.runtime.compile"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    fc = importlib.import_module("paragrad.backends.cuda.fused_chains")
    monkeypatch.setattr(fc, "_compile", _Launch)
    _Launch.launches.clear()
    yield fc
    fc.discard()
    for name in ("paragrad.backends.cuda.fused_chains", "paragrad.backends.cuda.runtime.compile"):
        sys.modules.pop(name, None)        # (the stand-in must not outlive the test)
    _Array.live.clear()


def _put(a):
    return _Array(a=np.array(a, dtype=np.float32), mem=_Memory())


def test_a_chain_records_then_computes_on_flush(chains):
    z, h, hb = (_put(np.arange(6, dtype=np.float32).reshape(2, 3) * s) for s in (0.1, 1.0, 2.0))
    one = chains.binary("sub", _put(1.0), z)            # a one-element operand first
    r = chains.binary("add", chains.binary("mul", one, h), chains.binary("mul", z, hb))
    out = chains.unary("tanh", chains.binary("div", r, 3))
    assert chains.pending() and np.isnan(out.a).all()       # allocated, not written yet
    chains.flush()
    assert not chains.pending() and _Launch.launches == [(7, 6, 6)]     # one launch, six ops
    zn, hn, hbn = z.a, h.a, hb.a
    np.testing.assert_allclose(out.a, np.tanh(((1 - zn) * hn + zn * hbn) / np.float32(3)), rtol=1e-6)


def test_what_is_not_recorded(chains):
    a = _put(np.ones((2, 3)))
    assert chains.binary("pow", a, 2) is None                          # not an op it takes
    assert chains.binary("add", a, _put(np.ones(3))) is None           # a row broadcast
    assert chains.binary("add", a[:, :2], a[:, 1:]) is None            # not contiguous
    assert chains.binary("add", a, True) is None                       # a bool is no number here
    assert chains.unary("exp", _Array(a=np.ones(3, np.float16), mem=_Memory())) is None
    assert chains.binary("add", _put(np.ones((0, 3))), 1.0) is None    # nothing to compute
    assert not chains.pending()


def test_a_reshape_of_a_result_is_the_result_and_a_slice_is_not(chains):
    x = _put(np.arange(12))
    y = chains.binary("mul", x, 2.0)
    w = chains.binary("add", y.reshape(3, 4), 1.0)          # the same elements: in the chain
    assert w is not None and len(chains._chain.ops) == 2
    # one element of a pending result, beside the result itself: every thread would read
    # what one thread writes, so the chain launches and the op is left to launch at once
    assert chains.binary("mul", y, y[3:4]) is None
    assert not chains.pending() and _Launch.launches[-1][1] == 2
    z = chains.binary("add", w[1:], 1.0)     # fewer elements: a chain of its own, after the launch
    assert z is not None and chains._chain.inputs[0].data.ptr == w[1:].data.ptr
    chains.flush()
    np.testing.assert_array_equal(w.a, np.arange(12).reshape(3, 4) * 2 + 1)
    np.testing.assert_array_equal(z.a, np.arange(12).reshape(3, 4)[1:] * 2 + 2)


def test_chains_are_cut_by_size_dtype_and_length(chains):
    a = chains.binary("add", _put(np.ones(4)), 1.0)
    b = chains.binary("add", _put(np.ones(5)), 2.0)           # another element count
    assert _Launch.launches == [(7, 1, 4)] and len(chains._chain.ops) == 1
    c = chains.binary("add", _Array(a=np.ones(5), mem=_Memory()), 3.0)     # float64
    assert _Launch.launches[-1] == (7, 1, 5)
    x, y = _put(np.zeros(3)), _put(np.ones(3))
    for _ in range(chains._MAX_OPS + 1):
        x = chains.binary("add", x, y)          # (one parameter more per op: its result)
    chains.flush()
    assert [n for _, n, _ in _Launch.launches[-2:]] == [chains._MAX_OPS, 1]
    for _ in range(chains._MAX_OPERANDS):
        x = chains.binary("add", x, 1.0)        # (two more per op: its result and its scalar)
    chains.flush()
    assert all(ops * 2 + 1 <= chains._MAX_OPERANDS for _, ops, _ in _Launch.launches[-3:])
    x = chains.binary("sub", x, chains._MAX_OPERANDS + chains._MAX_OPS + 1.0)
    np.testing.assert_array_equal(a.a, 2.0)
    np.testing.assert_array_equal(b.a, 3.0)
    np.testing.assert_array_equal(c.a, 4.0)
    chains.flush()
    np.testing.assert_array_equal(x.a, 0.0)


def test_an_input_read_twice_is_one_parameter_and_scalars_keep_their_dtype(chains):
    x = _put(np.full(4, 1.5))
    y = chains.binary("mul", x, x)
    chains.binary("add", y, x)
    assert chains._chain.layouts == ["x"]
    s = chains.binary("div", y, 3)
    assert type(chains._chain.scalars[0]) is np.float32      # (rounded to the buffer's dtype)
    chains.flush()
    np.testing.assert_allclose(s.a, np.float32(2.25) / np.float32(3))


def test_activation_gradients_take_the_output(chains):
    g, y = _put([1.0, 2.0, 3.0]), _put([0.5, -0.25, 0.0])
    dx = chains.activation_grad("tanh", g, y)
    assert chains.activation_grad("tanh", g, _put([1.0, 2.0])) is None     # shapes differ
    chains.flush()
    np.testing.assert_allclose(dx.a, g.a * (1 - y.a * y.a), rtol=1e-6)


def test_flush_before_launches_first_and_lets_nested_calls_launch(chains):
    seen = []

    class Backend:
        def matmul(self, a):
            seen.append(chains.pending())
            seen.append(chains.binary("add", a, 1.0))     # inside: not recorded
            return a

        def binary(self, a):
            return chains.binary("add", a, 1.0)
    chains.flush_before(Backend, keep={"binary"})
    b = Backend()
    r = b.binary(_put(np.ones(2)))
    assert chains.pending() and r is not None
    b.matmul(r)
    assert seen == [False, None] and chains._inside == 0
    np.testing.assert_array_equal(r.a, 2.0)


def test_discard_drops_the_chain_unlaunched(chains):
    chains.binary("add", _put(np.ones(2)), 1.0)
    chains.discard()
    assert not chains.pending() and _Launch.launches == []


def test_a_typed_launch_goes_to_the_current_stream_or_the_one_named(chains, monkeypatch):
    """runtime/compile.py's TypedLaunch (imported here over the same stand-in): the values
    packed into its parameter buffer, the stream the chain recorded when one is named."""
    import struct
    compile_ = sys.modules["paragrad.backends.cuda.runtime.compile"]
    seen = []
    monkeypatch.setattr(compile_, "_launch_kernel", lambda *a: seen.append(a))
    launch = compile_.TypedLaunch(11, "pqf")
    launch(3, 256, 0x1000, -5, 0.5)
    launch(1, 128, 0x2000, 6, 1.5, stream=99)
    assert [(a[0], a[1], a[4], a[8]) for a in seen] == [(11, 3, 256, 7), (11, 1, 128, 99)]
    assert struct.unpack("=Qqf4x", launch.buf.raw) == (0x2000, 6, 1.5)


def test_a_view_of_a_contiguous_buffer_does_not_launch_the_chain(chains):
    class Backend:
        def reshape(self, x, shape):
            return x.reshape(shape)

        def owns_memory(self, x):
            return True

        def matmul(self, a):
            return a
    chains.flush_before(Backend, keep=chains.NO_FLUSH)
    b = Backend()
    y = chains.binary("mul", _put(np.arange(6)), 2.0)
    v = b.reshape(y, (2, 3))                    # a view: the chain waits, and takes it
    assert b.owns_memory(v) and chains.pending()
    assert chains.binary("add", v, 1.0) is not None and len(chains._chain.ops) == 2
    t = _Array(a=y.a.reshape(2, 3).T, mem=y.data.mem)
    b.reshape(t, (6,))                          # not contiguous: a copy reads it, so it launches
    assert not chains.pending() and _Launch.launches[-1][1] == 2
    np.testing.assert_array_equal(v.a, np.arange(6).reshape(2, 3) * 2)


def test_an_in_place_op_writes_its_out_and_later_ops_read_the_new_value(chains):
    p, g = _put(np.arange(4)), _put(np.ones(4))
    step = chains.binary("mul", g, -0.5)
    assert chains.binary("add", p, step, out=p) is p        # p.add_(g, alpha=-0.5): one chain
    q = chains.binary("mul", p, 2.0)                         # reads the updated p
    assert len(chains._chain.ops) == 3 and chains._chain.ops[2][1] == ("v", 1)
    chains.flush()
    assert len(_Launch.launches) == 1
    np.testing.assert_array_equal(p.a, np.arange(4) - 0.5)
    np.testing.assert_array_equal(q.a, (np.arange(4) - 0.5) * 2)


def test_an_out_that_overlaps_an_input_elsewhere_launches_at_once(chains):
    base = _put(np.arange(8))
    head, tail = base[:4], base[4:]
    chains.binary("mul", tail, 2.0)                         # tail: an input of the chain
    assert chains.binary("add", head, 1.0, out=head) is None     # head shares tail's memory
    assert not chains.pending() and len(_Launch.launches) == 1
    assert chains.binary("add", head, 1.0, out=_put(np.zeros((2, 2)))) is None     # another shape
    assert chains.binary("add", head, 1.0, out=tail[::2]) is None                  # not contiguous
    # two writes to overlapping views: thread i's second store would race thread i+2's first
    first, second = base[:6], base[2:]
    assert chains.binary("add", first, 1.0, out=first) is first
    assert chains.binary("mul", _put(np.ones(6)), 2.0, out=second) is None
    assert not chains.pending()


def test_a_small_integer_power_joins_the_chain(chains):
    x = _put([1.0, -2.0, 3.0])
    inner = chains.binary("add", x, chains.binary("mul", chains.unary(3.0, x, chains.POWERS), 0.044715))
    assert len(chains._chain.ops) == 3 and chains._chain.ops[0][0] == "Cube"       # (a GELU's x + c * x**3)
    assert chains.unary(2.5, x, chains.POWERS) is None
    chains.flush()
    np.testing.assert_allclose(inner.a, x.a + 0.044715 * x.a ** 3, rtol=1e-6)
