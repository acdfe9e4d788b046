// The GEMMs of a narrow layer: at most NMAX outputs (a classifier head of 10 classes) over a
// batch of at most 64 rows, T float, bfloat16 or half, accumulated in float.
//   narrow_fwd: y[m, n] = sum_k x[m, k] w[n, k] + b[n]                       one block a row
//   narrow_dx:  dx[m, k] = sum_n dz[m, n] w[n, k], 0 where relu_y[m, k] <= 0  one thread V columns
//   narrow_dw:  dw[n, k] = sum_m dz[m, n] x[m, k], db[n] = sum_m dz[m, n]     one block 64 columns
// Why not cuBLASLt: its fast kernels need rows of 16-byte multiples; 10 bf16 outputs make rows
// of 20 bytes, so for (64, 784) x (784, 10) it offers only align-2 kernels and split-K
// reductions: 5 us for the forward, 7 for the data gradient, 12 for the weight gradient, each
// about one MFLOP. Every sum runs in a fixed order: the results don't depend on timing.
// narrow.py checks the shapes and that x's and w's rows are whole V-element packs.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "pack.cuh"

// NMAX: outputs at most (narrow.py's MAX_OUT). The half types convert to and from float as their
// constructors do: round to nearest even.
#define NMAX 16

// These GEMMs are latency-bound (one MFLOP, a few microseconds): each thread issues all its
// loads before it uses any, so a block waits for memory once, not once a loop iteration
// (loads inside a loop of unknown trip count were issued one iteration at a time: 13 us).

// grid m, block 256: block r computes row r. Thread t sums packs t, t + 256, ... of K for every
// output; the block then adds the threads' sums (warps by shuffles, then the 8 warps in order).
template <typename T, int V> __device__ void narrow_fwd(const T* x, const T* w, const T* b, T* y,
                                                         int m, int n, int k) {
    __shared__ float sums[8][NMAX];
    int row = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float acc[NMAX];
#pragma unroll
    for (int j = 0; j < NMAX; ++j) acc[j] = 0.f;
    const T* xr = x + (long long)row * k;
    for (int c = threadIdx.x * V; c < k; c += 256 * V) {
        Pack<T, V> xp = load<T, V>(xr + c), wp[NMAX];
#pragma unroll
        for (int j = 0; j < NMAX; ++j)
            if (j < n) wp[j] = load<T, V>(w + (long long)j * k + c);
#pragma unroll
        for (int j = 0; j < NMAX; ++j)
            if (j < n)
#pragma unroll
                for (int v = 0; v < V; ++v) acc[j] += float(xp.v[v]) * float(wp[j].v[v]);
    }
#pragma unroll
    for (int j = 0; j < NMAX; ++j) {
        if (j < n) {
            for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffff, acc[j], o);
            if (lane == 0) sums[warp][j] = acc[j];
        }
    }
    __syncthreads();
    if (threadIdx.x < n) {
        float s = 0.f;
        for (int r = 0; r < 8; ++r) s += sums[r][threadIdx.x];
        y[(long long)row * n + threadIdx.x] = T(s + float(b[threadIdx.x]));
    }
}

// grid ceil(m * k / V / 256), block 256: thread t computes columns [V c, V c + V) of row r.
template <typename T, int V> __device__ void narrow_dx(const T* dz, const T* w, const T* relu_y, T* dx,
                                                        int m, int n, int k) {
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int packs = k / V;
    if (t >= (long long)m * packs) return;
    int row = (int)(t / packs), c = (int)(t - (long long)row * packs) * V;
    float d[NMAX];
    Pack<T, V> wp[NMAX], yp;
#pragma unroll
    for (int j = 0; j < NMAX; ++j) {
        if (j < n) {
            d[j] = float(dz[(long long)row * n + j]);
            wp[j] = load<T, V>(w + (long long)j * k + c);
        }
    }
    if (relu_y) yp = load<T, V>(relu_y + (long long)row * k + c);
    float acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = 0.f;
#pragma unroll
    for (int j = 0; j < NMAX; ++j)
        if (j < n)
#pragma unroll
            for (int v = 0; v < V; ++v) acc[v] += d[j] * float(wp[j].v[v]);
    Pack<T, V> out;
#pragma unroll
    for (int v = 0; v < V; ++v)     // torch's threshold_backward: 0 where y <= 0
        out.v[v] = T(relu_y && float(yp.v[v]) <= 0.f ? 0.f : acc[v]);
    store<T, V>(dx + (long long)row * k + c, out);
}

