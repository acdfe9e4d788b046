// softmax / log_softmax forward and backward along the rows of a (rows, cols) contiguous
// matrix: one block per row.
// T is float or double; accumulation is in the same type (float32 rows are short enough).

#include "block_reduce.cuh"

// y = softmax(x) or log_softmax(x) along each row
template <typename T> __device__ void softmax_fwd(const T* x, T* y, long long cols, int log) {
    __shared__ T shm[32];
    const T* xr = x + blockIdx.x * cols;
    T* yr = y + blockIdx.x * cols;
    T m = neg_inf<T>();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = max(m, xr[j]);
    m = block_max(m, shm);
    if (m == neg_inf<T>()) m = T(0);       // a row of -inf: exp(-inf - 0) = 0, as the composite
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += exp(xr[j] - m);
    s = block_sum(s, shm);
    if (log) {
        T lse = m + ::log(s);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - lse;
    } else {
        T inv = T(1) / s;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = exp(xr[j] - m) * inv;
    }
}

// dx = y * (g - sum(g * y))  (softmax)   or   dx = g - exp(y) * sum(g)  (log_softmax)
template <typename T> __device__ void softmax_bwd(const T* y, const T* g, T* dx, long long cols, int log) {
    __shared__ T shm[32];
    const T* yr = y + blockIdx.x * cols;
    const T* gr = g + blockIdx.x * cols;
    T* dr = dx + blockIdx.x * cols;
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += log ? gr[j] : gr[j] * yr[j];
    s = block_sum(s, shm);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dr[j] = log ? gr[j] - exp(yr[j]) * s : yr[j] * (gr[j] - s);
}

#define SOFTMAX(T, S) \
extern "C" __global__ void softmax_fwd_##S(const T* x, T* y, long long cols, int log) { softmax_fwd<T>(x, y, cols, log); } \
extern "C" __global__ void softmax_bwd_##S(const T* y, const T* g, T* dx, long long cols, int log) { softmax_bwd<T>(y, g, dx, cols, log); }

SOFTMAX(float, f32)
SOFTMAX(double, f64)
