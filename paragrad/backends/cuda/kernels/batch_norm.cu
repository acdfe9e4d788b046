// batch_norm over a C-contiguous input viewed as (N, C, HW): channel c's M = N * HW elements
// lie in N runs of HW values, C * HW apart.
//   bn_stats       training: per-channel mean and rstd, and the running-statistics update
//   bn_eval_stats  eval: mean and rstd copied out of the running statistics
//   bn_apply       y = (x - mean) * rstd * w + b
//   bn_bwd_reduce  per-channel sums of g and g * xhat -> db, dw and the two means dx needs
//   bn_bwd_dx      dx = w * rstd * (g - mean(g) - xhat * mean(g * xhat))   (training)
//                  dx = w * rstd * g                                       (eval)
// T (float or double) is the compute type, X the storage type of the (N, C, *) tensors x, y, g
// and dx: T itself, or __half/__nv_bfloat16 with T = float, read and written directly (no
// float32 copies of the activations) while statistics and parameters stay in T. runtime/compile.py
// compiles this file with --fmad=false, so each product and sum rounds as in the composite
// primitives (ops/neural/batch_norm.py) it replaces.
//
// Reductions: a channel's elements are split over gridDim.x blocks (blockIdx.y = channel), so
// that C = 64 channels still fill the GPU. Each block adds its share in double (a few million
// float32 terms lose nothing) and writes the partial sums; then it takes a ticket from its
// channel's counter, and the last block of the channel adds the partials in split order and
// finishes the channel, resetting the counter to 0 for the next launch. No result depends on
// which block came last, so every result is deterministic. Nothing reads device values on the
// host: all of it replays inside a CUDA graph.
//
// Indices are 32-bit (the caller declines inputs of 2^31 elements or more); n / d is a
// multiply-high and a shift with host-computed magic numbers (valid for n < 2^31), which keeps
// the elementwise kernels memory-bound.

typedef unsigned long long u64;        // (NVRTC has no <cstddef> for size_t)

#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ unsigned int divide(unsigned int n, unsigned int magic, unsigned int shift) {
    return (__umulhi(n, magic) + n) >> shift;
}

#include "block_reduce.cuh"
#include "last_block.cuh"
#include "pack.cuh"

// The geometry every kernel gets: C, HW and the magic numbers that divide by them.
struct Geom {
    unsigned int c, c_magic, c_shift, hw, hw_magic, hw_shift;
};

// Offset of element j (0 <= j < M) of channel c: n = j / HW, i = j % HW.
__device__ __forceinline__ u64 channel_offset(unsigned int j, unsigned int c, const Geom& g) {
    unsigned int n = divide(j, g.hw_magic, g.hw_shift);
    return ((u64)n * g.c + c) * g.hw + (j - n * g.hw);
}

// Channel of flat element i: row = i / HW = n * C + c.
__device__ __forceinline__ unsigned int channel_of(unsigned int i, const Geom& g) {
    unsigned int row = divide(i, g.hw_magic, g.hw_shift);
    return row - divide(row, g.c_magic, g.c_shift) * g.c;
}

// This block's share [lo, hi) of channel blockIdx.y's M elements.
__device__ __forceinline__ void split_range(unsigned int m, unsigned int* lo, unsigned int* hi) {
    unsigned int chunk = (m + gridDim.x - 1) / gridDim.x;
    *lo = min(blockIdx.x * chunk, m);
    *hi = min(*lo + chunk, m);
}

// Write this block's two partial sums, take a ticket; true in the channel's last block, whose
// threads then hold the channel's totals in s1, s2 (added in split order).
__device__ bool combine(double* s1, double* s2, double* partial, unsigned int* ticket, double* shm) {
    const unsigned int c = blockIdx.y, splits = gridDim.x;
    double a = block_sum(*s1, shm), b = block_sum(*s2, shm);
    if (threadIdx.x == 0) {
        partial[2 * ((u64)c * splits + blockIdx.x)] = a;
        partial[2 * ((u64)c * splits + blockIdx.x) + 1] = b;
    }
    if (!arrived_last(ticket + c, splits)) return false;
    const volatile double* p = partial + 2 * (u64)c * splits;
    a = 0.0;
    b = 0.0;
    for (unsigned int k = threadIdx.x; k < splits; k += blockDim.x) {
        a += p[2 * k];
        b += p[2 * k + 1];
    }
    *s1 = block_sum(a, shm);
    *s2 = block_sum(b, shm);
    return true;
}

