// Counter-based random numbers: element i of a draw is a hash of (seed, offset + i), so a
// draw is reproducible, needs no per-thread state, and reads its position from device
// memory — a draw captured in a CUDA graph gives new numbers on every replay, because the
// separate `advance` launch moves the offset on the device.
//
// state[0] = seed, state[1] = offset (number of values drawn so far)

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

__device__ __forceinline__ unsigned long long draw(const unsigned long long* state, long long i) {
    return splitmix64(state[0] ^ splitmix64(state[1] + (unsigned long long)i));
}

extern "C" __global__ void uniform64(double* out, long long n, const unsigned long long* state,
                                     double low, double high) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    double u = (double)(draw(state, i) >> 11) * (1.0 / 9007199254740992.0);   // [0, 1), 53 bits
    out[i] = low + (high - low) * u;
}

extern "C" __global__ void uniform32(float* out, long long n, const unsigned long long* state,
                                     float low, float high) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float u = (float)(draw(state, i) >> 40) * (1.0f / 16777216.0f);           // [0, 1), 24 bits
    float r = low + (high - low) * u;
    out[i] = r < high ? r : low;     // rounding may reach `high`: keep the interval half-open
}

extern "C" __global__ void normal64(double* out, long long n, const unsigned long long* state,
                                    double mean, double std) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = draw(state, i);
    double u1 = ((double)(x >> 40) + 1.0) * (1.0 / 16777216.0);               // (0, 1]
    double u2 = (double)(x & 0xFFFFFFULL) * (1.0 / 16777216.0);
    out[i] = mean + std * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}

extern "C" __global__ void normal32(float* out, long long n, const unsigned long long* state,
                                    float mean, float std) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = draw(state, i);
    float u1 = ((float)(x >> 40) + 1.0f) * (1.0f / 16777216.0f);
    float u2 = (float)(x & 0xFFFFFFULL) * (1.0f / 16777216.0f);
    out[i] = mean + std * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

extern "C" __global__ void advance(unsigned long long* state, long long n) {
    state[1] += (unsigned long long)n;
}

// dropout in one pass: element i is kept where its uniform32 draw u (the same number a separate
// uniform draw would give it) is below `keep` = 1 - p, and scaled by 1 / keep; mask[i] records
// it for the backward. The half types compute in float32 and round once, as PyTorch's kernel.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "pack.cuh"

template <typename X, typename T>
__device__ void dropout_fwd(const X* x, X* y, unsigned char* mask, long long n,
                            const unsigned long long* state, float keep, T scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        float u = (float)(draw(state, i) >> 40) * (1.0f / 16777216.0f);
        bool kept = u < keep;
        mask[i] = kept;
        y[i] = X(kept ? T(x[i]) * scale : T(0));
    }
}

// dx = g * mask * scale in x's type X; a wider g (G: a float32 residual stream's gradient
// reaching a bf16 branch) is rounded to X first, as its cast then dropout's backward would
template <typename G, typename X, typename T>
__device__ void dropout_bwd(const G* g, const unsigned char* mask, X* dx, long long n, T scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        dx[i] = X(mask[i] ? T(X(g[i])) * scale : T(0));
}

// the same per element, V a thread through 16-byte accesses of x (8-byte ones of the mask) for
// the half types: n a multiple of V, addresses aligned
template <typename X, typename T, int V>
__device__ void dropout_fwd_vec(const X* x, X* y, unsigned char* mask, long long n,
                                const unsigned long long* state, float keep, T scale) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n / V;
         p += (long long)blockDim.x * gridDim.x) {
        Pack<X, V> a = load<X, V>(x + p * V), b;
        Pack<unsigned char, V> m;
        for (int k = 0; k < V; k++) {
            float u = (float)(draw(state, p * V + k) >> 40) * (1.0f / 16777216.0f);
            m.v[k] = u < keep;
            b.v[k] = X(m.v[k] ? T(a.v[k]) * scale : T(0));
        }
        store<X, V>(y + p * V, b);
        store<unsigned char, V>(mask + p * V, m);
    }
}

template <typename G, typename X, typename T, int V>
__device__ void dropout_bwd_vec(const G* g, const unsigned char* mask, X* dx, long long n, T scale) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n / V;
         p += (long long)blockDim.x * gridDim.x) {
        Pack<G, V> a = load<G, V>(g + p * V);
        Pack<X, V> b;
        Pack<unsigned char, V> m = load<unsigned char, V>(mask + p * V);
        for (int k = 0; k < V; k++) b.v[k] = X(m.v[k] ? T(X(a.v[k])) * scale : T(0));
        store<X, V>(dx + p * V, b);
    }
}