// grid ceil(k / 64), block 256 (8 warps): lane l of warp r sums rows r, r + 8, ... (8 at most:
// m <= 64) for columns 2 l, 2 l + 1 of the block's 64; the 8 warps' sums are then added in
// order. Block 0 also writes db. dz (m x n <= 64 x NMAX) is staged in shared memory.
template <typename T> __device__ void narrow_dw(const T* dz, const T* x, T* dw, T* db, int m, int n, int k) {
    __shared__ float dzs[64 * NMAX];
    __shared__ float part[8][2 * NMAX][33];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int c = blockIdx.x * 64 + 2 * lane;       // k is even: a pair is in range or not
    Pack<T, 2> xs[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
        if (c < k && warp + 8 * i < m) xs[i] = load<T, 2>(x + (long long)(warp + 8 * i) * k + c);
    T dzt[64 * NMAX / 256];
#pragma unroll
    for (int i = 0; i < 64 * NMAX / 256; ++i)
        if (threadIdx.x + 256 * i < m * n) dzt[i] = dz[threadIdx.x + 256 * i];
#pragma unroll
    for (int i = 0; i < 64 * NMAX / 256; ++i)
        if (threadIdx.x + 256 * i < m * n) dzs[threadIdx.x + 256 * i] = float(dzt[i]);
    __syncthreads();
    float acc[NMAX][2];
#pragma unroll
    for (int j = 0; j < NMAX; ++j) acc[j][0] = acc[j][1] = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = warp + 8 * i;
        if (c < k && r < m) {
            float x0 = float(xs[i].v[0]), x1 = float(xs[i].v[1]);
#pragma unroll
            for (int j = 0; j < NMAX; ++j)
                if (j < n) { float d = dzs[r * n + j]; acc[j][0] += d * x0; acc[j][1] += d * x1; }
        }
    }
#pragma unroll
    for (int j = 0; j < NMAX; ++j)
        if (j < n) { part[warp][2 * j][lane] = acc[j][0]; part[warp][2 * j + 1][lane] = acc[j][1]; }
    __syncthreads();
    for (int i = threadIdx.x; i < 2 * n * 32; i += blockDim.x) {
        int jv = i >> 5, l = i & 31, col = blockIdx.x * 64 + 2 * l + (jv & 1);
        if (col >= k) continue;
        float s = 0.f;
        for (int r = 0; r < 8; ++r) s += part[r][jv][l];
        dw[(long long)(jv >> 1) * k + col] = T(s);
    }
    if (blockIdx.x == 0)            // warp j sums db[j]: rows lane and lane + 32, then a shuffle tree
        for (int j = warp; j < n; j += 8) {
            float s = (lane < m ? dzs[lane * n + j] : 0.f) + (lane + 32 < m ? dzs[(lane + 32) * n + j] : 0.f);
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
            if (lane == 0) db[j] = T(s);
        }
}

#define NARROW(T, S, V)                                                                                      \
extern "C" __global__ void narrow_fwd_##S(const T* x, const T* w, const T* b, T* y, int m, int n, int k) { \
    narrow_fwd<T, V>(x, w, b, y, m, n, k); }                                                                \
extern "C" __global__ void narrow_dx_##S(const T* dz, const T* w, const T* relu_y, T* dx, int m, int n, int k) { \
    narrow_dx<T, V>(dz, w, relu_y, dx, m, n, k); }                                                          \
extern "C" __global__ void narrow_dw_##S(const T* dz, const T* x, T* dw, T* db, int m, int n, int k) {     \
    narrow_dw<T>(dz, x, dw, db, m, n, k); }
NARROW(float, f32, 4)
NARROW(__nv_bfloat16, bf16, 8)
NARROW(__half, f16, 8)