// Channel c's statistics from its sums of (x - shift) and (x - shift)^2 over its m elements.
template <typename T> __device__ void finish_stats(unsigned int c, double s1, double s2, unsigned int m,
                                                   double shift, T* mean_out, T* rstd_out, T* rm, T* rv,
                                                   T eps, T momentum, T keep, T unbias) {
    double md = s1 / m;
    T mean = (T)(shift + md);
    T var = (T)fmax(s2 / m - md * md, 0.0);
    mean_out[c] = mean;
    rstd_out[c] = rsqrt(var + eps);
    if (rm) {
        rm[c] = rm[c] * keep + mean * momentum;
        rv[c] = rv[c] * keep + (var * unbias) * momentum;
    }
}

// Channel c's gradient sums: s1 = sum of g, s2 = sum of g * (x - mean) over its m elements.
template <typename T> __device__ void finish_bwd(unsigned int c, double s1, double s2, unsigned int m,
                                                 const T* rstd, T* dw, T* db, T* coef, unsigned int channels) {
    double sgx = s2 * (double)rstd[c];
    if (db) db[c] = (T)s1;
    if (dw) dw[c] = (T)sgx;
    if (coef) {
        coef[c] = (T)(s1 / m);
        coef[channels + c] = (T)(sgx / m);
    }
}

// Training statistics. Values are centered on the channel's first element before squaring, so
// that a mean far from zero (x * 10 + 100) does not cancel the variance away. Writes mean and
// rstd = 1 / sqrt(var + eps) (biased var), and when rm is given updates in place
//   rm = rm * (1 - momentum) + mean * momentum,  rv = rv * (1 - momentum) + var * M/(M-1) * momentum
// with the factors rounded to T on the host, as the composite's Python scalars are.
template <typename X, typename T> __device__ void bn_stats(const X* x, double* partial, unsigned int* ticket,
                                               T* mean_out, T* rstd_out, T* rm, T* rv, Geom g,
                                               unsigned int m, T eps, T momentum, T keep, T unbias) {
    __shared__ double shm[32];
    const unsigned int c = blockIdx.y;
    const double shift = (double)(T)x[(u64)c * g.hw];
    unsigned int lo, hi;
    split_range(m, &lo, &hi);
    double s1 = 0.0, s2 = 0.0;
    for (unsigned int j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        double d = (double)(T)x[channel_offset(j, c, g)] - shift;
        s1 += d;
        s2 += d * d;
    }
    if (!combine(&s1, &s2, partial, ticket, shm) || threadIdx.x != 0) return;
    finish_stats<T>(c, s1, s2, m, shift, mean_out, rstd_out, rm, rv, eps, momentum, keep, unbias);
}

// Eval: mean and rstd from the running statistics, as copies (those change in place later).
template <typename T> __device__ void bn_eval_stats(const T* rm, const T* rv, T* mean_out, T* rstd_out,
                                                    unsigned int c_count, T eps) {
    unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= c_count) return;
    mean_out[c] = rm[c];
    rstd_out[c] = rsqrt(rv[c] + eps);
}

// y = (x - mean) * rstd, then * w, then + b (each optional), one thread per element; then, for a
// ResNet block, + res (optional: the skip path) and ReLU, in the same pass. The normalized value
// is rounded to X before the add, as batch_norm's output then an add would; ReLU keeps a NaN.
template <typename X, typename T> __device__ void bn_apply(const X* x, const T* mean, const T* rstd, const T* w,
                                                           const T* b, const X* res, int relu, X* y,
                                                           unsigned int total, Geom g) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    unsigned int c = channel_of(i, g);
    T h = ((T)x[i] - mean[c]) * rstd[c];
    if (w) h = h * w[c];
    if (b) h = h + b[c];
    if (res) h = (T)(X)h + (T)res[i];
    if (relu && h < T(0)) h = T(0);
    y[i] = (X)h;
}

