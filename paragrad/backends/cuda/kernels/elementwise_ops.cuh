// The arithmetic of the elementwise kernels, one functor per op: elementwise.cu's kernels and
// the fused chains that fused_chains.py generates use the same ones, so a chain computes
// bit for bit what its ops computed one launch each (compiled without fused multiply-add).
#pragma once

struct Add { template <typename T> __device__ static T f(T a, T b) { return a + b; } };
struct Sub { template <typename T> __device__ static T f(T a, T b) { return a - b; } };
struct Mul { template <typename T> __device__ static T f(T a, T b) { return a * b; } };
struct Div { template <typename T> __device__ static T f(T a, T b) { return a / b; } };

struct Neg { template <typename T> __device__ static T f(T x) { return -x; } };
struct Exp { template <typename T> __device__ static T f(T x) { return exp(x); } };
struct Log { template <typename T> __device__ static T f(T x) { return log(x); } };
struct Sqrt { template <typename T> __device__ static T f(T x) { return sqrt(x); } };
struct Rsqrt { template <typename T> __device__ static T f(T x) { return rsqrt(x); } };
struct Tanh { template <typename T> __device__ static T f(T x) { return tanh(x); } };
struct Abs { template <typename T> __device__ static T f(T x) { return fabs(x); } };
struct Reciprocal { template <typename T> __device__ static T f(T x) { return T(1) / x; } };
// the CUDA backend's sigmoid and relu (NaN stays NaN, as torch)
struct Sigmoid {
    template <typename T> __device__ static T f(T x) {
        return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
    }
};
struct Relu { template <typename T> __device__ static T f(T x) { return x < T(0) ? T(0) : x; } };
// activation gradients from the output y, as one kernel each, rounded as the buffer formulas of
// ops/elementwise/unary.py they replace: sigmoid -((g y)(y - 1)), tanh -(g (y y - 1))
struct SigmoidGrad { template <typename T> __device__ static T f(T g, T y) { T t = g * y; return -(t * (y - T(1))); } };
struct TanhGrad { template <typename T> __device__ static T f(T g, T y) { T t = y * y - T(1); return -(g * t); } };
// PyTorch's threshold_backward: 0 where y <= 0 (even for a NaN/inf g), g elsewhere (a NaN y too)
struct ReluGrad { template <typename T> __device__ static T f(T g, T y) { return y <= T(0) ? T(0) : g; } };
// small integer powers, rounded as the multiplies the op layer composes them from
struct Cube { template <typename T> __device__ static T f(T x) { T s = x * x; return s * x; } };
struct Fourth { template <typename T> __device__ static T f(T x) { T s = x * x; return s * s; } };
struct InvSquare { template <typename T> __device__ static T f(T x) { return T(1) / (x * x); } };
