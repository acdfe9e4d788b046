"""nn.utils.rnn's PackedSequence functions against torch's: pack_padded_sequence (batch_first,
enforce_sorted, trailing dims, lengths as a list or a tensor, steps past the longest),
pad_packed_sequence (padding_value, total_length, the caller's order), pack_sequence /
unpack_sequence, invert_permutation; data, batch sizes, indices and lengths, gradients both ways,
round trips, PackedSequence's tuple form and conversions, and the errors."""
import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import paragrad as pg
from paragrad.nn.utils import rnn as prnn
from tests.helpers import check_raises


def nn_rnn(lib):
    return trnn if lib is torch else prnn


def same(p, t, what=""):
    """A paragrad result equals torch's exactly (values and shape), or both are None."""
    assert (p is None) == (t is None), what
    if t is not None:
        assert tuple(p.shape) == tuple(t.shape), (what, tuple(p.shape), tuple(t.shape))
        np.testing.assert_array_equal(p.detach().cpu().numpy(), t.detach().numpy(), err_msg=what)


def same_packed(p, t):
    for name in ("data", "sorted_indices", "unsorted_indices"):
        same(getattr(p, name), getattr(t, name), name)
    assert p.batch_sizes.device.type == "cpu" and p.batch_sizes.dtype is pg.int64
    same(p.batch_sizes, t.batch_sizes, "batch_sizes")


