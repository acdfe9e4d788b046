"""The CUDA backend's fused kernels, one .py + .cu pair per concept (the .py launches what the .cu
defines, through runtime/compile.py): softmax, cross_entropy, layer_norm, batch_norm, optimizer
(multi-tensor Adam/SGD; chunk_list.py is its work list), recurrent (LSTM/GRU/RNN gates),
elementwise (raw launches of the commonest ufunc shapes and casts, 16 bytes an access for the
half types), row_views (copies and binary ops on slices of a last dim, and c_contiguous),
indexing (row gathers, scatter-adds, roll), random; max_pool (CuPy elementwise kernels, no .cu).
rows.py holds what the row-wise kernels share, and block_reduce.cuh the block-wide sum and max
every reducing kernel includes."""
