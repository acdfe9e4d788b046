// layer_norm forward and backward over the rows of a (rows, cols) contiguous matrix: one warp a
// row up to 1024 columns (the backward summing the weight and bias gradients on the way, then
// ln_params_sum), one block a row beyond (the weight and bias gradients then as column sums,
// ln_bwd_params: blocks over strips of 32 columns and chunks of rows).
// T is float or double; accumulation is in the same type (float32 rows are short enough).

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "block_reduce.cuh"
#include "last_block.cuh"

// y = (x - mean) * rstd * w + b over each row; saves mean and rstd per row
template <typename T> __device__ void ln_fwd(const T* x, const T* w, const T* b, T* y, T* mean_out,
                                             T* rstd_out, long long cols, T eps) {
    __shared__ T shm[32];
    const T* xr = x + blockIdx.x * cols;
    T* yr = y + blockIdx.x * cols;
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    T mean = block_sum(s, shm) / T(cols);
    T v = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) { T d = xr[j] - mean; v += d * d; }
    T rstd = T(1) / sqrt(block_sum(v, shm) / T(cols) + eps);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T h = (xr[j] - mean) * rstd;
        yr[j] = h * (w ? w[j] : T(1)) + (b ? b[j] : T(0));
    }
    if (threadIdx.x == 0) { mean_out[blockIdx.x] = mean; rstd_out[blockIdx.x] = rstd; }
}

// dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w
template <typename T> __device__ void ln_bwd(const T* g, const T* x, const T* w, const T* mean,
                                             const T* rstd, T* dx, long long cols) {
    __shared__ T shm[32];
    const T* gr = g + blockIdx.x * cols;
    const T* xr = x + blockIdx.x * cols;
    T* dr = dx + blockIdx.x * cols;
    T mu = mean[blockIdx.x], r = rstd[blockIdx.x];
    T a = T(0), c = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T gw = gr[j] * (w ? w[j] : T(1));
        a += gw;
        c += gw * (xr[j] - mu) * r;
    }
    a = block_sum(a, shm) / T(cols);
    c = block_sum(c, shm) / T(cols);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T gw = gr[j] * (w ? w[j] : T(1));
        dr[j] = r * (gw - a - (xr[j] - mu) * r * c);
    }
}

// The same for rows of up to 32 * N columns, one warp a row: the row stays in registers, and
// the sums are warp shuffles with no block barrier (the block form spent most of its time in
// its barriers on a GPT's 384-wide rows). Element j of a row is lane j % 32's slot j / 32.
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

// Y: the output's type, T or (a float32 norm whose output a bf16/f16 Linear reads) a half type,
// rounded once from T as a cast of the T output would round it.
template <typename T, int N, typename Y> __device__ void ln_fwd_warp(const T* x, const T* w, const T* b, Y* y,
        T* mean_out, T* rstd_out, long long rows, long long cols, T eps) {
    int lane = threadIdx.x & 31;
    long long row = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;                // (the same for the whole warp)
    const T* xr = x + row * cols;
    Y* yr = y + row * cols;
    T v[N], s = T(0);
    for (int k = 0; k < N; k++) {
        long long j = lane + 32LL * k;
        v[k] = j < cols ? xr[j] : T(0);
        s += v[k];
    }
    T mean = warp_sum(s) / T(cols), q = T(0);
    for (int k = 0; k < N; k++)
        if (lane + 32LL * k < cols) { T d = v[k] - mean; q += d * d; }
    T rstd = T(1) / sqrt(warp_sum(q) / T(cols) + eps);
    for (int k = 0; k < N; k++) {
        long long j = lane + 32LL * k;
        if (j < cols) yr[j] = Y((v[k] - mean) * rstd * (w ? w[j] : T(1)) + (b ? b[j] : T(0)));
    }
    if (lane == 0) { mean_out[row] = mean; rstd_out[row] = rstd; }
}

// Warps a block in ln_bwd_warp: 8, fewer where the per-warp partial sums would pass 32 KiB of
// shared memory (2 sums x warps x 32 N columns). layer_norm.py's _bwd_warps says the same.
template <typename T, int N> __host__ __device__ constexpr int bwd_warps() {
    return 512 / (N * (int)sizeof(T)) < 8 ? 512 / (N * (int)sizeof(T)) : 8;
}

// dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w, one warp a row, the row in
// registers; and with `part`, the weight and bias gradients' partial sums in the same pass, so g
// and x are read once (a separate column-sum kernel read them again and took 2.5x dx's time on a
// GPT). Warps stride over the rows; each warp adds g * xhat and g for its rows into its own row
// of shared memory (a lane owns its columns: no two lanes touch one slot), so the registers stay
// those of dx alone (the sums in registers took 96 a thread, half the blocks an SM, and the
// kernel ran 2.3x longer than dx alone on H200). The block then adds its warps' sums in order
// and writes part[0][block] (dw) and part[1][block] (db), (2, gridDim.x, cols); ln_params_sum
// adds the blocks in order: deterministic. With `accumulate`, dx already holds the gradient of
// x's other use (the residual stream's skip path) and the row's dx is added to it.
// G: the incoming gradient's type, T or the half type of ln_fwd_warp's Y (read and widened).
template <typename T, int N, typename G> __device__ void ln_bwd_warp(const G* g, const T* x, const T* w,
        const T* mean, const T* rstd, T* dx, T* part, long long rows, long long cols, int accumulate) {
    constexpr int W = bwd_warps<T, N>();
    __shared__ T sums[2][W][32 * N];         // (blockDim.x == 32 * W)
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (part)
        for (int k = 0; k < N; k++) { sums[0][warp][lane + 32 * k] = T(0); sums[1][warp][lane + 32 * k] = T(0); }
    for (long long row = blockIdx.x * (long long)W + warp; row < rows; row += gridDim.x * (long long)W) {
        const G* gr = g + row * cols;
        const T* xr = x + row * cols;
        T mu = mean[row], r = rstd[row];
        T gv[N], xh[N], a = T(0), c = T(0);        // g and xhat
        for (int k = 0; k < N; k++) {
            long long j = lane + 32LL * k;
            gv[k] = j < cols ? T(gr[j]) : T(0);
            xh[k] = j < cols ? (xr[j] - mu) * r : T(0);
            T gw = w && j < cols ? gv[k] * w[j] : gv[k];
            a += gw;
            c += gw * xh[k];
        }
        a = warp_sum(a) / T(cols);
        c = warp_sum(c) / T(cols);
        // the sums after the warp reductions, so they add no registers to the loads' loop; then
        // gv holds dx, and xh the gradient already in dx, loaded all at once (one load then its
        // store an element left each warp one load in flight: the kernel took 1.8x as long)
        T* dr = dx + row * cols;
        for (int k = 0; k < N; k++) {
            long long j = lane + 32LL * k;
            if (part && j < cols) { sums[0][warp][lane + 32 * k] += gv[k] * xh[k]; sums[1][warp][lane + 32 * k] += gv[k]; }
            T gw = w && j < cols ? gv[k] * w[j] : gv[k];
            gv[k] = r * (gw - a - xh[k] * c);
        }
        if (accumulate)
            for (int k = 0; k < N; k++) { long long j = lane + 32LL * k; xh[k] = j < cols ? dr[j] : T(0); }
        for (int k = 0; k < N; k++) {
            long long j = lane + 32LL * k;
            if (j < cols) dr[j] = accumulate ? gv[k] + xh[k] : gv[k];
        }
    }
    if (!part) return;
    __syncthreads();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T tw = T(0), tb = T(0);
        for (int v = 0; v < W; v++) { tw += sums[0][v][j]; tb += sums[1][v][j]; }
        part[blockIdx.x * cols + j] = tw;
        part[(gridDim.x + blockIdx.x) * cols + j] = tb;
    }
}

// dw[c] = sum over blocks of part[0][block][c], db of part[1]: grid (column strips of 32),
// block (32, 32), each thread summing every 32nd block, then the 32 sums in order.
template <typename T> __device__ void ln_params_sum(const T* part, T* dw, T* db, long long blocks, long long cols) {
    __shared__ T sw[32][33], sb[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    long long c = blockIdx.x * 32LL + tx;
    T aw = T(0), ab = T(0);
    if (c < cols)
        for (long long k = ty; k < blocks; k += 32) { aw += part[k * cols + c]; ab += part[(blocks + k) * cols + c]; }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && c < cols) {
        for (int k = 1; k < 32; k++) { aw += sw[k][tx]; ab += sb[k][tx]; }
        dw[c] = aw;
        db[c] = ab;
    }
}

