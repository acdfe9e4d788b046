// Column sums of a C-contiguous (n, c) float32 or half-type matrix in float32, rounded once to
// its type: a Linear layer's bias gradient. A product with a ones vector ran as a split-K GEMV
// of 64x8 tiles and a separate reduce (0.36 ms of a GPT step for 680 MB: a third of the memory
// bandwidth; CuPy's reduction of float32 (n, c) took 0.36 ms a sum of a GPT's 16384 x 384). Here
// blocks of (32, 8) threads take a strip of 32 V columns, V a thread through one 16-byte access, over a chunk of the rows (threadIdx.y strides them), add their 8 row
// strides in order through shared memory and write one float32 partial per (chunk, column);
// column_sums_finish adds each column's partials in a fixed order. Deterministic, no atomics.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "pack.cuh"

template <typename T, int V>
__device__ void column_partials(const T* x, float* partial, long long n, long long c, long long chunk) {
    __shared__ float sh[8][32 * V];
    const long long col = (blockIdx.x * 32LL + threadIdx.x) * V;
    const long long lo = blockIdx.y * chunk, hi = min(lo + chunk, n);
    float s[V];
    for (int k = 0; k < V; k++) s[k] = 0.0f;
    if (col < c)
        for (long long r = lo + threadIdx.y; r < hi; r += 8) {
            Pack<T, V> v = load<T, V>(x + r * c + col);
            for (int k = 0; k < V; k++) s[k] += (float)v.v[k];
        }
    for (int k = 0; k < V; k++) sh[threadIdx.y][threadIdx.x * V + k] = s[k];
    __syncthreads();
    for (int j = threadIdx.y * 32 + threadIdx.x; j < 32 * V; j += 256) {
        const long long cj = blockIdx.x * 32LL * V + j;
        if (cj >= c) continue;
        float t = 0.0f;
        for (int y = 0; y < 8; y++) t += sh[y][j];
        partial[blockIdx.y * c + cj] = t;
    }
}

// Blocks of (32, 8) threads over 32 columns: threadIdx.y adds chunks y, y + 8, ..., then the 8
// sums of a column in order (one thread a column adding hundreds of chunks in a row left too
// few threads in flight: it took longer than the partials)
template <typename T>
__device__ void column_sums_finish(const float* partial, T* out, long long c, long long chunks) {
    __shared__ float sh[8][32];
    const long long j = blockIdx.x * 32LL + threadIdx.x;
    float t = 0.0f;
    if (j < c)
        for (long long k = threadIdx.y; k < chunks; k += 8) t += partial[k * c + j];
    sh[threadIdx.y][threadIdx.x] = t;
    __syncthreads();
    if (threadIdx.y || j >= c) return;
    t = 0.0f;
    for (int y = 0; y < 8; y++) t += sh[y][threadIdx.x];
    out[j] = (T)t;
}

#define COLUMN_SUMS(T, S, V) \
extern "C" __global__ void column_partials_##S(const T* x, float* partial, long long n, long long c, long long chunk) { \
    column_partials<T, V>(x, partial, n, c, chunk); } \
extern "C" __global__ void column_sums_finish_##S(const float* partial, T* out, long long c, long long chunks) { \
    column_sums_finish<T>(partial, out, c, chunks); }

COLUMN_SUMS(float, f32, 4)
COLUMN_SUMS(__half, f16, 8)
COLUMN_SUMS(__nv_bfloat16, bf16, 8)
