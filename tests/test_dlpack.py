"""DLPack: paragrad tensors shared without copies with NumPy and PyTorch (CPU) and CuPy (CUDA),
both ways; a write on one side is seen on the other."""
import numpy as np
import pytest
import torch

import paragrad as pg

from .helpers import check_raises

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _peer(device):
    """(from_dlpack, to NumPy) of the other library on device: torch on the CPU, CuPy on CUDA."""
    if device == "cpu":
        return torch.from_dlpack, lambda x: x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()
    import cupy
    return cupy.from_dlpack, lambda x: cupy.asnumpy(x.astype(np.float32) if x.dtype.name == "bfloat16" else x)


def _pg_np(t):
    """A paragrad tensor's values as NumPy (bfloat16 as float32)."""
    a = t.detach().cpu()
    return a.float().numpy() if t.dtype is pg.bfloat16 else a.numpy()


def _values(dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    return (np.arange(n) % 2 == 0).reshape(shape) if dtype == "bool" else np.arange(1, n + 1).reshape(shape)


def _same_values(t, peer, to_np):
    np.testing.assert_array_equal(to_np(peer), _pg_np(t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_export_shares_memory(dtype, device):
    from_dlpack, to_np = _peer(device)
    t = pg.tensor(_values(dtype), dtype=getattr(pg, dtype), device=device)
    peer = from_dlpack(t)
    assert tuple(peer.shape) == (2, 3)
    _same_values(t, peer, to_np)
    peer[0, 0] = 0                          # written by the other library ...
    assert not t[0, 0].item()               # ... seen by paragrad
    t[1, 1] = 0                             # and the other way
    _same_values(t, peer, to_np)


@pytest.mark.parametrize("dtype", DTYPES)
def test_import_shares_memory(dtype, device):
    if device == "cpu":
        src = torch.tensor(_values(dtype)).to(getattr(torch, dtype))
    else:
        src = pg.tensor(_values(dtype), dtype=getattr(pg, dtype), device=device)
        src = _peer(device)[0](src)         # a CuPy array
    t = pg.from_dlpack(src)
    assert t.dtype is getattr(pg, dtype) and t.device == pg.device(device) and t.shape == (2, 3)
    t[0, 0] = 0
    assert not bool(src[0, 0])
    src[1, 1] = 0
    assert not t[1, 1].item()


def test_numpy_both_ways_shares_memory():
    t = pg.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    a[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    b = np.arange(4, dtype=np.int32)
    u = pg.from_dlpack(b)
    assert u.dtype is pg.int32
    u.add_(10)
    np.testing.assert_array_equal(b, [10, 11, 12, 13])


def test_numpy_refuses_bfloat16_clearly():
    # NumPy's DLPack has no bfloat16; it refuses rather than reading the bits as another type
    with pytest.raises((RuntimeError, BufferError), match="dtype"):
        np.from_dlpack(pg.ones(2, dtype=pg.bfloat16))


def test_capsules_as_torch_utils_dlpack():
    t = pg.arange(4.0)
    cap = pg.utils.dlpack.to_dlpack(t)
    u = torch.utils.dlpack.from_dlpack(cap)
    u[0] = 7.0
    assert t[0].item() == 7.0
    v = pg.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(u))
    v[1] = 9.0
    assert t[1].item() == 9.0
    check_raises(lambda L: L.from_dlpack(cap), match="consumed only once")     # a capsule is consumed once


@pytest.mark.parametrize("view", ["0-d", "transpose", "step", "flip", "column"])
def test_views_keep_their_strides(view, device):
    from_dlpack, to_np = _peer(device)
    base = pg.arange(24.0, device=device).reshape(4, 6)
    t = {"0-d": lambda: base[1, 2], "transpose": lambda: base.t(), "step": lambda: base[::2, 1::3],
         "flip": lambda: base.flip(0), "column": lambda: base[:, 4]}[view]()
    peer = from_dlpack(t)
    _same_values(t, peer, to_np)
    peer[...] = -1.0                        # written through the view, into base
    assert (t == -1).all().item()
    back = pg.from_dlpack(peer)
    assert back.shape == t.shape and (back == -1).all().item()


def test_requires_grad_is_refused_as_torch(device):
    check_raises(lambda lib: lib.ones(2, requires_grad=True).__dlpack__(), match="detach")
    t = pg.ones(2, device=device, requires_grad=True)
    with pytest.raises(BufferError, match="require gradient"):
        _peer(device)[0](t)
    _peer(device)[0](t.detach())


def test_dlpack_device(device):
    t = pg.ones(1, device=device)
    kind, index = t.__dlpack_device__()
    assert (int(kind), index) == ((1, 0) if device == "cpu" else (2, t.device.index or 0))
    if device == "cpu":
        assert t.__dlpack_device__() == torch.ones(1).__dlpack_device__()


def test_from_dlpack_copy_and_device(device):
    src = pg.arange(3.0, device=device)
    same = pg.from_dlpack(src, device=device)
    same[0] = 5.0
    assert src[0].item() == 5.0
    copied = pg.from_dlpack(src, copy=True)
    copied[1] = 7.0
    assert src[1].item() == 1.0
    if device != "cpu":
        moved = pg.from_dlpack(src, device="cpu")
        assert moved.device == pg.device("cpu") and moved.tolist() == src.tolist()
        with pytest.raises(ValueError, match="without copying"):
            pg.from_dlpack(src, device="cpu", copy=False)


def test_from_dlpack_of_something_else_raises_as_torch():
    check_raises(lambda lib: lib.from_dlpack(object()), match="capsule")


@pytest.mark.gpu
def test_cuda_stream_argument_orders_the_consumer():
    import cupy
    x = pg.randn(512, 512, device="cuda")
    y = x @ x                               # queued on paragrad's stream
    s = cupy.cuda.Stream(non_blocking=True)
    with s:                                 # CuPy passes s to __dlpack__: the export waits for y
        c = cupy.from_dlpack(y)
        total = float(c.sum())
    np.testing.assert_allclose(total, y.sum().item(), rtol=1e-4)
    cap = y.__dlpack__(stream=s.ptr)        # the stream argument taken directly
    assert type(cap).__name__ == "PyCapsule"
