"""The raw-kernel launcher (backends/cuda/runtime/compile.py): arguments packed once per kernel and
argument types, launched through the driver, against the values they must give; an argument
type it doesn't pack takes CuPy's call; a launch the driver refuses raises. Marked `gpu`."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

_SOURCE = r"""
extern "C" __global__ void mixed(const float* x, float* y, long long n, float s, double t, int k,
                                 const float* maybe, unsigned int u) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s + (float)t + k + (maybe ? maybe[i] : 0.f) + u;
}
extern "C" __global__ void negate_if(const float* x, float* y, long long n, bool neg) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = neg ? -x[i] : x[i];
}
"""


def _kernels():
    import cupy
    from paragrad.backends.cuda.runtime.compile import Kernel
    mod = cupy.RawModule(code=_SOURCE)
    return cupy, Kernel(mod.get_function("mixed")), Kernel(mod.get_function("negate_if"))


def test_arrays_integers_floats_and_a_null_pointer_reach_the_kernel():
    cupy, mixed, _ = _kernels()
    assert mixed.handle is not None, "cuda-python is missing: every launch would be CuPy's"
    x = cupy.arange(1000, dtype=cupy.float32)
    y = cupy.empty_like(x)
    args = (x, y, np.int64(1000), np.float32(2.0), np.float64(0.5), np.int32(3))
    mixed((4,), (256,), args + (np.uint64(0), np.uint32(7)))
    np.testing.assert_allclose(y.get(), x.get() * 2 + 10.5)
    # the same kernel with an array where the null pointer was: another packing, kept too
    mixed((4,), (256,), args + (x, np.uint32(7)))
    np.testing.assert_allclose(y.get(), x.get() * 3 + 10.5)
    mixed((2, 2), (256, 1), args + (np.uint64(0), np.uint32(1)))       # a 2-D grid
    np.testing.assert_allclose(y.get()[:512], x.get()[:512] * 2 + 4.5)
    assert len(mixed.packs) == 2


def test_an_argument_type_it_does_not_pack_takes_cupys_call():
    cupy, _, negate_if = _kernels()
    x = cupy.arange(10, dtype=cupy.float32)
    y = cupy.empty_like(x)
    negate_if((1,), (32,), (x, y, np.int64(10), np.bool_(True)))
    np.testing.assert_array_equal(y.get(), -x.get())
    assert negate_if.packs[(cupy.ndarray, cupy.ndarray, np.int64, np.bool_)] is None


def test_a_launch_the_driver_refuses_raises():
    cupy, mixed, _ = _kernels()
    x = cupy.arange(10, dtype=cupy.float32)
    args = (x, x, np.int64(10), np.float32(1), np.float64(0), np.int32(0), np.uint64(0), np.uint32(0))
    with pytest.raises(RuntimeError, match="kernel launch failed"):
        mixed((1,), (4096,), args)      # 4096 threads: more than a block holds


def test_cupy_launches_when_asked(tmp_path):
    """PARAGRAD_CUDA_LAUNCH=cupy: no driver handle, every launch is CuPy's call, same results;
    another value is refused with the variable's name."""
    import os
    import subprocess
    import sys
    probe = ("import numpy as np, paragrad as pg; from paragrad.backends.cuda.runtime import compile as kernels; "
             "assert kernels._launch_kernel is None; x = pg.tensor(np.arange(6.0), device='cuda'); "
             "print(((x * 2) + 1).cpu().numpy().tolist())")
    env = dict(os.environ, PARAGRAD_CUDA_LAUNCH="cupy")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]"
    env["PARAGRAD_CUDA_LAUNCH"] = "fast"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "PARAGRAD_CUDA_LAUNCH must be 'driver' or 'cupy'" in out.stderr


def test_a_typed_launch_writes_every_slot():
    """TypedLaunch: addresses, int64, float32 and float64 written by one pack, each read by
    the kernel where it expects it; one launcher per slot string, reused."""
    cupy, mixed, _ = _kernels()
    x = cupy.arange(1000, dtype=cupy.float32)
    y = cupy.empty_like(x)
    # (mixed's int and unsigned int parameters have no slot kind: a smaller kernel instead)
    source = r"""extern "C" __global__ void axpb(const float* x, float* y, long long n, float a, double b) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] * a + (float)b;
    }"""
    from paragrad.backends.cuda.runtime.compile import Kernel
    axpb = Kernel(cupy.RawModule(code=source).get_function("axpb"))
    launch = axpb.typed("ppqfd")
    assert axpb.typed("ppqfd") is launch
    launch(4, 256, x.data.ptr, y.data.ptr, 1000, np.float32(3.0), 0.25)
    np.testing.assert_allclose(y.get(), x.get() * 3 + 0.25)
    launch(2, 256, x.data.ptr, y.data.ptr, 500, -1.0, 2.0)     # half the elements, new values
    np.testing.assert_allclose(y.get()[:500], -x.get()[:500] + 2)
    np.testing.assert_allclose(y.get()[500:], x.get()[500:] * 3 + 0.25)
    with pytest.raises(RuntimeError, match="kernel launch failed"):
        launch(1, 4096, x.data.ptr, y.data.ptr, 10, 1.0, 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_plans_give_the_same_values_call_after_call(dtype, monkeypatch):
    """The elementwise plans (kernels/elementwise.py): made on a shape's first call, run from
    the second on; full, row-broadcast, one-element and scalar operands, unary functions and
    an activation's gradient, each against NumPy, with shapes changing between calls. (Results
    are read here straight from CuPy, not through the backend: nothing is recorded into a
    fused chain, every call launches.)"""
    import cupy
    from paragrad.backends.cuda.kernels import elementwise
    monkeypatch.setattr(elementwise, "_LAZY", False)
    rng = np.random.default_rng(0)
    for shape, other in (((4, 5), (4, 5)), ((4, 5), (5,)), ((3, 2, 5), (1, 5)), ((6,), (1,)), ((4, 5), (4, 5))):
        a = rng.standard_normal(shape).astype(dtype)
        b = rng.standard_normal(other).astype(dtype)
        for _ in range(2):
            for op, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)):
                got = elementwise.binary(op, cupy.asarray(a), cupy.asarray(b), None)
                np.testing.assert_allclose(got.get(), f(a, b), rtol=1e-6)
                got = elementwise.binary(op, cupy.asarray(b), cupy.asarray(a), None)    # the row first
                np.testing.assert_allclose(got.get(), f(b, a), rtol=1e-6)
                got = elementwise.binary(op, cupy.asarray(a), 1.5, None)
                np.testing.assert_allclose(got.get(), f(a, dtype(1.5)), rtol=1e-6)
            np.testing.assert_allclose(elementwise.unary("tanh", cupy.asarray(a), None).get(), np.tanh(a), rtol=1e-6)
            y = np.tanh(a)
            got = elementwise.activation_grad("tanh", cupy.asarray(b if b.shape == a.shape else a), cupy.asarray(y))
            np.testing.assert_allclose(got.get(), (b if b.shape == a.shape else a) * (1 - y * y), rtol=1e-6)
    empty = cupy.empty((0, 5), dtype)
    assert elementwise.binary("add", empty, empty, None).shape == (0, 5)
    # what no plan takes still answers as before: a non-contiguous operand, an out buffer
    a = cupy.asarray(rng.standard_normal((4, 6)).astype(dtype))
    assert elementwise.binary("add", a[:, ::2], a[:, 1::2], None) is None
    out = cupy.empty((4, 6), dtype)
    assert elementwise.binary("mul", a, a, out) is out
    np.testing.assert_allclose(out.get(), a.get() ** 2, rtol=1e-6)