// The same over a channels-last input, V neighbouring channels a thread through one 16-byte
// access per tensor (C a multiple of V, pointers aligned): the one-element kernel moved bf16
// activations at under half the memory bandwidth (1.1 ms of a 224x224 ResNet-18 step).
template <typename X, typename T, int V>
__device__ void bn_apply_nhwc(const X* x, const T* mean, const T* rstd, const T* w, const T* b, const X* res,
                              int relu, X* y, unsigned int total, unsigned int channels) {
    for (unsigned int p = blockIdx.x * blockDim.x + threadIdx.x; p < total / V; p += blockDim.x * gridDim.x) {
        unsigned int i = p * V, c = i % channels;
        Pack<X, V> a = load<X, V>(x + i), r, o;
        if (res) r = load<X, V>(res + i);
        for (int k = 0; k < V; k++) {
            T h = ((T)a.v[k] - mean[c + k]) * rstd[c + k];
            if (w) h = h * w[c + k];
            if (b) h = h + b[c + k];
            if (res) h = (T)(X)h + (T)r.v[k];
            if (relu && h < T(0)) h = T(0);
            o.v[k] = (X)h;
        }
        store<X, V>(y + i, o);
    }
}

// Per channel: sg = sum of g, sgx = sum of g * xhat. Writes db = sg and dw = sgx when asked
// for, and coef = (mean(g), mean(g * xhat)) as (2, C) for the training dx.
template <typename X, typename T> __device__ void bn_bwd_reduce(const X* g, const X* x, const T* mean, const T* rstd,
                                                    double* partial, unsigned int* ticket, T* dw, T* db,
                                                    T* coef, Geom geom, unsigned int m) {
    __shared__ double shm[32];
    const unsigned int c = blockIdx.y;
    const double mu = (double)mean[c];
    unsigned int lo, hi;
    split_range(m, &lo, &hi);
    double s1 = 0.0, s2 = 0.0;
    for (unsigned int j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        u64 k = channel_offset(j, c, geom);
        double gv = (double)(T)g[k];
        s1 += gv;
        s2 += gv * ((double)(T)x[k] - mu);
    }
    if (!combine(&s1, &s2, partial, ticket, shm) || threadIdx.x != 0) return;
    finish_bwd<T>(c, s1, s2, m, rstd, dw, db, coef, geom.c);
}

// Channels-last reductions: the input is (M, C) in memory. A block of (32, 8) threads takes 32
// neighbouring channels (threadIdx.x, so a warp reads 32 neighbours of one row: coalesced, where
// the per-channel kernels above would read C apart) over blockIdx.x's share of the rows
// (threadIdx.y strides them), and writes per (channel, split) partial sums in the layout
// combine() uses; a second launch (bn_nhwc_*_finish) adds each channel's
// partials, a block per channel, in a fixed order: results are deterministic as above.
__device__ void nhwc_write_partials(double s1, double s2, double* partial, unsigned int c, unsigned int channels) {
    __shared__ double sh[2][8][33];
    sh[0][threadIdx.y][threadIdx.x] = s1;
    sh[1][threadIdx.y][threadIdx.x] = s2;
    __syncthreads();
    if (threadIdx.y != 0 || c >= channels) return;
    double a = 0.0, b = 0.0;
    for (unsigned int k = 0; k < blockDim.y; ++k) {
        a += sh[0][k][threadIdx.x];
        b += sh[1][k][threadIdx.x];
    }
    partial[2 * ((u64)c * gridDim.x + blockIdx.x)] = a;
    partial[2 * ((u64)c * gridDim.x + blockIdx.x) + 1] = b;
}

__device__ __forceinline__ void nhwc_rows(unsigned int m, unsigned int* lo, unsigned int* hi) {
    unsigned int chunk = (m + gridDim.x - 1) / gridDim.x;
    *lo = min(blockIdx.x * chunk, m) + threadIdx.y;
    *hi = min(blockIdx.x * chunk + chunk, m);
}

