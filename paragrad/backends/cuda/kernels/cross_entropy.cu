// Cross-entropy forward and backward over the rows of (N, C) logits: one block per row.
// T is float or double; accumulation is in the same type (float32 rows are short enough).

#include "block_reduce.cuh"

template <typename T> __device__ __forceinline__ T qnan();
template <> __device__ __forceinline__ float qnan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double qnan<double>() { return __longlong_as_double(0x7ff8000000000000ULL); }

// Cross-entropy forward in one launch. Block r computes row r's logsumexp and its loss
// (lse - x[target]) * valid into rows[r], its valid flag into rows[n + r]. The last block to
// finish (a ticket counter, reset by that block for the next launch) sums both halves in a
// fixed order, so the result is deterministic, and writes out = [loss (mean: sum / count), count].
// An out-of-range target gives NaN (the host checks bounds when it is not capturing a graph).
template <typename T> __device__ void xent_fwd(const T* x, const long long* target, T* rows, T* lse_out,
                                               T* out, unsigned int* ticket, long long cols,
                                               long long ignore_index, int mean) {
    __shared__ T shm[32];
    __shared__ bool last;
    const T* xr = x + blockIdx.x * cols;
    T m = neg_inf<T>();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = max(m, xr[j]);
    m = block_max(m, shm);
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += exp(xr[j] - m);
    s = block_sum(s, shm);
    if (threadIdx.x == 0) {
        T lse = m + ::log(s);
        long long t = target[blockIdx.x];
        lse_out[blockIdx.x] = lse;
        bool ignored = t == ignore_index;
        bool bad = !ignored && (t < 0 || t >= cols);
        rows[blockIdx.x] = ignored ? T(0) : (bad ? qnan<T>() : lse - xr[t]);
        rows[gridDim.x + blockIdx.x] = ignored ? T(0) : T(1);
        __threadfence();                    // the row is visible before the ticket says so
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const volatile T* vr = rows;
    T total = T(0), count = T(0);
    for (long long i = threadIdx.x; i < gridDim.x; i += blockDim.x) {
        total += vr[i];
        count += vr[gridDim.x + i];
    }
    total = block_sum(total, shm);
    count = block_sum(count, shm);
    if (threadIdx.x == 0) {
        out[0] = mean ? total / count : total;
        out[1] = count;
        *ticket = 0u;
    }
}

// dx = (softmax(x) - onehot(target)) * valid * k, k = g / max(count, 1) for a mean, else g
template <typename T> __device__ void xent_bwd(const T* x, const long long* target, const T* lse,
                                               const T* g, const T* count, T* dx, long long cols,
                                               long long ignore_index, int mean) {
    const T* xr = x + blockIdx.x * cols;
    T* dr = dx + blockIdx.x * cols;
    long long t = target[blockIdx.x];
    T scale = mean ? g[0] / max(count[0], T(1)) : g[0];
    T k = t == ignore_index ? T(0) : ((t < 0 || t >= cols) ? qnan<T>() : scale);
    T l = lse[blockIdx.x];
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dr[j] = (exp(xr[j] - l) - (j == t ? T(1) : T(0))) * k;
}

#define CROSS_ENTROPY(T, S) \
extern "C" __global__ void xent_fwd_##S(const T* x, const long long* t, T* rows, T* lse, T* out, unsigned int* ticket, long long cols, long long ig, int mean) { xent_fwd<T>(x, t, rows, lse, out, ticket, cols, ig, mean); } \
extern "C" __global__ void xent_bwd_##S(const T* x, const long long* t, const T* lse, const T* g, const T* count, T* dx, long long cols, long long ig, int mean) { xent_bwd<T>(x, t, lse, g, count, dx, cols, ig, mean); }

CROSS_ENTROPY(float, f32)
CROSS_ENTROPY(double, f64)