def cotangent(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("trailing", [(), (2,), (2, 3)], ids=["no-trailing", "1-trailing", "2-trailing"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-first", "batch-first"])
@pytest.mark.parametrize("lengths", [[4, 4, 2, 1], [2, 4, 1, 4], [3, 3, 3, 3]], ids=["sorted", "unsorted", "equal"])
def test_pack_padded_sequence_matches_torch(device, trailing, batch_first, lengths):
    steps = 5                                           # one more than the longest: cut off
    shape = ((len(lengths), steps) if batch_first else (steps, len(lengths))) + trailing
    x = np.random.default_rng(0).standard_normal(shape)
    px = pg.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    enforce = lengths == sorted(lengths, reverse=True)
    for as_tensor in (False, True):
        lens = (lambda lib: lib.tensor(lengths)) if as_tensor else (lambda lib: lengths)
        p = prnn.pack_padded_sequence(px, lens(pg), batch_first=batch_first, enforce_sorted=enforce)
        t = trnn.pack_padded_sequence(tx, lens(torch), batch_first=batch_first, enforce_sorted=enforce)
        same_packed(p, t)
        assert type(p.data.grad_fn).__name__ == type(t.data.grad_fn).__name__ == "PackPaddedSequenceBackward0"
        g = cotangent(tuple(t.data.shape))
        p.data.backward(pg.tensor(g, device=device))
        t.data.backward(torch.tensor(g))
        same(px.grad, tx.grad, "input grad")
    if not enforce:     # the same lengths sorted by hand pack as torch's sort does
        p = prnn.pack_padded_sequence(px, lengths, batch_first=batch_first, enforce_sorted=False)
        order = np.argsort(-np.asarray(lengths), kind="stable")
        assert p.sorted_indices.tolist() == order.tolist()
        assert p.unsorted_indices.tolist() == np.argsort(order).tolist()


@pytest.mark.parametrize("batch_first", [False, True], ids=["time-first", "batch-first"])
@pytest.mark.parametrize("lengths", [[4, 2, 2, 1], [1, 4, 2, 3], [3, 3]], ids=["sorted", "unsorted", "equal"])
@pytest.mark.parametrize("total_length", [None, 6])
def test_pad_packed_sequence_matches_torch(device, batch_first, lengths, total_length):
    rng = np.random.default_rng(2)
    seqs = [rng.standard_normal((n, 2)) for n in lengths]
    enforce = lengths == sorted(lengths, reverse=True)
    packs = [nn_rnn(lib).pack_sequence([lib.tensor(s) for s in seqs], enforce_sorted=enforce) for lib in (pg, torch)]
    # the packed data as a leaf, to see the gradient come back to it
    pdata = pg.tensor(packs[0].data.numpy(), device=device, requires_grad=True)
    tdata = packs[1].data.detach().requires_grad_()
    to_dev = (lambda t: None if t is None else t.to(device))
    p_seq = prnn.PackedSequence(pdata, packs[0].batch_sizes, to_dev(packs[0].sorted_indices),
                                to_dev(packs[0].unsorted_indices))
    t_seq = trnn.PackedSequence(tdata, packs[1].batch_sizes, packs[1].sorted_indices, packs[1].unsorted_indices)
    p, p_len = prnn.pad_packed_sequence(p_seq, batch_first, padding_value=-7.5, total_length=total_length)
    t, t_len = trnn.pad_packed_sequence(t_seq, batch_first, padding_value=-7.5, total_length=total_length)
    same(p, t, "padded")
    same(p_len, t_len, "lengths")
    assert p_len.device.type == "cpu" and p_len.dtype is pg.int64
    assert type(p.grad_fn).__name__ == type(t.grad_fn).__name__
    g = cotangent(tuple(t.shape))
    p.backward(pg.tensor(g, device=device))
    t.backward(torch.tensor(g))
    same(pdata.grad, tdata.grad, "data grad")


def test_pad_then_pack_round_trip(device):
    """pad_packed_sequence inverts pack_padded_sequence (the padding zeroed), in the caller's order."""
    lengths = [2, 5, 3, 5, 1]
    x = np.random.default_rng(3).standard_normal((5, 5, 3))
    for batch_first in (False, True):
        packed = prnn.pack_padded_sequence(pg.tensor(x, device=device), lengths, batch_first, enforce_sorted=False)
        back, back_lengths = prnn.pad_packed_sequence(packed, batch_first)
        assert back_lengths.tolist() == lengths
        want = x.copy()
        for i, n in enumerate(lengths):
            (want[i, n:] if batch_first else want[n:, i])[...] = 0
        np.testing.assert_array_equal(back.cpu().numpy(), want)
        again = prnn.pack_padded_sequence(back, back_lengths, batch_first, enforce_sorted=False)
        np.testing.assert_array_equal(again.data.cpu().numpy(), packed.data.cpu().numpy())


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_unpack_sequence_match_torch(device, enforce_sorted):
    rng = np.random.default_rng(4)
    lengths = [4, 3, 3, 1] if enforce_sorted else [2, 4, 1, 3]
    seqs = [rng.standard_normal((n, 2, 2)) for n in lengths]
    ps = [pg.tensor(s, device=device, requires_grad=True) for s in seqs]
    ts = [torch.tensor(s, requires_grad=True) for s in seqs]
    p = prnn.pack_sequence(ps, enforce_sorted=enforce_sorted)
    t = trnn.pack_sequence(ts, enforce_sorted=enforce_sorted)
    same_packed(p, t)
    p_back, t_back = prnn.unpack_sequence(p), trnn.unpack_sequence(t)
    assert len(p_back) == len(t_back) == len(seqs)
    for a, b in zip(p_back, t_back):
        same(a, b, "unpacked")
    loss_p = sum((a * pg.tensor(cotangent(tuple(a.shape), i), device=device)).sum() for i, a in enumerate(p_back))
    loss_t = sum((b * torch.tensor(cotangent(tuple(b.shape), i))).sum() for i, b in enumerate(t_back))
    loss_p.backward()
    loss_t.backward()
    for a, b in zip(ps, ts):
        same(a.grad, b.grad, "sequence grad")


def test_invert_permutation_matches_torch(device):
    perm = [3, 0, 4, 1, 2]
    p = prnn.invert_permutation(pg.tensor(perm, device=device))
    assert p.device == pg.device(device) and p.dtype is pg.int64
    assert p.tolist() == trnn.invert_permutation(torch.tensor(perm)).tolist()
    assert prnn.invert_permutation(None) is None


def test_packed_sequence_is_torchs_named_tuple(device):
    x = pg.tensor(np.arange(12.0).reshape(4, 3), dtype=pg.float32, device=device)
    packed = prnn.pack_padded_sequence(x, [4, 2, 3], enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert data is packed.data and isinstance(packed, tuple) and len(packed) == 4
    assert packed._fields == trnn.PackedSequence._fields
    assert batch_sizes.tolist() == [3, 3, 2, 1] and sorted_indices.device == x.device
    # (data, batch_sizes, sorted_indices): unsorted_indices is worked out; the pair form too
    again = prnn.PackedSequence(data, batch_sizes, sorted_indices)
    assert again.unsorted_indices.tolist() == unsorted_indices.tolist() == [0, 2, 1]
    pair = prnn.PackedSequence((data, batch_sizes))
    assert pair.data is data and pair.sorted_indices is None and pair.unsorted_indices is None
    assert repr(pair).startswith("PackedSequence(data=tensor(")
    # conversions: data's dtype and device change, batch_sizes stays an int64 CPU tensor
    assert packed.float() is packed and packed.to(device) is packed
    as_double = packed.double()
    assert as_double.data.dtype is pg.float64 and as_double.batch_sizes is batch_sizes
    assert as_double.sorted_indices.tolist() == sorted_indices.tolist()
    assert packed.long().data.dtype is pg.int64 and packed.half().data.dtype is pg.float16
    on_cpu = packed.cpu()
    assert on_cpu.data.device.type == "cpu" and on_cpu.sorted_indices.device.type == "cpu"
    assert on_cpu.unsorted_indices.device.type == "cpu" and not on_cpu.is_cuda
    assert packed.is_cuda == (pg.device(device).type == "cuda")
    if pg.device(device).type != "cpu":
        moved = on_cpu.to(device)
        assert moved.data.device == x.device and moved.unsorted_indices.device == x.device
        with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
            prnn.PackedSequence(data, batch_sizes.to(device))


def test_errors(device):
    x = np.zeros((4, 3, 2))
    for lengths, enforce, match in (
            ([2, 3, 1], True, "must be sorted in decreasing order when `enforce_sorted` is True"),
            ([3, 2, 0], True, "Length of all samples has to be greater than 0"),
            ([0, 3, 2], False, "Length of all samples has to be greater than 0"),
            ([3, 2], True, r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)"),
            ([[3, 2, 1]], True, "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor")):
        check_raises(lambda lib, t: nn_rnn(lib).pack_padded_sequence(t, lengths, enforce_sorted=enforce), x,
                     match=match, device=device)
    check_raises(lambda lib, t: nn_rnn(lib).pack_padded_sequence(t, [0]), np.zeros((3, 0, 2)),
                 match="Cannot pack empty tensors", device=device)
    check_raises(lambda lib, t: nn_rnn(lib).pack_padded_sequence(t, [3]), np.zeros(4),
                 match="Dimension out of range", device=device)
    check_raises(lambda lib, t: nn_rnn(lib).pad_packed_sequence(nn_rnn(lib).pack_padded_sequence(t, [3, 2, 1]),
                                                                total_length=2),
                 x, match="Expected total_length to be at least the length of the longest sequence in input, "
                          "but got total_length=2 and max sequence length being 3", device=device)
    check_raises(lambda lib: nn_rnn(lib).pack_sequence([]), match="received an empty list of sequences")
    check_raises(lambda lib: nn_rnn(lib).PackedSequence(lib.ones(3)), error=AssertionError,
                 match="Expected data to be a list or tuple of length 2")
    # torch reads past the input here (undefined): paragrad refuses lengths over its steps
    with pytest.raises(RuntimeError, match="a length of 5 exceeds the input's 4 steps"):
        prnn.pack_padded_sequence(pg.zeros(4, 3, 2, device=device), [5, 2, 1])
    if pg.device(device).type != "cpu":     # lengths live on the CPU, as torch's
        with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor, but got 1D"):
            prnn.pack_padded_sequence(pg.zeros(4, 3, 2, device=device), pg.tensor([3, 2, 1], device=device))
