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
