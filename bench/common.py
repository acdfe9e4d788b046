"""What the GPU training benchmarks share: where MNIST is, the run header (command, device,
versions), and PyTorch's whole-step CUDA-graph capture with a node count."""
from __future__ import annotations

import ctypes
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np


def default_data_dir(dataset="mnist"):
    """The folder holding dataset/: $PARAGRAD_DATA, else ../shared/data, else .data (both
    beside/in the repository root)."""
    repo = Path(__file__).resolve().parent.parent
    for cand in (os.environ.get("PARAGRAD_DATA"), repo.parent / "shared" / "data", repo / ".data"):
        if cand and (Path(cand) / dataset).is_dir():
            return Path(cand)
    return None


def load_mnist(root, flat=False, limit_test=None):
    """NumPy arrays shared by every framework: train images (60000, 1, 28, 28) float32 normalized
    ((60000, 784) if flat), labels (60000,) int64, and the same for the test split (its first
    limit_test images if given)."""
    from paragrad.data import MNIST
    out = {}
    for split, train in (("train", True), ("test", False)):
        ds = MNIST(root, train=train, download=False)
        n = None if train else limit_test
        images = ds.images.numpy()[:n]
        out["x" + split] = np.ascontiguousarray(images.reshape(len(images), -1) if flat else images,
                                                dtype=np.float32)
        out["y" + split] = np.ascontiguousarray(ds.targets.numpy()[:n], dtype=np.int64)
    return out


def libcuda():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuGraphGetNodes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    lib.cuGraphNodeGetType.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return lib


def graph_nodes(cu_graph):
    """'N nodes, K kernels' of a CUgraph (== cudaGraph_t) through the driver API."""
    lib, n = libcuda(), ctypes.c_size_t(0)
    rc = lib.cuGraphGetNodes(cu_graph, None, ctypes.byref(n))
    if rc != 0:
        raise RuntimeError(f"cuGraphGetNodes returned CUresult {rc}")
    nodes = (ctypes.c_void_p * n.value)()
    lib.cuGraphGetNodes(cu_graph, nodes, ctypes.byref(n))
    kind, kernels = ctypes.c_int(), 0
    for node in nodes:
        kernels += lib.cuGraphNodeGetType(node, ctypes.byref(kind)) == 0 and kind.value == 0  # CU_GRAPH_NODE_TYPE_KERNEL
    return f"{n.value} nodes, {kernels} kernels"


def version(module, dist=None):
    try:
        return metadata.version(dist or module)
    except metadata.PackageNotFoundError:
        try:
            return __import__(module).__version__
        except Exception:  # noqa: BLE001 - absent or broken: say so in the header
            return "not installed"


def print_header(device, cpu_smoke_test=True):
    import torch

    import paragrad as pg
    print(f"command : python {' '.join(sys.argv)}")
    if device == "cuda":
        try:
            driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True, timeout=30).stdout.split("\n")[0].strip()
        except (OSError, subprocess.SubprocessError):
            driver = "?"
        v = ctypes.c_int(0)
        libcuda().cuDriverGetVersion(ctypes.byref(v))
        print(f"device  : {torch.cuda.get_device_name()}, driver {driver or '?'} "
              f"(CUDA {v.value // 1000}.{v.value % 1000 // 10}), torch CUDA {torch.version.cuda}, "
              f"cuDNN {torch.backends.cudnn.version()}")
        try:
            print(f"paragrad: {pg.backends.backend_for('cuda').describe()}")
        except Exception as e:  # noqa: BLE001 - the paragrad rows will fail with the full error
            print(f"paragrad: cuda backend unusable: {type(e).__name__}: {e}")
    else:
        print(f"device  : cpu ({platform.machine()}, {os.cpu_count()} cores)"
              + (" - smoke test, times mean nothing" if cpu_smoke_test else ""))
    print(f"versions: paragrad {pg.__version__}, torch {torch.__version__}, cupy {version('cupy', 'cupy-cuda13x')}, "
          f"tinygrad {version('tinygrad')}, numpy {np.__version__}, python {platform.python_version()}")


def capturable_adam(params, lr):
    import torch
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True, capturable=True), "Adam fused+capturable"
    except (RuntimeError, ValueError, TypeError) as e:
        return torch.optim.Adam(params, lr=lr, capturable=True), f"Adam capturable (fused refused: {e})"


def capture_torch_step(body, opt, feed, warmup):
    """Warm body up on a side stream, then capture one call of it into a CUDA graph, as in the
    PyTorch docs (whole-network capture). feed(i) fills the static inputs for warm-up step i.
    Capturing runs nothing: the first replay is the next step. Returns (graph, node count text)."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(warmup):
            feed(i)
            opt.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(s)
    try:   # keep_graph keeps the cudaGraph_t so that its nodes can be counted
        graph, keep = torch.cuda.CUDAGraph(keep_graph=True), True
    except TypeError:
        graph, keep = torch.cuda.CUDAGraph(), False
    opt.zero_grad(set_to_none=True)   # backward in the capture allocates .grad from the graph's pool
    with torch.cuda.graph(graph):
        body()
    nodes = "n/a"
    if keep:
        try:
            nodes = graph_nodes(graph.raw_cuda_graph())
        except Exception as e:  # noqa: BLE001 - a count we can't take is printed as n/a
            print(f"  (torch graph nodes not countable: {type(e).__name__}: {e})")
        graph.instantiate()
    return graph, nodes


def per_second(step, sync, batch, steps, warmup, windows=5):
    """Training throughput: step(i) for warmup untimed steps, then `windows` windows of `steps`
    steps, each timed between two synchronizations; -> the median window's samples (images)
    per second. A garbage collection first, so that objects an earlier measurement left
    don't get collected inside this one's windows."""
    for i in range(warmup):
        step(i)
    gc.collect()
    rates = []
    for _ in range(windows):
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            step(i)
        sync()
        rates.append(batch * steps / (time.perf_counter() - t0))
    return statistics.median(rates)


def torch_eager_step(model, opt, X, Y, batch, compile_fwd):
    """PyTorch's eager training step on batch i of a device permutation (torch.compile on the
    model+loss forward only when compile_fwd: backward and the optimizer stay eager, the
    robust and common setup) -> (step(perm, i), note)."""
    import torch
    import torch.nn.functional as F

    def forward_loss(x, y):
        return F.cross_entropy(model(x), y)
    fwd = torch.compile(forward_loss) if compile_fwd else forward_loss

    def step(perm, i):
        idx = perm[i * batch:(i + 1) * batch]
        loss = fwd(X[idx], Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    note = "Adam default (foreach)" + (", model+loss forward compiled (default mode)" if compile_fwd else "")
    return step, note


def timed_warmup(tr, perm, steps):
    """Seconds for a trainer's warm-up (its own tr.warmup(perm), or `steps` training steps) and
    one evaluation, so that compiling, capturing and autotuning stay out of the timed epochs."""
    tr.sync()
    t0 = time.perf_counter()
    if tr.warmup:
        tr.warmup(perm)
    else:
        for i in range(steps):
            tr.step(perm, i)
    tr.evaluate()
    tr.sync()
    return time.perf_counter() - t0