template <typename X, typename T> __device__ void nhwc_stats_partials(const X* x, double* partial,
                                                                     unsigned int channels, unsigned int m) {
    const unsigned int c = blockIdx.y * 32 + threadIdx.x;
    double s1 = 0.0, s2 = 0.0;
    if (c < channels) {
        const double shift = (double)(T)x[c];              // the channel's first element (row 0)
        unsigned int lo, hi;
        nhwc_rows(m, &lo, &hi);
        for (unsigned int r = lo; r < hi; r += blockDim.y) {
            double d = (double)(T)x[(u64)r * channels + c] - shift;
            s1 += d;
            s2 += d * d;
        }
    }
    nhwc_write_partials(s1, s2, partial, c, channels);
}

template <typename X, typename T> __device__ void nhwc_bwd_partials(const X* g, const X* x, const T* mean,
                                                                   double* partial, unsigned int channels,
                                                                   unsigned int m) {
    const unsigned int c = blockIdx.y * 32 + threadIdx.x;
    double s1 = 0.0, s2 = 0.0;
    if (c < channels) {
        const double mu = (double)mean[c];
        unsigned int lo, hi;
        nhwc_rows(m, &lo, &hi);
        for (unsigned int r = lo; r < hi; r += blockDim.y) {
            u64 k = (u64)r * channels + c;
            double gv = (double)(T)g[k];
            s1 += gv;
            s2 += gv * ((double)(T)x[k] - mu);
        }
    }
    nhwc_write_partials(s1, s2, partial, c, channels);
}

// The same partial sums with V neighbouring channels a thread (one 16-byte access: a warp of the
// (32, 8) kernels read 64 bytes of a bf16 row, and those kernels ran at a third of the memory
// bandwidth). A block of 256 threads covers every channel: thread t takes channels
// (t % groups) * V onwards, groups = C / V, of rows t / groups, t / groups + lanes, ... of
// blockIdx.x's share (lanes = 256 / groups rows at a time); then each channel's sums over the
// lanes, in lane order, through shared memory. Needs C % V == 0 and C <= 256 * V.
template <typename X, typename T, int V, bool BWD>
__device__ void nhwc_partials_vec(const X* g, const X* x, const T* mean, double* partial,
                                  unsigned int channels, unsigned int m) {
    __shared__ double sh[2][256 * V];
    const unsigned int groups = channels / V, lanes = blockDim.x / groups;
    const unsigned int grp = threadIdx.x % groups, lane = threadIdx.x / groups, c0 = grp * V;
    double s1[V], s2[V], centre[V];
    for (int k = 0; k < V; k++) { s1[k] = 0.0; s2[k] = 0.0; }
    if (lane < lanes) {
        if (BWD) {
            for (int k = 0; k < V; k++) centre[k] = (double)mean[c0 + k];
        } else {
            Pack<X, V> first = load<X, V>(x + c0);     // the channel's first element (row 0)
            for (int k = 0; k < V; k++) centre[k] = (double)(T)first.v[k];
        }
        const unsigned int chunk = (m + gridDim.x - 1) / gridDim.x;
        const unsigned int lo = min(blockIdx.x * chunk, m), hi = min(lo + chunk, m);
        for (unsigned int r = lo + lane; r < hi; r += lanes) {
            const u64 at = (u64)r * channels + c0;
            Pack<X, V> xv = load<X, V>(x + at);
            if (BWD) {
                Pack<X, V> gv = load<X, V>(g + at);
                for (int k = 0; k < V; k++) {
                    double gk = (double)(T)gv.v[k];
                    s1[k] += gk;
                    s2[k] += gk * ((double)(T)xv.v[k] - centre[k]);
                }
            } else {
                for (int k = 0; k < V; k++) {
                    double d = (double)(T)xv.v[k] - centre[k];
                    s1[k] += d;
                    s2[k] += d * d;
                }
            }
        }
        for (int k = 0; k < V; k++) { sh[0][lane * channels + c0 + k] = s1[k]; sh[1][lane * channels + c0 + k] = s2[k]; }
    }
    __syncthreads();
    for (unsigned int c = threadIdx.x; c < channels; c += blockDim.x) {
        double a = 0.0, b = 0.0;
        for (unsigned int l = 0; l < lanes; l++) { a += sh[0][l * channels + c]; b += sh[1][l * channels + c]; }
        partial[2 * ((u64)c * gridDim.x + blockIdx.x)] = a;
        partial[2 * ((u64)c * gridDim.x + blockIdx.x) + 1] = b;
    }
}

