// Row gathers and scatter-adds for the embedding (and any take along axis 0 of a contiguous
// matrix): one launch each, where CuPy's take and scatter_add spend most of their host time
// normalizing indices and building coordinate arrays.
//
// Rows are copied as words of W bytes (the element size: 1, 2, 4 or 8), so one instantiation
// serves every dtype of that size. The op layer checks indices where it can read them; an
// index it could not check (inside a graph capture) wraps modulo V, as CuPy's take does,
// so no launch reads or writes outside its buffers.

__device__ __forceinline__ long long wrap(long long j, long long v) {
    return j >= 0 && j < v ? j : ((j % v) + v) % v;
}

// out[k, :] = x[idx[k], :] for a (V, D) matrix x and K indices
template <typename W>
__global__ void gather_rows(const W* x, const long long* idx, W* out, long long k, long long d, long long v) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < k * d;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / d;
        out[i] = x[wrap(idx[r], v) * d + (i - r * d)];
    }
}

// dw[idx[k], :] += g[k, :] for K rows of g (K, D) into a zeroed dw (V, D). The atomic adds make
// the order of a row's additions (and so the last bits of a float sum) vary between runs, as
// CuPy's scatter_add did.
template <typename T>
__global__ void scatter_add_rows(const long long* idx, const T* g, T* dw, long long k, long long d, long long v) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < k * d;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / d;
        atomicAdd(dw + wrap(idx[r], v) * d + (i - r * d), g[i]);
    }
}

// torch.roll along one axis: x viewed as (outer, n, inner), element j of the axis moves to
// (j + s) % n, for 0 <= s < n
template <typename W>
__global__ void roll(const W* x, W* out, long long total, long long n, long long inner, long long s) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long in = i % inner, jo = i / inner;
        long long j = jo % n, o = jo / n;
        long long t = j + s;
        out[(o * n + (t < n ? t : t - n)) * inner + in] = x[i];
    }
}
