// max_pool2d over channels-last memory, (N, H, W, C) with C a multiple of V: a thread takes V
// neighbouring channels of one pixel through 16-byte accesses, so the pixel and window
// arithmetic is done once for V channels (max_pool.py's one-element kernels spent a 224x224
// ResNet-18 step's 0.8 ms backward mostly on 64-bit index divisions). Same results as those
// kernels: the first maximum of the window's in-bounds taps wins and a NaN always takes over
// (the last NaN wins); the backward sums, in a fixed tap order and in double, the output
// gradients whose saved index is this element. Indices are 32-bit here: the caller declines
// buffers of 2^31 elements or more.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "pack.cuh"

struct Window { int H, W, Ho, Wo, C, kh, kw, sh, sw, ph, pw, dh, dw; };

template <typename T, int V>
__device__ void max_pool_fwd_nhwc(const T* x, T* y, long long* idx, unsigned int total, Window g) {
    const unsigned int groups = g.C / V;
    for (unsigned int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += blockDim.x * gridDim.x) {
        const unsigned int pix = t / groups, c = (t - pix * groups) * V;       // output pixel, channel
        const unsigned int ow = pix % g.Wo, rest = pix / g.Wo, oh = rest % g.Ho, n = rest / g.Ho;
        const T* plane = x + (unsigned long long)n * g.H * g.W * g.C + c;
        const int h0 = (int)oh * g.sh - g.ph, w0 = (int)ow * g.sw - g.pw;
        Pack<T, V> first = load<T, V>(plane);
        float best[V];
        int at[V];
        for (int k = 0; k < V; k++) { best[k] = (float)first.v[k]; at[k] = -1; }
        for (int a = 0; a < g.kh; ++a) {
            const int h = h0 + a * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (int b = 0; b < g.kw; ++b) {
                const int w = w0 + b * g.dw;
                if (w < 0 || w >= g.W) continue;
                Pack<T, V> v = load<T, V>(plane + ((unsigned long long)h * g.W + w) * g.C);
                for (int k = 0; k < V; k++) {
                    const float f = (float)v.v[k];
                    if (at[k] < 0 || f > best[k] || f != f) { best[k] = f; at[k] = h * g.W + w; }
                }
            }
        }
        Pack<T, V> o;
        for (int k = 0; k < V; k++) o.v[k] = (T)best[k];        // (exact: best is one of x's values)
        const unsigned long long out = (unsigned long long)pix * g.C + c;
        store<T, V>(y + out, o);
        for (int k = 0; k < V; k++) idx[out + k] = at[k];
    }
}

template <typename T, int V>
__device__ void max_pool_bwd_nhwc(const T* gy, const long long* idx, T* dx, unsigned int total, Window g) {
    const unsigned int groups = g.C / V;
    for (unsigned int t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += blockDim.x * gridDim.x) {
        const unsigned int pix = t / groups, c = (t - pix * groups) * V;       // input pixel, channel
        const int w = pix % g.W, rest = pix / g.W, h = rest % g.H, n = rest / g.H;
        const unsigned long long plane = (unsigned long long)n * g.Ho * g.Wo * g.C + c;
        const long long me = (long long)h * g.W + w;
        double acc[V];
        for (int k = 0; k < V; k++) acc[k] = 0.0;
        // the windows covering (h, w), in the one-element kernel's order
        for (int a = 0; a < g.kh; ++a) {
            const int r = h + g.ph - a * g.dh;
            if (r < 0 || r % g.sh) continue;
            const int oh = r / g.sh;
            if (oh >= g.Ho) continue;
            for (int b = 0; b < g.kw; ++b) {
                const int q = w + g.pw - b * g.dw;
                if (q < 0 || q % g.sw) continue;
                const int ow = q / g.sw;
                if (ow >= g.Wo) continue;
                const unsigned long long o = plane + ((unsigned long long)oh * g.Wo + ow) * g.C;
                Pack<T, V> gv = load<T, V>(gy + o);
                for (int k = 0; k < V; k++)
                    if (idx[o + k] == me) acc[k] += (double)(float)gv.v[k];
            }
        }
        Pack<T, V> d;
        for (int k = 0; k < V; k++) d.v[k] = (T)(float)acc[k];
        store<T, V>(dx + (unsigned long long)pix * g.C + c, d);
    }
}

#define WINDOW int H, int W, int Ho, int Wo, int C, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw
#define WIN Window{H, W, Ho, Wo, C, kh, kw, sh, sw, ph, pw, dh, dw}
#define MAX_POOL_NHWC(T, S, V) \
extern "C" __global__ void max_pool_fwd_nhwc_##S(const T* x, T* y, long long* idx, unsigned int total, WINDOW) { \
    max_pool_fwd_nhwc<T, V>(x, y, idx, total, WIN); } \
extern "C" __global__ void max_pool_bwd_nhwc_##S(const T* gy, const long long* idx, T* dx, unsigned int total, WINDOW) { \
    max_pool_bwd_nhwc<T, V>(gy, idx, dx, total, WIN); }

MAX_POOL_NHWC(float, f32, 4)
MAX_POOL_NHWC(__half, f16, 8)
MAX_POOL_NHWC(__nv_bfloat16, bf16, 8)
