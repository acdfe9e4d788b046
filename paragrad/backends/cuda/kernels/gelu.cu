// GELU and its gradient, each one pass over the tensor (the composition in ops/elementwise/unary.py
// launches five kernels forward and about ten backward, each reading and writing the whole tensor).
//   gelu_fwd   y  = x * Phi(x)                          (exact, erf)
//              y  = x / 2 * (1 + tanh(k (x + c x^3)))     (approximate = "tanh")
//   gelu_bwd   dx = g * (Phi(x) + x * phi(x))           (exact)
//              dx = g * d/dx of the tanh form            (tanh)
// X is the storage type (float, double, __half, __nv_bfloat16), T the compute type: float for the
// half types, read and written directly and computed in float32 as PyTorch's opmath does.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "pack.cuh"

#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)blockDim.x * gridDim.x)

template <typename T> struct Gelu {
    static constexpr double RSQRT2 = 0.70710678118654752440, RSQRT_2PI = 0.39894228040143267794;
    static constexpr double K = 0.79788456080286535588, C = 0.044715;   // sqrt(2 / pi), tanh fit

    __device__ static T value(T x, int tanh_form) {
        if (tanh_form) return T(0.5) * x * (T(1) + tanh(T(K) * (x + T(C) * x * x * x)));
        return T(0.5) * x * (T(1) + erf(x * T(RSQRT2)));
    }

    __device__ static T slope(T x, int tanh_form) {
        if (tanh_form) {
            T t = tanh(T(K) * (x + T(C) * x * x * x));
            return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T(K) * (T(1) + T(3 * C) * x * x);
        }
        T cdf = T(0.5) * (T(1) + erf(x * T(RSQRT2)));
        return cdf + x * exp(T(-0.5) * x * x) * T(RSQRT_2PI);
    }
};

template <typename X, typename T>
__device__ void gelu_fwd(const X* x, X* y, long long n, int tanh_form) {
    GRID_STRIDE(i, n) y[i] = X(Gelu<T>::value(T(x[i]), tanh_form));
}

template <typename X, typename T>
__device__ void gelu_bwd(const X* g, const X* x, X* dx, long long n, int tanh_form) {
    GRID_STRIDE(i, n) dx[i] = X(T(g[i]) * Gelu<T>::slope(T(x[i]), tanh_form));
}

// the same per element, V a thread through 16-byte accesses (the half types: n a multiple of 8,
// addresses aligned), as the bf16 forward and backward of a GPT's MLP went at under half the
// memory bandwidth one element a thread
template <typename X, typename T, int V>
__device__ void gelu_fwd_vec(const X* x, X* y, long long n, int tanh_form) {
    GRID_STRIDE(p, n / V) {
        Pack<X, V> a = load<X, V>(x + p * V), b;
        for (int k = 0; k < V; k++) b.v[k] = X(Gelu<T>::value(T(a.v[k]), tanh_form));
        store<X, V>(y + p * V, b);
    }
}

template <typename X, typename T, int V>
__device__ void gelu_bwd_vec(const X* g, const X* x, X* dx, long long n, int tanh_form) {
    GRID_STRIDE(p, n / V) {
        Pack<X, V> a = load<X, V>(g + p * V), b = load<X, V>(x + p * V), c;
        for (int k = 0; k < V; k++) c.v[k] = X(T(a.v[k]) * Gelu<T>::slope(T(b.v[k]), tanh_form));
        store<X, V>(dx + p * V, c);
    }
}

#define GELU_VEC(X, T, S) \
extern "C" __global__ void gelu_fwd_vec_##S(const X* x, X* y, long long n, int tanh_form) { gelu_fwd_vec<X, T, 8>(x, y, n, tanh_form); } \
extern "C" __global__ void gelu_bwd_vec_##S(const X* g, const X* x, X* dx, long long n, int tanh_form) { gelu_bwd_vec<X, T, 8>(g, x, dx, n, tanh_form); }

#define GELU(X, T, S) \
extern "C" __global__ void gelu_fwd_##S(const X* x, X* y, long long n, int tanh_form) { gelu_fwd<X, T>(x, y, n, tanh_form); } \
extern "C" __global__ void gelu_bwd_##S(const X* g, const X* x, X* dx, long long n, int tanh_form) { gelu_bwd<X, T>(g, x, dx, n, tanh_form); }

GELU(float, float, f32)
GELU(double, double, f64)
GELU(__half, float, f16)
GELU(__nv_bfloat16, float, bf16)
GELU_VEC(__half, float, f16)
GELU_VEC(__nv_bfloat16, float, bf16)
