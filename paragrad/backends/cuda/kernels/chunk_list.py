"""The work list of the multi-tensor kernels (optimizer.cu): every tensor cut into chunks of
CHUNK elements, one block a chunk, each chunk named by its tensor and its first element. NumPy
only: worked out on the host once per set of gradient addresses, which in eager code is every
step (a new .grad each backward), so it is built by array ops, not a Python loop over chunks
(a 1.6M-element embedding alone is 400 chunks)."""
from __future__ import annotations

import numpy as np

# must equal CHUNK in optimizer.cu: 16 elements a thread (2048: Adam ~2 us slower on 1.9M parameters)
CHUNK = 4096


def chunk_list(sizes, chunk=CHUNK):
    """-> (tensor index of each chunk, int32; its first element, int64), tensor by tensor in
    order; an empty tensor has no chunk."""
    sizes = np.asarray(sizes, dtype=np.int64)
    counts = (sizes + chunk - 1) // chunk                                  # (T,) chunks per tensor
    tensor = np.repeat(np.arange(len(sizes), dtype=np.int32), counts)      # (C,)
    first_chunk = np.cumsum(counts) - counts                               # (T,) its first chunk's index
    start = (np.arange(len(tensor), dtype=np.int64) - np.repeat(first_chunk, counts)) * chunk
    return tensor, start