// layer_norm's dw = sum over rows of g * xhat, db = sum of g, for (rows, cols) g and x.
// Grid (column strips of 32, row chunks), block (32, 8): each block sums its chunk for its 32
// columns, in a fixed order. With one chunk it writes dw and db; with several it writes
// partials (2, chunks, cols) and the last block to finish (arrived_last) adds the chunks in
// order, so the result is deterministic.
template <typename T> __device__ void ln_bwd_params(const T* g, const T* x, const T* mean, const T* rstd,
                                                    T* part, T* dw, T* db, unsigned int* ticket,
                                                    long long rows, long long cols, long long chunk) {
    __shared__ T sw[8][33], sb[8][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    long long c = blockIdx.x * 32LL + tx;
    long long r0 = blockIdx.y * chunk, r1 = min(rows, r0 + chunk);
    T aw = T(0), ab = T(0);
    if (c < cols)
        for (long long r = r0 + ty; r < r1; r += 8) {
            T gv = g[r * cols + c];
            aw += gv * ((x[r * cols + c] - mean[r]) * rstd[r]);
            ab += gv;
        }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    int chunks = gridDim.y;
    if (ty == 0 && c < cols) {
        T w = T(0), b = T(0);
        for (int k = 0; k < 8; k++) { w += sw[k][tx]; b += sb[k][tx]; }
        if (chunks == 1) { dw[c] = w; db[c] = b; }
        else { part[blockIdx.y * cols + c] = w; part[(chunks + blockIdx.y) * cols + c] = b; }
    }
    if (chunks == 1 || !arrived_last(ticket, gridDim.x * gridDim.y)) return;
    const volatile T* vp = part;
    for (long long j = ty * 32LL + tx; j < cols; j += 256) {
        T w = T(0), b = T(0);
        for (int k = 0; k < chunks; k++) { w += vp[k * cols + j]; b += vp[(chunks + k) * cols + j]; }
        dw[j] = w;
        db[j] = b;
    }
}

#define LAYER_NORM(T, S) \
extern "C" __global__ void ln_fwd_##S(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, long long cols, T eps) { ln_fwd<T>(x, w, b, y, mean, rstd, cols, eps); } \
extern "C" __global__ void ln_bwd_##S(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx, long long cols) { ln_bwd<T>(g, x, w, mean, rstd, dx, cols); } \
extern "C" __global__ void ln_bwd_params_##S(const T* g, const T* x, const T* mean, const T* rstd, T* part, T* dw, T* db, unsigned int* ticket, long long rows, long long cols, long long chunk) { ln_bwd_params<T>(g, x, mean, rstd, part, dw, db, ticket, rows, cols, chunk); } \
extern "C" __global__ void ln_params_sum_##S(const T* part, T* dw, T* db, long long blocks, long long cols) { ln_params_sum<T>(part, dw, db, blocks, cols); }

// ln_*_warp<N>_<S>: x, y and g of T; ln_*_warp<N>_<S>_<H>: y and g of the half type H
#define LAYER_NORM_WARP(T, S, N, Y, YS) \
extern "C" __global__ void ln_fwd_warp##N##_##S##YS(const T* x, const T* w, const T* b, Y* y, T* mean, T* rstd, long long rows, long long cols, T eps) { ln_fwd_warp<T, N, Y>(x, w, b, y, mean, rstd, rows, cols, eps); } \
extern "C" __global__ void __launch_bounds__(32 * bwd_warps<T, N>(), 4) ln_bwd_warp##N##_##S##YS(const Y* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* part, long long rows, long long cols, int accumulate) { ln_bwd_warp<T, N, Y>(g, x, w, mean, rstd, dx, part, rows, cols, accumulate); }

#define LAYER_NORM_WARPS(T, S, Y, YS) \
LAYER_NORM_WARP(T, S, 1, Y, YS) LAYER_NORM_WARP(T, S, 2, Y, YS) LAYER_NORM_WARP(T, S, 4, Y, YS) \
LAYER_NORM_WARP(T, S, 8, Y, YS) LAYER_NORM_WARP(T, S, 16, Y, YS) LAYER_NORM_WARP(T, S, 32, Y, YS)

LAYER_NORM(float, f32)
LAYER_NORM(double, f64)
LAYER_NORM_WARPS(float, f32, float, )
LAYER_NORM_WARPS(double, f64, double, )
LAYER_NORM_WARPS(float, f32, __nv_bfloat16, _bf16)
LAYER_NORM_WARPS(float, f32, __half, _f16)
