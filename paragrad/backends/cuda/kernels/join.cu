// Contiguous pieces joined end to end (cat/stack along the first axis) by one launch that
// takes the pieces' addresses by value, in the kernel's parameters: no table uploaded from the
// host (CuPy's concatenate uploads one, which also a graph capture forbids).
#define JOIN_PIECES 64

template <typename T>
struct Pieces {
    const T* ptr[JOIN_PIECES];
    long long end[JOIN_PIECES];     // where each piece ends in the output, in elements (cumulative)
};

template <typename T>
__global__ void join_pieces(const Pieces<T> pieces, T* out, long long total) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        int k = 0;
        while (pieces.end[k] <= i) ++k;     // (a short scan of at most JOIN_PIECES ends)
        out[i] = pieces.ptr[k][i - (k ? pieces.end[k - 1] : 0)];
    }
}
