// Cross-entropy forward and backward over the rows of (N, C) logits: one block per row.
// T is float or double; accumulation is in the same type (float32 rows are short enough).
// X, the logits' type, is T or a half type read into float (the values a cast to float32
// would give: autocast's float32 cross-entropy of bf16 logits without the cast's pass).

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "block_reduce.cuh"
#include "last_block.cuh"

__device__ __forceinline__ float to_compute(float x) { return x; }
__device__ __forceinline__ double to_compute(double x) { return x; }
__device__ __forceinline__ float to_compute(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_compute(__half x) { return __half2float(x); }
template <typename X> __device__ __forceinline__ X from_compute(float x);
template <> __device__ __forceinline__ float from_compute(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_compute(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_compute(float x) { return __float2half_rn(x); }
template <typename X> __device__ __forceinline__ X from_compute(double x) { return x; }

template <typename T> __device__ __forceinline__ T qnan();
template <> __device__ __forceinline__ float qnan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double qnan<double>() { return __longlong_as_double(0x7ff8000000000000ULL); }

// Cross-entropy forward in one launch. Block r computes row r's logsumexp and its loss
// (lse - x[target]) * valid into rows[r], its valid flag into rows[n + r]. The last block to
// finish (arrived_last) sums both halves in a fixed order, so the result is deterministic, and
// writes out = [loss (mean: sum / count), count].
// An out-of-range target gives NaN (the host checks bounds when it is not capturing a graph).
template <typename T, typename X> __device__ void xent_fwd(const X* x, const long long* target, T* rows, T* lse_out,
                                               T* out, unsigned int* ticket, long long cols,
                                               long long ignore_index, int mean) {
    __shared__ T shm[32];
    const X* xr = x + blockIdx.x * cols;
    T m = neg_inf<T>();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = max(m, to_compute(xr[j]));
    m = block_max(m, shm);
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += exp(to_compute(xr[j]) - m);
    s = block_sum(s, shm);
    if (threadIdx.x == 0) {
        T lse = m + ::log(s);
        long long t = target[blockIdx.x];
        lse_out[blockIdx.x] = lse;
        bool ignored = t == ignore_index;
        bool bad = !ignored && (t < 0 || t >= cols);
        rows[blockIdx.x] = ignored ? T(0) : (bad ? qnan<T>() : lse - to_compute(xr[t]));
        rows[gridDim.x + blockIdx.x] = ignored ? T(0) : T(1);
    }
    if (!arrived_last(ticket, gridDim.x)) return;
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
    }
}

// dx = (softmax(x) - onehot(target)) * valid * k, k = g / max(count, 1) for a mean, else g
// (dx in the logits' type X, rounded once)
template <typename T, typename X> __device__ void xent_bwd(const X* x, const long long* target, const T* lse,
                                                           const T* g, const T* count, X* dx, long long cols,
                                                           long long ignore_index, int mean) {
    const X* xr = x + blockIdx.x * cols;
    X* dr = dx + blockIdx.x * cols;
    long long t = target[blockIdx.x];
    T scale = mean ? g[0] / max(count[0], T(1)) : g[0];
    T k = t == ignore_index ? T(0) : ((t < 0 || t >= cols) ? qnan<T>() : scale);
    T l = lse[blockIdx.x];
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dr[j] = from_compute<X>((exp(to_compute(xr[j]) - l) - (j == t ? T(1) : T(0))) * k);
}

#define CROSS_ENTROPY(T, X, S) \
extern "C" __global__ void xent_fwd_##S(const X* x, const long long* t, T* rows, T* lse, T* out, unsigned int* ticket, long long cols, long long ig, int mean) { xent_fwd<T, X>(x, t, rows, lse, out, ticket, cols, ig, mean); } \
extern "C" __global__ void xent_bwd_##S(const X* x, const long long* t, const T* lse, const T* g, const T* count, X* dx, long long cols, long long ig, int mean) { xent_bwd<T, X>(x, t, lse, g, count, dx, cols, ig, mean); }

CROSS_ENTROPY(float, float, f32)
CROSS_ENTROPY(double, double, f64)
CROSS_ENTROPY(float, __nv_bfloat16, bf16)
CROSS_ENTROPY(float, __half, f16)
