"""The multi-tensor kernels' work list (backends/cuda/kernels/chunk_list.py), on the CPU: the
same chunks, in the same order, as cutting each tensor by hand."""
import numpy as np
import pytest

from paragrad.backends.cuda.kernels.chunk_list import chunk_list


def _by_hand(sizes, chunk):
    pairs = [(i, s) for i, n in enumerate(sizes) for s in range(0, n, chunk)]
    return [i for i, _ in pairs], [s for _, s in pairs]


@pytest.mark.parametrize("sizes", [[1], [4096], [4097, 0, 3, 8192, 1_600_000], [0, 0], []])
def test_the_chunks_are_each_tensors_cut_in_order(sizes):
    tensor, start = chunk_list(sizes, 4096)
    want_tensor, want_start = _by_hand(sizes, 4096)
    assert tensor.dtype == np.int32 and start.dtype == np.int64
    assert tensor.tolist() == want_tensor and start.tolist() == want_start


def test_random_sizes_and_chunk_lengths():
    rng = np.random.default_rng(0)
    for _ in range(50):
        sizes = rng.integers(0, 20_000, rng.integers(1, 40)).tolist()
        chunk = int(rng.integers(1, 5000))
        tensor, start = chunk_list(sizes, chunk)
        assert (tensor.tolist(), start.tolist()) == _by_hand(sizes, chunk)
