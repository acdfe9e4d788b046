"""The CUDA backend's 16-byte-access kernels (kernels/elementwise.cu: cast_vec, binary_vec,
binary_rows, copy_rows; kernels/row_views.py) give bit for bit what CuPy's element-by-element
kernels give, on the shapes they take (a GPT's autocast casts, bias adds, split pieces) and at
their edges (specials, misaligned views, sizes that are no whole pack, which take the old
path). Marked `gpu`."""
import numpy as np
import pytest

import paragrad as pg

pytestmark = pytest.mark.gpu

try:
    import cupy
except ImportError:     # the CPU-only install: every test here is `gpu` and deselected there
    cupy = None
BF16 = np.dtype(pg.bfloat16.np)


def _backend():
    return pg.ones(1, device="cuda")._backend


def _same_bits(x, y):
    """Equal bit for bit, except that a NaN need only be a NaN (its payload is the converter's)."""
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
    a, b = cupy.asnumpy(x), cupy.asnumpy(y)
    nan = np.isnan(a.astype(np.float32))
    assert (nan == np.isnan(b.astype(np.float32))).all()
    assert a[~nan].tobytes() == b[~nan].tobytes(), np.flatnonzero(a[~nan] != b[~nan])[:10]


def _specials(n, dtype=np.float32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(dtype) * 100
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.4e38, 65504.0, 65520.0,
                        1.00390625, 1.01171875, 6e-8, 1 + 2**-9], dtype)     # ties, subnormals, overflow
    x[:min(n, len(special))] = special[:n]
    return x


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
@pytest.mark.parametrize("n", [4096, 6, 4100])
def test_cast_between_float32_and_half_equals_cupys(half, n):
    from paragrad.backends.cuda.kernels import elementwise
    dt = BF16 if half == "bfloat16" else np.dtype(np.float16)
    b, target = _backend(), getattr(pg, half)
    x = cupy.asarray(_specials(n))
    y = b.cast(x, target)
    _same_bits(y, x.astype(dt))
    _same_bits(b.cast(y, pg.float32), y.astype(np.float32))
    assert (elementwise.cast(x, dt) is None) == (n % 4 != 0)      # whole packs take the wide kernel
    misaligned = x[1:4097] if n > 4097 else x[1:]
    _same_bits(b.cast(misaligned, target), misaligned.astype(dt))


def test_cast_of_a_channels_last_buffer_keeps_its_layout():
    """A channels-last conv weight cast under autocast (and its gradient cast back) goes through
    the wide kernel over its memory and stays channels-last."""
    from paragrad.memory_format import runs_channels_last
    b = _backend()
    x = cupy.asarray(_specials(8 * 16 * 3 * 3).reshape(8, 3, 3, 16)).transpose(0, 3, 1, 2)  # (8, 16, 3, 3)
    assert runs_channels_last(x)
    y = b.cast(x, pg.bfloat16)
    assert runs_channels_last(y)
    _same_bits(y, x.astype(BF16))
    back = b.cast(y, pg.float32)
    assert runs_channels_last(back)
    _same_bits(back, y.astype(np.float32))


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(16384, 384), (100, 24), (3, 1544), (2, 64, 40), (5, 12)])
def test_half_column_sums_are_float32_sums_rounded_once(half, shape):
    """A half buffer summed over its leading axes (a Linear's bias gradient under autocast): the
    exact sum rounded once, within the float32 accumulation's error (one unit in the last place
    of the half type at most); c not a multiple of 8 takes the product with a ones vector."""
    dt = BF16 if half == "bfloat16" else np.dtype(np.float16)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32).astype(dt)
    got = _backend().reduce("sum", cupy.asarray(x), tuple(range(len(shape) - 1)), False)
    exact = x.astype(np.float64).reshape(-1, shape[-1]).sum(0)
    assert got.dtype == dt and got.shape == shape[-1:]
    ulp = np.abs(exact).astype(dt).astype(np.float64) * (2.0 ** -7 if half == "bfloat16" else 2.0 ** -10)
    assert (np.abs(cupy.asnumpy(got).astype(np.float64) - exact) <= ulp + 1e-6).all()


