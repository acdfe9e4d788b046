"""pg.save / pg.load (torch.save / torch.load): round trips of tensors of every dtype,
Parameters, state_dicts and optimizer state (training resumes identically), paths and file
objects, map_location in each form, weights_only's refusals, and the errors."""
import io
import pickle

import numpy as np
import pytest

import paragrad as pg

from tests.helpers import check_raises


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    pg.save(obj, buf)
    buf.seek(0)
    return pg.load(buf, **load_kw)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
def test_tensor_roundtrip_keeps_values_dtype_device(dtype, device):
    x = pg.arange(6, device=device).reshape(2, 3).to(getattr(pg, dtype)).mT    # non-contiguous
    y = _roundtrip(x)
    assert y.dtype is x.dtype and y.device == x.device and tuple(y.shape) == (3, 2)
    assert np.array_equal(y.cpu().float().numpy(), x.cpu().float().numpy())


def test_parameters_and_requires_grad(device):
    p = pg.nn.Parameter(pg.randn(3, device=device))
    q = _roundtrip({"p": p, "t": pg.ones(2, device=device, requires_grad=True), "plain": pg.ones(1)})
    assert type(q["p"]) is pg.nn.Parameter and q["p"].requires_grad
    assert q["t"].requires_grad and q["t"].grad_fn is None and not q["plain"].requires_grad
    assert np.array_equal(q["p"].detach().cpu().numpy(), p.detach().cpu().numpy())


def test_training_resumes_identically_from_saved_state(tmp_path, device):
    def make():
        pg.manual_seed(0)
        m = pg.nn.Sequential(pg.nn.Linear(4, 8), pg.nn.ReLU(), pg.nn.Linear(8, 2)).to(device)
        return m, pg.optim.Adam(m.parameters(), lr=1e-2)

    def step(m, opt, i):
        g = pg.Generator().manual_seed(i)
        x = pg.randn(5, 4, generator=g).to(device)
        opt.zero_grad()
        m(x).square().mean().backward()
        opt.step()

    m, opt = make()
    for i in range(3):
        step(m, opt, i)
    pg.save({"model": m.state_dict(), "opt": opt.state_dict(), "step": 3}, tmp_path / "ckpt.pt")
    for i in range(3, 5):
        step(m, opt, i)
    m2, opt2 = make()
    ck = pg.load(str(tmp_path / "ckpt.pt"))
    assert ck["step"] == 3 and list(ck["model"]) == list(m.state_dict())
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    for i in range(3, 5):
        step(m2, opt2, i)
    for a, b in zip(m.parameters(), m2.parameters()):
        assert np.array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())


def test_map_location_forms(device):
    x = pg.ones(2, device=device)
    assert _roundtrip(x, map_location="cpu").device == pg.device("cpu")
    assert _roundtrip(x, map_location=pg.device("cpu")).device == pg.device("cpu")
    assert _roundtrip(x, map_location={str(x.device): "cpu"}).device == pg.device("cpu")
    assert _roundtrip(x, map_location={"elsewhere": "cpu"}).device == x.device
    seen = []
    y = _roundtrip(x, map_location=lambda t, where: seen.append((t.device, where)) or t * 2)
    assert seen == [(pg.device("cpu"), str(x.device))] and y.cpu().tolist() == [2.0, 2.0]


def test_cuda_tensors_need_map_location_without_cuda():
    # a pickle naming a CUDA device, made without one (what pg.save of a CUDA tensor writes)
    from paragrad.tensor import Tensor, _rebuild

    class SavedOnCuda:
        def __reduce__(self):
            return _rebuild, (Tensor, np.ones(2, np.float32), "float32", "cuda:0", False, None)
    buf = io.BytesIO(pickle.dumps(SavedOnCuda(), protocol=2))
    if pg.cuda.is_available():
        assert pg.load(buf).device == pg.device("cuda:0")
    else:
        with pytest.raises(RuntimeError, match="saved on cuda:0.*map_location='cpu'"):
            pg.load(buf)
    buf.seek(0)
    assert pg.load(buf, map_location="cpu").cpu().tolist() == [1.0, 1.0]


class _Custom:
    def __init__(self):
        self.value = 7


def test_weights_only_refuses_other_objects(tmp_path):
    path = tmp_path / "module.pt"
    pg.save({"module": pg.nn.Linear(2, 2), "custom": _Custom()}, path)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=True refuses paragrad.nn"):
        pg.load(path)
    everything = pg.load(path, weights_only=False)
    assert isinstance(everything["module"], pg.nn.Linear) and everything["custom"].value == 7


def test_plain_values_load_under_weights_only():
    obj = {"a": [1, 2.5, "x", None, True], "b": (3, {4, 5}), "c": slice(1, 3), "d": b"raw",
           "e": 1 + 2j, "dtype": pg.float16}
    assert _roundtrip(obj) == obj


def test_bad_arguments():
    with pytest.raises(TypeError, match="save: expected a path or a writable"):
        pg.save(pg.ones(1), 3)
    with pytest.raises(TypeError, match="load: expected a path or a readable"):
        pg.load(3)
    check_raises(lambda L: L.load("/nonexistent/dir/ckpt.pt"), error=FileNotFoundError)


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
@pytest.mark.parametrize("weights_only", [True, False])
def test_pytorch_file_is_named_with_how_to_convert(tmp_path, zip_format, weights_only):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), path, _use_new_zipfile_serialization=zip_format)
    fmt = "zip" if zip_format else "legacy"
    with pytest.raises(pickle.UnpicklingError, match=f"model.pt is a PyTorch file \\(torch.save's {fmt} "
                       "format\\).*safetensors.torch import save_file.*from paragrad.io.checkpoint import load_weights"):
        pg.load(path, weights_only=weights_only)


def test_pytorch_conversion_route_in_the_message_works(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    tm = torch.nn.Linear(3, 2)
    torch.save(tm.state_dict(), tmp_path / "model.pt")
    st.save_file(torch.load(tmp_path / "model.pt", map_location="cpu"), tmp_path / "model.safetensors")
    m = pg.nn.Linear(3, 2)
    from paragrad.io.checkpoint import load_weights
    weights, _ = load_weights(tmp_path / "model.safetensors")
    m.load_state_dict(weights)
    assert np.allclose(m.weight.detach().numpy(), tm.weight.detach().numpy())
    with pytest.raises(pickle.UnpicklingError, match="is a safetensors file.*paragrad.io.checkpoint import load_weights"):
        pg.load(tmp_path / "model.safetensors")


def test_zip_that_is_not_from_pytorch_is_malformed(tmp_path):
    import zipfile
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        z.writestr("readme.txt", "hi")
    with pytest.raises(pickle.UnpicklingError, match="malformed pickle|unsupported pickle opcode"):
        pg.load(tmp_path / "a.zip")


def test_failed_save_leaves_the_existing_file_as_it_was(tmp_path):
    path = tmp_path / "ckpt.pt"
    pg.save({"w": pg.ones(2)}, path)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pg.save({"w": pg.zeros(2), "f": lambda: 0}, path)
    assert pg.load(path)["w"].tolist() == [1.0, 1.0]
