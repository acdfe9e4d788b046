"""The CUDA device's plumbing: memory.py (the memory pool), graphs.py (CUDA graph capture and
replay for pg.jit), timing.py (GPU time of a few calls, for autotuning), machine_cache.py
(what one process learns about this GPU for the next), multiprocessors.py (the SM count grids
are sized by) and compile.py (the NVRTC loader and launcher every .cu file goes through)."""