// Channel blockIdx.x's partial sums over its splits, by the whole block (coalesced reads, a
// fixed order of additions); true in thread 0, which then holds the totals.
__device__ bool add_splits(const double* partial, unsigned int splits, double* s1, double* s2) {
    __shared__ double shm[32];
    const double* p = partial + 2 * (u64)blockIdx.x * splits;
    double a = 0.0, b = 0.0;
    for (unsigned int k = threadIdx.x; k < splits; k += blockDim.x) {
        a += p[2 * k];
        b += p[2 * k + 1];
    }
    *s1 = block_sum(a, shm);
    *s2 = block_sum(b, shm);
    return threadIdx.x == 0;
}

// dx, one thread per element. coef null: eval mode (the statistics are constants).
template <typename X, typename T> __device__ void bn_bwd_dx(const X* g, const X* x, const T* mean, const T* rstd,
                                                            const T* w, const T* coef, X* dx, unsigned int total,
                                                            Geom geom) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    unsigned int c = channel_of(i, geom);
    T scale = w ? rstd[c] * w[c] : rstd[c];
    if (coef) {
        T xhat = ((T)x[i] - mean[c]) * rstd[c];
        dx[i] = (X)((((T)g[i] - xhat * coef[geom.c + c]) - coef[c]) * scale);
    } else {
        dx[i] = (X)((T)g[i] * scale);
    }
}

// bn_bwd_dx over a channels-last input, V neighbouring channels a thread (as bn_apply_nhwc)
template <typename X, typename T, int V>
__device__ void bn_bwd_dx_nhwc(const X* g, const X* x, const T* mean, const T* rstd, const T* w, const T* coef,
                               X* dx, unsigned int total, unsigned int channels) {
    for (unsigned int p = blockIdx.x * blockDim.x + threadIdx.x; p < total / V; p += blockDim.x * gridDim.x) {
        unsigned int i = p * V, c = i % channels;
        Pack<X, V> gv = load<X, V>(g + i), xv, o;
        if (coef) xv = load<X, V>(x + i);
        for (int k = 0; k < V; k++) {
            T scale = w ? rstd[c + k] * w[c + k] : rstd[c + k];
            if (coef) {
                T xhat = ((T)xv.v[k] - mean[c + k]) * rstd[c + k];
                o.v[k] = (X)((((T)gv.v[k] - xhat * coef[channels + c + k]) - coef[c + k]) * scale);
            } else {
                o.v[k] = (X)((T)gv.v[k] * scale);
            }
        }
        store<X, V>(dx + i, o);
    }
}

// The geometry travels as six plain unsigned ints (C, its magic and shift, HW, its magic and
// shift): CuPy passes scalars, not structs.
#define GEOM unsigned int c_, unsigned int cm_, unsigned int cs_, unsigned int hw_, unsigned int hwm_, unsigned int hws_
#define G Geom{c_, cm_, cs_, hw_, hwm_, hws_}
#define BN(X, T, S) \
extern "C" __global__ void bn_stats_##S(const X* x, double* partial, unsigned int* ticket, T* mean, T* rstd, T* rm, T* rv, GEOM, unsigned int m, T eps, T momentum, T keep, T unbias) { bn_stats<X, T>(x, partial, ticket, mean, rstd, rm, rv, G, m, eps, momentum, keep, unbias); } \
extern "C" __global__ void bn_eval_stats_##S(const T* rm, const T* rv, T* mean, T* rstd, unsigned int c, T eps) { bn_eval_stats<T>(rm, rv, mean, rstd, c, eps); } \
extern "C" __global__ void bn_apply_##S(const X* x, const T* mean, const T* rstd, const T* w, const T* b, const X* res, int relu, X* y, unsigned int total, GEOM) { bn_apply<X, T>(x, mean, rstd, w, b, res, relu, y, total, G); } \
extern "C" __global__ void bn_bwd_reduce_##S(const X* g, const X* x, const T* mean, const T* rstd, double* partial, unsigned int* ticket, T* dw, T* db, T* coef, GEOM, unsigned int m) { bn_bwd_reduce<X, T>(g, x, mean, rstd, partial, ticket, dw, db, coef, G, m); } \
extern "C" __global__ void bn_bwd_dx_##S(const X* g, const X* x, const T* mean, const T* rstd, const T* w, const T* coef, X* dx, unsigned int total, GEOM) { bn_bwd_dx<X, T>(g, x, mean, rstd, w, coef, dx, total, G); }