@pytest.mark.parametrize("shape", [(16384, 384), (100, 24), (3, 1544), (2, 64, 40), (5, 12), (7, 3), (1, 8)])
def test_float32_column_sums_match_float64(shape):
    """A float32 buffer summed over its leading axes (a Linear's bias gradient): column_sums.cu
    (c a multiple of 4) or CuPy's reduction (c = 3), within float32 accumulation error."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = _backend().reduce("sum", cupy.asarray(x), tuple(range(len(shape) - 1)), False)
    x2 = x.astype(np.float64).reshape(-1, shape[-1])
    assert got.dtype == np.float32 and got.shape == shape[-1:]
    np.testing.assert_allclose(cupy.asnumpy(got), x2.sum(0), rtol=0, atol=1e-5 * np.abs(x2).sum(0).max())
    kept = _backend().reduce("sum", cupy.asarray(x), tuple(range(len(shape) - 1)), True)
    assert kept.shape == (1,) * (len(shape) - 1) + shape[-1:]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_half_binary_in_packs_equals_float32_math_rounded_once(op, half):
    dt = BF16 if half == "bfloat16" else np.dtype(np.float16)
    rng = np.random.default_rng(1)
    a = cupy.asarray(rng.standard_normal((64, 24)).astype(dt))
    bias = cupy.asarray(rng.standard_normal(24).astype(dt))
    one = cupy.asarray(np.array([1.5], dt))
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    for x, y in ((a, a[::-1].copy()), (a, bias), (bias, a), (a, one), (one, a),
                 (a[:, :20].copy(), a[:, 4:].copy()), (a.reshape(-1)[3:1531], a.reshape(-1)[1:1529])):
        want = f(cupy.asnumpy(x).astype(np.float32), cupy.asnumpy(y).astype(np.float32)).astype(dt)
        got = _backend().binary(op, x, y)
        assert cupy.asnumpy(got).tobytes() == want.tobytes(), (op, x.shape, y.shape)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int64"])
def test_slices_copy_and_add_in_place_through_row_views(dtype):
    from paragrad.backends.cuda.kernels.row_views import row_view
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(2)
    whole = cupy.asarray((rng.standard_normal((4, 8, 48)) * 10).astype(dt))   # (B, T, 3C)
    piece = cupy.asarray((rng.standard_normal((4, 8, 16)) * 10).astype(dt))
    b = _backend()
    for start in (0, 16, 32, 3):
        view = whole[..., start:start + 16]
        assert row_view(view) == (32, 16, 48)
        ref = cupy.asnumpy(whole).copy()
        b.copy_(view, piece)
        ref[..., start:start + 16] = cupy.asnumpy(piece)
        assert cupy.asnumpy(whole).tobytes() == ref.tobytes()
        if dtype != "int64":
            b.binary("add", view, piece, out=view)      # the engine's add_into
            ref[..., start:start + 16] = (ref[..., start:start + 16].astype(np.float64) +
                                          cupy.asnumpy(piece).astype(np.float64)).astype(dt)
            assert cupy.asnumpy(whole).tobytes() == ref.tobytes()
        c = b.contiguous(view)
        assert c.flags.c_contiguous and cupy.asnumpy(c).tobytes() == ref[..., start:start + 16].tobytes()


def test_row_views_refuse_what_they_cannot_take():
    from paragrad.backends.cuda.kernels.row_views import copy_rows, row_view
    x = cupy.arange(24, dtype=cupy.float32).reshape(2, 3, 4)
    assert row_view(x) == (6, 4, 4)
    assert row_view(x.transpose(0, 2, 1)) is None          # last dim strided
    assert row_view(x[:, ::2]) is None                     # every other row: no one stride
    assert row_view(x[:, 1:]) is None                      # leading dims no longer one stride
    assert row_view(cupy.broadcast_to(x[:1], (2, 3, 4))) is None
    assert row_view(x[:, :1, :]) == (2, 4, 12)
    y = cupy.arange(20, dtype=cupy.float32).reshape(2, 10)
    assert not copy_rows(y[:, 1:9], y[:, 0:8])             # overlapping: left to CuPy
    assert cupy.asnumpy(y).tolist() == np.arange(20).reshape(2, 10).tolist()   # untouched


def test_split_pieces_gradient_through_the_row_kernels_matches_cpu():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((2, 5, 24)).astype(np.float32)
    grads = []
    for device in ("cpu", "cuda"):
        x = pg.tensor(data, device=device, requires_grad=True)
        q, k, v = x.to(pg.bfloat16).split(8, dim=2)       # bf16 views of rows, gradients too
        loss = (q.float() * 1 + k.float() * 2 + v.float() * 3).sum()
        loss.backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_gelu_and_dropout_in_packs_equal_one_element_a_thread(half):
    F = pg.nn.functional
    dt = getattr(pg, half)
    x = pg.tensor(np.random.default_rng(4).standard_normal(1024).astype(np.float32), device="cuda").to(dt)
    g = pg.ones(1024, device="cuda", dtype=dt) * 0.5
    # 1024 elements go 8 a thread; 1023, or one element off the aligned start, one a thread
    for approximate in ("none", "tanh"):
        whole = F.gelu(x, approximate=approximate)
        assert whole[:1023].cpu().numpy().tobytes() == F.gelu(x[:1023], approximate=approximate).cpu().numpy().tobytes()
        assert whole[1:].cpu().numpy().tobytes() == F.gelu(x[1:], approximate=approximate).cpu().numpy().tobytes()
    pg.manual_seed(5)
    whole = F.dropout(x, 0.3)
    pg.manual_seed(5)
    short = F.dropout(x[:1023], 0.3)        # element i draws the same number in both
    assert whole[:1023].cpu().numpy().tobytes() == short.cpu().numpy().tobytes()
    xs = [x.detach().clone().requires_grad_(), x[:1023].detach().clone().requires_grad_()]
    grads = []
    for t in xs:
        pg.manual_seed(6)
        F.dropout(t, 0.3).backward(g[:t.shape[0]])
        grads.append(t.grad.cpu().numpy())
    assert grads[0][:1023].tobytes() == grads[1].tobytes()


@pytest.mark.parametrize("rows,cols,affine", [(37, 3, "wb"), (37, 31, "wb"), (37, 33, "wb"), (37, 384, "wb"),
                                              (37, 1024, "wb"), (37, 1025, "wb"), (5000, 384, "wb"),
                                              (5000, 384, "w"), (5000, 96, "")])
def test_layer_norm_rows_of_any_width_match_torch(rows, cols, affine):
    """Up to 1024 columns a warp holds a row (ln_*_warp) and its backward sums the weight and bias
    gradients on the way (5000 rows: each warp strides over several); wider rows take a block
    each. Against torch in float64: on narrow rows x - mean cancels, and float32 torch is off by
    as much as paragrad (2e-5 at 2 columns, seen on H200)."""
    import torch
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    g = rng.standard_normal((rows, cols)).astype(np.float32)
    out = []
    for lib, dev, dtype in ((pg, "cuda", pg.float32), (torch, "cpu", torch.float64)):
        xs = [lib.tensor(a, device=dev, dtype=dtype, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.layer_norm(xs[0], (cols,), xs[1] if "w" in affine else None,
                                         xs[2] if "b" in affine else None, 1e-5)
        y.backward(lib.tensor(g, device=dev, dtype=dtype))
        grads = [v.grad for v, used in zip(xs, (True, "w" in affine, "b" in affine)) if used]
        out.append([t.detach().cpu().numpy() for t in (y, *grads)])
    for i, (mine, theirs) in enumerate(zip(*out)):
        # y and dx, then the parameter gradients: sums of `rows` terms, their error grows with it
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=5e-5 * (1 if i < 2 else max(1, rows / 100)))


def test_bf16_linear_adds_its_bias_inside_the_gemm():
    """The bias epilogue rounds once (product plus bias in float32), the composition twice; both
    stay within bf16 rounding of the float32 result, and the gradients are the composition's."""
    from paragrad.backends.base import fast_paths
    rng = np.random.default_rng(8)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 16, 64), (96, 64), (96,)))
    want = x @ w.T + b
    results = []
    for fast in (True, False):
        ts = [pg.tensor(a, device="cuda", dtype=pg.bfloat16, requires_grad=True) for a in (x, w, b)]
        with fast_paths(fast):
            y = pg.nn.functional.linear(*ts)
            y.float().sum().backward()
        assert y.shape == (4, 16, 96) and y.dtype is pg.bfloat16
        results.append([y.detach().float().cpu().numpy()] + [t.grad.float().cpu().numpy() for t in ts])
    for got in results:
        np.testing.assert_allclose(got[0], want, rtol=3e-2, atol=0.3)
    for a, c in zip(results[0][1:], results[1][1:]):
        np.testing.assert_array_equal(a, c)
