"""memory_format of new tensors against torch: empty(..., memory_format=), and the *_like
functions, whose default preserve_format keeps a channels-last (or any dense) input's layout;
tensors without elements get torch's strides, not NumPy's zeros; bad formats raise as torch."""
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises

SHAPES = [(2, 3, 4, 5), (2, 3, 0, 5), (0, 3, 4, 5), (2, 0, 4, 5), (1, 3, 1, 1), (2, 1, 4, 5)]
LIKE = {
    "empty_like": lambda L, x, **kw: L.empty_like(x, **kw),
    "zeros_like": lambda L, x, **kw: L.zeros_like(x, **kw),
    "ones_like": lambda L, x, **kw: L.ones_like(x, **kw),
    "full_like": lambda L, x, **kw: L.full_like(x, 2.5, **kw),
    "rand_like": lambda L, x, **kw: L.rand_like(x, **kw),
    "randn_like": lambda L, x, **kw: L.randn_like(x, **kw),
    "randint_like": lambda L, x, **kw: L.randint_like(x, 7, **kw),
}


def _same(make):
    t, p = make(torch), make(pg)
    assert p.stride() == t.stride(), (p.stride(), t.stride())
    assert tuple(p.shape) == tuple(t.shape)
    return t, p


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", ["contiguous_format", "channels_last"])
def test_empty_memory_format_strides(shape, fmt):
    _same(lambda L: L.empty(*shape, memory_format=getattr(L, fmt)))
    _same(lambda L: L.empty(shape, memory_format=getattr(L, fmt)))


def test_empty_channels_last_3d():
    _, p = _same(lambda L: L.empty(2, 3, 4, 5, 6, memory_format=L.channels_last_3d))
    assert p.is_contiguous(memory_format=pg.channels_last_3d)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(LIKE))
def test_like_preserves_channels_last(name, shape):
    fn = LIKE[name]
    _same(lambda L: fn(L, L.empty(*shape, memory_format=L.channels_last)))
    _same(lambda L: fn(L, L.empty(*shape)))
    _same(lambda L: fn(L, L.empty(*shape, memory_format=L.channels_last),
                       memory_format=L.contiguous_format))
    _same(lambda L: fn(L, L.empty(*shape), memory_format=L.channels_last))


@pytest.mark.parametrize("name", sorted(LIKE))
def test_like_keeps_a_dense_permutation_and_suggests_for_the_rest(name):
    fn = LIKE[name]
    _same(lambda L: fn(L, L.zeros(2, 3, 4, 5).permute(0, 2, 1, 3)))                 # dense
    _same(lambda L: fn(L, L.zeros(2, 3, 4, 5).to(memory_format=L.channels_last)[:, :, ::2]))
    _same(lambda L: fn(L, L.zeros(2, 3, 4, 5)[:, :, ::2]))
    _same(lambda L: fn(L, L.zeros(2, 3, 4, 5, 6).to(memory_format=L.channels_last_3d)))


def test_like_values_dtype_and_grad():
    x = pg.randn(2, 3, 4, 5).to(memory_format=pg.channels_last)
    assert pg.zeros_like(x).sum().item() == 0.0
    assert pg.full_like(x, 2.0).sum().item() == 240.0
    assert pg.ones_like(x, dtype=pg.float16).dtype is pg.float16
    r = pg.rand_like(x, requires_grad=True)
    assert r.requires_grad and r.is_leaf and r.is_contiguous(memory_format=pg.channels_last)
    v = r.detach().numpy()
    assert 0.0 <= v.min() and v.max() < 1.0
    assert pg.randint_like(x, 7).max().item() < 7


def test_bad_memory_formats_raise_as_torch():
    check_raises(lambda L: L.empty(2, 3, memory_format=L.channels_last), error=RuntimeError,
                 match="required rank 4")
    check_raises(lambda L: L.empty(2, 3, 4, 5, memory_format=L.preserve_format),
                 error=RuntimeError, match="Preserve")
    check_raises(lambda L: L.empty(2, 3, 4, 5, memory_format="channels_last"), error=TypeError,
                 match="memory_format")
    check_raises(lambda L, x: L.empty_like(x, memory_format=L.channels_last), [[1.0, 2.0]],
                 error=RuntimeError, match="required rank 4")
    check_raises(lambda L, x: L.zeros_like(x, memory_format=3), [[1.0, 2.0]], error=TypeError)