#define BN_NHWC(X, T, S) \
extern "C" __global__ void bn_nhwc_stats_partials_##S(const X* x, double* partial, unsigned int channels, unsigned int m) { nhwc_stats_partials<X, T>(x, partial, channels, m); } \
extern "C" __global__ void bn_nhwc_stats_finish_##S(const X* x, const double* partial, unsigned int splits, T* mean, T* rstd, T* rm, T* rv, unsigned int channels, unsigned int m, T eps, T momentum, T keep, T unbias) { \
    double s1, s2; if (add_splits(partial, splits, &s1, &s2)) \
        finish_stats<T>(blockIdx.x, s1, s2, m, (double)(T)x[blockIdx.x], mean, rstd, rm, rv, eps, momentum, keep, unbias); } \
extern "C" __global__ void bn_nhwc_bwd_partials_##S(const X* g, const X* x, const T* mean, double* partial, unsigned int channels, unsigned int m) { nhwc_bwd_partials<X, T>(g, x, mean, partial, channels, m); } \
extern "C" __global__ void bn_nhwc_bwd_finish_##S(const double* partial, unsigned int splits, const T* rstd, T* dw, T* db, T* coef, unsigned int channels, unsigned int m) { \
    double s1, s2; if (add_splits(partial, splits, &s1, &s2)) finish_bwd<T>(blockIdx.x, s1, s2, m, rstd, dw, db, coef, channels); }

#define BN_NHWC_VEC(X, T, S, V) \
extern "C" __global__ void bn_nhwc_stats_partials_vec_##S(const X* x, double* partial, unsigned int channels, unsigned int m) { nhwc_partials_vec<X, T, V, false>(nullptr, x, nullptr, partial, channels, m); } \
extern "C" __global__ void bn_nhwc_bwd_partials_vec_##S(const X* g, const X* x, const T* mean, double* partial, unsigned int channels, unsigned int m) { nhwc_partials_vec<X, T, V, true>(g, x, mean, partial, channels, m); } \
extern "C" __global__ void bn_apply_nhwc_##S(const X* x, const T* mean, const T* rstd, const T* w, const T* b, const X* res, int relu, X* y, unsigned int total, unsigned int channels) { bn_apply_nhwc<X, T, V>(x, mean, rstd, w, b, res, relu, y, total, channels); } \
extern "C" __global__ void bn_bwd_dx_nhwc_##S(const X* g, const X* x, const T* mean, const T* rstd, const T* w, const T* coef, X* dx, unsigned int total, unsigned int channels) { bn_bwd_dx_nhwc<X, T, V>(g, x, mean, rstd, w, coef, dx, total, channels); }

BN(float, float, f32)
BN(double, double, f64)
BN(__half, float, f16)
BN(__nv_bfloat16, float, bf16)
BN_NHWC(float, float, f32)
BN_NHWC(double, double, f64)
BN_NHWC(__half, float, f16)
BN_NHWC(__nv_bfloat16, float, bf16)
BN_NHWC_VEC(float, float, f32, 4)
BN_NHWC_VEC(__half, float, f16, 8)
BN_NHWC_VEC(__nv_bfloat16, float, bf16, 8)