// out = res + dropout(y): a residual add with the dropout of the branch before it in one pass,
// which under autocast also moves the bf16 branch into the float32 stream (no cast). Element i
// is kept as dropout_fwd keeps it, and the dropped-and-scaled value is rounded to Y first, as
// dropout then the add would. mask == nullptr: no dropout (a mixed-type add; nothing drawn).
template <typename R, typename Y, int V>
__device__ void residual_dropout_fwd(const R* res, const Y* y, R* out, unsigned char* mask, long long n,
                                     const unsigned long long* state, float keep, float scale) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n / V;
         p += (long long)blockDim.x * gridDim.x) {
        Pack<R, V> a = load<R, V>(res + p * V), o;
        Pack<Y, V> b = load<Y, V>(y + p * V);
        Pack<unsigned char, V> m;
        for (int k = 0; k < V; k++) {
            float d = float(b.v[k]);
            if (mask) {
                float u = (float)(draw(state, p * V + k) >> 40) * (1.0f / 16777216.0f);
                m.v[k] = u < keep;
                d = m.v[k] ? float(Y(d * scale)) : 0.0f;
            }
            o.v[k] = R(float(a.v[k]) + d);
        }
        store<R, V>(out + p * V, o);
        if (mask) store<unsigned char, V>(mask + p * V, m);
    }
}

#define DROPOUT_VEC(X, T, S) \
extern "C" __global__ void dropout_fwd_vec_##S(const X* x, X* y, unsigned char* mask, long long n, \
        const unsigned long long* state, float keep, T scale) { dropout_fwd_vec<X, T, 8>(x, y, mask, n, state, keep, scale); } \
extern "C" __global__ void dropout_bwd_vec_##S(const X* g, const unsigned char* mask, X* dx, long long n, T scale) { \
    dropout_bwd_vec<X, X, T, 8>(g, mask, dx, n, scale); }

#define DROPOUT(X, T, S) \
extern "C" __global__ void dropout_fwd_##S(const X* x, X* y, unsigned char* mask, long long n, \
        const unsigned long long* state, float keep, T scale) { dropout_fwd<X, T>(x, y, mask, n, state, keep, scale); } \
extern "C" __global__ void dropout_bwd_##S(const X* g, const unsigned char* mask, X* dx, long long n, T scale) { \
    dropout_bwd<X, X, T>(g, mask, dx, n, scale); }

DROPOUT(float, float, f32)
DROPOUT(double, double, f64)
DROPOUT(__half, float, f16)
DROPOUT(__nv_bfloat16, float, bf16)
DROPOUT_VEC(__half, float, f16)
DROPOUT_VEC(__nv_bfloat16, float, bf16)

// a residual stream of type R (suffix RS) and a branch of type Y (YS): the fused forward, one
// element a thread and V through 16-byte accesses of the residual
#define RESIDUAL_DROPOUT(R, RS, Y, YS, V) \
extern "C" __global__ void residual_dropout_fwd_##RS##_##YS(const R* res, const Y* y, R* out, unsigned char* mask, \
        long long n, const unsigned long long* state, float keep, float scale) { \
    residual_dropout_fwd<R, Y, 1>(res, y, out, mask, n, state, keep, scale); } \
extern "C" __global__ void residual_dropout_fwd_vec_##RS##_##YS(const R* res, const Y* y, R* out, unsigned char* mask, \
        long long n, const unsigned long long* state, float keep, float scale) { \
    residual_dropout_fwd<R, Y, V>(res, y, out, mask, n, state, keep, scale); }

RESIDUAL_DROPOUT(float, f32, float, f32, 4)
RESIDUAL_DROPOUT(float, f32, __nv_bfloat16, bf16, 4)
RESIDUAL_DROPOUT(float, f32, __half, f16, 4)
RESIDUAL_DROPOUT(__nv_bfloat16, bf16, __nv_bfloat16, bf16, 8)
RESIDUAL_DROPOUT(__half, f16, __half, f16, 8)

// the half branch's backward from the float32 stream's gradient (8 elements a thread)
#define DROPOUT_BWD_FROM_F32(Y, YS) \
extern "C" __global__ void dropout_bwd_f32_##YS(const float* g, const unsigned char* mask, Y* dx, long long n, float scale) { \
    dropout_bwd<float, Y, float>(g, mask, dx, n, scale); } \
extern "C" __global__ void dropout_bwd_vec_f32_##YS(const float* g, const unsigned char* mask, Y* dx, long long n, float scale) { \
    dropout_bwd_vec<float, Y, float, 8>(g, mask, dx, n, scale); }

DROPOUT_BWD_FROM_F32(__nv_bfloat16, bf16)
DROPOUT_BWD_FROM_F32(__half, f16)
